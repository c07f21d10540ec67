"""`search`: ranked notes with their best passages, no LLM. The library function behind `wikirag search` and
the MCP `search` tool.

The rankings of query.ranking are fused there (weighted reciprocal rank): BM25 over the store's chunks
leads; the names in the query, the notes of LightRAG's context chunks in the chosen mode and, in the graph
modes, the notes owning the entities LightRAG retrieved adjust it. Mode `lexical` skips LightRAG (no
embedding model, no vector stores): the fastest cold start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikirag.errors import QueryFailed
from wikirag.index.lexical import IS_CJK, tokenize
from wikirag.markdown.chunking import heading_path
from wikirag.query.notes import NoteTable, obsidian_uri, read_question, unfinished_index
from wikirag.query.ranking import FUSION, fuse, note_rankings, rrf
from wikirag.vault.on_disk import Listings
from wikirag.vault.read import read_vault_note

if TYPE_CHECKING:
    from wikirag.index.lexical import LexicalIndex
    from wikirag.query.retrieve import QueryResult
    from wikirag.settings import WikiragConfig

__all__ = ["SEARCH_MODES", "SearchHit", "SearchResult", "fused_sources", "rrf", "search_notes"]

# naive first: on both question sets it matched mix at a fraction of the cost (no graph storages to load)
SEARCH_MODES = ("naive", "mix", "hybrid", "local", "global", "lexical")
# Paragraphs of one note scored for its passages: tokenizing each costs ~60 µs, so a 5 MB note of 69,000
# paragraphs took 3 s per hit. Past this, only paragraphs holding a word of the query are scored, the first
# this many of them.
MAX_SCORED_PARAGRAPHS = 2000


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


def fused_sources(notes: NoteTable, index: LexicalIndex | None, question: str, retrieved: QueryResult,
                  sources: list[str]) -> list[tuple[str, list[str]]]:
    """LightRAG's sources re-ranked: its context (chunks, and entities/relations in the graph modes) fused
    with BM25 and the names in the question; each note with the signals that found it."""
    rankings, _ = note_rankings(notes, index, question, chunks=retrieved.chunks, entities=retrieved.entities,
                                relations=retrieved.relations)
    rankings["lightrag"] = list(dict.fromkeys([*rankings["lightrag"], *sources]))
    return [(p, found) for p, _score, found in fuse(notes, rankings, FUSION, index)]


def best_passages(text: str, query: str, count: int = 2, width: int = 320) -> tuple[list[str], list[str]]:
    """The note's paragraphs sharing most search tokens with the query (frontmatter left out), and the heading
    path of the section holding the best one ([] above the first heading). Heading lines are not passages:
    they name the section (code blocks hold none). Comments (`%%…%%`, `<!--…-->`) are left out, as Obsidian's
    reading view leaves them out and BM25 does not index them: a generated note's `<!-- include: … -->` lines
    were shown as its best passage."""
    from wikirag.markdown.context import mask_spans
    from wikirag.markdown.layout import lay_out
    from wikirag.markdown.properties import split_frontmatter

    _block, body = split_frontmatter(text.replace("\r\n", "\n"))
    layout = lay_out(body)
    comments = [(a, b) for a, b in layout.hidden if body.startswith(("%%", "<!--"), a)]  # not `$$` math
    if comments:  # blanked in place, so the layout's lines still hold; a line they cut closes up
        masked = mask_spans(body, comments, count=False)[0]
        body = "\n".join(now if now == was else _closed_up(now)
                          for now, was in zip(masked.split("\n"), body.split("\n"), strict=True))
    headings = {line: (level, title) for _offset, level, title, line in layout.headings}
    paragraphs: list[tuple[list[str], str]] = []  # (heading path, paragraph)
    path: list[tuple[int, str]] = []
    lines: list[str] = []

    def close() -> None:
        if lines:
            paragraphs.append(([t for _lv, t in path], "\n".join(lines).strip()))
            lines.clear()

    for number, line in enumerate(body.split("\n")):
        if number in headings:
            close()
            level, title = headings[number]
            path[:] = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
        elif line.strip():
            lines.append(line)
        else:
            close()
    close()
    wanted = set(tokenize(query))
    chars = {t for t in wanted if len(t) == 1 and IS_CJK.match(t)}  # a lone CJK character: in the text's bigrams
    if len(paragraphs) > MAX_SCORED_PARAGRAPHS:
        paragraphs = _holding(paragraphs, query, wanted)[:MAX_SCORED_PARAGRAPHS] or paragraphs[:1]

    def shared(paragraph: str) -> int:
        tokens = set(tokenize(paragraph))
        return len(wanted & tokens) + sum(1 for c in chars - tokens if any(c in t for t in tokens))

    scored = sorted((-shared(paragraph), order, heading, paragraph)
                    for order, (heading, paragraph) in enumerate(paragraphs))
    best = [row for row in scored[:count] if row[0] < 0] or scored[:1]
    passages = [p if len(p) <= width else p[: width - 1].rstrip() + "…" for *_x, p in best]
    return (best[0][2] if best else []), passages


def _holding(paragraphs: list[tuple[list[str], str]], query: str,
             tokens: set[str]) -> list[tuple[list[str], str]]:
    """The paragraphs holding a word of the query or one of its search tokens (a stem is the start of most of
    its word's forms), found by one regular expression rather than by tokenizing each."""
    words = {w for w in re.findall(r"\w+", query.casefold()) if len(w) > 1} | tokens
    if not words:
        return []
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.IGNORECASE)
    return [item for item in paragraphs if pattern.search(item[1])]


