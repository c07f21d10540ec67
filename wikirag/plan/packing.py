"""Small-note packing: extract-routed notes (or the sections of them that go to the LLM) much shorter than a
chunk share one extraction call, so a 30-word note does not pay LightRAG's ~1,800-token extraction prompt
alone.

A pack is a *synthetic* extraction input: each member's text under its own title line, in folder (path)
order, up to the chunk size, with one hint covering the pack. It is never stored: the stored chunks stay
per note (retrieval and citations unchanged); only the LLM call is shared, and the pipeline attributes its
answer back to each member (index/extract.py).

Membership is stable: a pack never crosses a folder, and a note whose path hashes to an *anchor* always
starts a new pack, so adding, deleting or resizing one note can only move pack boundaries up to the next
anchor (about `1/ANCHOR_EVERY` of a folder's small notes), and LightRAG's LLM cache answers every pack
whose text did not change.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from wikirag.markdown.payloads import mask_payloads
from wikirag.plan.hints import HINT_TITLE, MAX_LISTED_LINKS

ANCHOR_EVERY = 8  # one small note in this many starts a pack whatever came before it
TITLE_PREFIX = "# "  # a member's title line inside a pack


@dataclass
class PackItem:
    """One extract-routed note's text for the LLM (the whole body, or its uncovered sections)."""

    path: str
    title: str
    text: str
    tokens: int


@dataclass
class Pack:
    members: list[PackItem] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [m.path for m in self.members]

    def content(self) -> str:
        """What the LLM reads: each member under its title line."""
        return "\n\n".join(self.texts())

    def texts(self) -> list[str]:
        """What `content` joins with blank lines: each member's title line, then its text (member_block)."""
        out = []
        for m in self.members:
            out += [f"{TITLE_PREFIX}{m.title.strip()}", m.text.strip()]
        return out


def member_block(title: str, text: str) -> str:
    return f"{TITLE_PREFIX}{title.strip()}\n\n{text.strip()}"


def extract_text(body: str, spans: list[tuple[int, int]]) -> str:
    """What the LLM reads of a note: its body, or (policy "prose") its uncovered sections (body line spans),
    each encoded payload cut to its stand-in as chunk_text cuts it (a pasted image is no text to read)."""
    if not spans:
        return mask_payloads(body.strip())
    lines = body.split("\n")
    return mask_payloads("\n\n".join("\n".join(lines[a - 1 : b]).strip() for a, b in spans).strip())


def is_anchor(path: str) -> bool:
    return hashlib.sha1(path.encode("utf-8")).digest()[0] % ANCHOR_EVERY == 0


def pack_items(items: Iterable[PackItem], chunk_size: int, pack_max_tokens: int,
               title_tokens: Callable[[str], int] | None = None) -> tuple[list[Pack], list[PackItem]]:
    """(packs of two or more members, items left alone). Items of at most `pack_max_tokens` are packed in
    path order within their folder, up to `chunk_size` tokens (title lines and joins included)."""
    count_title = title_tokens or (lambda title: len(title.split()) + 2)
    alone: list[PackItem] = []
    packs: list[Pack] = []
    current = Pack()
    used = 0
    folder = None
    for item in sorted(items, key=lambda i: i.path):
        if pack_max_tokens <= 0 or item.tokens > pack_max_tokens or not item.text.strip():
            alone.append(item)
            continue
        size = item.tokens + count_title(item.title) + 2
        here = posixpath.dirname(item.path)
        if current.members and (here != folder or is_anchor(item.path) or used + size > chunk_size):
            packs.append(current)
            current, used = Pack(), 0
        current.members.append(item)
        used += size
        folder = here
    if current.members:
        packs.append(current)
    lone = [p.members[0] for p in packs if len(p.members) == 1]
    return [p for p in packs if len(p.members) > 1], sorted(alone + lone, key=lambda i: i.path)


def pack_hint(members: Sequence[tuple[str, str, list[str], list[str]]]) -> str:
    """One hint for a pack: per member (entity name, type, aliases, linked entity names). Shorter than the
    members' own hints together: one instruction, one line per member."""
    return "".join(pack_hint_parts(members))


def pack_hint_parts(members: Sequence[tuple[str, str, list[str], list[str]]]) -> list[str]:
    """`pack_hint`'s text in parts that join to it, names apart (as plan.hints.hint_parts)."""
    parts = [_PACK_HEAD]
    for entity, kind, aliases, targets in members:
        also = f"; also called {', '.join(aliases)}" if aliases else ""
        parts += ("-", " " + entity)
        if targets:
            shown = targets[:MAX_LISTED_LINKS]
            parts += (f" (type: {kind}{also})", " ->")
            for t in shown[:-1]:
                parts += (" " + t, ",")
            if len(targets) > len(shown):
                parts += (" " + shown[-1], ",", f" … and {len(targets) - len(shown)} more\n")
            else:
                parts += (" " + shown[-1], "\n")
        else:
            parts.append(f" (type: {kind}{also})\n")
    parts.append(_PACK_TAIL)
    return parts


_PACK_HEAD = HINT_TITLE + "\nThe input holds several short notes, each under its own title line.\n"
_PACK_TAIL = ("Each note's entity and its listed relations are already in the graph. Extract ONLY entities and "
              "relations the text implies that are not listed above. When the text mentions a listed entity, use "
              "exactly the name given here.\n\n")
