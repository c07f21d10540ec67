"""Retrieval quality and latency per LightRAG mode and for `search`, context only (no LLM), against
hand-written answers; warm and cold timed separately.

    python bench/retrieval.py VAULT QUESTIONS.json [--store DIR] [--k 5] [--embedding local|hash] [--cold 5]

QUESTIONS.json: {"questions": [{"q": "...", "notes": ["people/Alan Turing.md", ...]}, ...]} (see
bench/questions/). The vault is indexed first if its store is missing (pass --store for a vault you may not
write into). Per question, the ranked notes are the context's source notes (LightRAG modes) or the hits
(`search`); recall@k = share of the expected notes among the first k, MRR = mean of 1/rank of the first
expected note (0 when none is in the first 10).

`query MODE` ranks sources in LightRAG's own order (--no-fusion); `query MODE +fusion` is the default,
fused with BM25 and the names in the question.

Warm: one process, one WarmEngine (store open, model loaded), per-query median and p95.
Cold: a fresh `wikirag query --context-only` / `wikirag search` process per question, wall clock from
spawn to exit: interpreter start, imports, store and model loading are all counted. A question asked before
finds its vector in the store's vector cache and never loads the embedding model, so `unseen` rows append a
random word to each question: that is the cold start of a question the store has not seen. CPU columns (user+sys,
this process for warm, the children for cold) and the load average are printed because the machine is
shared. `naive` is the baseline the graph modes are compared with.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wikirag.index.run import run_index, store_exists  # noqa: E402
from wikirag.query.engine import WarmEngine  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

MODES = ("naive", "local", "global", "hybrid", "mix")
SEARCH_MODES = ("naive", "mix", "hybrid", "lexical")


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def score(ranked: list[str], expected: set[str], k: int) -> tuple[float, float]:
    recall = len(expected & set(ranked[:k])) / len(expected)
    rr = next((1.0 / i for i, p in enumerate(ranked[:10], start=1) if p in expected), 0.0)
    return recall, rr


async def warm(config, questions: list[dict], k: int, engine_kwargs: dict) -> list[tuple]:
    rows = []
    async with WarmEngine(config, **engine_kwargs) as engine:
        await engine.search("warm up", mode="naive")  # loads the model and the stores once
        runs = [(f"query {m}", lambda q, m=m: engine.query(q, mode=m, fusion=False)) for m in MODES]
        runs += [(f"query {m} +fusion", lambda q, m=m: engine.query(q, mode=m)) for m in MODES]
        runs += [(f"search {m}", lambda q, m=m: engine.search(q, limit=10, mode=m)) for m in SEARCH_MODES]
        for name, call in runs:
            recalls, rrs, latencies = [], [], []
            cpu = time.process_time()
            for item in questions:
                started = time.perf_counter()
                result = await call(item["q"])
                latencies.append((time.perf_counter() - started) * 1000)
                ranked = [s.path for s in (result.hits if hasattr(result, "hits") else result.sources)]
                recall, rr = score(ranked, set(item["notes"]), k)
                recalls.append(recall)
                rrs.append(rr)
            rows.append((name, statistics.mean(recalls), statistics.mean(rrs), statistics.median(latencies),
                         _percentile(latencies, 0.95), (time.process_time() - cpu) * 1000 / len(questions)))
    return rows


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold(vault: Path, store: Path | None, questions: list[dict],
         runs: int) -> list[tuple[str, float, float, float, float]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    store_args = ["--store", str(store)] if store else []
    commands = {
        "cold query mix": ["query", "{q}", "--vault", str(vault), "--context-only", "--json"],  # the default mode
        "cold query unseen": ["query", "{q} {nonce}", "--vault", str(vault), "--context-only", "--json"],
        "cold search naive": ["search", "{q}", "--vault", str(vault), "--json"],
        "cold search lexical": ["search", "{q}", "--vault", str(vault), "-m", "lexical", "--json"],
    }
    out = []
    for name, args in commands.items():
        latencies = []
        cpu = _children_cpu()
        for item in questions[:runs]:
            nonce = uuid.uuid4().hex[:8]
            argv = [sys.executable, "-m", "wikirag.cli",
                    *(a.replace("{q}", item["q"]).replace("{nonce}", nonce) for a in args), *store_args]
            started = time.perf_counter()
            done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=str(ROOT))
            latencies.append((time.perf_counter() - started) * 1000)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr[-500:]}")
        out.append((name, min(latencies), statistics.median(latencies), max(latencies),
                    (_children_cpu() - cpu) * 1000 / max(1, len(latencies))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--embedding", choices=["local", "hash"], default="local")
    parser.add_argument("--cold", type=int, default=5, help="questions timed in fresh processes (0: skip)")
    parser.add_argument("--skip-warm", action="store_true", help="time cold starts only")
    args = parser.parse_args()
    engine_kwargs = {}
    if args.embedding == "hash":
        from tests.storekit import HashEmbedding

        engine_kwargs["embedding_func"] = HashEmbedding().func()
    questions = json.loads(args.questions.read_text())["questions"]
    config = load_config(args.vault, store=args.store)
    if not store_exists(config):
        print(f"indexing {args.vault} first …")
        run_index(config, **engine_kwargs)
    from wikirag.query.ranking import TUNED_ON

    held_out = args.questions.stem not in TUNED_ON
    print("load average (1, 5, 15 min) at the start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{args.vault.name}: {len(questions)} questions; recall@{args.k} and MRR of the expected notes; "
          f"fusion weights chosen on {', '.join(TUNED_ON)}: "
          + ("this set is HELD OUT" if held_out else "this set was used to choose them"))
    if not args.skip_warm:
        print(f"{'warm':22} {'recall@k':>9} {'MRR':>6} {'median ms':>10} {'p95 ms':>8} {'CPU ms/q':>9}")
        for name, recall, mrr, median, p95, cpu in asyncio.run(warm(config, questions, args.k, engine_kwargs)):
            print(f"{name:22} {recall:9.3f} {mrr:6.3f} {median:10.1f} {p95:8.1f} {cpu:9.1f}")
    if args.cold and args.embedding == "local":
        print(f"{'cold (new process)':22} {'best ms':>8} {'median ms':>10} {'max ms':>8} {'CPU ms':>8}")
        for name, best, median, worst, cpu in cold(args.vault, args.store, questions, args.cold):
            print(f"{name:22} {best:8.0f} {median:10.0f} {worst:8.0f} {cpu:8.0f}")
    print("load average (1, 5, 15 min) at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
