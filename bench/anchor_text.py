"""Anchor text in the fusion (issue 15): each weight and held head against the shipped fusion, per mode.

    python bench/anchor_text.py --set NAME VAULT QUESTIONS.json --set ... [--store NAME=DIR] [--tune NAME]
                                [--cache DIR]

The anchor text is the store's own (index.anchors, built by `wikirag index`): per note, BM25 over the sentences
other notes link to it in. For each weight w of the `anchor` ranking and each held head h (the first h notes
of the fusion without anchor text keep their places, query.ranking.Fusion.anchor_head), every question is
ranked offline from LightRAG's cached context in each mode (bench/fusion_sweep.py's `load_set`) and for
`search` (naive's rankings), and scored by recall@5 and MRR. `w=0` is the fusion without anchor text.

The variant is chosen on the `--tune` sets alone (mean recall@5 over the modes and search, then MRR, then the
smaller weight and head) and reported on every set with the project's rule: no held-out set may lose more than
0.01 recall@5 or MRR in any mode or in search. docs/retrieval.md, "Anchor text", has the figures and the story
of the held head.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fusion_sweep import MODES, add_set_options, each_set, load_set, score  # noqa: E402
from wikirag.query.ranking import FUSION, Fusion, fuse, note_rankings  # noqa: E402

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5)
HEADS = (0, 1, 2, 3)
COLUMNS = (*MODES, "search")


def variant(weight: float, head: int) -> Fusion:
    return replace(FUSION, weights={**FUSION.weights, "anchor": weight}, anchor_head=head)


def figures(data: dict[str, Any], fusion: Fusion) -> dict[str, tuple[float, float]]:
    """recall@5 and MRR per mode (fused sources) and for search (naive's rankings), under `fusion`."""
    per: dict[str, list[tuple[float, float]]] = {c: [] for c in COLUMNS}
    memo = data.setdefault("anchor_memo", {})
    for q, (item, answers) in enumerate(zip(data["questions"], data["answers"], strict=True)):
        for mode in MODES:
            if (q, mode) not in memo:
                a = answers[mode]
                memo[q, mode] = note_rankings(data["notes"], data["lexical"], item["q"], chunks=a.chunks,
                                              entities=a.entities, relations=a.relations)[0]
        for column in COLUMNS:
            rankings = memo[q, "naive" if column == "search" else column]
            ranked = [p for p, _s, _f in fuse(data["notes"], rankings, fusion, data["lexical"])]
            per[column].append(score(ranked, set(item["notes"])))
    return {c: (statistics.mean(r for r, _ in v), statistics.mean(m for _, m in v)) for c, v in per.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--tune", action="append", default=[], help="a set the variant is chosen on")
    args = parser.parse_args()
    sets = {}
    for name, vault, store, qfile in each_set(args):
        data = load_set(vault, store, qfile, args.cache)
        if data["lexical"].anchors is None:
            raise SystemExit(f"{name}: the store has no anchor text; run `wikirag index` on it with this wikirag")
        sets[name] = data
        print(f"{name}: {len(data['questions'])} questions, anchor text for {data['lexical'].anchors.size} names")
    grid = [(w, h) for w in WEIGHTS for h in (HEADS if w else (0,))]
    scored = {n: {v: figures(data, variant(*v)) for v in grid} for n, data in sets.items()}
    tune = args.tune or list(sets)[:1]

    def objective(v: tuple[float, int]) -> tuple[float, float, float, int]:
        cells = [scored[t][v][c] for t in tune for c in COLUMNS]
        return (round(statistics.mean(r for r, _ in cells), 4), round(statistics.mean(m for _, m in cells), 4),
                -v[0], -v[1])

    chosen = max(grid, key=objective)
    shipped = (FUSION.weights.get("anchor", 0.0), FUSION.anchor_head)
    print(f"\nrecall@5 / MRR per mode and search; chosen on {', '.join(tune)}: w={chosen[0]} head={chosen[1]}; "
          f"shipped w={shipped[0]} head={shipped[1]}")
    for n in sets:
        print(f"\n{n}")
        print(f"  {'variant':14}" + "".join(f"{c:>14}" for c in COLUMNS))
        for v in grid:
            mark = (" < chosen" if v == chosen else "") + (" < shipped" if v == shipped else "")
            print(f"  w={v[0]:<4} h={v[1]:<4} " + "".join(f"  {scored[n][v][c][0]:.3f}/{scored[n][v][c][1]:.3f}"
                                                          for c in COLUMNS) + mark)
    print("\nshipped minus no anchor text, worst cell per set (rule: held out, no loss over 0.01):")
    for n in sets:
        deltas = [(scored[n][shipped][c][i] - scored[n][(0.0, 0)][c][i], c, "recall@5" if i == 0 else "MRR")
                  for c in COLUMNS for i in (0, 1)]
        worst = min(deltas)
        verdict = "tuned on" if n in tune else ("ok" if worst[0] >= -0.01 else "FAILS")
        print(f"  {n:12} {worst[0]:+.3f} ({worst[2]}, {worst[1]})  {verdict}")


if __name__ == "__main__":
    main()
