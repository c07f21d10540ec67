"""Note rankings and their fusion: what `search` returns and how LightRAG's cited sources are ordered.

Each signal ranks notes (vault paths), best first:
- `names`: notes whose title, alias or file name the question mentions, when the name is specific;
- `lexical`: BM25 over the store's chunks, aggregated per note (best chunk, plus a share of the rest);
- `lightrag`: the notes of LightRAG's context chunks, in LightRAG's chunk order (its relevance order; its own
  reference list counts chunks per note, which lets one long note outrank the note that answers);
- `graph` (graph modes): the notes that own the entities and relation ends LightRAG retrieved;
- `anchor`: notes by BM25 over what other notes say where they link to them (index.anchors), which can only
  reorder below the first `anchor_head` notes of the other signals' fusion.

They are fused by weighted reciprocal rank (score = sum of weight / (k + rank)). The weights, k and the
aggregation share were chosen by a sweep (bench/fusion_sweep.py) on one question set and checked on two
others held out (see the README's figures); the docstring of `FUSION` says what the sweep found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from wikirag.index.lexical import tokenize
from wikirag.query.notes import fold

if TYPE_CHECKING:
    from wikirag.index.lexical import LexicalIndex
    from wikirag.query.notes import NoteTable


@dataclass(frozen=True)
class Fusion:
    """How rankings are fused. `weights` per signal; `k` damps the head of each ranking (smaller: the first
    ranks count more); `spread` is the share of a note's other matching chunks added to its best BM25 chunk;
    `name_share` is how common (share of chunks holding its rarest word) a mentioned name may be and still
    point at its note."""

    weights: dict[str, float] = field(default_factory=dict)
    k: int = 60
    spread: float = 0.0
    name_share: float = 0.02
    depth: int = 100  # BM25 chunks read per query
    # Navigation notes (hubs, maps of content, link tables): a note with at least `nav_density` distinct link
    # targets per BM25 token of its text has its fused score multiplied by `nav_factor` (1: no demotion).
    nav_density: float = 0.0
    nav_factor: float = 1.0
    # Anchor text is evidence about a note from other notes' sentences, and the note it comes from matches
    # the same words: the first `anchor_head` notes of the fusion without it keep their places (0: no hold).
    anchor_head: int = 0


# Chosen by bench/fusion_sweep.py on the sample vault's 44 questions and checked on the 32 data-engineering
# questions (and the other way round; both directions picked k=5 and BM25 first). With the default MiniLM
# embedder BM25 is by far the strongest single signal (recall@5 0.92 and 1.00 alone, LightRAG's own order
# 0.56-0.84), so it leads and a small k keeps its head: LightRAG's chunk order and the graph's entity notes
# reorder within it and bring up notes it ranks just below the cut (the graph signal finds the notes a
# thematic question spans). Names at any weight gained nothing on either set and cost MRR where titles are
# common words ("Python", "AWS"): 0.1 keeps a note found only by its alias in the list (cost: MRR -0.002).
# Aggregating more than a note's best chunk (spread) lowered MRR on the long-note set.
# A note that is mostly links answers few questions but matches many words of thematic ones (every name it
# lists): at 0.075 link targets per token or more (the middle of the plateau 0.066-0.084 found on the sample
# set alone, the weakest factor of the plateau 0.5-1.0) its score is halved. Held out it gains or keeps every
# figure (docs/retrieval.md, "Navigation notes").
# Anchor text (docs/retrieval.md, "Anchor text"): 0.2 chosen on the sample set; it brings notes that other
# notes describe in the question's words into the first five (sample, mathwiki and tasks-docs gain in every
# mode). Unheld, it also put the note a "which tool …" question names second, behind a concept that note links
# in the same sentence (data-engineering MRR -0.07), hence the two held places.
TUNED_ON = ("sample_vault",)  # the question sets (bench/questions/) the weights were chosen on
FUSION = Fusion(weights={"names": 0.1, "lexical": 1.0, "lightrag": 0.2, "graph": 0.2, "anchor": 0.2}, k=5,
                spread=0.0, name_share=0.02, nav_density=0.075, nav_factor=0.5, anchor_head=2)


def rrf(rankings: dict[str, list[str]], k: int = 60, weights: dict[str, float] | None = None) -> list[tuple[str,
                                                                                                         float]]:
    """Reciprocal rank fusion: sum of w / (k + rank), rank from 1; duplicates keep their best rank."""
    score: dict[str, float] = defaultdict(float)
    for name, ids in rankings.items():
        weight = (weights or {}).get(name, 1.0)
        if weight <= 0:
            continue
        for rank, item in enumerate(dict.fromkeys(ids), start=1):
            score[item] += weight / (k + rank)
    return sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))


def in_turn(first: list[str], second: list[str], limit: int) -> list[str]:
    """first[0], second[0], first[1], ...: an id both hold comes once, at its first turn; at most `limit`."""
    merged = dict.fromkeys(i for pair in zip_longest(first, second) for i in pair if i is not None)
    return list(merged)[:limit]


def context_chunk_order(index: LexicalIndex | None, query: str) -> Callable[[list[str], int], list[str]]:
    """The chunks an LLM answer reads in naive and mix mode (lightrag.context_order): LightRAG's vector hits and
    BM25's best chunks for the question taken in turn, as LightRAG itself merges its vector and graph chunks in
    mix mode, as many as LightRAG asked for. In turn, not by the notes' fusion weights: the context holds 20
    chunks, and where the vectors are the stronger side (mathwiki) BM25 must not push them out (docs/retrieval.md,
    "What an answer reads"). Without a lexical index, LightRAG's own hits."""

    def choose(vector_ids: list[str], top_k: int) -> list[str]:
        if index is None:
            return vector_ids
        return in_turn(vector_ids, [index.chunk_ids[i] for i, _ in index.top(query, top_k)], top_k)

    return choose


