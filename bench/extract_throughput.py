"""Extraction throughput against the fake OpenAI-compatible server (tests/fakeapi.py) at a fixed latency per
call: wall time of `wikirag index` vs the ideal `calls x latency / concurrency`.

    python bench/extract_throughput.py                      # 300 notes, 2 s per call, concurrency 1 4 16
    python bench/extract_throughput.py --notes 300 --latency 2 --concurrency 16
    python bench/extract_throughput.py VAULT --concurrency 16     # a real vault's extract-routed notes

The generated vault's notes are prose with no links (every one routed to extraction), each one chunk and too
long to be packed: one extraction call per note. The fake server answers in LightRAG's extraction format
(tests/fakes.FakeLLM) after `--latency` seconds; embeddings are the instant hashing embedding, so the figure is
wikirag's scheduling, not the ONNX model. Target (issue 14): within 1.3x of ideal at concurrency 16.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakeapi import FakeAPI  # noqa: E402
from tests.storekit import HashEmbedding  # noqa: E402
from wikirag.index.run import run_index  # noqa: E402
from wikirag.settings import load_config  # noqa: E402


def generate(root: Path, notes: int) -> Path:
    """Prose notes of about 600 tokens, no links: one extraction call each."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(notes):
        sentences = " ".join(f"Researcher Ada Example{i} studied Topic{i}x{k} at Institute{k} in {1900 + i % 100}, "
                             f"with an account of method {k} and its results." for k in range(24))
        (root / f"Essay {i:04d}.md").write_text(f"# Essay {i}\n\n{sentences}\n", encoding="utf-8")
    return root


def run(vault: Path, latency: float, concurrency: int) -> dict[str, float]:
    os.environ["OPENAI_API_KEY"] = "sk-bench-not-real"
    store = Path(tempfile.mkdtemp(prefix="wikirag-throughput-"))
    try:
        with FakeAPI(latency=latency) as api:
            config = load_config(vault, store=store, overrides={"llm": {
                "model": "openai:fake-model", "base_url": api.openai_base_url, "concurrency": concurrency}})
            started = time.perf_counter()
            report = run_index(config, embedding_func=HashEmbedding().func())
            wall = time.perf_counter() - started
            peak = api.max_in_flight
    finally:
        shutil.rmtree(store, ignore_errors=True)
    ideal = report.llm_calls * latency / concurrency
    return {"concurrency": concurrency, "notes": report.notes_extracted, "calls": report.llm_calls,
            "max_in_flight": peak, "wall_s": wall, "ideal_s": ideal, "ratio": wall / ideal if ideal else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", nargs="?", type=Path, help="a vault (default: generate --notes notes)")
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per LLM call")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    tmp = None
    vault = args.vault
    if vault is None:
        tmp = Path(tempfile.mkdtemp(prefix="wikirag-throughput-vault-"))
        vault = generate(tmp / "vault", args.notes)
    try:
        print(f"{'concurrency':>11} {'notes':>6} {'calls':>6} {'in flight':>9} {'wall s':>8} {'ideal s':>8} "
              f"{'wall/ideal':>10}")
        for concurrency in args.concurrency:
            r = run(vault, args.latency, concurrency)
            print(f"{r['concurrency']:>11} {r['notes']:>6} {r['calls']:>6} {r['max_in_flight']:>9} "
                  f"{r['wall_s']:>8.1f} {r['ideal_s']:>8.1f} {r['ratio']:>10.2f}", flush=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
