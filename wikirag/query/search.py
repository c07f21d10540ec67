"""`search`: ranked notes with their best passages, no LLM. The library function behind `wikirag search` and
the MCP `search` tool.

Three rankings are fused by reciprocal rank (RRF, k=60; score = sum over rankings of 1/(60 + rank)):
- names: notes whose title, alias or file name the query mentions (Aho-Corasick over the names table);
- lexical: BM25 over the store's chunks (index.lexical), a note ranked by its best chunk;
- LightRAG: the sources of LightRAG's own retrieval in the chosen mode (vector search over chunks for
  `naive`, entities/relations plus chunks for the graph modes), context only.
Mode `lexical` skips LightRAG (no embedding model, no vector stores): the fastest cold start.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikirag.errors import QueryFailed
from wikirag.index.lexical import tokenize
from wikirag.query.notes import NoteTable, obsidian_uri

if TYPE_CHECKING:
    from wikirag.index.lexical import LexicalIndex
    from wikirag.settings import WikiragConfig

# naive first: on both question sets it matched mix at a fraction of the cost (no graph storages to load)
SEARCH_MODES = ("naive", "mix", "hybrid", "local", "global", "lexical")
RRF_K = 60
# Weights measured on two hand-written question sets (bench/retrieval.py): with the default MiniLM embedder
# BM25 is the strongest single ranking; LightRAG's ranking helps the first hit (MRR) at a low weight and
# costs recall at equal weight; a name helps when it is specific (see specific_names).
WEIGHTS = {"names": 0.5, "lexical": 1.0, "lightrag": 0.2}
# LightRAG's modes rank their sources by their own context; fused with BM25 and names at equal weight,
# every mode gained recall@5 and MRR on both question sets (bench/retrieval.py --no-fusion compares).
MODE_WEIGHTS = {"names": 0.5, "lexical": 1.0, "lightrag": 1.0}
SPECIFIC_SHARE = 0.02  # a name whose words occur in more than 2% of chunks ("Python", "Enigma") names no one note
_PARAGRAPH = re.compile(r"\n\s*\n")


@dataclass
class SearchHit:
    path: str
    title: str
    heading: str
    obsidian_uri: str
    score: float
    matched_by: list[str]
    passages: list[str] = field(default_factory=list)


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[SearchHit]
    notes: list[str] = field(default_factory=list)  # why a ranking is missing, e.g. no lexical index yet


def rrf(rankings: dict[str, list[str]], k: int = RRF_K, weights: dict[str, float] | None = None) -> list[tuple[str,
                                                                                                          float]]:
    """Reciprocal rank fusion: sum of w / (k + rank), rank from 1; duplicates keep their best rank."""
    score: dict[str, float] = defaultdict(float)
    for name, ids in rankings.items():
        weight = (weights or {}).get(name, 1.0)
        for rank, item in enumerate(dict.fromkeys(ids), start=1):
            score[item] += weight / (k + rank)
    return sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))


def lexical_ranking(index: LexicalIndex | None, query: str, depth: int = 60) -> tuple[list[str], dict[str, str]]:
    """Notes by their best BM25 chunk, and that chunk's heading per note."""
    if index is None:
        return [], {}
    paths: list[str] = []
    headings: dict[str, str] = {}
    for i, _score in index.top(query, depth):
        path = index.chunk_paths[i]
        if path not in headings:
            paths.append(path)
            headings[path] = index.headings[i]
    return paths, headings


def specific_names(notes: NoteTable, index: LexicalIndex | None, query: str) -> list[str]:
    """Notes named in the query by a specific name, rarest name first. A title or alias whose words are
    common in the vault (a note called "Python" in a data wiki) is a topic, not a pointer to that note."""
    surfaces = notes.names_in(query)
    if index is None or not index.size:
        return notes.notes_named_in(query)
    limit = max(2, SPECIFIC_SHARE * index.size)

    def spread(surface: str) -> int:
        ids = [index.term_id(t) for t in tokenize(surface)]
        if not ids or None in ids:
            return 0
        return min(int(index.indptr[i + 1] - index.indptr[i]) for i in ids)

    out: list[str] = []
    for surface in sorted(surfaces, key=spread):
        if spread(surface) <= limit:
            out += [p for p in notes.by_name.get(surface, []) if p not in out]
    return out


