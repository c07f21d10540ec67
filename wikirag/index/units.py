"""What each extraction call reads (an *extraction unit*), from the plan: a note's stored chunks, the uncovered
sections of a note (policy "prose"), or a pack of small notes and sections (plan/packing.py).

`plan_units` decides membership once per run for every note the run may extract (stable: see packing), so
the cost model and the pipeline agree; `units_for` builds the units that hold some given notes, with the
content LightRAG reads, the hint the LLM sees, and which notes' text each unit holds.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from wikirag.graph.contribution import note_type
from wikirag.graph.records import ChunkRecord, NoteContribution
from wikirag.lightrag.ids import md5_id, xml_safe
from wikirag.markdown.chunking import chunk_text, heading_record
from wikirag.models import ParsedNote
from wikirag.plan.packing import Pack, PackItem, pack_hint, pack_items
from wikirag.plan.packing import extract_text as packed_text

UNIT_PREFIX = "unit-"


@dataclass
class Unit:
    key: str  # the id LightRAG's extraction sees: a stored chunk's id, or unit-<md5 of content>
    content: str
    tokens: int
    order: int
    heading: dict | None
    hint: str
    members: list[str]  # the notes whose text it holds, in order


@dataclass
class UnitPlan:
    """Which notes share a pack; the rest are extracted alone."""

    packs: list[Pack] = field(default_factory=list)
    pack_of: dict[str, int] = field(default_factory=dict)  # path -> index in packs
    items: dict[str, PackItem] = field(default_factory=dict)  # every extract-routed note's LLM text


def extract_text(note: ParsedNote, spans: list[tuple[int, int]]) -> str:
    """What the LLM reads of a note: its body, or (policy "prose") its uncovered sections."""
    return packed_text(note.body, spans)


def plan_units(plan: Any, paths: list[str], encoder: Any, chunk_size: int, pack_max_tokens: int) -> UnitPlan:
    """Pack the given notes (every note the run extracts, not only the changed ones: membership must not
    depend on what changed)."""
    out = UnitPlan()
    for path in sorted(paths):
        note = plan.vault.notes[path]
        spans = plan.decisions[path].sections
        text = extract_text(note, spans)
        tokens = plan.body_tokens.get(path, 0) if not spans else len(encoder.encode_ordinary(text))
        out.items[path] = PackItem(path, plan.names[path], text, tokens)
    packs, _alone = pack_items(out.items.values(), chunk_size, pack_max_tokens)
    out.packs = packs
    out.pack_of = {p: i for i, pack in enumerate(packs) for p in pack.paths}
    return out


def pack_unit(plan: Any, pack: Pack, tokenizer: Any, default_type: str) -> Unit:
    content = xml_safe(pack.content())
    members = []
    for path in pack.paths:
        note = plan.vault.notes[path]
        targets = sorted({plan.names[r.path] for _l, r in plan.vault.outgoing(path)
                          if r.path and not r.is_attachment and r.path != path and r.path in plan.names})
        members.append((plan.names[path], note_type(note, default_type), list(note.aliases), targets))
    return Unit(md5_id(content, UNIT_PREFIX), content, len(tokenizer.encode(content)), 0, None,
                pack_hint(members), pack.paths)


def note_units(plan: Any, path: str, contribution: NoteContribution, tokenizer: Any, config: Any) -> list[Unit]:
    """A note extracted alone: its stored chunks (whole note), or its uncovered sections chunked as the store
    chunks (policy "prose")."""
    spans = plan.decisions[path].sections
    hint = plan.hints[path]
    if not spans:
        return [Unit(c.id, c.content, c.tokens, c.order, c.heading, hint, [path]) for c in contribution.chunks]
    note = plan.vault.notes[path]
    units: list[Unit] = []
    text = extract_text(note, spans)
    for c in chunk_text(text, tokenizer, config.index.chunk_token_size, config.index.chunk_overlap_token_size):
        content = xml_safe(c.content)
        key = md5_id(f"{contribution.doc_id}:{content}", UNIT_PREFIX)
        if all(u.key != key for u in units):
            units.append(Unit(key, content, c.tokens, len(units), heading_record(note.title, c.headings), hint,
                              [path]))
    return units


def member_chunks(contribution: NoteContribution, spans: list[tuple[int, int]]) -> list[ChunkRecord]:
    """The stored chunks a note's extracted records may cite: those holding text of the extracted sections, in
    the order the sections hold them. Each place of a repeated chunk counts: its one record has the first
    place's lines, so a section repeating an earlier one's paragraph had none of its windows to cite. A
    section is whole lines and a chunk never crosses a heading (a token window has its block's lines, all in
    one section), so a chunk's lines meet a section exactly when its characters do."""
    if not spans:
        return contribution.chunks
    spans = sorted(spans)  # heading sections: apart, so their ends grow too
    starts, ends = [a for a, _ in spans], [b for _, b in spans]
    by_id = {c.id: c for c in contribution.chunks}
    hit = dict.fromkeys(chunk_id for chunk_id, first, last in contribution.places
                        if (k := bisect_right(starts, last) - 1) >= 0 and ends[k] >= first)
    return [by_id[chunk_id] for chunk_id in hit] or contribution.chunks
