"""Inline `#tags` as Obsidian's metadata cache reads them (docs/parsing.md, "Tags").

A tag is `#` and then characters that are not whitespace, not ASCII punctuation other than `-` `_` `/`, and not
in the General (U+2000-U+206F) or Supplemental (U+2E00-U+2E7F) Punctuation blocks; letters and digits of any
script and emoji go on. It is not all ASCII digits (`#1984`; `#١٢٣` is a tag). Obsidian opens a tag where an
inline chunk starts, not only after whitespace, so the `#` may follow:

- whitespace or the start of a line;
- the tag before it: `#a#b` is two tags and `#a/#b` is `a/` and `b`, while `#1984#x` holds none;
- an emphasis, highlight or strikethrough run with a partner on its line (`**#t**`, `*#t*`, `==#t==`, `~~#t~~`;
  `a *#t` alone is text) or an underscore run that pairs as emphasis (`_#t_`, `snake_case_#t`);
- the end of a link (`[[x]]#t`), the start of a link's text (`[#t](Note.md)`) or a bracketed span (`[#t]`),
  or a backslash escape (`\\]#t`).

A closing underscore run ends the tag (`_#t_` is `t`). Tags inside a wikilink, a link's destination or an
image's alt text are none; tags in a Markdown link's text are. Observed on Obsidian 1.13.7 and recorded in
cyanheads/obsidian-mcp-server issues #138 and #140 (src/services/obsidian/frontmatter-ops.ts); residuals are
listed in docs/parsing.md.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

from wikirag.markdown.lines import is_escaped

# `#` and the name; the name stops at whitespace, ASCII punctuation but - _ /, and the two punctuation blocks
TAG = re.compile(r"#([^\s!-,.:-@\[-\^`{-~\u2000-\u206f\u2e00-\u2e7f]+)")

_MARKUP = re.compile(r"[#\[\]]|_+")

_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


class LinkSpans:
    """Where the links found in a body lie: a tag is read in a Markdown link's text and nowhere else inside a
    link, and a `#` right after a link or at the start of a link's text opens one."""

    def __init__(self, spans: Iterable[tuple[int, int, int]]) -> None:
        # (start, end, text_end): a Markdown link's text is start + 1 .. text_end; text_end is -1 for the rest
        self.spans = sorted(spans)
        self.starts = [s for s, _, _ in self.spans]
        self.ends = {e for _, e, _ in self.spans}
        self.text_starts = {s + 1 for s, _, t in self.spans if t > s}

    def hides(self, pos: int) -> bool:
        """True when `pos` lies in a link outside a Markdown link's text. Links nest one deep at most (an image
        in a link's text), so the few links starting last before `pos` are all that can hold it."""
        k = bisect_right(self.starts, pos)
        return any(s <= pos < e and not s < pos < t for s, e, t in self.spans[max(0, k - 3) : k])


def inline_tags(masked: str, links: LinkSpans) -> list[str]:
    """The tags of a body whose code, comments and math are blanked (`masked`), in order, lower-cased, each once."""
    out: list[str] = []
    seen: set[str] = set()
    chain_end = -1  # where the last tag ended: a `#` right there opens the next one
    line = _Line(masked, links)
    hides = links.hides if links.spans else None
    for m in TAG.finditer(masked):
        a, end = m.start(), m.end()
        before = masked[a - 1] if a else "\n"
        if a != chain_end and before not in _ASCII_PUNCT and not before.isspace():
            chain_end = -1  # `a#t`: after a letter, a digit or other text no chunk starts
            continue
        if hides and hides(a):
            chain_end = -1
            continue
        line.move_to(a)
        opens = a == chain_end or before.isspace() or _opens_chunk(masked, a, links, line)
        if not opens and a not in line.marks()[0]:
            chain_end = -1
            continue
        if "_" in m.group(1):  # a closing `_` run ends the tag
            starts = line.marks()[1]
            k = bisect_right(starts, a)
            if k < len(starts) and starts[k] < end:
                end = starts[k]
        name = masked[a + 1 : end]
        if not name or (name.isascii() and name.isdigit()):
            chain_end = -1  # `#1984#x`: no tag, and none chained to it
            continue
        chain_end = end
        tag = name.lower()
        if tag not in seen:
            seen.add(tag)
            out.append(tag)
    return out


