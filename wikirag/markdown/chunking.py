"""Heading-aware token chunking, shared by injection, LLM extraction and the cost model.

A note is cut into blocks (paragraphs, fenced code kept whole) that remember the heading path they sit
under; blocks are packed greedily into chunks of at most `size` tokens, and a block larger than `size`
alone is split into token windows with `overlap` tokens of overlap (as LightRAG's own token chunker
does). Packing across headings keeps short notes in one chunk, which is what makes them cheap to
extract. The same function is handed to LightRAG as its `chunking_func`, so the chunks the cost model
counts are exactly the chunks LightRAG extracts.

An encoded payload (a pasted image's base64 data URI, a drawing: `markdown.payloads`) is cut to a short stand-in in
a chunk's content and token count, one line for a payload of many; its lines and characters still point at the
payload in the text. Text without one chunks exactly as it did.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from wikirag.markdown.layout import _ATX, lay_out
from wikirag.markdown.lines import heading_text
from wikirag.markdown.payloads import Payload, payloads
from wikirag.markdown.structure import code_lines


@dataclass
class Chunk:
    content: str
    tokens: int
    order: int
    headings: list[str] = field(default_factory=list)  # heading path of the chunk's first block
    start_line: int = 1  # 1-based lines of `text` the chunk covers
    end_line: int = 1
    start: int = 0  # the characters of `text` it covers: its lines, or a token window's own stretch of them
    end: int = 0


@dataclass
class _Block:
    lines: list[str]
    start: int  # 1-based
    headings: list[str]
    offset: int = 0  # of its first line in the text
    shown: str = ""  # its lines joined, payloads cut to their stand-ins (chunk_text)


def _blocks(text: str) -> list[_Block]:
    """Split text into paragraph blocks; headings start their own block; code stays whole. Headings and code
    come from the one layout pass (`markdown.structure`), so chunks, sections and routing agree on them."""
    layout = lay_out(text)
    headings = {line: (level, title) for _offset, level, title, line in layout.headings}
    in_code = code_lines(text, layout)
    blocks: list[_Block] = []
    path: list[tuple[int, str]] = []
    current: list[str] = []
    start = 1
    offset = at = 0  # character offsets of the block's first line and of this line

    def flush(next_start: int) -> None:
        nonlocal current, start
        if any(line.strip() for line in current):
            blocks.append(_Block(current, start, [h for _, h in path], offset))
        current, start = [], next_start

    for number, line in enumerate(text.split("\n"), start=1):
        heading = headings.get(number - 1)
        if heading is not None:
            flush(number)
            level, title = heading
            path[:] = [(lv, h) for lv, h in path if lv < level] + [(level, title.strip())]
            current, start, offset = [line], number, at
        elif not line.strip() and number - 1 not in in_code:
            current.append(line)
            flush(number + 1)
        else:
            if not current:
                start, offset = number, at
            current.append(line)
        at += len(line) + 1
    flush(0)
    return blocks


def chunk_text(text: str, tokenizer: Any, size: int = 600, overlap: int = 60) -> list[Chunk]:
    """Cut `text` into chunks of at most `size` tokens; `tokenizer` has encode() and decode()."""
    encode = tokenizer.encode
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError("chunk size must be positive and overlap smaller than it")
    chunks: list[Chunk] = []
    pending: list[_Block] = []
    pending_tokens = 0

    def emit(content: str, tokens: int, headings: list[str], lines: tuple[int, int], span: tuple[int, int]) -> None:
        chunks.append(Chunk(content, tokens, len(chunks), headings, *lines, *span))

    def flush_pending() -> None:
        nonlocal pending, pending_tokens
        if pending:
            content = "\n".join(b.shown for b in pending).strip("\n")
            last = pending[-1]
            emit(content, len(encode(content)), pending[0].headings,
                 (pending[0].start, last.start + len(last.lines) - 1),
                 (pending[0].offset, last.offset + sum(map(len, last.lines)) + len(last.lines) - 1))
        pending, pending_tokens = [], 0

    found = payloads(text)
    for block in _blocks(text):
        joined = "\n".join(block.lines)
        block.shown, moves = _cut(joined, block.offset, found) if found else (joined, [])
        if found and not block.shown.strip():
            continue  # the rest of a payload begun in a block before, cut to nothing: no chunk holds it
        body = block.shown.strip("\n")
        tokens = len(encode(body))
        if tokens > size:
            flush_pending()
            ids = encode(body)
            step = size - overlap
            lines = (block.start, block.start + len(block.lines) - 1)
            windows = []
            for begin in range(0, len(ids), step):
                windows.append((begin, min(begin + size, len(ids))))
                if begin + size >= len(ids):
                    break
            at = _char_offsets(body, ids, [m for w in windows for m in w], tokenizer.decode)
            lead = len(block.shown) - len(block.shown.lstrip("\n"))  # `body` is the shown text, stripped
            for begin, end in windows:
                window = ids[begin:end]
                emit(tokenizer.decode(window).strip(), len(window), block.headings, lines,
                     (block.offset + _in_text(lead + at[begin], moves, False),
                      block.offset + _in_text(lead + at[end], moves, True)))
            continue
        # +1 for the newline joining blocks
        if pending and pending_tokens + tokens + 1 > size:
            flush_pending()
        pending.append(block)
        pending_tokens += tokens + (1 if len(pending) > 1 else 0)
    flush_pending()
    return chunks


def _cut(joined: str, offset: int, found: list[Payload]) -> tuple[str, list[tuple[int, int, int, int]]]:
    """A block's text with the payloads in it cut to their stand-ins, and for each cut where its stand-in lies
    in the shown text and its payload in `joined`. A payload of many lines (a drawing, a base64 run broken into
    lines) may run on past the block (a blank line or a heading the layout saw in it): the block holds the part
    in it, the stand-in only in the block where the payload begins."""
    k = bisect_right(found, offset, key=lambda p: p.end)  # the first payload ending past the block's start
    parts: list[str] = []
    moves: list[tuple[int, int, int, int]] = []
    at = shift = 0
    while k < len(found) and found[k].start < offset + len(joined):
        start, end = max(found[k].start - offset, 0), min(found[k].end - offset, len(joined))
        stand_in = found[k].stand_in if found[k].start >= offset else ""
        parts += (joined[at:start], stand_in)
        moves.append((start + shift, start + shift + len(stand_in), start, end))
        shift += len(stand_in) - (end - start)
        at, k = end, k + 1
    return "".join(parts) + joined[at:], moves


def _in_text(shown_at: int, moves: list[tuple[int, int, int, int]], end: bool) -> int:
    """Where a place in a block's shown text lies in the block's own text: a window starting (ending) in a
    stand-in covers its whole payload."""
    k = bisect_right(moves, shown_at, key=lambda m: m[0]) - 1
    if k < 0:
        return shown_at
    shown_start, shown_end, start, stop = moves[k]
    if shown_at >= shown_end:
        return stop + shown_at - shown_end
    return stop if end and shown_at > shown_start else start


def _char_offsets(text: str, ids: list[int], marks: list[int], decode: Any) -> dict[int, int]:
    """Where in `text` (what `ids` encode) each token position in `marks` begins, from the stretches between
    them decoded in turn (each token once). A character cut between two tokens decodes as U+FFFD on both
    sides: a stretch is placed by its text without those, so the offsets never drift (a mark inside a
    character gets that character's offset; in a run of one repeated character, maybe one early). A
    stretch of cut bytes alone (under 7 tokens: windows of a few tokens) leaves its mark where the last
    placed stretch ended."""
    offsets = {0: 0}
    at = previous = lag = 0  # lag: characters the cut-bytes-only stretches since the last placed one may hold
    for mark in sorted(set(marks)):
        if mark > previous:
            piece = decode(ids[previous:mark])
            if text.startswith(piece, at):
                at, lag = at + len(piece), 0
            elif core := piece.strip("\ufffd"):
                found = text.find(core, at, at + len(piece) + lag + 1)
                at = found + len(core) if found >= 0 else min(len(text), at + len(piece))  # a lossy tokenizer
                lag = 0
            else:
                lag += len(piece)
            offsets[mark], previous = at, mark
    return offsets


_MAY_HEAD = re.compile(r"^[\s>]*[#=-]", re.MULTILINE)  # after indentation and quote markers
_MARKUP = re.compile(r"[%<>$`~|\\&]")  # comments, code, math, tables: left to the layout pass


def first_heading(content: str) -> str:
    """The heading a text opens with ("" if none), as `chunk_text` sees it: the layout pass on the first
    paragraph (a setext heading needs its underline)."""
    end = content.find("\n\n")
    para = content if end < 0 else content[:end]
    if not _MAY_HEAD.search(para):  # every heading has a line opening with '#' (ATX) or '=', '-' (setext)
        return ""
    if para[0] == "#" and "\n" not in para and not _MARKUP.search(para):  # the common "# Title" line alone
        m = _ATX.match(para)
        if m:
            return heading_text(m.group(2) or "").strip()
    headings = lay_out(para).headings
    return headings[0][2].strip() if headings and headings[0][3] == 0 else ""


def heading_path(title: str, headings: list[str]) -> list[str]:
    """A chunk's breadcrumb: the note title, then its section path; a body opening with an H1 equal to
    the title does not repeat it."""
    path = list(headings)
    if title and not (path and path[0].strip().casefold() == title.strip().casefold()):
        path.insert(0, title)
    return path


def heading_record(title: str, headings: list[str]) -> dict[str, Any] | None:
    """LightRAG's chunk `heading` field, from `heading_path`."""
    path = heading_path(title, headings)
    if not path:
        return None
    return {"level": len(headings), "heading": path[-1], "parent_headings": path[:-1]}


def lightrag_chunking_func(title_for_content=None):
    """A LightRAG `chunking_func` that cuts exactly like `chunk_text` (sizes come from LightRAG's
    chunk_token_size / chunk_overlap_token_size, which the engine sets from wikirag's config)."""

    def chunking(tokenizer, content, split_by_character, split_by_character_only, overlap, size):
        title = title_for_content(content) if title_for_content else ""
        return [
            {
                "content": c.content,
                "tokens": c.tokens,
                "chunk_order_index": c.order,
                **({"heading": h} if (h := heading_record(title, c.headings)) else {}),
            }
            for c in chunk_text(content, tokenizer, size, overlap)
        ]

    return chunking
