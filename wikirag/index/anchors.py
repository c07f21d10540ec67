"""Anchor text: what other notes say where they link to a note, as a BM25 index of its own.

Web search ranks a page by the words of the links that point to it. A vault's `[[links]]` sit in sentences
("He was one of the British delegation at the Pyry meeting …" in Dilly Knox's note, linking to Biuro Szyfrów),
and those sentences often hold the words a question uses for the note they link to when that note's own text
does not (docs/retrieval.md, "Anchor text"). The sentences are the descriptions of the relations a note's own
links gave (graph.contribution.link_description), without the stand-in a link with no sentence gets.

Two BM25 indexes over the same tokens, saved in the lexical index's file (index.lexical):
- `pairs`: one row per (linking note, linked name) with the linking note's sentences about it, keyed per linking
  note by its ledger row digest: a run tokenizes only the notes whose rows changed, as the chunk index does;
- `targets`: the pairs regrouped per linked name (an entity name; query.ranking maps it to its note), which
  is what a question is scored against: BM25 over everything the vault says around its links to a note.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wikirag.graph.contribution import is_link_stand_in
from wikirag.index.bm25 import bm25_weights, gather, splice
from wikirag.index.lexical import BM25_B, BM25_K1, LexicalIndex, build_index, no_weights, tokenize


def anchor_rows(entry: Any) -> list[tuple[str, list[str]]]:
    """(linked name, search tokens of the sentences) for each name a note's own links reach with a sentence."""
    linked = {f.name for f in entry.entities if f.rank == 1}
    rows = []
    for relation in entry.relations:
        if relation.src != entry.entity or relation.tgt not in linked:
            continue  # a relation LightRAG extracted, not one of the note's links
        # a link with no sentence of its own ("A refers to B in its body.") still names B: its anchor is the name
        sentences = [relation.tgt if is_link_stand_in(relation.src, relation.tgt, line) else line
                     for line in relation.description.split("\n") if line.strip()]
        rows.append((relation.tgt, tokenize("\n".join(sentences))))
    return sorted(rows)


def source_keys(ledger: Any) -> dict[str, str]:
    """Per note what the pairs index records of it: its ledger row digest ("" while the row is unsaved, so
    that it is derived again until a sync sees it saved)."""
    notes = ledger.notes
    return {path: "" if path in notes.dirty else notes.digests.get(path, "") for path in notes}


def sync_pairs(ledger: Any, old: LexicalIndex | None) -> tuple[LexicalIndex, bool]:
    """The pairs index in step with the ledger, and whether any pair's text changed. The rows of notes whose
    ledger row is unchanged since `old` are kept as they are, the others derived again (`old` None: every
    note). Nothing scores pairs, so their BM25 weights are not computed (`no_weights`)."""
    keys = source_keys(ledger)
    if old is None:
        old = build_index([])
    dirty = {p for p, key in keys.items() if not key or old.note_keys.get(p) != key}
    kept: dict[str, list[int]] = {}
    for i, source in enumerate(old.chunk_paths):
        kept.setdefault(source, []).append(i)
    changed = any(source not in keys for source in kept)  # a note gone with its links
    ledger.notes.load(sorted(dirty))
    rows: list[tuple[str, str, str]] = []
    added: list[list[str]] = []
    layout: list[int] = []
    for source in sorted(keys):
        if source not in dirty:
            for i in kept.get(source, []):
                rows.append((old.chunk_ids[i], source, old.headings[i]))
                layout.append(i)
            continue
        fresh = anchor_rows(ledger.notes[source])
        changed = changed or fresh != [(old.headings[i], old.tokens_of(i)) for i in kept.get(source, [])]
        for target, tokens in fresh:
            rows.append((f"{source}\x1f{target}", source, target))
            layout.append(-1 - len(added))
            added.append(tokens)
    token_ids, offsets, vocab = splice(old.token_ids, old.offsets, old.vocab, added, layout)
    pairs = LexicalIndex([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], vocab, token_ids,
                         offsets, *no_weights(), keys)
    return pairs, changed


def by_target(pairs: LexicalIndex) -> LexicalIndex:
    """The pairs' tokens regrouped per linked name (names in sorted order), with BM25 weights over those groups."""
    names = sorted(set(pairs.headings))
    group = {name: g for g, name in enumerate(names)}
    rows_group = np.array([group[name] for name in pairs.headings], dtype=np.int64)
    token_ids, _ = gather(pairs.token_ids, pairs.offsets, np.argsort(rows_group, kind="stable"))
    lengths = np.bincount(rows_group, weights=np.diff(pairs.offsets), minlength=len(names)).astype(np.int64)
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data, indices, indptr = bm25_weights(token_ids, offsets, len(pairs.vocab), BM25_K1, BM25_B)
    return LexicalIndex(names, names, [""] * len(names), list(pairs.vocab), token_ids, offsets, data, indices,
                        indptr)
