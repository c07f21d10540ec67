"""Per-vault fusion weights from pseudo-queries drawn from the vault's own notes (no hand-written answers).

Not part of wikirag: it failed the held-out rule for issue 15 (docs/retrieval.md, "Tried, not shipped"), so
it lives beside bench/calibration.py, which measures it, for the next attempt.

The shipped weights (query.ranking.FUSION) lead with BM25 because BM25 was the stronger signal on English
prose vaults; on a vault of short LaTeX-heavy notes the vector side can be the stronger one. Calibration asks
each signal to find the note a pseudo-query was drawn from: a deterministic sample of notes, from each the
line or sentence with most words (math, links, markup and "Key: value" metadata stripped, the note's title
and alias words removed so that it is not a title echo, stopwords dropped). The LightRAG weight (and the
graph weight with it) is chosen from a small grid by the fused ranking's mean reciprocal rank of the source
note; ties go to the shipped weight. Why it failed: a pseudo-query is the note's own words, so BM25 finds its
note far more often than the vectors on every vault (mathwiki included), while paraphrased questions favour
the vectors on mathwiki.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from wikirag.index.lexical import tokenize
from wikirag.query.notes import NoteTable
from wikirag.query.ranking import FUSION, Fusion, fuse, note_rankings

VERSION = 1
SAMPLE = 50  # notes drawn as pseudo-queries
GRID = (0.2, 0.5, 1.0, 2.0)  # LightRAG (and graph) weight against lexical 1; 0.2 is the shipped one
MAX_WORDS = 12
MIN_WORDS = 5

_STOP = frozenset("""a about above after again all also an and any are as at be because been being below between
both but by can could did do does each for from further had has have having here how if in into is it its
itself just let more most no nor not now of off on once only or other our out over own same should so some
such than that the their them then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your then thus hence since where whose
note proof see""".split())
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|\\\[.*?\\\]|\\\(.*?\\\)", re.S)
_LINK = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_MDLINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# tags, URLs, headings, fences, quotes, tables and "Key: value" metadata lines (Date Created:, Tags:, title:)
_NOISE = re.compile(r"<[^>]+>|https?://\S+|#[\w/-]+|^\s*(?:#+|```|~~~|>|\||[\w ]{1,30}:\s).*$", re.M)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")  # a line is a sentence too: metadata lines stay apart
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)


def sample_notes(paths: list[str]) -> list[str]:
    """All notes in a fixed pseudo-random order (by a hash of the path): the same vault gives the same draw;
    the caller takes the first that yield a pseudo-query."""
    return sorted(paths, key=lambda p: hashlib.sha1(p.encode("utf-8")).hexdigest())


def pseudo_query(text: str, names: list[str]) -> str | None:
    """The note's wordiest sentence (or line) without math, markup, title/alias words, stopwords and repeats;
    None if too short."""
    from wikirag.markdown.properties import split_frontmatter

    _block, body = split_frontmatter(text.replace("\r\n", "\n"))
    body = _MATH.sub(" ", body)
    body = _LINK.sub(lambda m: m.group(2) or m.group(1), body)
    body = _NOISE.sub(" ", _MDLINK.sub(r"\1", body))
    banned = {t for name in names for t in tokenize(name)}
    best: list[str] = []
    for sentence in _SENTENCE.split(body):
        words = list(dict.fromkeys(w for w in _WORD.findall(sentence.replace("_", " "))
                                   if len(w) > 2 and w.casefold() not in _STOP and not set(tokenize(w)) & banned))
        if len(words) > len(best):
            best = words
    return " ".join(best[:MAX_WORDS]) if len(best) >= MIN_WORDS else None


def _rr(ranked: list[str], target: str) -> float:
    return next((1.0 / i for i, p in enumerate(ranked[:10], start=1) if p == target), 0.0)


def weighted(weight: float, base: Fusion = FUSION) -> Fusion:
    """`base` with the LightRAG and graph weights set to `weight` (lexical and names unchanged)."""
    return replace(base, weights={**base.weights, "lightrag": weight, "graph": weight})


async def calibrate(notes: NoteTable, lexical: Any, read: Callable[[str], str],
                    vector_chunks: Callable[[str], Awaitable[list[dict[str, Any]]]],
                    count: int = SAMPLE) -> dict[str, Any]:
    """Draw pseudo-queries, rank with each signal (LightRAG's naive chunks via `vector_chunks`), choose the
    weight. Returns the weights with the per-signal and per-weight MRR and the sample size."""
    drawn: list[tuple[str, dict[str, list[str]]]] = []
    for path in sample_notes(list(notes.notes)):
        if len(drawn) >= count:
            break
        note = notes.notes[path]
        names = [Path(path).stem, note.get("title") or "", note.get("entity") or "", *note.get("aliases", [])]
        query = pseudo_query(read(path), [n for n in names if n])
        if query is None:
            continue
        rankings, _ = note_rankings(notes, lexical, query, chunks=await vector_chunks(query))
        drawn.append((path, rankings))
    signals = {name: round(statistics.mean(_rr(r.get(name, []), p) for p, r in drawn), 4) if drawn else 0.0
               for name in ("lexical", "lightrag")}
    by_weight = {str(w): round(statistics.mean(_rr([x for x, _s, _f in fuse(notes, r, weighted(w), lexical)], p)
                                               for p, r in drawn), 4) if drawn else 0.0 for w in GRID}
    shipped = FUSION.weights["lightrag"]
    chosen = max(GRID, key=lambda w: (by_weight[str(w)], -abs(w - shipped)))
    return {"version": VERSION, "notes": len(notes.notes), "sample": len(drawn), "signal_mrr": signals,
            "fused_mrr": by_weight, "weights": dict(weighted(chosen).weights)}
