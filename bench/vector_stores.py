"""LightRAG's embedded stores side by side at N records: upsert + flush, cold load, query, size on disk.

    python bench/vector_stores.py [--sizes 1000 10000 50000] [--vector nano faiss]

For each vector class (NanoVectorDB, Faiss) it writes N chunk vectors (384-d, a hashing embedding: the
figures are the store's, not a model's), flushes, reopens the store in a fresh engine (cold load), runs 20
queries, then re-writes 1 % of the records and flushes again (what one `watch` batch costs the store).
The graph store (NetworkX GraphML) is measured the same way with N nodes and 2.7 N edges (the
zettelkasten's ratio). Every class rewrites its whole file at each flush; the figures say how that grows.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.storekit import HashEmbedding  # noqa: E402
from wikirag.lightrag.engine import open_engine  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

VECTORS = {"nano": "NanoVectorDBStorage", "faiss": "FaissVectorDBStorage"}
WORDS = "idea claim evidence method result memory habit attention learning reading writing card index".split()


def _text(i: int) -> str:
    return " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 30)) + f" note {i}"


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


async def _vector(n: int, vector: str, root: Path) -> dict[str, float]:
    vault = root / "vault"
    vault.mkdir(parents=True, exist_ok=True)
    config = load_config(vault, store=root / f"store-{vector}-{n}")
    storages = {"kv_storage": "JsonKVStorage", "vector_storage": VECTORS[vector], "graph_storage": "NetworkXStorage",
                "doc_status_storage": "JsonDocStatusStorage"}
    embed = HashEmbedding().func()
    out: dict[str, float] = {}
    data = {f"chunk-{i}": {"content": _text(i), "full_doc_id": f"doc-{i}", "file_path": f"n{i}.md"} for i in range(n)}
    async with open_engine(config, embedding_func=embed, storages=storages) as rag:
        started = time.perf_counter()
        for start in range(0, n, 2000):
            part = dict(list(data.items())[start : start + 2000])
            await rag.chunks_vdb.upsert(part)
        out["upsert"] = time.perf_counter() - started
        started = time.perf_counter()
        await rag.chunks_vdb.index_done_callback()
        out["flush"] = time.perf_counter() - started
    started = time.perf_counter()
    async with open_engine(config, embedding_func=embed, storages=storages) as rag:
        await rag.chunks_vdb.query("warm the index", top_k=1)
        out["cold load"] = time.perf_counter() - started
        started = time.perf_counter()
        for q in range(20):
            await rag.chunks_vdb.query(_text(q * 7), top_k=20)
        out["query"] = (time.perf_counter() - started) / 20
        changed = {k: {**v, "content": v["content"] + " edited"} for k, v in list(data.items())[: max(1, n // 100)]}
        started = time.perf_counter()
        await rag.chunks_vdb.upsert(changed)
        await rag.chunks_vdb.index_done_callback()
        out["1% change + flush"] = time.perf_counter() - started
    out["size MB"] = _size_mb(config.workspace_dir)
    return out


async def _graph(n: int, root: Path) -> dict[str, float]:
    vault = root / "vault"
    vault.mkdir(parents=True, exist_ok=True)
    config = load_config(vault, store=root / f"store-graph-{n}")
    embed = HashEmbedding().func()
    out: dict[str, float] = {}
    nodes = [(f"Note {i}", {"entity_id": f"Note {i}", "entity_type": "note", "description": _text(i),
                            "source_id": f"chunk-{i}", "file_path": f"n{i}.md"}) for i in range(n)]
    edges = [(f"Note {i}", f"Note {(i * 7 + k) % n}", {"description": "link", "keywords": "link", "weight": 1.0,
                                                       "source_id": f"chunk-{i}", "file_path": f"n{i}.md"})
             for i in range(n) for k in (1, 2, 3) if (i * 7 + k) % n != i][: int(2.7 * n)]
    async with open_engine(config, embedding_func=embed) as rag:
        graph = rag.chunk_entity_relation_graph
        started = time.perf_counter()
        await graph.upsert_nodes_batch(nodes)
        await graph.upsert_edges_batch(edges)
        out["upsert"] = time.perf_counter() - started
        started = time.perf_counter()
        await graph.index_done_callback()
        out["flush"] = time.perf_counter() - started
    started = time.perf_counter()
    async with open_engine(config, embedding_func=embed) as rag:
        await rag.chunk_entity_relation_graph.has_node("Note 0")
        out["cold load"] = time.perf_counter() - started
        started = time.perf_counter()
        await rag.chunk_entity_relation_graph.upsert_nodes_batch(nodes[: max(1, n // 100)])
        await rag.chunk_entity_relation_graph.index_done_callback()
        out["1% change + flush"] = time.perf_counter() - started
    out["size MB"] = _size_mb(config.workspace_dir)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--vector", nargs="+", choices=sorted(VECTORS), default=sorted(VECTORS))
    parser.add_argument("--no-graph", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="wikirag-stores-"))
    try:
        for n in args.sizes:
            for vector in args.vector:
                figures = asyncio.run(_vector(n, vector, root))
                print(f"{VECTORS[vector]:<22} n={n:>6}: " + ", ".join(
                    f"{k} {v:.3f}" + ("" if k == "size MB" else " s") for k, v in figures.items()), flush=True)
            if not args.no_graph:
                figures = asyncio.run(_graph(n, root))
                print(f"{'NetworkXStorage':<22} n={n:>6}: " + ", ".join(
                    f"{k} {v:.3f}" + ("" if k == "size MB" else " s") for k, v in figures.items()), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
