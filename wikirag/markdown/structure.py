"""A note body's structure from the one layout pass (`layout.lay_out`): its heading sections and how much of
each is prose. Chunking, routing's prose measure and the opening paragraph all read this, so a heading or a
fence is the same thing to each of them.

- `sections(body)`: the heading blocks of a body (the text before the first heading, then one section per
  heading up to the next heading of any level), each with its 1-based line span, heading path and the
  characters of prose it holds (code, comments, math and heading lines left out, whitespace ignored);
- `prose_chars(body)`: the same measure for the whole body;
- `code_lines(layout)`: body lines (0-based) inside a multi-line code, math or comment span, which a chunker
  must not cut.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

from wikirag.markdown.layout import Layout, lay_out

_LINE_MARKER = re.compile(r"^[ \t]*(?:>[ \t]*)*(?:[-*+]|\d{1,9}[.)])(?=[ \t])", re.M)


@dataclass
class Section:
    start_line: int  # 1-based body lines, inclusive
    end_line: int
    headings: list[str] = field(default_factory=list)  # heading path, outermost first ([] before any heading)
    level: int = 0  # 0 for the text before the first heading
    prose_chars: int = 0


def _nonspace(text: str) -> int:
    return len(text) - sum(text.count(c) for c in " \n\t")


def _prose_of(text: str) -> int:
    """Prose characters of text already free of code and headings: link brackets and list or quote
    markers do not count (link contexts are measured the same way)."""
    markup = 2 * (text.count("[[") + text.count("]]"))
    markup += sum(len(m) - m.count(" ") - m.count("\t") for m in _LINE_MARKER.findall(text))
    return _nonspace(text) - markup


class _Holes:
    """Code, comments, math and heading lines: what is not prose, sorted by start."""

    def __init__(self, layout: Layout) -> None:
        spans = list(layout.ignored)
        spans += [(a, b) for a, b, kind in layout.blocks if kind == "heading"]
        spans.sort()
        self.spans = spans
        self.starts = [a for a, _ in spans]
        self.reach = list(accumulate((b for _, b in spans), max))  # the furthest end of each prefix

    def cut(self, body: str, start: int, end: int) -> str:
        """body[start:end] without the holes. Only the holes that may meet the stretch are visited: a note of
        20,000 one-line sections read every hole for each section (12 s)."""
        parts, pos = [], start
        for a, b in self.spans[bisect_right(self.reach, start) : bisect_left(self.starts, end)]:
            if b <= pos:
                continue
            if a > pos:
                parts.append(body[pos:a])
            pos = max(pos, b)
        if pos < end:
            parts.append(body[pos:end])
        return "".join(parts)


def sections(body: str, layout: Layout | None = None) -> list[Section]:
    """The heading blocks of a body, in order; an empty body has none."""
    if not body.strip():
        return []
    layout = layout or lay_out(body)
    holes = _Holes(layout)
    lines = body.count("\n") + 1
    out: list[Section] = []
    path: list[tuple[int, str]] = []
    marks = [(offset, level, text, line) for offset, level, text, line in layout.headings]
    first = marks[0][3] if marks else lines
    if first > 0:
        out.append(Section(1, first, [], 0, _prose_of(holes.cut(body, 0, layout.line_starts[first] if first < lines
                                                                 else len(body)))))
    for k, (_offset, level, text, line) in enumerate(marks):
        path[:] = [(lv, h) for lv, h in path if lv < level] + [(level, text)]
        nxt = marks[k + 1] if k + 1 < len(marks) else None
        end_offset = nxt[0] if nxt else len(body)
        start_offset = layout.line_starts[line]
        end_line = (nxt[3] if nxt else lines)  # exclusive 0-based -> inclusive 1-based
        out.append(Section(line + 1, max(line + 1, end_line), [h for _, h in path], level,
                           _prose_of(holes.cut(body, start_offset, end_offset))))
    return [s for s in out if s.end_line >= s.start_line]


def prose_chars(body: str, layout: Layout | None = None) -> int:
    """Prose characters of the whole body (the sum over its sections)."""
    if not body:
        return 0
    layout = layout or lay_out(body)
    return _prose_of(_Holes(layout).cut(body, 0, len(body)))


def code_lines(body: str, layout: Layout) -> set[int]:
    """0-based lines wholly inside code, math or a comment (blank lines of a fence included): a chunker must
    not cut a block there."""
    starts = layout.line_starts
    ends = [s + n for s, n in zip(starts, map(len, body.split("\n")), strict=False)]
    inside: set[int] = set()
    for a, b in layout.ignored:
        for i in range(bisect_left(starts, a), bisect_right(starts, b)):
            if ends[i] <= b:
                inside.add(i)
    return inside


def section_text(body: str, section: Section) -> str:
    """The section's lines of the body."""
    return "\n".join(body.split("\n")[section.start_line - 1 : section.end_line])
