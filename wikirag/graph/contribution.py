"""One note's contribution to the graph, with no LLM and no I/O: its chunks, plus entity and relation
*fragments* (what this note says about each entity and each link) from its links and frontmatter.
Relation descriptions are the sentence around the link, never a canned "links to".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from wikirag.graph.naming import attachment_name, unresolved_name
from wikirag.graph.records import (
    ATTACHMENT_TYPE,
    DESCRIPTION_CHARS,
    UNRESOLVED_TYPE,
    ChunkRecord,
    EntityFragment,
    NoteContribution,
    RelationFragment,
    doc_id_for,
)
from wikirag.lightrag.ids import md5_id, xml_safe
from wikirag.markdown.chunking import chunk_text, heading_record
from wikirag.markdown.layout import Layout, lay_out
from wikirag.models import ParsedNote, Resolution, WikiLink

_WIKILINK_TEXT = re.compile(r"!?\[\[([^\]|]*)(?:\|([^\]]*))?\]\]")


_MD_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


@lru_cache(maxsize=1 << 16)  # pure; a sentence holding several links, and each link's text, recur
def plain_text(text: str) -> str:
    """Flatten link syntax to the words a reader sees."""
    if "[" not in text:  # no link syntax (links' sentences come flattened): nothing for the patterns to match
        return text.strip()
    text = _WIKILINK_TEXT.sub(lambda m: (m.group(2) or m.group(1).split("#")[0] or m.group(1)).strip(), text)
    return _MD_LINK_TEXT.sub(lambda m: m.group(1), text).strip()


def opening_paragraph(note: ParsedNote) -> str:
    """The first prose paragraph of the body (the layout pass's first paragraph or list, consecutive list
    items joined): no headings, code, comments, tables, quotes or embeds-only lines."""
    body = note.body
    layout = lay_out(body)
    picked: list[str] = []
    last_end = -1
    for start, end, kind in layout.blocks:
        if picked:
            if kind == "list" and start == last_end + 1:  # the next item of the same list
                picked.append(_block_text(body, start, end, layout))
                last_end = end
                continue
            break
        if kind not in ("para", "list"):
            continue
        text = _block_text(body, start, end, layout)
        if not text or text.startswith(("|", "![[", ">", "%%", "<!--", "---")):
            continue
        picked.append(text)
        last_end = end
    return _clip(plain_text(" ".join(picked)), DESCRIPTION_CHARS)


def _block_text(body: str, start: int, end: int, layout: Layout) -> str:
    """A block's lines, stripped and joined, with comments and math left out."""
    hidden = [(a, b) for a, b in layout.hidden if b > start and a < end]
    text = body[start:end]
    for a, b in reversed(hidden):
        text = text[: max(0, a - start)] + text[min(len(text), b - start):]
    return " ".join(line.strip() for line in text.split("\n") if line.strip())


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def note_type(note: ParsedNote, default: str) -> str:
    """Frontmatter `type`, else the top folder in the singular ("people" stays a folder name), else
    the default."""
    if note.type:
        return str(note.type).strip().lower() or default
    if "/" in note.path:
        return note.path.split("/", 1)[0].strip().lower() or default
    return default


def note_description(note: ParsedNote) -> str:
    parts = []
    summary = (note.description or "").strip() or opening_paragraph(note)
    if summary:
        parts.append(_clip(summary, DESCRIPTION_CHARS))
    if note.aliases:
        parts.append("Also known as: " + ", ".join(note.aliases) + ".")
    if note.tags:
        parts.append("Tags: " + ", ".join("#" + t for t in note.tags) + ".")
    return "\n".join(parts) or f"Note {note.path} (no text yet)."


def _chunks_for_line(chunks: list[ChunkRecord], body_line: int) -> list[str]:
    hits = [c.id for c in chunks if c.start_line <= body_line <= c.end_line]
    if hits:
        return hits
    return [chunks[0].id] if chunks else []  # frontmatter links belong to the note's first chunk


