"""Extraction throughput against the fake OpenAI-compatible server (tests/fakeapi.py) at a fixed latency per
call: wall time of `wikirag index` vs the ideal `calls x latency / concurrency`.

    python bench/extract_throughput.py                      # 300 notes, 2 s per call, concurrency 8 and 16
    python bench/extract_throughput.py --notes 300 --latency 2 --concurrency 16
    python bench/extract_throughput.py VAULT --concurrency 16     # a real vault's extract-routed notes

The generated vault's notes are prose with no links (every one routed to extraction), each one chunk and too
long to be packed: one extraction call per note. The fake server answers in LightRAG's extraction format
(tests/fakes.FakeLLM) after `--latency` seconds; embeddings are the instant hashing embedding, so the figure is
wikirag's scheduling, not the ONNX model. `extract s` is the extraction phase alone (first answer back, plus
one latency, to the last note extracted); `wall s` is the whole `index` run, scan to final flush; `cpu s`
the process's CPU time in that run (the fake server's thread included): on a busy machine a run can be CPU
bound whatever the concurrency.
Target (issue 14): within 1.3x of ideal at concurrency 16.
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
        # two names a sentence, seven a note: about the 20-40 records a real model returns for such a chunk
        sentences = " ".join(f"Ada Example{i} described Method{k % 6} in plain words, with notes on how it was "
                             f"used, what it changed for the work of the group and which questions stayed open."
                             for k in range(24))
        (root / f"Essay {i:04d}.md").write_text(f"# Essay {i}\n\n{sentences}\n", encoding="utf-8")
    return root


def run(vault: Path, latency: float, concurrency: int) -> dict[str, float]:
    os.environ["OPENAI_API_KEY"] = "sk-bench-not-real"
    store = Path(tempfile.mkdtemp(prefix="wikirag-throughput-"))
    try:
        with FakeAPI(latency=latency) as api:
            config = load_config(vault, store=store, overrides={"llm": {
                "model": "openai:fake-model", "base_url": api.openai_base_url, "concurrency": concurrency}})
            marks: list[float] = []

            def progress(stage: str, done: int, total: int) -> None:
                if stage.startswith("extracting"):
                    marks.append(time.perf_counter())

            started, cpu = time.perf_counter(), time.process_time()
            report = run_index(config, embedding_func=HashEmbedding().func(), progress=progress)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            peak = api.max_in_flight
    finally:
        shutil.rmtree(store, ignore_errors=True)
    ideal = report.llm_calls * latency / concurrency
    # the extraction phase alone: first note extracted .. last (the rest is scan, chunks, embedding, flushes)
    extract = marks[-1] - marks[0] + latency if marks else 0.0
    return {"concurrency": concurrency, "notes": report.notes_extracted, "calls": report.llm_calls,
            "max_in_flight": peak, "wall_s": wall, "cpu_s": cpu, "extract_s": extract, "ideal_s": ideal,
            "ratio": wall / ideal if ideal else 0.0, "extract_ratio": extract / ideal if ideal else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", nargs="?", type=Path, help="a vault (default: generate --notes notes)")
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per LLM call")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 16])
    args = parser.parse_args()
    tmp = None
    vault = args.vault
    if vault is None:
        tmp = Path(tempfile.mkdtemp(prefix="wikirag-throughput-vault-"))
        vault = generate(tmp / "vault", args.notes)
    try:
        print(f"{'concurrency':>11} {'notes':>6} {'calls':>6} {'in flight':>9} {'wall s':>8} {'cpu s':>6} "
              f"{'extract s':>9} {'ideal s':>8} {'wall/ideal':>10} {'extract/ideal':>13}")
        for concurrency in args.concurrency:
            r = run(vault, args.latency, concurrency)
            print(f"{r['concurrency']:>11} {r['notes']:>6} {r['calls']:>6} {r['max_in_flight']:>9} "
                  f"{r['wall_s']:>8.1f} {r['cpu_s']:>6.1f} "
                  f"{r['extract_s']:>9.1f} {r['ideal_s']:>8.1f} {r['ratio']:>10.2f} "
                  f"{r['extract_ratio']:>13.2f}", flush=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