def context_entity_order(notes: NoteTable, index: LexicalIndex | None,
                         query: str) -> Callable[[list[str], int], list[str]]:
    """The entities an LLM answer starts from in local mode: LightRAG's vector hits and the
    entities of the notes of BM25's best chunks, in turn (as `context_chunk_order`); each entity brings its own
    chunks into the context, as LightRAG's do."""

    def choose(vector_names: list[str], top_k: int) -> list[str]:
        if index is None:
            return vector_names
        paths = dict.fromkeys(index.chunk_paths[i] for i, _ in index.top(query, top_k * 2))
        entities = [notes.entity(p) for p in paths if p in notes.notes]
        return in_turn(vector_names, entities, top_k)

    return choose


def lexical_notes(index: LexicalIndex | None, query: str, fusion: Fusion = FUSION) -> tuple[list[str], dict[str, str]]:
    """Notes by BM25: best chunk's score plus `spread` x the note's other matching chunks; and the best
    chunk's heading per note."""
    if index is None:
        return [], {}
    score: dict[str, float] = {}
    headings: dict[str, str] = {}
    for i, value in index.top(query, fusion.depth):
        path = index.chunk_paths[i]
        if path not in headings:
            headings[path] = index.headings[i]
            score[path] = value
        else:
            score[path] += fusion.spread * value
    return sorted(score, key=lambda p: -score[p]), headings


def named_notes(notes: NoteTable, index: LexicalIndex | None, query: str, fusion: Fusion = FUSION) -> list[str]:
    """Notes named in the query by a specific name, rarest name first. A title or alias whose words are
    common in the vault (a note called "Python" in a data wiki) is a topic, not a pointer to that note,
    unless the query is a note's title or file name and nothing else: someone searching "Note A" means the
    note (an alias stays a name like any other: "Turing", written in many notes, is a topic)."""
    surfaces = notes.names_in(query)
    if index is None or not index.size:
        return notes.notes_named_in(query)
    limit = max(2, fusion.name_share * index.size)
    whole = fold(query).strip().strip("?!.,;:\"'")
    out = [p for p in notes.by_name.get(whole, []) if whole in (fold(notes.title(p)), fold(PurePath(p).stem))]

    def spread(surface: str) -> int:
        ids = [index.term_id(t) for t in tokenize(surface)]
        if not ids or None in ids:
            return 0
        return min(int(index.indptr[i + 1] - index.indptr[i]) for i in ids)

    for surface in sorted(surfaces, key=spread):
        if spread(surface) <= limit:
            out += [p for p in notes.by_name.get(surface, []) if p not in out]
    return out


def chunk_notes(chunks: list[dict[str, Any]]) -> list[str]:
    """The notes of LightRAG's context chunks in the order LightRAG ranked the chunks, each once."""
    return list(dict.fromkeys(str(c.get("file_path", "")) for c in chunks if c.get("file_path")))


