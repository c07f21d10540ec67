"""Fusion weights that depend on the question (issue 15 item 3), offline on LightRAG's cached answers
(bench/fusion_sweep.py's cache), against the shipped fixed fusion.

    python bench/adaptive_fusion.py --set NAME VAULT QUESTIONS [--store NAME=DIR] ... [--tune NAME] [--cache DIR]
                                    [--rule FEATURE,THRESHOLD,LIGHTRAG,GRAPH]

A rule looks at cheap features of the question (BM25's note scores, the question's terms in the vocabulary,
the names signal, BM25/LightRAG agreement) and picks the `blend` weights for it instead of the shipped ones.
`--tune NAME` (the sample set only): the per-question oracle over a grid of weightings (the most any rule
choosing among them could reach), and every one-feature threshold rule with an a-priori direction, best
first. Without it: `RULE` (chosen on the sample set and fixed before any held-out figure was looked at)
against the shipped fusion on every set (`--rule`: another rule, for diagnosis only).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from fusion_sweep import MODES, add_set_options, each_set, load_set, score  # noqa: E402

from wikirag.index.lexical import tokenize  # noqa: E402
from wikirag.query.ranking import FUSION, Fusion, fuse, note_rankings  # noqa: E402

COLUMNS = (*MODES, "search")
# a-priori direction of each feature: True = the blend when feature >= t (BM25 unsure), False = when <= t
DIRECTIONS = {"flat": True, "second": True, "top": False, "max_idf": False, "known": False, "agree": False}
BLENDS = [(lr, g) for lr in (0.5, 1.0, 2.0) for g in (0.2, 0.5, 1.0)]
# Chosen on the sample set (--tune sample) before any held-out figure: the best objective (mean recall@5 over
# the modes and search, then MRR) is a plateau of `flat` >= 0.65-0.76 with LightRAG 0.5-2 and graph 1; its
# middle. "When BM25's 5th note scores at least 0.7 of its 1st, weigh LightRAG and the graph like BM25."
RULE = ("flat", 0.7, 1.0, 1.0)


def features(lexical: Any, question: str, rankings: dict[str, list[str]]) -> dict[str, float]:
    """flat: BM25 score of the 5th note / the 1st (best chunk per note; 0 with fewer than 5, 1 with none);
    second: the same for the 2nd; top: the 1st's score; max_idf: the rarest question term in the vault;
    known: share of the question's terms in the vocabulary; agree: notes in both BM25's and LightRAG's top 5."""
    best: dict[str, float] = {}
    for i, value in lexical.top(question, 100):
        best.setdefault(lexical.chunk_paths[i], value)
    scores = sorted(best.values(), reverse=True) + [0.0] * 5
    tokens = tokenize(question)
    idfs = []
    for token in tokens:
        t = lexical.term_id(token)
        if t is not None:
            df = int(lexical.indptr[t + 1] - lexical.indptr[t])
            idfs.append(math.log((lexical.size - df + 0.5) / (df + 0.5) + 1))
    top = scores[0]
    return {"flat": scores[4] / top if top else 1.0, "second": scores[1] / top if top else 1.0, "top": top,
            "max_idf": max(idfs, default=0.0), "known": len(idfs) / max(1, len(tokens)),
            "agree": len(set(rankings["lexical"][:5]) & set(rankings.get("lightrag", [])[:5]))}


def prepare(data: dict[str, Any]) -> list[tuple[dict, dict[str, float], dict[str, dict[str, list[str]]]]]:
    """Per question: the item, its features (on naive's rankings) and every mode's signal rankings."""
    rows = []
    for item, answers in zip(data["questions"], data["answers"], strict=True):
        by_mode = {m: note_rankings(data["notes"], data["lexical"], item["q"], chunks=answers[m].chunks,
                                    entities=answers[m].entities, relations=answers[m].relations)[0]
                   for m in MODES}
        rows.append((item, features(data["lexical"], item["q"], by_mode["naive"]), by_mode))
    return rows


def per_question(data: dict[str, Any], rows: list, choose: Callable[[dict[str, float]], Fusion]) -> list[dict]:
    out = []
    for item, feats, by_mode in rows:
        fusion = choose(feats)
        out.append({c: score([p for p, _s, _f in fuse(data["notes"], by_mode["naive" if c == "search" else c],
                                                      fusion, data["lexical"])], set(item["notes"])) for c in COLUMNS})
    return out