class _Line:
    """The line a `#` sits on, with what its rules need worked out once per line (tags come in text order, so
    a body is walked once however long its lines)."""

    def __init__(self, text: str, links: LinkSpans) -> None:
        self.text, self.links = text, links
        self.start = self.end = -1
        self._marks: tuple[set[int], list[int]] | None = None
        self._counts: dict[str, int] = {}

    def move_to(self, pos: int) -> None:
        if self.start <= pos <= self.end:
            return
        self.start = self.text.rfind("\n", max(self.end, 0), pos) + 1  # tags come in order: scanned once
        end = self.text.find("\n", pos)
        self.end = len(self.text) if end < 0 else end
        self._marks, self._counts = None, {}

    def marks(self) -> tuple[set[int], list[int]]:
        if self._marks is None:
            ends, starts = _line_marks(self.text, self.start, self.end, self.links)
            self._marks = (ends, sorted(starts))
        return self._marks

    def count(self, delim: str) -> int:
        if delim not in self._counts:
            self._counts[delim] = self.text.count(delim, self.start, self.end)
        return self._counts[delim]


def _opens_chunk(text: str, a: int, links: LinkSpans, line: _Line) -> bool:
    """A `#` at `a` opens a tag without the line's pairing marks: after whitespace, a link, an escape or an
    emphasis run that has a partner on its line."""
    if a == line.start:
        return True
    before = text[a - 1]
    if before.isspace() or a in links.ends or a in links.text_starts:
        return True
    if is_escaped(text, a, line.start):
        return False  # `\#t` is an escaped hash
    if before in _ASCII_PUNCT and is_escaped(text, a - 1, line.start):
        return True  # `\]#t`, `\\#t`: the escape is a chunk of its own
    if before == "*":
        run = a - 1
        while run > line.start and text[run - 1] == "*":
            run -= 1
        return line.count("*") > a - run  # a `*` elsewhere on the line
    if before in "=~" and a - 2 >= line.start and text[a - 2] == before:
        if a - 3 >= line.start and text[a - 3] == before:
            return False  # `===#t`: not a highlight run
        return line.count(before * 2) >= 2  # `==` / `~~` elsewhere on the line
    return False


def _line_marks(text: str, line_start: int, stop: int, links: LinkSpans) -> tuple[set[int], set[int]]:
    """The ends and starts of the markup marks on one line that a `#` may follow: bracket marks of a bracketed
    span (`[#t]`, `[a]#t`) and underscore runs that pair as emphasis. Fitted to Obsidian's readback (see the
    module docstring), not to CommonMark's flanking rules."""
    ends: set[int] = set()
    starts: set[int] = set()
    opener: tuple[int, int] | None = None
    bracket = -1
    tag_end = -1
    for m in _MARKUP.finditer(text, line_start, stop):  # only the characters the rules look at
        i, ch = m.start(), m.group()[0]
        if ch == "#":
            if t := TAG.match(text, i):
                tag_end = t.end()
        elif ch == "[":
            bracket = -1 if text.startswith("[", i + 1) or text.startswith("^", i + 1) else i
        elif ch == "]":
            if bracket >= 0 and i > bracket + 1 and not text.startswith("]", i + 1) and not links.hides(i):
                ends.update((bracket + 1, i + 1))
            bracket = -1
        else:
            if is_escaped(text, i, line_start):
                i += 1  # `\_` is text; the rest of the run is a run
                if i == m.end():
                    continue
            close_only = i < tag_end  # a run inside a tag's name may close a pair but not open one
            opener = _offer(text, opener, (i, m.end()), close_only, ends, starts)
    return ends, starts


def _offer(
    text: str, opener: tuple[int, int] | None, run: tuple[int, int], close_only: bool, ends: set[int], starts: set[int]
) -> tuple[int, int] | None:
    """Offer an underscore run to the pending opener; return the opener pending afterwards."""
    if opener is None:
        return None if close_only else run
    if run[1] < len(text) and text[run[1]].isascii() and text[run[1]].isalnum():
        return opener  # `_#t_b`: a run before a letter or digit cannot close
    if run[1] - run[0] > opener[1] - opener[0]:
        return opener
    if text[opener[1]].isspace() and text[run[0] - 1].isspace():
        return None if close_only else run  # `a_ _#t`: the pair fails, the run may open anew
    ends.update((opener[1], run[1]))
    starts.update((opener[0], run[0]))
    return None