def graph_notes(notes: NoteTable, entities: list[dict[str, Any]], relations: list[dict[str, Any]]) -> list[str]:
    """Notes owning the retrieved entities and relation ends, entities and relations taken in turn (each
    in LightRAG's order). An entity's own note is the note it stands for, not every note that mentions it."""
    owner = notes.entity_notes
    from_entities = [owner[e["entity_name"]] for e in entities if e.get("entity_name") in owner]
    from_relations = [owner[name] for r in relations for name in (r.get("src_id"), r.get("tgt_id"))
                      if name in owner]
    merged: list[str] = []
    for i in range(max(len(from_entities), len(from_relations))):
        for side in (from_entities, from_relations):
            if i < len(side) and side[i] not in merged:
                merged.append(side[i])
    return merged


def note_rankings(notes: NoteTable, index: LexicalIndex | None, query: str, *,
                  chunks: list[dict[str, Any]] | None = None, entities: list[dict[str, Any]] | None = None,
                  relations: list[dict[str, Any]] | None = None,
                  fusion: Fusion = FUSION) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Every signal's ranking for this query, and the best BM25 chunk's heading per note. `chunks`,
    `entities` and `relations` are LightRAG's context (None: no LightRAG retrieval, lexical only)."""
    lexical, headings = lexical_notes(index, query, fusion)
    rankings = {"names": named_notes(notes, index, query, fusion), "lexical": lexical}
    if chunks is not None:
        rankings["lightrag"] = chunk_notes(chunks)
    if entities or relations:
        rankings["graph"] = graph_notes(notes, entities or [], relations or [])
    if index is not None and index.anchors is not None:
        rankings["anchor"] = anchor_notes(notes, index.anchors, query, fusion)
    return rankings, headings


def anchor_notes(notes: NoteTable, anchors: LexicalIndex, query: str, fusion: Fusion = FUSION) -> list[str]:
    """Notes by BM25 over the sentences other notes link to them in (rows are linked names: a name without
    a note of its own, an unresolved link's, is left out)."""
    owner = notes.entity_notes
    names = (anchors.chunk_ids[i] for i, _ in anchors.top(query, fusion.depth))
    return list(dict.fromkeys(owner[name] for name in names if name in owner))


def navigation_notes(notes: NoteTable, index: LexicalIndex | None, density: float) -> frozenset[str]:
    """Notes with at least `density` distinct link targets (names row "links") per BM25 token of their chunks:
    hubs and maps of content, whose text is mostly the names they link."""
    if index is None or density <= 0:
        return frozenset()
    tokens = index.tokens_per_note()
    return notes.memo(("navigation", density), tokens, lambda: frozenset(
        p for p, row in notes.notes.items()
        if tokens.get(p, 0) > 0 and isinstance(row.get("links"), int) and row["links"] >= density * tokens[p]))


def fuse(notes: NoteTable, rankings: dict[str, list[str]], fusion: Fusion = FUSION,
         index: LexicalIndex | None = None) -> list[tuple[str, float, list[str]]]:
    """(path, score, the signals that found it), best first, notes of this vault only. With the lexical `index`,
    navigation notes (`navigation_notes`) have their score multiplied by `fusion.nav_factor`. The first
    `fusion.anchor_head` notes of the fusion without anchor text stay first (Fusion.anchor_head)."""
    scored = _fused_scores(notes, rankings, fusion, index)
    if fusion.anchor_head and rankings.get("anchor") and fusion.weights.get("anchor", 1.0) > 0:
        without = {name: ids for name, ids in rankings.items() if name != "anchor"}
        head = [p for p, _ in _fused_scores(notes, without, fusion, index)[:fusion.anchor_head]]
        rest = [(p, s) for p, s in scored if p not in head]
        score, floor, held = dict(scored), rest[0][1] if rest else 0.0, []
        for p in reversed(head):  # a held note scores at least what follows it: scores never rise down the list
            floor = max(score[p], floor)
            held.append((p, floor))
        scored = held[::-1] + rest
    return [(p, s, [n for n, ids in rankings.items() if p in ids and fusion.weights.get(n, 1.0) > 0])
            for p, s in scored]


def _fused_scores(notes: NoteTable, rankings: dict[str, list[str]], fusion: Fusion,
                  index: LexicalIndex | None) -> list[tuple[str, float]]:
    scored = [(p, s) for p, s in rrf(rankings, fusion.k, fusion.weights) if p in notes.notes]
    if fusion.nav_factor != 1:
        navigation = navigation_notes(notes, index, fusion.nav_density)
        if navigation:
            scored = sorted(((p, s * fusion.nav_factor if p in navigation else s) for p, s in scored),
                            key=lambda kv: (-kv[1], kv[0]))
    return scored

