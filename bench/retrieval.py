"""Retrieval quality and latency per LightRAG mode, context only (no LLM), against hand-written answers.

    python bench/retrieval.py VAULT QUESTIONS.json [--store DIR] [--k 5] [--embedding local|hash]

QUESTIONS.json: {"questions": [{"q": "...", "notes": ["people/Alan Turing.md", ...]}, ...]} (see
bench/questions/sample_vault.json). The vault is indexed first if its store is missing. For each mode,
recall@k = share of a question's expected notes found among the first k source notes of the retrieved
context, averaged over questions; latency is per query with the store already open (warm), median and p95.
`naive` (plain vector search over chunks) is the baseline the graph modes are compared with.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikirag.index.ledger import Ledger  # noqa: E402
from wikirag.index.run import run_index, store_exists
from wikirag.lightrag.engine import open_engine  # noqa: E402
from wikirag.query.retrieve import query_store  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

MODES = ("naive", "local", "global", "hybrid", "mix")


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


async def bench(vault: Path, questions: list[dict], store: Path | None, k: int, engine_kwargs: dict) -> None:
    config = load_config(vault, store=store)
    if not store_exists(config):
        print(f"indexing {vault} first …")
        await asyncio.to_thread(run_index, config, **engine_kwargs)
    ledger = Ledger.load(config.workspace_dir)
    print(f"{len(questions)} questions, recall@{k} of the expected notes among the context's sources")
    print(f"{'mode':8} {'recall@k':>9} {'hit@k':>6} {'median ms':>10} {'p95 ms':>8}")
    async with open_engine(config, **engine_kwargs) as rag:
        for mode in MODES:
            recalls, hits, latencies = [], [], []
            for item in questions:
                started = time.perf_counter()
                result = await query_store(config, item["q"], mode=mode, rag=rag, ledger=ledger)
                latencies.append((time.perf_counter() - started) * 1000)
                found = [s.path for s in result.sources][:k]
                expected = set(item["notes"])
                recalls.append(len(expected & set(found)) / len(expected))
                hits.append(1.0 if expected & set(found) else 0.0)
            print(f"{mode:8} {statistics.mean(recalls):9.3f} {statistics.mean(hits):6.2f} "
                  f"{statistics.median(latencies):10.0f} {_percentile(latencies, 0.95):8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--embedding", choices=["local", "hash"], default="local")
    args = parser.parse_args()
    engine_kwargs = {}
    if args.embedding == "hash":
        from tests.storekit import HashEmbedding

        engine_kwargs["embedding_func"] = HashEmbedding().func()
    questions = json.loads(args.questions.read_text())["questions"]
    asyncio.run(bench(args.vault, questions, args.store, args.k, engine_kwargs))


if __name__ == "__main__":
    main()
