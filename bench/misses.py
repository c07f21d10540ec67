"""Per question, where the expected notes were missed: each signal's rank of each expected note, and what the
fused ranking put above them. The figures at the end are the same as bench/retrieval.py's "+fusion" rows.

    python bench/misses.py --set NAME VAULT QUESTIONS.json [--store NAME=DIR] [--cache DIR] [--all]

LightRAG is asked each question once per mode (context only, its own order) and its answers are kept in
`--cache` (bench/fusion_sweep.py's cache: the same files). The ranked notes are then those of the library's
code: `query MODE` sources as query.retrieve ranks them (search.fused_sources, as many as LightRAG cited, at
least 5) and `search` hits (query.ranking on naive's chunks). A question is shown when an expected note is not
among the first 5 in some mode (`--all`: every question). Signal ranks are 1-based, "-" when the signal did
not rank the note; the graph signal is that of hybrid.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fusion_sweep import MODES, add_set_options, each_set, load_set, score  # noqa: E402
from wikirag.query.ranking import fuse, note_rankings  # noqa: E402
from wikirag.query.search import fused_sources  # noqa: E402

COLUMNS = (*MODES, "search")


def ranked(data: dict[str, Any], question: str, answers: dict[str, Any]) -> dict[str, list[str]]:
    """The ranked notes per mode (query's cited sources) and for `search`."""
    notes, lexical = data["notes"], data["lexical"]
    out = {}
    for mode in MODES:
        paths = [s.path for s in answers[mode].sources]
        out[mode] = [p for p, _ in fused_sources(notes, lexical, question, answers[mode], paths)[:max(5, len(paths))]]
    rankings, _ = note_rankings(notes, lexical, question, chunks=answers["naive"].chunks)
    out["search"] = [p for p, _s, _f in fuse(notes, rankings, index=lexical)]
    return out


def short(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".md")


def report(name: str, data: dict[str, Any], show_all: bool) -> dict[str, tuple[float, float]]:
    figures: dict[str, list[tuple[float, float]]] = {c: [] for c in COLUMNS}
    for item, answers in zip(data["questions"], data["answers"], strict=True):
        expected = list(item["notes"])
        lists = ranked(data, item["q"], answers)
        scores = {c: score(lists[c], set(expected)) for c in COLUMNS}
        for c in COLUMNS:
            figures[c].append(scores[c])
        missed = [c for c in COLUMNS if scores[c][0] < 1]
        if not missed and not show_all:
            continue
        print(f"\n[{name}] {item['q']}")
        print(f"  expected: {', '.join(short(e) for e in expected)}; missed in: {', '.join(missed) or 'none'}")
        signals, _ = note_rankings(data["notes"], data["lexical"], item["q"], chunks=answers["naive"].chunks,
                                   entities=answers["hybrid"].entities, relations=answers["hybrid"].relations)
        for signal, order in signals.items():
            ranks = ", ".join(f"{short(e)} {order.index(e) + 1 if e in order else '-'}" for e in expected)
            print(f"    {signal:8} {ranks}   first: {', '.join(short(p) for p in order[:5])}")
        for c in missed:
            print(f"    {c:8} fused: {', '.join(short(p) + ('*' if p in expected else '') for p in lists[c][:7])}")
    return {c: (statistics.mean(r for r, _ in v), statistics.mean(x for _, x in v)) for c, v in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--all", action="store_true", help="show every question, not only those with a miss")
    args = parser.parse_args()
    rows = {}
    for name, vault, store, qfile in each_set(args):
        started, cpu = time.perf_counter(), time.process_time()
        data = load_set(vault, store, qfile, args.cache)
        rows[name] = report(name, data, args.all)
        print(f"\n{name}: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU, "
              f"load {os.getloadavg()[0]:.1f}")
    print("\nrecall@5/MRR (* in the lists above: an expected note)")
    print(f"  {'set':16}" + "".join(f"{c:>14}" for c in COLUMNS))
    for name, f in rows.items():
        print(f"  {name:16}" + "".join(f"{f[c][0]:8.3f}/{f[c][1]:.3f}" for c in COLUMNS))


if __name__ == "__main__":
    main()
