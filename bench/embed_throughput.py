"""Embedding throughput on the texts wikirag really embeds for a vault (structure-only index).

    python bench/embed_throughput.py VAULT [--repeats 3] [--threads 2] [--batch-size N] [--model NAME]
                                          [--embedder-file OLD.py] [--save TEXTS.json | --texts TEXTS.json]

The vault is indexed once into a temporary store with an instant hashing embedding that records every
call LightRAG makes (the texts and how LightRAG batches them); each text is then labelled chunk, entity or
relation from the store's vector files. The MiniLM embedder is then timed on those texts (median of
--repeats runs):

* `as LightRAG calls it`: the recorded calls (10 texts each), gathered with at most 8 in flight, each
  `embed()` in a worker thread — what `wikirag index` pays;
* `one call`: every text in a single `embed()` (the embedder's own ceiling);
* per kind: each kind's texts in one call.

Also printed: texts, distinct texts, word-piece windows, tokens, and the padding ratio (padded positions /
all positions fed to the model) for both call patterns. `--embedder-file` loads `MiniLMEmbedder` from
another copy of wikirag/embeddings.py (e.g. `git show HEAD~1:wikirag/embeddings.py > /tmp/old.py`) to
compare before/after on the same texts; `--save`/`--texts` keep the collected texts to skip re-indexing.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KINDS = ("chunk", "entity", "relation")
_VDB_KIND = {"vdb_chunks.json": "chunk", "vdb_entities.json": "entity", "vdb_relationships.json": "relation"}


def collect_texts(vault: Path) -> dict:
    """Index `vault` structure-only into a temporary store; return the embedding calls and text kinds."""
    from lightrag.utils import EmbeddingFunc

    from tests.storekit import _hash_embed_sync
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    calls: list[list[str]] = []

    async def record(texts: list[str], **_: object):
        calls.append(list(texts))
        return _hash_embed_sync(list(texts))

    store = Path(tempfile.mkdtemp(prefix="wikirag-embed-bench-"))
    try:
        config = load_config(vault, store=store)
        started = time.perf_counter()
        report = run_index(config, embedding_func=EmbeddingFunc(embedding_dim=384, func=record,
                                                                model_name="recording"))
        index_s = time.perf_counter() - started
        kinds: dict[str, str] = {}
        for path in config.workspace_dir.rglob("vdb_*.json"):
            kind = _VDB_KIND.get(path.name)
            if kind is None:
                continue
            for row in json.loads(path.read_text()).get("data", []):
                if "content" in row:
                    kinds.setdefault(row["content"], kind)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    return {"vault": str(vault), "notes": report.notes_total, "index_s_hash": round(index_s, 2),
            "calls": calls, "kinds": kinds}


def load_embedder_class(path: Path | None):
    if path is None:
        from wikirag.lightrag.embeddings import MiniLMEmbedder

        return MiniLMEmbedder
    import wikirag

    spec = importlib.util.spec_from_file_location("wikirag._embeddings_other", path,
                                                  submodule_search_locations=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = wikirag.__name__  # its relative imports (.errors) resolve inside wikirag
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.MiniLMEmbedder


def padding(windows: list[int], calls: list[list[int]], batch_size: int) -> tuple[int, int]:
    """(real tokens, fed positions) when each call's windows are sorted by length and cut into batches."""
    real = fed = 0
    for call in calls:
        lengths = sorted(windows[i] for i in call)
        real += sum(lengths)
        for start in range(0, len(lengths), batch_size):
            batch = lengths[start : start + batch_size]
            fed += max(batch) * len(batch)
    return real, fed


def window_lengths(embedder, texts: list[str]) -> list[list[int]]:
    return [[len(w) for w in embedder.windows(t)] for t in texts]


async def _replay(embedder, calls: list[list[str]], in_flight: int) -> None:
    """Like LightRAG's vector flush: every call gathered at once, at most `in_flight` running (its
    embedding_func_max_async, 8), each in a worker thread as wikirag's EmbeddingFunc runs it."""
    gate = asyncio.Semaphore(in_flight)

    async def one(call: list[str]) -> None:
        async with gate:
            await asyncio.to_thread(embedder.embed, call)

    await asyncio.gather(*(one(call) for call in calls))