def figures(scores: list[dict]) -> dict[str, tuple[float, float]]:
    return {c: (statistics.mean(s[c][0] for s in scores), statistics.mean(s[c][1] for s in scores)) for c in COLUMNS}


def objective(fig: dict[str, tuple[float, float]]) -> tuple[float, float]:
    return (round(statistics.mean(r for r, _ in fig.values()), 4),
            round(statistics.mean(m for _, m in fig.values()), 4))


def weighted(lightrag: float, graph: float, k: int = FUSION.k) -> Fusion:
    return replace(FUSION, weights={**FUSION.weights, "lightrag": lightrag, "graph": graph}, k=k)


def rule_of(feature: str, threshold: float, lightrag: float, graph: float) -> Callable[[dict[str, float]], Fusion]:
    blend, up = weighted(lightrag, graph), DIRECTIONS[feature]
    return lambda f: blend if (f[feature] >= threshold if up else f[feature] <= threshold) else FUSION


def row(label: str, fig: dict[str, tuple[float, float]]) -> str:
    return f"  {label:30}" + "".join(f"{fig[c][0]:8.3f}/{fig[c][1]:.3f}" for c in COLUMNS)


def tune(data: dict[str, Any], rows: list) -> None:
    grid = [(lr, g, k) for lr in (0.2, 0.5, 1.0, 2.0, 5.0) for g in (0.2, 0.5, 1.0, 2.0) for k in (5, 20, 60)]
    each = {w: per_question(data, rows, lambda _f, w=w: weighted(*w)) for w in grid}
    base = each[(FUSION.weights["lightrag"], FUSION.weights["graph"], FUSION.k)]
    print(f"per-question oracle over {len(grid)} weightings (LightRAG, graph, k), recall@5:")
    for c in COLUMNS:
        oracle = statistics.mean(max(each[w][i][c][0] for w in grid) for i in range(len(rows)))
        print(f"  {c:8} shipped {statistics.mean(s[c][0] for s in base):.3f}  oracle {oracle:.3f}")
    results = []
    for feature in DIRECTIONS:
        for t in sorted({f[feature] for _i, f, _r in rows}):
            chosen = sum((f[feature] >= t) if DIRECTIONS[feature] else (f[feature] <= t) for _i, f, _r in rows)
            if 0 < chosen < len(rows):
                for lr, g in BLENDS:
                    fig = figures(per_question(data, rows, rule_of(feature, t, lr, g)))
                    results.append((objective(fig), feature, t, chosen, lr, g, fig))
    results.sort(key=lambda r: r[0], reverse=True)
    print(f"\n{len(results)} rules, best first (objective: mean recall@5, mean MRR; blended questions):")
    print(row("shipped", figures(base)) + f"   {objective(figures(base))}")
    for obj, feature, t, chosen, lr, g, fig in results[:15]:
        print(row(f"{feature}>={t:.3f}" if DIRECTIONS[feature] else f"{feature}<={t:.3f}", fig)
              + f"   {obj} n={chosen} lightrag {lr} graph {g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--tune", help="the set to choose a rule on (prints the oracle and the best rules)")
    parser.add_argument("--rule", help="FEATURE,THRESHOLD,LIGHTRAG,GRAPH instead of RULE (a diagnostic)")
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    print(f"  {'recall@5/MRR':30}" + "".join(f"{c:>14}" for c in COLUMNS))
    for name, vault, store, qfile in each_set(args):
        data = load_set(vault, store, qfile, args.cache)
        rows = prepare(data)
        if name == args.tune:
            tune(data, rows)
            continue
        feature, *values = args.rule.split(",") if args.rule else RULE
        rule = rule_of(feature, *map(float, values))
        blended = sum(rule(f) is not FUSION for _i, f, _r in rows)
        print(row(f"{name} shipped", figures(per_question(data, rows, lambda _f: FUSION))))
        print(row(f"{name} rule ({blended}/{len(rows)} blended)", figures(per_question(data, rows, rule))))
    print(f"\n{time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU, "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
