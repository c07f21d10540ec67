"""Heading-aware token chunking, shared by injection, LLM extraction and the cost model.

A note is cut into blocks (paragraphs, fenced code kept whole) that remember the heading path they sit
under; blocks are packed greedily into chunks of at most `size` tokens, and a block larger than `size`
alone is split into token windows with `overlap` tokens of overlap (as LightRAG's own token chunker
does). Packing across headings keeps short notes in one chunk, which is what makes them cheap to
extract. The same function is handed to LightRAG as its `chunking_func`, so the chunks the cost model
counts are exactly the chunks LightRAG extracts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from wikirag.markdown.layout import _ATX, heading_text, lay_out
from wikirag.markdown.structure import code_lines


@dataclass
class Chunk:
    content: str
    tokens: int
    order: int
    headings: list[str] = field(default_factory=list)  # heading path of the chunk's first block
    start_line: int = 1  # 1-based lines of `text` the chunk covers
    end_line: int = 1


@dataclass
class _Block:
    lines: list[str]
    start: int  # 1-based
    headings: list[str]


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

    def flush(next_start: int) -> None:
        nonlocal current, start
        if any(line.strip() for line in current):
            blocks.append(_Block(current, start, [h for _, h in path]))
        current, start = [], next_start

    for number, line in enumerate(text.split("\n"), start=1):
        heading = headings.get(number - 1)
        if heading is not None:
            flush(number)
            level, title = heading
            path[:] = [(lv, h) for lv, h in path if lv < level] + [(level, title.strip())]
            current, start = [line], number
            continue
        if not line.strip() and number - 1 not in in_code:
            current.append(line)
            flush(number + 1)
            continue
        if not current:
            start = number
        current.append(line)
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

    def emit(content: str, tokens: int, headings: list[str], start: int, end: int) -> None:
        chunks.append(Chunk(content, tokens, len(chunks), headings, start, end))

    def flush_pending() -> None:
        nonlocal pending, pending_tokens
        if pending:
            content = "\n".join(line for b in pending for line in b.lines).strip("\n")
            last = pending[-1]
            emit(content, len(encode(content)), pending[0].headings, pending[0].start,
                 last.start + len(last.lines) - 1)
        pending, pending_tokens = [], 0

    for block in _blocks(text):
        body = "\n".join(block.lines).strip("\n")
        tokens = len(encode(body))
        if tokens > size:
            flush_pending()
            ids = encode(body)
            step = size - overlap
            end_line = block.start + len(block.lines) - 1
            for begin in range(0, len(ids), step):
                window = ids[begin : begin + size]
                emit(tokenizer.decode(window).strip(), len(window), block.headings, block.start, end_line)
                if begin + size >= len(ids):
                    break
            continue
        # +1 for the newline joining blocks
        if pending and pending_tokens + tokens + 1 > size:
            flush_pending()
        pending.append(block)
        pending_tokens += tokens + (1 if len(pending) > 1 else 0)
    flush_pending()
    return chunks




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