def _closed_up(line: str) -> str:
    """A line a comment was blanked out of: its indentation, then its words one space apart."""
    return line[: len(line) - len(line.lstrip())] + " ".join(line.split()) if line.strip() else ""


def read_note_text(vault: Path, path: str, listings: Listings | None = None) -> str:
    """The note's text as the index read it (BOM dropped, "\\n" line ends); "" when it cannot be read.
    `listings` (read.find_on_disk) keeps the folders listed while finding notes named past ASCII."""
    return read_vault_note(vault, path, listings=listings).text or ""


async def search_notes(config: WikiragConfig, query: str, *, notes: NoteTable, lexical: LexicalIndex | None,
                       limit: int = 10, mode: str = "naive", rag: Any = None, **engine_kwargs: Any) -> SearchResult:
    """Fuse names, BM25 and LightRAG retrieval; `rag` is an open engine (one is opened when None)."""
    mode = mode.strip().lower()  # `-m Hybrid` is `-m hybrid`
    if mode not in SEARCH_MODES:
        raise QueryFailed(f"unknown search mode {mode!r}; choose one of {', '.join(SEARCH_MODES)}")
    query = read_question(query, "query")
    limit = max(1, limit)
    result_notes: list[str] = []
    if lexical is None:
        result_notes.append("no lexical index in this store yet: run `wikirag index` once to build it")
    unfinished = unfinished_index(config)
    if unfinished:
        result_notes.append(unfinished)
    retrieved = None
    if mode != "lexical":
        from wikirag.lightrag.query import too_short_for_retrieval
        from wikirag.query.retrieve import query_store

        if too_short_for_retrieval(query):  # LightRAG refuses "Go" or "C"; names and BM25 still find them
            result_notes.append(f"{query.strip()!r} is too short for LightRAG's retrieval (at least 3 "
                                "characters): ranked by names and BM25 only")
        else:
            retrieved = await query_store(config, query, mode=mode, context_only=True, rag=rag, notes=notes,
                                          fusion=False, **engine_kwargs)
    rankings, headings = note_rankings(notes, lexical, query, chunks=retrieved.chunks if retrieved else None,
                                       entities=retrieved.entities if retrieved else None,
                                       relations=retrieved.relations if retrieved else None)
    for chunk in retrieved.chunks if retrieved else []:
        path = chunk.get("file_path", "")
        if path and path not in headings and chunk.get("heading"):
            headings[path] = str(chunk.get("heading"))
    fused = fuse(notes, rankings, FUSION, lexical)[:limit]
    if fused and lexical is not None and not any(rankings.get(name) for name in ("lexical", "names", "anchor")):
        result_notes.append("none of the query's words matched a note's text: these are only the notes nearest to "
                            "it by meaning (LightRAG's vector search), however far that is")
    hits = []
    listings: Listings = {}
    for path, score, found in fused:
        section, passages = best_passages(read_note_text(config.vault, path, listings), query)
        title = notes.title(path)
        # where the best passage is (a breadcrumb as chunk headings are written), else the best chunk's heading
        heading = " > ".join(heading_path(title, section)) if section else headings.get(path, "")
        hits.append(SearchHit(
            path=path, title=title, heading=heading,
            obsidian_uri=obsidian_uri(config.vault, path, heading), score=round(score, 6), matched_by=found,
            passages=passages,
        ))
    return SearchResult(query=query, mode=mode, hits=hits, notes=result_notes)