def timed(embedder, calls: list[list[str]], repeats: int, in_flight: int = 1) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (all threads) over `repeats` runs."""
    runs, cpu = [], []
    counted = hasattr(embedder, "model_runs")  # the embedder counts what it fed the model
    fed = (embedder.model_runs, embedder.positions, embedder.word_pieces) if counted else (0, 0, 0)
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        if in_flight > 1:
            asyncio.run(_replay(embedder, calls, in_flight))
        else:
            for call in calls:
                embedder.embed(call)
        runs.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    if counted:
        model_runs = (embedder.model_runs - fed[0]) // repeats
        positions, pieces = embedder.positions - fed[1], embedder.word_pieces - fed[2]
        print(f"    (fed: {model_runs} model runs per repeat, padding ratio {1 - pieces / max(positions, 1):.3f})")
    return statistics.median(runs), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path, nargs="?")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="model runs at once (wikirag: one per core, at most 4)")
    parser.add_argument("--batch-size", type=int, help="embedder batch size (default: the embedder's own)")
    parser.add_argument("--model", help="local model name (default: the configured default's)")
    parser.add_argument("--embedder-file", type=Path, help="load MiniLMEmbedder from this file instead")
    parser.add_argument("--save", type=Path, help="write the collected texts here")
    parser.add_argument("--texts", type=Path, help="read collected texts from here instead of indexing")
    parser.add_argument("--in-flight", type=int, default=8, help="concurrent LightRAG calls (1: one by one)")
    parser.add_argument("--limit", type=int, help="only the first N recorded calls (a quicker sample)")
    parser.add_argument("--stride", type=int, default=1, help="only every Nth recorded call (a quicker, mixed sample)")
    parser.add_argument("--skip", default="", help="comma list of measurements to skip: calls,one,kinds")
    args = parser.parse_args()
    if args.texts:
        data = json.loads(args.texts.read_text())
    elif args.vault:
        data = collect_texts(args.vault)
        if args.save:
            args.save.write_text(json.dumps(data))
    else:
        parser.error("give a VAULT or --texts")
    skip = set(filter(None, args.skip.split(",")))

    calls: list[list[str]] = data["calls"][:: args.stride][: args.limit]
    texts = [t for call in calls for t in call]
    kinds = data["kinds"]
    by_kind = {k: [t for t in texts if kinds.get(t, "other") == k] for k in (*KINDS, "other")}
    cls = load_embedder_class(args.embedder_file)
    kwargs = {"threads": args.threads}
    if args.batch_size:
        kwargs["batch_size"] = args.batch_size
    if args.embedder_file is None:
        from wikirag.settings import EmbeddingSettings

        kwargs["model"] = args.model or EmbeddingSettings().model.partition(":")[2]
    elif args.model:
        kwargs["model"] = args.model
    embedder = cls(**kwargs)
    batch_size = getattr(embedder, "_batch_size", 16)

    lengths = window_lengths(embedder, texts)
    flat = [n for per in lengths for n in per]
    index_of, offset = [], 0
    for per in lengths:
        index_of.append(list(range(offset, offset + len(per))))
        offset += len(per)
    per_call, position = [], 0
    for call in calls:
        per_call.append([w for i in range(position, position + len(call)) for w in index_of[i]])
        position += len(call)
    real, fed_calls = padding(flat, per_call, batch_size)
    _, fed_one = padding(flat, [list(range(len(flat)))], batch_size)

    print(f"vault {data['vault']}: {data.get('notes')} notes; {len(texts)} texts "
          f"({len(set(texts))} distinct) in {len(calls)} LightRAG calls "
          f"(median {statistics.median(len(c) for c in calls):.0f} texts/call)")
    print("kinds: " + ", ".join(f"{k} {len(v)}" for k, v in by_kind.items() if v))
    print(f"windows {len(flat)} ({sum(len(p) > 1 for p in lengths)} texts need >1), word-pieces {real:,}, "
          f"median {statistics.median(flat):.0f}/window, max {max(flat)}")
    print(f"padding ratio of the original batching (length-sorted within each call, batches of {batch_size}): "
          f"as called {1 - real / fed_calls:.3f}, one call {1 - real / fed_one:.3f}")
    print(f"embedder {cls.__module__}.{cls.__name__} {kwargs}, median of {args.repeats}")
    embedder.embed(texts[:8])  # warm-up: first run allocates onnxruntime's arenas
    if "calls" not in skip:
        seconds, cpu = timed(embedder, calls, args.repeats, in_flight=args.in_flight)
        print(f"  as LightRAG calls it: {seconds:7.2f} s  {len(texts) / seconds:7.1f} texts/s  "
              f"{real / seconds:8,.0f} word-pieces/s  (CPU {cpu:.2f} s, {len(texts) / cpu:.1f} texts per CPU-s)")
    if "one" not in skip:
        seconds, cpu = timed(embedder, [texts], args.repeats)
        print(f"  one call:             {seconds:7.2f} s  {len(texts) / seconds:7.1f} texts/s  "
              f"{real / seconds:8,.0f} word-pieces/s  (CPU {cpu:.2f} s, {len(texts) / cpu:.1f} texts per CPU-s)")
    if "kinds" not in skip:
        for kind, group in by_kind.items():
            if not group:
                continue
            seconds, cpu = timed(embedder, [group], args.repeats)
            pieces = sum(sum(len(w) for w in embedder.windows(t)) for t in group)
            print(f"  {kind:9} one call:   {seconds:7.2f} s  {len(group) / seconds:7.1f} texts/s  "
                  f"({len(group)} texts, {pieces / len(group):.0f} word-pieces each; CPU {cpu:.2f} s)")
    repeated = Counter(texts)
    print("load average (1, 5, 15 min) at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"repeats within this index run: {sum(n - 1 for n in repeated.values())} of {len(texts)} texts")


if __name__ == "__main__":
    main()