def fused_sources(notes: NoteTable, index: LexicalIndex | None, query: str, lightrag: list[str]) -> list[tuple[str,
                                                                                                             list[str]]]:
    """LightRAG's source notes re-ranked with BM25 and specific names (RRF); each with what found it."""
    rankings = {"names": specific_names(notes, index, query), "lexical": lexical_ranking(index, query)[0],
                "lightrag": lightrag}
    return [(p, [n for n, ids in rankings.items() if p in ids])
            for p, _ in rrf(rankings, weights=MODE_WEIGHTS) if p in notes.notes]


def best_passages(text: str, query: str, count: int = 2, width: int = 320) -> list[str]:
    """The note's paragraphs sharing most search tokens with the query (frontmatter left out)."""
    from wikirag.markdown.properties import split_frontmatter

    _block, body = split_frontmatter(text.replace("\r\n", "\n"))
    wanted = set(tokenize(query))
    scored = []
    for order, paragraph in enumerate(p.strip() for p in _PARAGRAPH.split(body)):
        if not paragraph or (paragraph.startswith("#") and "\n" not in paragraph):
            continue  # empty, or a heading on its own
        overlap = len(wanted & set(tokenize(paragraph)))
        scored.append((-overlap, order, paragraph))
    scored.sort()
    best = [p for overlap, _o, p in scored[:count] if overlap < 0] or [p for *_x, p in scored[:1]]
    return [p if len(p) <= width else p[: width - 1].rstrip() + "…" for p in best]


def read_note_text(vault: Path, path: str) -> str:
    try:
        return (vault / path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


async def search_notes(config: WikiragConfig, query: str, *, notes: NoteTable, lexical: LexicalIndex | None,
                       limit: int = 10, mode: str = "naive", rag: Any = None, **engine_kwargs: Any) -> SearchResult:
    """Fuse names, BM25 and LightRAG retrieval; `rag` is an open engine (one is opened when None)."""
    if mode not in SEARCH_MODES:
        raise QueryFailed(f"unknown search mode {mode!r}; choose one of {', '.join(SEARCH_MODES)}")
    if not query.strip():
        raise QueryFailed("the query is empty")
    limit = max(1, limit)
    result_notes: list[str] = []
    rankings: dict[str, list[str]] = {"names": specific_names(notes, lexical, query)}
    lexical_paths, headings = lexical_ranking(lexical, query)
    rankings["lexical"] = lexical_paths
    if lexical is None:
        result_notes.append("no lexical index in this store yet: run `wikirag index` once to build it")
    if mode != "lexical":
        from wikirag.query.retrieve import query_store

        retrieved = await query_store(config, query, mode=mode, context_only=True, rag=rag, notes=notes,
                                      fusion=False, **engine_kwargs)
        rankings["lightrag"] = [s.path for s in retrieved.sources]
        for chunk in retrieved.chunks:
            path = chunk.get("file_path", "")
            if path and path not in headings and chunk.get("heading"):
                headings[path] = str(chunk.get("heading"))
    fused = [(p, s) for p, s in rrf(rankings, weights=WEIGHTS) if p in notes.notes][:limit]
    hits = []
    for path, score in fused:
        heading = headings.get(path, "")
        hits.append(SearchHit(
            path=path, title=notes.title(path), heading=heading,
            obsidian_uri=obsidian_uri(config.vault, path, heading), score=round(score, 6),
            matched_by=[name for name, ids in rankings.items() if path in ids],
            passages=best_passages(read_note_text(config.vault, path), query),
        ))
    return SearchResult(query=query, mode=mode, hits=hits, notes=result_notes)
