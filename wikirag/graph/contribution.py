"""One note's contribution to the graph, with no LLM and no I/O: its chunks, plus entity and relation
*fragments* (what this note says about each entity and each link) from its links and frontmatter.
Relation descriptions are the sentence around the link, never a canned "links to".
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from functools import lru_cache
from itertools import accumulate
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
from wikirag.markdown.chunking import Chunk, chunk_text, heading_record
from wikirag.markdown.html import without_html_tags
from wikirag.markdown.layout import lay_out
from wikirag.models import ParsedNote, Resolution, WikiLink


@lru_cache(maxsize=1 << 16)  # pure; a sentence holding several links, and each link's text, recur
def plain_text(text: str) -> str:
    """Flatten link syntax to the words a reader sees: `[[target#heading|label]]` and `![[...]]` give the
    label, else the target without its heading (else the inner text); `[text](dest)` and `![text](dest)` give
    the text. Each kind in one scan: a pattern tried again from every `[[` up to the next `]` took minutes on a
    note of `[[ ` repeated without a close."""
    if "[" not in text:  # no link syntax (links' sentences come flattened): nothing for the patterns to match
        return text.strip()
    return _flatten_markdown_links(_flatten_wikilinks(text)).strip()


_BAR_OR_CLOSE = re.compile(r"[|\]]")


_CLOSE = re.compile(r"\]")


_PAREN_CLOSE = re.compile(r"\)")


class _Next:
    """The first index at or after `at` holding the pattern's character (len(text) if none), for `at` that
    never decreases: the answer stands until `at` passes it, so each stretch of the text is scanned once."""

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        self.text, self.pattern, self.found = text, pattern, -1

    def __call__(self, at: int) -> int:
        if self.found < at:
            m = self.pattern.search(self.text, at)
            self.found = m.start() if m else len(self.text)
        return self.found


def _flatten_wikilinks(text: str) -> str:
    """Each `[[inner]]` / `[[inner|label]]` (a `!` before it goes too) as its label or target. A `[[` starts a
    link when the first `]` or `|` after it opens `]]`, or is a `|` whose next `]` opens `]]`."""
    bar_or_close, close = _Next(text, _BAR_OR_CLOSE), _Next(text, _CLOSE)
    pieces: list[str] = []
    pos = search = 0  # copied up to pos; the next `[[` is looked for from search
    while (i := text.find("[[", search)) >= 0:
        j = bar_or_close(i + 2)
        end, label = -1, None
        if text.startswith("]]", j):
            end = j + 2
        elif text.startswith("|", j) and text.startswith("]]", k := close(j + 1)):
            end, label = k + 2, text[j + 1 : k]
        if end < 0:
            search = i + 1
            continue
        inner = text[i + 2 : j]
        start = i - 1 if i > pos and text[i - 1] == "!" else i
        pieces += (text[pos:start], (label or inner.split("#")[0] or inner).strip())
        pos = search = end
    return "".join(pieces) + text[pos:] if pieces else text


def _flatten_markdown_links(text: str) -> str:
    """Each `[text](dest)` (a `!` before it goes too) as its text: the first `]` after the `[` is followed by
    `(`, and a `)` closes it."""
    close, paren_close = _Next(text, _CLOSE), _Next(text, _PAREN_CLOSE)
    pieces: list[str] = []
    pos = search = 0
    while (i := text.find("[", search)) >= 0:
        j = close(i + 1)
        if not text.startswith("(", j + 1) or (k := paren_close(j + 2)) == len(text):
            search = i + 1
            continue
        start = i - 1 if i > pos and text[i - 1] == "!" else i
        pieces += (text[pos:start], text[i + 1 : j])
        pos = search = k + 1
    return "".join(pieces) + text[pos:] if pieces else text


_NEWLINE = re.compile("\n")


def opening_paragraph(note: ParsedNote) -> str:
    """The first prose paragraph of the body (the layout pass's first paragraph or list, consecutive list
    items joined), as a reader sees it: no comments, math, HTML tags or block ids (`_is_prose` says which
    paragraphs are passed over)."""
    body = note.body
    layout = lay_out(body)
    hidden = _Hidden(layout.hidden)
    picked: list[str] = []
    last_end = -1
    for start, end, kind in layout.blocks:
        continues_list = bool(picked) and kind == "list" and start == last_end + 1
        if picked and not continues_list:
            break
        if kind not in ("para", "list"):
            continue
        text = without_html_tags(_block_text(body, start, end, hidden, list_items=kind == "list"))
        if continues_list or _is_prose(text, body[start:end]):
            picked.append(text)
            last_end = end
    return _clip(plain_text(_items_joined([text for text in picked if text.strip()])), DESCRIPTION_CHARS)


def _is_prose(text: str, block: str) -> bool:
    """Whether a paragraph (`text`, as read; `block`, as written) can describe its note: not a table, an embed, a
    quote, a rule or the Excalidraw banner, not tags alone once its HTML is gone (928 of mathwiki's 929 notes open
    with `<div class="topSpace"></div>`, half the obsidian-tasks docs with `<span class="related-pages">#css</span>`,
    which each such note's entity had as its description, the text its vector is made from), not Dataview fields."""
    if text.startswith(("|", "![[", ">", "%%", "<!--", "---", _EXCALIDRAW_BANNER)):
        return False
    return not all(word.startswith("#") for word in text.split()) and not _metadata(block)


# The Excalidraw plugin opens every drawing with "==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu…": every
# drawing's entity had it as its description, so their vectors were one
_EXCALIDRAW_BANNER = "==⚠"
_FIELD = re.compile(r"[^\W\d][\w /()-]{0,40}?::\s")  # a Dataview inline field: `up:: [[Parent]]`


def _metadata(block: str) -> bool:
    """A block of Dataview inline fields (78 of oldwinter-cards' notes open with `up::` or `x::` lines): metadata
    to Obsidian's Dataview, not prose. Lines of `Key: value` are text to Obsidian and stay: passing over
    mathwiki's "Date Created: …" lines gave its notes their proofs' first lines as descriptions, and LightRAG's
    own hybrid and mix order fell from 0.508 to 0.358 recall@5 on its question set (bench/retrieval.py)."""
    lines = [line.strip().lstrip("-*+ ") for line in block.split("\n") if line.strip()]
    return bool(lines) and all(_FIELD.match(line) for line in lines)


class _Hidden:
    """The layout's comments and math (in document order, apart: one scan marks them left to right), found by
    bisection: each block looked at all of them, and a note of 10,000 comment paragraphs took 5 s."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self.starts = [a for a, _ in spans]
        self.reach = list(accumulate((b for _, b in spans), max))

    def meeting(self, start: int, end: int) -> list[tuple[int, int]]:
        near = self.spans[bisect_right(self.reach, start) : bisect_left(self.starts, end)]
        return [(a, b) for a, b in near if b > start]


_BLOCK_ID = re.compile(r"\s\^[A-Za-z0-9-]+$")  # `… ^abc123` names the block for links; a reader does not see it
# `- `, `1. `, `- [ ] `, and a heading's marks in an item (`- # Title`: Obsidian shows the item as a heading)
_ITEM_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])\s+(?:\[.\]\s+)?(?:#{1,6}(?:\s+|$))?")


def _block_text(body: str, start: int, end: int, hidden: _Hidden, *, list_items: bool = False) -> str:
    """A block's lines, stripped and joined, with comments, math and block ids left out. `list_items`: each item without
    its marker or checkbox, the items joined with "; " ("- [[Data Architecture]]" read "- Data Architecture")."""
    pieces, pos = [], start
    for a, b in hidden.meeting(start, end):
        pieces.append(body[pos:max(pos, a)])
        pos = max(pos, min(end, b))
    pieces.append(body[pos:end])
    lines = [_BLOCK_ID.sub("", line.strip()) for line in "".join(pieces).split("\n") if line.strip()]
    if not list_items:
        return " ".join(lines)
    items: list[str] = []
    for line in lines:
        marker = _ITEM_MARKER.match(line)
        if marker or not items:
            items.append(line[marker.end():] if marker else line)
        else:
            items[-1] += " " + line  # an item's text wrapped onto the next line
    return _items_joined([item for item in items if item])


def _items_joined(items: list[str]) -> str:
    """List items as one text: "; " between them, a space after an item that ends a sentence itself."""
    return "".join(item + ("" if k == len(items) - 1 else " " if item[-1:] in ".!?:;。！？" else "; ")
                   for k, item in enumerate(items))


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


def name_card(note: ParsedNote) -> str:
    """The text of a note with no body that declares what it is in its properties: its title, aliases and
    description, one a line ("" when it declares none). Some vaults keep a note per quote or person with the
    title as the whole note (114 of oldwinter-cards' 964): without a chunk no search could find them."""
    declared = [note.title if note.frontmatter.get("title") else "", *note.aliases, note.description or ""]
    return "\n".join(dict.fromkeys(line.strip() for line in declared if line and line.strip()))


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


class _LinkChunks:
    """The chunks holding each link, asked in document order: the chunk(s) covering its line, or, where its
    line's block was cut into token windows, the window(s) holding the link itself (on a long paragraph every
    window covers the line: each link would name them all). Frontmatter links belong to the first chunk."""

    def __init__(self, body: str, body_line_offset: int, pieces: list[Chunk], ids: list[str]) -> None:
        self.body, self.body_line_offset, self.ids = body, body_line_offset, ids
        # in chunk order all four only grow: a link's chunks are one run of them
        self.first_lines = [c.start_line for c in pieces]
        self.last_lines = [c.end_line for c in pieces]
        self.starts = [c.start for c in pieces]
        self.ends = [c.end for c in pieces]
        self.line_starts: list[int] = []
        self.cursor = (0, 0)  # (line, offset): where the next link of a windowed line is looked for

    def __call__(self, link: WikiLink) -> list[str]:
        line = link.line - self.body_line_offset  # frontmatter lines (<= 0) are in no chunk
        lo, hi = bisect_left(self.last_lines, line), bisect_right(self.first_lines, line)
        if hi - lo > 1 and link.frontmatter_key is None:
            at = self._offset(line, link.raw)
            if at >= 0:  # the windows holding the whole link, else (a link longer than the overlap) any part
                end = at + len(link.raw)
                lo, hi = bisect_left(self.ends, end), bisect_right(self.starts, at)
                if lo >= hi:
                    lo, hi = bisect_right(self.ends, at), bisect_left(self.starts, end)
        if lo >= hi:
            return self.ids[:1]
        return list(dict.fromkeys(self.ids[lo:hi]))  # identical chunks share an id

    def _offset(self, line: int, raw: str) -> int:
        """Where the link starts in the body: its text on its line, after the line's links before it."""
        if not self.line_starts:
            self.line_starts = [0, *(m.end() for m in _NEWLINE.finditer(self.body))]
        if line > len(self.line_starts):
            return -1
        at = self.cursor[1] if self.cursor[0] == line else self.line_starts[line - 1]
        found = self.body.find(raw, at)
        if found >= 0:
            self.cursor = (line, found + len(raw))
        return found


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


def is_link_stand_in(src: str, tgt: str, description: str) -> bool:
    """Whether a relation description is `link_description`'s stand-in for a link with no sentence of its own
    ("A refers to B in its body."): words about where the link sits, none about B."""
    return description.startswith((f"{src} refers to {tgt} in its ", f"{src} embeds {tgt} in its "))


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
    pieces = chunk_text(note.body if note.body.strip() else name_card(note), tokenizer, chunk_size, chunk_overlap)
    all_chunks = [
        ChunkRecord(
            id=md5_id(f"{doc_id}:{c.content}", "chunk-"),
            content=xml_safe(c.content),
            tokens=c.tokens,
            order=c.order,
            heading=heading_record(note.title, c.headings),
            start_line=c.start_line,
            end_line=c.end_line,
        )
        for c in pieces
    ]
    chunks_of = _LinkChunks(note.body, note.body_line_offset, pieces, [c.id for c in all_chunks])
    # Identical chunk text twice in one note gives one id: keep the first, LightRAG keys by id.
    seen: set[str] = set()
    chunks = [c for c in all_chunks if not (c.id in seen or seen.add(c.id))]
    contribution = NoteContribution(note.path, doc_id, me, chunks,
                                    places=[(c.id, c.start_line, c.end_line) for c in all_chunks])
    contribution.entities.append(
        EntityFragment(me, xml_safe(note_type(note, default_type)), xml_safe(note_description(note)),
                       [c.id for c in chunks], note.path, 0)
    )

    by_target: dict[str, RelationFragment] = {}
    target_types: dict[str, str | None] = {}
    for link, target, target_type in link_targets(note, outgoing, names, unresolved_names):
        chunk_ids = chunks_of(link)
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

