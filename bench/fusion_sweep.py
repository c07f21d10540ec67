"""Choose the fusion weights on one question set and report them on the others (held out), both directions.

    python bench/fusion_sweep.py --set NAME VAULT QUESTIONS.json [--store DIR] --set ... [--holdout NAME]
                                 [--cache DIR]

Per set, LightRAG is asked each question once per mode (context only, its own order, no fusion); every
candidate `Fusion` (query.ranking) is then scored offline from those answers: recall@5 and MRR per mode and
for `search` (naive). For each set used for tuning, the best candidate on it (mean recall@5 over the modes
and search, then mean MRR) is printed with its figures on every other set; `--holdout` sets are never used to
choose. The shipped `query.ranking.FUSION` is scored on every set last. `--cache DIR` keeps LightRAG's
answers between runs (keyed by store and question file); the names table and BM25 index are always read from
the store as it is.

Each set: `--set NAME VAULT QUESTIONS` with an optional `--store` right after it (see bench/retrieval.py).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import pickle
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wikirag.index.lexical import load_index  # noqa: E402
from wikirag.index.run import run_index, store_exists  # noqa: E402
from wikirag.query.engine import WarmEngine  # noqa: E402
from wikirag.query.notes import read_note_table  # noqa: E402
from wikirag.query.ranking import FUSION, Fusion, fuse, note_rankings  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

MODES = ("naive", "local", "global", "hybrid", "mix")
GRID = {
    "names": (0.0, 0.25, 0.5, 1.0),
    "lightrag": (0.0, 0.1, 0.2, 0.3, 0.5),
    "graph": (0.0, 0.1, 0.2, 0.3, 0.5),
    "k": (5, 10, 20, 60),
    "spread": (0.0, 0.2),
    "name_share": (0.02, 0.1),
}


def score(ranked: list[str], expected: set[str], k: int = 5) -> tuple[float, float]:
    recall = len(expected & set(ranked[:k])) / len(expected)
    rr = next((1.0 / i for i, p in enumerate(ranked[:10], start=1) if p in expected), 0.0)
    return recall, rr


async def collect(vault: Path, store: Path | None, questions: list[dict]) -> dict[str, Any]:
    """LightRAG's context per question and mode, and the engine's notes table and lexical index."""
    config = load_config(vault, store=store)
    answers = []
    async with WarmEngine(config) as engine:
        for item in questions:
            answers.append({m: await engine.query(item["q"], mode=m, fusion=False) for m in MODES})
        return {"answers": answers, "notes": engine.notes, "lexical": engine._lexical}


def load_set(vault: Path, store: Path | None, qfile: Path, cache: Path | None) -> dict[str, Any]:
    questions = json.loads(qfile.read_text())["questions"]
    key = hashlib.sha1(f"{store or vault}|{qfile.resolve()}|{qfile.stat().st_mtime}".encode()).hexdigest()[:12]
    cached = cache / f"sweep-{key}.pkl" if cache else None
    if cached and cached.is_file():
        data = pickle.loads(cached.read_bytes())
        # the names table and BM25 index as the store has them now (an index run may have rebuilt them since)
        config = load_config(vault, store=store)
        data["notes"], data["lexical"] = read_note_table(config), load_index(config.workspace_dir)
        if data["lexical"] is None:
            raise SystemExit(f"{config.workspace_dir}: no BM25 index of this version; run `wikirag index` on it")
    else:
        config = load_config(vault, store=store)
        if not store_exists(config):  # run_index runs its own event loop: index before collect's
            print(f"indexing {vault} first …", file=sys.stderr)
            run_index(config)
        data = asyncio.run(collect(vault, store, questions))
        if cached:
            cache.mkdir(parents=True, exist_ok=True)
            cached.write_bytes(pickle.dumps(data))
    data["questions"] = questions
    return data


def rankings_for(data: dict[str, Any], fusion: Fusion) -> list[dict[str, dict[str, list[str]]]]:
    """Per question and mode the signals' rankings; they depend on `spread` and `name_share` only, so they
    are computed once per pair and reused for every weighting."""
    key = (fusion.spread, fusion.name_share, fusion.depth)
    memo = data.setdefault("memo", {})
    if key not in memo:
        notes, lexical = data["notes"], data["lexical"]
        memo[key] = [{m: note_rankings(notes, lexical, item["q"], chunks=answers[m].chunks,
                                        entities=answers[m].entities, relations=answers[m].relations,
                                        fusion=fusion)[0] for m in MODES}
                     for item, answers in zip(data["questions"], data["answers"], strict=True)]
    return memo[key]


def evaluate(data: dict[str, Any], fusion: Fusion) -> dict[str, tuple[float, float]]:
    """recall@5 and MRR per mode (fused) and for `search` (naive's rankings, the same fusion)."""
    notes = data["notes"]
    per: dict[str, list[tuple[float, float]]] = {m: [] for m in (*MODES, "search")}
    for item, by_mode in zip(data["questions"], rankings_for(data, fusion), strict=True):
        expected = set(item["notes"])
        for mode in (*MODES, "search"):
            rankings = by_mode["naive" if mode == "search" else mode]
            per[mode].append(score([p for p, _s, _f in fuse(notes, rankings, fusion, data["lexical"])], expected))
    return {m: (statistics.mean(r for r, _ in v), statistics.mean(rr for _, rr in v)) for m, v in per.items()}


def objective(figures: dict[str, tuple[float, float]]) -> tuple[float, float]:
    """Mean recall@5 over the modes and search, then mean MRR (rounded so that noise does not decide)."""
    return (round(statistics.mean(r for r, _ in figures.values()), 4),
            round(statistics.mean(rr for _, rr in figures.values()), 4))


def simplicity(fusion: Fusion) -> float:
    """Among equal candidates the one leaning least on the signals other than BM25 (and the larger k) wins."""
    return -sum(w for name, w in fusion.weights.items() if name != "lexical") + fusion.k / 1000 - fusion.spread


def best(objectives: list[tuple[float, float]], grid: list[Fusion]) -> int:
    return max(range(len(grid)), key=lambda i: (objectives[i], simplicity(grid[i])))


def candidates() -> list[Fusion]:
    keys = list(GRID)
    out = []
    for values in itertools.product(*(GRID[k] for k in keys)):
        v = dict(zip(keys, values, strict=True))
        out.append(Fusion(weights={"names": v["names"], "lexical": 1.0, "lightrag": v["lightrag"],
                                   "graph": v["graph"]}, k=v["k"], spread=v["spread"], name_share=v["name_share"]))
    return out


def describe(f: Fusion) -> str:
    w = f.weights
    return (f"names {w['names']:.2f} lexical 1 lightrag {w['lightrag']:.2f} graph {w['graph']:.2f} k {f.k} "
            f"spread {f.spread} name_share {f.name_share}")


def table(rows: dict[str, dict[str, tuple[float, float]]]) -> None:
    cols = (*MODES, "search")
    print(f"  {'set':28}" + "".join(f"{c:>14}" for c in cols))
    for name, figures in rows.items():
        print(f"  {name:28}" + "".join(f"{figures[c][0]:8.3f}/{figures[c][1]:.2f}" for c in cols))


def add_set_options(parser: argparse.ArgumentParser) -> None:
    """--set NAME VAULT QUESTIONS (repeated), --store NAME=DIR and --cache DIR: what every question-set bench takes."""
    parser.add_argument("--set", nargs=3, action="append", metavar=("NAME", "VAULT", "QUESTIONS"), required=True)
    parser.add_argument("--store", action="append", default=[], help="NAME=DIR: the store of that set")
    parser.add_argument("--cache", type=Path)


def each_set(args: argparse.Namespace) -> Iterator[tuple[str, Path, Path | None, Path]]:
    """(name, vault, store or None, questions file) per --set, its store from --store NAME=DIR."""
    stores = dict(s.split("=", 1) for s in args.store)
    for name, vault, qfile in args.set:
        yield name, Path(vault), Path(stores[name]) if name in stores else None, Path(qfile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--holdout", action="append", default=[], help="a set never used for choosing")
    args = parser.parse_args()
    sets = {}
    for name, vault, store, qfile in each_set(args):
        started = time.perf_counter()
        sets[name] = load_set(vault, store, qfile, args.cache)
        print(f"{name}: {len(sets[name]['questions'])} questions ({time.perf_counter() - started:.0f} s)")
    grid = candidates()
    print(f"{len(grid)} candidates; figures are recall@5/MRR")
    tuning = [name for name in sets if name not in args.holdout]
    scored = {name: [objective(evaluate(sets[name], f)) for f in grid] for name in tuning}
    choices = [(name, best(scored[name], grid)) for name in tuning]
    if len(tuning) > 1:
        joint = [tuple(statistics.mean(o[i][j] for o in scored.values()) for j in (0, 1)) for i in range(len(grid))]
        choices.append(("+".join(tuning), best(joint, grid)))
    for name, index in choices:
        fusion = grid[index]
        print(f"\ntuned on {name}: {describe(fusion)}")
        table({(other if other in name.split("+") else f"{other} (held out)"): evaluate(data, fusion)
               for other, data in sets.items()})
    print(f"\nshipped FUSION: {describe(FUSION)}")
    table({name: evaluate(data, FUSION) for name, data in sets.items()})
    print("\nLightRAG alone (no fusion), for comparison:")
    for name, data in sets.items():
        per = {m: [score([s.path for s in answers[m].sources], set(item["notes"])) for item, answers in
                   zip(data["questions"], data["answers"], strict=True)] for m in MODES}
        print(f"  {name:28}" + "".join(f"{statistics.mean(r for r, _ in v):8.3f}/"
                                        f"{statistics.mean(x for _, x in v):.2f}" for v in per.values()))


if __name__ == "__main__":
    main()
