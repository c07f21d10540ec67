"""The sentence around each link, as the relation's description: sentence bounds (CJK stops included), list
and quote markers stripped, links rendered as the text Obsidian shows, clipped around the link.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import NamedTuple

from wikirag.markdown.html import without_html_tags
from wikirag.markdown.layout import Layout
from wikirag.markdown.wikilinks import (
    display_text,
    flatten_markdown_links,
    markdown_link_matches,
    split_destination,
    split_wikilink,
    wikilink_matches,
)
from wikirag.models import LinkKind, WikiLink


def count_links(segment: str) -> int:
    """Link-looking text in a region Obsidian does not read (code, comments, math)."""
    n = 0
    if "[[" in segment:
        n += sum(1 for *_, inner in wikilink_matches(segment) if split_wikilink(inner) is not None)
    if "](" in segment:
        n += sum(1 for *_, dest in markdown_link_matches(segment) if split_destination(dest) is not None)
    return n


class FoundLink(NamedTuple):
    """A link found in the body, before line, section and context are known."""

    start: int
    end: int
    embed: bool
    kind: LinkKind
    target: str
    heading: str | None
    block: str | None
    label: str | None


def mask_spans(body: str, spans: list[tuple[int, int]], count: bool = True) -> tuple[str, int]:
    """Blank the spans (newlines kept, so offsets and lines hold); count the links they hid."""
    if not spans:
        return body, 0
    spans.sort()
    parts: list[str] = []
    pos = ignored = 0
    for a, b in spans:
        if b <= pos:
            continue
        a = max(a, pos)
        segment = body[a:b]
        if count:
            ignored += count_links(segment)
        parts.append(body[pos:a])
        if "\n" in segment:
            parts.append("\n".join(" " * len(x) for x in segment.split("\n")))
        else:
            parts.append(" " * len(segment))
        pos = b
    parts.append(body[pos:])
    return "".join(parts), ignored


# a sentence ends at . ! ? … (then closing quotes/brackets) before whitespace, or at CJK 。！？
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][.!?\u2026\u3002\uff01\uff1f\"'\u201d\u2019)\]]*")


_CJK_STOPS = "\u3002\uff01\uff1f"


_LINE_PREFIX = re.compile(r"(?:[ ]{0,3}>[ ]?)*[ \t]*")


_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[.\][ \t]+)?")


_HEADING_MARKER = re.compile(r"#{1,6}[ \t]+")


_TRAILING_BLOCK_ID = re.compile(r"[ \t]\^[A-Za-z0-9-]+[ \t]*$|^\^[A-Za-z0-9-]+$")


CONTEXT_CHARS = 300


class BodyLinks:
    """Line, section and context for each link found in a body."""

    def __init__(
        self, body: str, masked: str, layout: Layout, found: list[FoundLink], starts: list[int], offset: int
    ) -> None:
        self.body, self.masked, self.layout, self.found = body, masked, layout, found
        self.starts = starts
        # the furthest end so far: an image inside a link (`[![a](p.png)](x.md)`) ends before the link holding it
        self.ends = list(accumulate((f.end for f in found), max))
        self.displays = [display_text(f.target, f.heading, f.block, f.label, f.embed) for f in found]
        self.offset = offset
        self.visible = mask_spans(body, list(layout.hidden), count=False)[0] if layout.hidden else body
        self.block_starts = [b[0] for b in layout.blocks]
        self.sentences: dict[int, list[int]] = {}
        self.rendered: dict[tuple[int, int], str] = {}
        self.places: dict[tuple[int, int], dict[int, int]] = {}  # a long sentence's links: where each shows
        self.heading_offsets = [h[0] for h in layout.headings]
        self.heading_paths: list[tuple[str, ...]] = []
        stack: list[tuple[int, str]] = []
        for _, level, text, _ in layout.headings:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            self.heading_paths.append(tuple(t for _, t in stack))

    def build(self) -> list[WikiLink]:
        line_starts, body, offset = self.layout.line_starts, self.body, self.offset
        heading_offsets, heading_paths, context = self.heading_offsets, self.heading_paths, self.context
        out = []
        for i, (found, display) in enumerate(zip(self.found, self.displays, strict=True)):
            start, end, embed, kind, target, heading, block, label = found
            k = bisect_right(heading_offsets, start) - 1
            out.append(
                WikiLink(
                    raw=body[start:end],
                    target=target,
                    heading=heading,
                    block=block,
                    label=label,
                    embed=embed,
                    kind=kind,
                    line=offset + bisect_right(line_starts, start),
                    section=heading_paths[k] if k >= 0 else (),
                    context=context(i, start, len(display), end),
                )
            )
        return out

    def context(self, i: int, at: int, shown: int, link_end: int) -> str:
        """The sentence holding link i (the whole line for list items, table rows and headings; the lines
        for a link whose text wraps onto the next line of a list item), cut around the `shown` characters
        the link shows as when it is long."""
        k = bisect_right(self.block_starts, at) - 1
        if k < 0:
            return ""
        bs, be, kind = self.layout.blocks[k]
        if at >= be:
            return ""
        if kind == "para":
            bounds = self.sentences.get(k)
            if bounds is None:
                bounds = self.sentences[k] = self._sentence_bounds(bs, be)
            j = bisect_right(bounds, at)
            ws, we = bounds[j - 1], bounds[j] if j < len(bounds) else be
        else:
            ws = max(bs, self.body.rfind("\n", 0, at) + 1)
            nl = self.body.find("\n", max(at, link_end), be)
            we = be if nl < 0 else nl
        text = self.rendered.get((ws, we))
        if text is None:
            text = self.rendered[ws, we] = self._render(ws, we, kind)
        if len(text) <= CONTEXT_CHARS:
            return text
        places = self.places.get((ws, we))
        if places is None:
            places = self.places[ws, we] = self._places(ws, we, kind, text)
        return clip_context(text, places[i], shown)

    def _sentence_bounds(self, start: int, end: int) -> list[int]:
        """Sentence starts in a paragraph: after . ! ? … before whitespace, after CJK stops, and around
        a line that holds nothing but links (embeds stacked one per line)."""
        masked, bounds, starts, ends = self.masked, [start], self.starts, self.ends
        for m in _SENTENCE_END.finditer(masked, start, end):
            stop = m.end()
            if stop < end and not masked[stop].isspace() and masked[m.start()] not in _CJK_STOPS:
                continue  # `3.14`, `e.g.x`: no sentence end
            k = bisect_right(starts, stop - 1) - 1  # `_inside`, inlined: is the stop inside a link?
            if k < 0 or stop - 1 >= ends[k]:
                bounds.append(stop)
        if masked.find("\n", start, end) >= 0:
            line_start = start
            for line in masked[start:end].split("\n"):
                if self._only_links(line_start, line_start + len(line)):
                    bounds += [line_start, line_start + len(line) + 1]
                line_start += len(line) + 1
            bounds = sorted({b for b in bounds if b < end})
        return bounds

    def _only_links(self, start: int, end: int) -> bool:
        """True when masked[start:end] is links and whitespace only (and holds a link)."""
        k = bisect_left(self.starts, start)
        pos, seen = start, False
        while k < len(self.found) and self.found[k].start < end:
            if self.masked[pos : self.found[k].start].strip() or self.found[k].end > end:
                return False  # text before the link, or a link whose text goes on to the next line
            pos, seen, k = max(pos, self.found[k].end), True, k + 1
        return seen and not self.masked[pos:end].strip()

    def _places(self, start: int, end: int, kind: str, text: str) -> dict[int, int]:
        """Where in `text`, the rendered body[start:end], each link in it shows: the sentence rendered again
        with a mark (private-use characters naming the link) before each link's text, read back. A link
        whose mark is gone (its text was inside another link's destination) or that has none (an image
        inside a link) takes the place of the link before it. Searching the text for each link's text cost a
        search of the sentence per link (50,000 links on one line: 12 s) and found the first of two equal ones."""
        first = bisect_left(self.starts, start)
        last = bisect_left(self.starts, end, first)
        held = set(self.visible[start:end]).union(*self.displays[first:last])
        for block in range(0xE000, 0xF900 - 17, 17):  # a set of mark characters the sentence does not hold
            mark, digits = chr(block), "".join(chr(c) for c in range(block + 1, block + 17))
            if mark not in held and held.isdisjoint(digits):
                break
        else:  # the sentence holds every private-use character: place each link where its text first shows
            return {i: max(text.find(self.displays[i]), 0) for i in range(first, last)}
        to_digits, from_digits = str.maketrans("0123456789abcdef", digits), str.maketrans(digits, "0123456789abcdef")

        def marked(i: int) -> str:
            return mark + f"{i - first:x}".translate(to_digits)

        places: dict[int, int] = {}
        dropped = 0  # mark characters before here
        for m in re.finditer(f"{mark}[{digits}]*", self._render(start, end, kind, marked)):
            places.setdefault(first + int(m.group()[1:].translate(from_digits), 16), m.start() - dropped)
            dropped += len(m.group())
        place = 0
        for i in range(first, last):
            place = places.setdefault(i, place)
        return places

    def _render(self, start: int, end: int, kind: str, marked: Callable[[int], str] | None = None) -> str:
        """body[start:end] with links flattened, comments, math and HTML tags dropped; code stays as written.
        `marked` gives a mark to put before each link's text."""
        visible, found, displays, pieces, pos = self.visible, self.found, self.displays, [], start
        for i in range(bisect_left(self.starts, start), len(found)):
            f = found[i]
            if f.start >= end:
                break
            if f.start < pos:
                continue  # an image inside a link: shown with the link's text
            pieces += (visible[pos : f.start], marked(i) + displays[i] if marked else displays[i])
            pos = f.end
        pieces.append(visible[pos:end])
        text = "".join(pieces)
        if "<" in text:  # `</br>` between a table row's cells, a `<span class="git-footer">`: not read as text
            text = without_html_tags(text)
        if kind == "para" and "\n" not in text:
            # a sentence on one line (the common case): the steps below, without the per-line loop
            if text[:1] in (" ", "\t", ">") and (start == 0 or self.body[start - 1] == "\n"):
                text = text[_LINE_PREFIX.match(text).end() :]
            text = " ".join(text.split())
            if "](" in text:
                text = flatten_markdown_links(text)
            return _TRAILING_BLOCK_ID.sub("", text) if "^" in text else text
        lines = text.split("\n")
        for n, line in enumerate(lines):
            if line[:1] in (" ", "\t", ">") and (n or start == 0 or self.body[start - 1] == "\n"):
                line = line[_LINE_PREFIX.match(line).end() :]  # a line start: drop `>` and indent
            if kind != "para":
                if n == 0 and kind == "list":
                    line = _LIST_MARKER.sub("", line.lstrip(), count=1)
                elif n == 0 and kind == "heading":
                    line = _HEADING_MARKER.sub("", line.lstrip(), count=1)
                elif kind == "row":
                    line = line.strip().strip("|").replace("\\|", "|")
            lines[n] = line
        text = " ".join(" ".join(lines).split())
        if "](" in text:  # external Markdown links: keep their text
            text = flatten_markdown_links(text)
        return _TRAILING_BLOCK_ID.sub("", text) if "^" in text else text


def clip_context(text: str, at: int, length: int, width: int = CONTEXT_CHARS) -> str:
    """At most `width` characters of `text`, centred on text[at : at + length] when it has to be cut."""
    if len(text) <= width:
        return text
    start = max(0, min(at + length // 2 - width // 2, len(text) - width))
    cut = text[start : start + width - 2].strip()
    return ("…" if start > 0 else "") + cut + ("…" if start + width - 2 < len(text) else "")