def link_targets(note: ParsedNote, outgoing: Iterable[tuple[WikiLink, Resolution]], names: dict[str, str],
                 unresolved_names: dict[str, str]) -> Iterable[tuple[WikiLink, str, str | None]]:
    """(link, target entity name, target type) for each of a note's links that makes a relation: the type is
    None for a note, `unresolved` or `attachment` otherwise. Self links and links to its own name are left out."""
    me = names[note.path]
    for link, resolution in outgoing:
        if resolution.status == "self" or (resolution.path == note.path):
            continue
        if resolution.path and resolution.is_attachment:
            target, target_type = attachment_name(resolution.path), ATTACHMENT_TYPE
        elif resolution.path:
            target, target_type = names[resolution.path], None
        else:
            target = unresolved_names.get(unresolved_name(link).casefold(), "")
            target_type = UNRESOLVED_TYPE
        if target and target != me:
            yield link, target, target_type


def link_description(src: str, tgt: str, link: WikiLink) -> str:
    context = plain_text(link.context) if link.context else ""
    label = plain_text(link.raw)
    if context and context != label and len(context.split()) > len(label.split()) + 1:
        return context
    where = f"frontmatter property '{link.frontmatter_key}'" if link.frontmatter_key else (
        "section '" + " > ".join(link.section) + "'" if link.section else "body"
    )
    verb = "embeds" if link.embed else "refers to"
    return f"{src} {verb} {tgt} in its {where}."


def note_contribution(
    note: ParsedNote,
    outgoing: Iterable[tuple[WikiLink, Resolution]],
    names: dict[str, str],
    unresolved_names: dict[str, str],
    tokenizer: Any,
    *,
    chunk_size: int,
    chunk_overlap: int,
    default_type: str,
) -> NoteContribution:
    """Everything one note puts into the graph. `names` maps note paths to entity names;
    `unresolved_names` maps a casefolded unresolved target to its canonical entity name."""
    doc_id = doc_id_for(note.path)
    me = names[note.path]
    chunks = [
        ChunkRecord(
            id=md5_id(f"{doc_id}:{c.content}", "chunk-"),
            content=xml_safe(c.content),
            tokens=c.tokens,
            order=c.order,
            heading=heading_record(note.title, c.headings),
            start_line=c.start_line,
            end_line=c.end_line,
        )
        for c in chunk_text(note.body, tokenizer, chunk_size, chunk_overlap)
    ]
    # Identical chunk text twice in one note gives one id: keep the first, LightRAG keys by id.
    seen: set[str] = set()
    chunks = [c for c in chunks if not (c.id in seen or seen.add(c.id))]
    contribution = NoteContribution(note.path, doc_id, me, chunks)
    contribution.entities.append(
        EntityFragment(me, xml_safe(note_type(note, default_type)), xml_safe(note_description(note)),
                       [c.id for c in chunks], note.path, 0)
    )

    by_target: dict[str, RelationFragment] = {}
    target_types: dict[str, str | None] = {}
    for link, target, target_type in link_targets(note, outgoing, names, unresolved_names):
        body_line = link.line - note.body_line_offset
        chunk_ids = _chunks_for_line(chunks, body_line)  # frontmatter lines (<= 0) fall to the first chunk
        keywords = [xml_safe(k) for k in (*link.section, *(["embed"] if link.embed else []),
                                          *([link.heading.replace("#", " > ")] if link.heading else []),
                                          *note.tags)]
        fragment = by_target.get(target)
        description = xml_safe(link_description(me, target, link))
        if fragment is None:
            by_target[target] = RelationFragment(me, target, description, keywords, chunk_ids, note.path, 1)
            target_types[target] = target_type
            continue
        fragment.occurrences += 1
        if description not in fragment.description.split("\n"):
            fragment.description += "\n" + description
        fragment.keywords += [k for k in keywords if k not in fragment.keywords]
        fragment.chunk_ids += [c for c in chunk_ids if c not in fragment.chunk_ids]

    for target, relation in sorted(by_target.items()):
        contribution.relations.append(relation)
        mention = relation.description.split("\n")[0] if target_types[target] == UNRESOLVED_TYPE else ""
        contribution.entities.append(
            EntityFragment(target, target_types[target], mention, relation.chunk_ids, note.path, 1)
        )
    return contribution

