"""Per-vault calibration (bench/pseudo_queries.py; not shipped, see docs/retrieval.md) against the shipped fixed
fusion, offline on LightRAG's cached answers (bench/fusion_sweep.py), on hand-written question sets the
calibration never sees.

    python bench/calibration.py --set NAME VAULT QUESTIONS [--store NAME=DIR] ... [--cache DIR]

Per set: the calibration (pseudo-queries drawn from the vault's notes, each signal's MRR of the source note,
the LightRAG/graph weight chosen), then recall@5/MRR per mode and for `search` with the fixed and the
calibrated weights, and LightRAG's own order for comparison. Prints wall and CPU time and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from fusion_sweep import MODES, add_set_options, each_set, evaluate, load_set, score  # noqa: E402
from pseudo_queries import calibrate  # noqa: E402

from wikirag.query.engine import WarmEngine  # noqa: E402
from wikirag.query.ranking import FUSION  # noqa: E402
from wikirag.query.search import read_note_text  # noqa: E402
from wikirag.settings import load_config  # noqa: E402


async def calibration_of(vault: Path, store: Path | None) -> tuple[dict, float, float]:
    config = load_config(vault, store=store)
    async with WarmEngine(config, graph=False) as engine:
        await engine.search("warm up", mode="naive")
        started, cpu = time.perf_counter(), time.process_time()

        async def chunks(query: str) -> list[dict]:
            return (await engine.query(query, mode="naive", fusion=False, context_only=True)).chunks

        data = await calibrate(engine.notes, engine._lexical, lambda p: read_note_text(config.vault, p), chunks)
        return data, time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    cols = (*MODES, "search")
    for name, vault, store, qfile in each_set(args):
        data = load_set(vault, store, qfile, args.cache)
        cal, wall, ccpu = asyncio.run(calibration_of(vault, store))
        print(f"\n{name} ({len(data['questions'])} questions); calibration on {cal['sample']} pseudo-queries "
              f"({wall:.1f} s wall, {ccpu:.1f} s CPU): signal MRR {cal['signal_mrr']}, fused MRR by LightRAG "
              f"weight {cal['fused_mrr']} -> weights {cal['weights']}")
        print(f"  {'recall@5/MRR':24}" + "".join(f"{c:>12}" for c in cols) + f"{'mean':>12}")
        for label, fusion in (("fixed (shipped)", FUSION), ("calibrated", replace(FUSION, weights=cal["weights"]))):
            figures = evaluate(data, fusion)
            mean = [statistics.mean(f[i] for f in figures.values()) for i in (0, 1)]
            print(f"  {label:24}" + "".join(f"{figures[c][0]:6.3f}/{figures[c][1]:.2f}" for c in cols)
                  + f"{mean[0]:6.3f}/{mean[1]:.2f}")
        own = {m: [score([s.path for s in answers[m].sources], set(item["notes"])) for item, answers in
                   zip(data["questions"], data["answers"], strict=True)] for m in MODES}
        print(f"  {'LightRAG own order':24}" + "".join(f"{statistics.mean(r for r, _ in v):6.3f}/"
                                                       f"{statistics.mean(x for _, x in v):.2f}"
                                                       for v in own.values()))
    print(f"\n{time.perf_counter() - started:.0f} s wall, {time.process_time() - cpu:.0f} s CPU, load average "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
