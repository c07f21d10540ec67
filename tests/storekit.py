"""Test helpers for real LightRAG stores: a fast deterministic embedding and a store snapshot."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
from lightrag.utils import EmbeddingFunc

from wikirag.settings import WikiragConfig

DIM = 384


def _hash_embed_sync(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            bucket = int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "little") % DIM
            out[row, bucket] += 1.0
        norm = np.linalg.norm(out[row])
        out[row] = out[row] / norm if norm else out[row]
    return out


class HashEmbedding:
    """Bag-of-words hashed into 384 buckets: deterministic, instant, and similar texts stay similar."""

    def __init__(self) -> None:
        self.texts = 0

    async def __call__(self, texts: list[str], **_: object) -> np.ndarray:
        self.texts += len(texts)
        return _hash_embed_sync(list(texts))

    def func(self) -> EmbeddingFunc:
        return EmbeddingFunc(embedding_dim=DIM, func=self, model_name="hash-test")


def snapshot(config: WikiragConfig) -> dict:
    """Everything an index holds, in a comparable form (file stores): graph, chunks, vector ids,
    chunk trackers and the ledger's per-note contributions."""
    import networkx as nx

    ws = config.workspace_dir
    graph = nx.read_graphml(ws / "graph_chunk_entity_relation.graphml")

    def sources(value: str) -> list[str]:
        return sorted(v for v in str(value).split("<SEP>") if v)

    nodes = {
        n: {"type": d.get("entity_type"), "description": d.get("description"),
            "source_id": sources(d.get("source_id", "")), "file_path": sources(d.get("file_path", ""))}
        for n, d in graph.nodes(data=True)
    }
    edges = {
        tuple(sorted((u, v))): {"description": d.get("description"), "keywords": d.get("keywords"),
                                "weight": float(d.get("weight", 0)),
                                "source_id": sources(d.get("source_id", "")),
                                "file_path": sources(d.get("file_path", ""))}
        for u, v, d in graph.edges(data=True)
    }

    def kv(name: str) -> dict:
        path = ws / f"kv_store_{name}.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def vdb_ids(name: str) -> list[str]:
        path = ws / f"vdb_{name}.json"
        return sorted(r["__id__"] for r in json.loads(path.read_text())["data"]) if path.exists() else []

    chunks = {k: (v["content"], v["file_path"]) for k, v in kv("text_chunks").items()}
    ledger = ledger_doc(ws)
    return {
        "nodes": nodes,
        "edges": edges,
        "chunks": chunks,
        "vdb_chunks": vdb_ids("chunks"),
        "vdb_entities": vdb_ids("entities"),
        "vdb_relationships": vdb_ids("relationships"),
        "entity_chunks": {k: sorted(v["chunk_ids"]) for k, v in kv("entity_chunks").items()},
        "relation_chunks": {k: sorted(v["chunk_ids"]) for k, v in kv("relation_chunks").items()},
        "ledger_notes": {p: {k: e[k] for k in ("digest", "signature", "chunk_ids", "entities", "relations")}
                         for p, e in ledger["notes"].items()},
        "pending": ledger["pending"],
    }


def copy_vault(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".wikirag"))
    return dst


def ledger_doc(workspace_dir: Path) -> dict:
    """The ledger document of a file-store workspace (rows in wikirag_index.sqlite), as one dict."""
    from wikirag.storage.sqlite_store import SqliteLedgerStore

    store = SqliteLedgerStore(workspace_dir)
    try:
        return store.load() or {}
    finally:
        store.close()
