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


# Fields that record when or in what order something was written, not what the index holds.
VOLATILE = {"create_time", "update_time", "created_at", "__created_at__", "__write_seq__", "_id", "truncate"}


def _stored(record: dict) -> dict:
    """A stored record without its write-time fields; `<SEP>`-joined lists compared as sets."""
    out = {}
    for key, value in record.items():
        if key in VOLATILE:
            continue
        if key in {"source_id", "file_path"} and isinstance(value, str):
            value = sorted(v for v in value.split("<SEP>") if v)
        elif key in {"chunk_ids", "llm_cache_list"} and isinstance(value, list):
            value = sorted(value)
        elif key == "vector":
            continue  # compared from the matrix, rounded (see _vectors)
        out[key] = value
    return out


def snapshot(config: WikiragConfig) -> dict:
    """Everything an index holds, in a comparable form (file stores): every field of the graph's nodes and
    edges, of the chunk, tracker and vector records (vectors rounded), and the ledger's per-note
    contributions. Only write times and write order are left out."""
    import base64

    import networkx as nx

    ws = config.workspace_dir
    graph = nx.read_graphml(ws / "graph_chunk_entity_relation.graphml")
    nodes = {n: _stored(d) for n, d in graph.nodes(data=True)}
    edges = {tuple(sorted((u, v))): _stored(d) for u, v, d in graph.edges(data=True)}
    for edge in edges.values():
        edge["weight"] = float(edge.get("weight", 0))

    def kv(name: str) -> dict:
        path = ws / f"kv_store_{name}.json"
        return {k: _stored(v) for k, v in json.loads(path.read_text()).items()} if path.exists() else {}

    def vdb(name: str) -> dict:
        path = ws / f"vdb_{name}.json"
        if not path.exists():
            return {}
        data = json.loads(path.read_text())
        matrix = np.frombuffer(base64.b64decode(data["matrix"]), dtype=np.float32).reshape(-1, data["embedding_dim"])
        return {r["__id__"]: {**_stored(r), "vector": tuple(np.round(matrix[i], 3).tolist())}
                for i, r in enumerate(data["data"])}

    chunks = kv("text_chunks")
    for chunk in chunks.values():
        chunk.pop("llm_cache_list", None)  # which cached answers a chunk used depends on the run's history
    ledger = ledger_doc(ws)
    return {
        "nodes": nodes,
        "edges": edges,
        "chunks": chunks,
        "vdb_chunks": vdb("chunks"),
        "vdb_entities": vdb("entities"),
        "vdb_relationships": vdb("relationships"),
        "entity_chunks": kv("entity_chunks"),
        "relation_chunks": kv("relation_chunks"),
        "ledger_notes": {p: {k: e[k] for k in ("digest", "signature", "chunk_ids", "entities", "relations")}
                         for p, e in ledger["notes"].items()},
        "pending": ledger["pending"],
    }


def copy_vault(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".wikirag"))
    return dst


def indexed_copy(src: Path, dst: Path) -> WikiragConfig:
    """A copy of the vault `src` at `dst`, indexed into its default store with the hashing embedding."""
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    config = load_config(copy_vault(src, dst))
    run_index(config, embedding_func=HashEmbedding().func())
    return config


def ledger_doc(workspace_dir: Path) -> dict:
    """The ledger document of a file-store workspace (rows in wikirag_index.sqlite), as one dict."""
    from wikirag.storage.sqlite_store import SqliteLedgerStore

    store = SqliteLedgerStore(workspace_dir)
    try:
        return store.load() or {}
    finally:
        store.close()


def age_vault_files(vault: Path) -> None:
    """Make every file of the vault look older than the stat manifest's racy window (index.manifest), as after
    a normal pause: the next completed run records a manifest later runs can trust."""
    import os
    import time

    old = time.time_ns() - 10_000_000_000
    for path in vault.rglob("*"):
        if path.is_file() and ".wikirag" not in path.parts:
            os.utime(path, ns=(old, old))
