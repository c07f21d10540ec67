"""One pass over a note body that marks what Obsidian does not read as Markdown text.

`lay_out(body)` walks the lines once and returns body offsets of:

- `ignored` spans: fenced code (``` or ~~~, closing fence of the same character and at least the same
  length, unclosed runs to the end), indented code (CommonMark: 4 spaces or a tab, not continuing a
  paragraph, not inside a list), `$$` math blocks, `%%...%%` and `<!--...-->` comments (across lines and
  blank lines; unclosed runs to the end), and inline code spans (CommonMark backtick-run matching, across
  the lines of one paragraph) and one-line `$$...$$` math;
- inline `$...$` `math` spans, kept apart from `ignored`: they hide links, tags and block ids, as in Obsidian,
  but stay text for contexts, BM25 and prose measures (docs/retrieval.md: dropping inline math from BM25
  hurt the math vault);
- prose `blocks` (paragraph, list item, table row, heading), used to cut link contexts;
- `headings` (ATX and setext) outside code, comments, blockquotes and callouts (Obsidian's outline and heading
  links leave a heading inside a quote out).

The scan is line based; inline constructs are matched per paragraph, so a code span cannot leak into
the next paragraph, while a comment can (as in Obsidian). Nothing here allocates per character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import accumulate, count
from operator import add

from wikirag.markdown.lines import heading_text, indent_of, is_escaped
from wikirag.markdown.wikilinks import WIKILINK

BlockKind = str  # "para" | "list" | "row" | "heading"

_QUOTE = re.compile(r"(?:[ ]{0,3}>[ ]?)+")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})(.*)")
_ATX = re.compile(r"(#{1,6})(?:[ \t]+(.*))?$")
_SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_THEMATIC = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_TABLE_DELIM = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_INLINE_OPEN = re.compile(r"[`%<$]")  # a one-character class lets `re` scan fast; the rest is checked by hand
_BACKTICKS = re.compile(r"`+")
# Inline math as Obsidian reads it: the opener is not followed by whitespace, and the first unescaped `$` after it
# on the line closes, unless it follows whitespace or comes before a digit (then the opener is a lone dollar)
_INLINE_MATH = re.compile(r"\$(?=[^\s$])(?:[^$\\\n]|\\.)*(?<=\S)\$(?!\d)")
_BACKTICK_CLOSERS: dict[int, re.Pattern[str]] = {}

# scanner modes
_NORMAL, _FENCE, _MATH, _COMMENT = range(4)


@dataclass
class Layout:
    """Where things are in a body (all offsets index the body string)."""

    ignored: list[tuple[int, int]] = field(default_factory=list)  # code, comments, math
    hidden: list[tuple[int, int]] = field(default_factory=list)  # comments and math: kept out of contexts
    math: list[tuple[int, int]] = field(default_factory=list)  # inline `$...$`: no links or tags inside
    blocks: list[tuple[int, int, BlockKind]] = field(default_factory=list)  # prose, in document order
    # (offset, level, text, 0-based body line)
    headings: list[tuple[int, int, str, int]] = field(default_factory=list)
    line_starts: list[int] = field(default_factory=list)


def _fence_length(text: str) -> int:
    """The length of the fence `text` opens, 0 for none (a backtick fence's info string holds no backtick)."""
    m = _FENCE_OPEN.match(text)
    if m is None or (text[0] == "`" and "`" in m.group(2)):
        return 0
    return len(m.group(1))


def _backtick_closer(n: int) -> re.Pattern[str]:
    pattern = _BACKTICK_CLOSERS.get(n)
    if pattern is None:
        pattern = _BACKTICK_CLOSERS[n] = re.compile(rf"(?<!`)`{{{n}}}(?!`)")
    return pattern


class _Scanner:
    def __init__(self, body: str) -> None:
        self.body = body
        self.out = Layout()
        self.mode = _NORMAL
        self.closer = ""  # what ends the current comment
        self.last_wikilink = (-1, -1, -1)  # wikilink_end's last answer: (start, a, the end)
        self.fence_char = ""
        self.fence_len = 0
        self.fence_quoted = False
        self.fence_col = 0  # a fence in a list item ends with the item: at a line indented less than this
        self.item_col = 0  # the column where the last list item's text starts
        self.para_start = -1
        self.para_end = -1
        self.para_kind = "para"
        self.para_line = 0
        self.para_quoted = False
        self.in_list = False
        self.in_table = False

    # -- paragraphs -------------------------------------------------------------------------------------
    def open_para(self, start: int, end: int, kind: BlockKind, line: int, quoted: bool) -> None:
        self.para_start, self.para_end, self.para_kind = start, end, kind
        self.para_line, self.para_quoted = line, quoted

    def flush(self) -> None:
        """Close the open paragraph; its inline scan may open a comment that outlives it."""
        if self.para_start < 0:
            return
        start, end = self.para_start, self.para_end
        self.para_start = -1
        self.out.blocks.append((start, end, self.para_kind))
        self.scan_inline(start, end)

    def scan_inline(self, start: int, end: int) -> None:
        """Mark code spans, comments and `$$` math in body[start:end], leftmost opener first."""
        body, ignored = self.body, self.out.ignored
        pos = start
        while True:
            m = _INLINE_OPEN.search(body, pos, end)
            if m is None:
                return
            a = m.start()
            c = body[a]
            if c == "`":
                run = _BACKTICKS.match(body, a, end).end()
                if a > start and is_escaped(body, a, start):
                    pos = a + 1  # `\`` is a literal backtick; the rest of the run may still open a span
                    continue
                close = _backtick_closer(run - a).search(body, run, end)
                if close is None:
                    pos = run  # no matching run: the backticks are literal
                    continue
                ignored.append((a, close.end()))
                pos = close.end()
            elif c == "$":
                if not body.startswith("$$", a):
                    pos = self.inline_math(a, start, end)
                    continue
                j = body.find("$$", a + 2, end)
                if j < 0:
                    pos = a + 2  # `$$` never closed in this paragraph: literal
                    continue
                ignored.append((a, j + 2))
                self.out.hidden.append((a, j + 2))
                pos = j + 2
            else:
                closer = "%%" if c == "%" else "-->"
                opener = "%%" if c == "%" else "<!--"
                if not body.startswith(opener, a):
                    pos = a + 1
                    continue
                j = body.find(closer, a + len(opener), end)
                if j < 0:
                    # an unclosed comment hides everything after it, later paragraphs included
                    ignored.append((a, end))
                    self.out.hidden.append((a, end))
                    self.mode, self.closer = _COMMENT, closer
                    return
                ignored.append((a, j + len(closer)))
                self.out.hidden.append((a, j + len(closer)))
                pos = j + len(closer)

    def inline_math(self, a: int, start: int, end: int) -> int:
        """Mark `$...$` opened at body[a] unless the opener is escaped or sits inside a wikilink (`[[a$b]]`:
        the link opened first); return where to scan on."""
        body = self.body
        if a > start and body[a - 1] == "\\" and is_escaped(body, a, start):
            return a + 1  # checked first: the pattern reads on to the line's end past `\$` (`\$` repeated: 60 KB, 28 s)
        m = _INLINE_MATH.match(body, a, end)
        if m is None:
            return a + 1  # `$5 and $10`: a lone dollar
        if self.wikilink_end(a, start) > a:
            return a + 1
        self.out.math.append(m.span())
        return m.end()

    def wikilink_end(self, a: int, start: int) -> int:
        """The end of the wikilink that the last `[[` in body[start:a] opens; -1 when none. `a` moves on through
        a paragraph, so only body[where the last call looked up to : a] is searched, and each `[[` read once:
        searching back to the paragraph's start for each `$...$` (and reading the `[[` found to its line's end)
        made 60 KB of `[[` and `$a$` repeated take over 20 s."""
        looked_from, looked_to, link_end = self.last_wikilink
        if looked_from != start or looked_to > a:
            looked_to, link_end = start, -1
        k = self.body.rfind("[[", max(looked_to - 1, start), a)  # a `[[` may straddle where the last call stopped
        if k >= 0:
            link = WIKILINK.match(self.body, k)
            link_end = link.end() if link is not None else -1
        self.last_wikilink = (start, a, link_end)
        return link_end

    # -- lines ------------------------------------------------------------------------------------------
    def feed(self, lines: list[str]) -> Layout:
        out = self.out
        # line i starts after the lengths of lines 0..i-1 plus their i newlines (computed in C, not per line)
        starts = out.line_starts = list(map(add, accumulate(map(len, lines[:-1]), initial=0), count()))
        n = len(lines)
        for i, line in enumerate(lines):
            start = starts[i]
            end = start + len(line)
            if self.mode == _NORMAL:  # fast paths for the two commonest lines
                if not line:
                    if self.para_start >= 0:
                        self.flush()
                    self.in_table = False
                    continue
                if line[0].isalpha() and "|" not in line:  # prose at the margin: a paragraph line
                    if self.para_start >= 0:
                        self.para_end = end
                    else:
                        self.in_list = False
                        self.open_para(start, end, "para", i, False)
                    continue
            content, quoted = line, False
            if ">" in line[:4] and line.lstrip(" ").startswith(">"):
                q = _QUOTE.match(line)
                if q:
                    content, quoted = line[q.end() :], True
            while True:  # a line is re-dispatched when closing a paragraph opened a comment
                mode = self.mode
                if mode == _FENCE:
                    if self.fence_quoted and not quoted:
                        self.mode = _NORMAL  # the blockquote holding the fence ended
                        continue
                    if self.fence_col and content.strip() and indent_of(content) < self.fence_col:
                        self.mode = _NORMAL  # the list item holding the fence ended (a fence has no lazy lines)
                        continue
                    s = content.lstrip(" \t")
                    t = s.rstrip(" \t")
                    if (
                        (len(content) == len(s) or self.in_list or indent_of(content) < 4)
                        and len(t) >= self.fence_len
                        and t == self.fence_char * len(t)
                    ):
                        self.mode = _NORMAL
                    out.ignored.append((start, end))
                    break
                if mode in (_MATH, _COMMENT):
                    closer = "$$" if mode == _MATH else self.closer
                    j = line.find(closer)
                    cut = end if j < 0 else start + j + len(closer)
                    out.ignored.append((start, cut))
                    out.hidden.append((start, cut))
                    if j >= 0:
                        self.mode = _NORMAL
                        if line[j + len(closer) :].strip():
                            self.open_para(cut, end, "para", i, quoted)
                    break
                if self.normal_line(i, start, end, content, quoted, lines, n):
                    continue
                break
        self.flush()
        return out

    def normal_line(self, i: int, start: int, end: int, content: str, quoted: bool, lines: list[str], n: int) -> bool:
        """Handle one line outside code and comments; True asks for a re-dispatch of the same line."""
        stripped = content.lstrip(" \t")
        if not stripped:
            self.flush()
            self.in_table = False
            return False
        para_open = self.para_start >= 0
        if para_open and quoted and not self.para_quoted:
            self.flush()  # a blockquote starts a new block
            if self.mode != _NORMAL:
                return True
            para_open = False
        indent = indent_of(content) if len(stripped) != len(content) else 0
        if indent >= 4 and not para_open and (not self.in_list or indent >= self.item_col + 4):
            self.out.ignored.append((start, end))  # indented code block (in a list: 4 past the item's text)
            return False
        first = stripped[0]
        near = indent < 4 or self.in_list
        if near and (first == "`" or first == "~") and (length := _fence_length(stripped)):
            self.flush()
            if self.mode != _NORMAL:
                return True
            col = self.item_col if self.in_list and indent >= self.item_col else 0
            self.open_fence(first, length, quoted, col, start, end)
            return False
        if near and first == "$" and stripped.startswith("$$"):
            self.flush()
            if self.mode != _NORMAL:
                return True
            col = end - len(stripped)
            j = self.body.find("$$", col + 2)
            if j >= 0 and j < end:  # `$$ x $$` on one line
                self.out.ignored.append((col, j + 2))
                self.out.hidden.append((col, j + 2))
                if self.body[j + 2 : end].strip():
                    self.open_para(j + 2, end, "para", i, quoted)
                return False
            if j >= 0:
                self.out.ignored.append((start, end))
                self.out.hidden.append((start, end))
                self.mode = _MATH
                return False
            # no closing `$$` anywhere: literal text, fall through
        if indent < 4 and first == "#":
            m = _ATX.match(stripped)
            if m:
                self.flush()
                if self.mode != _NORMAL:
                    return True
                if not quoted:  # in a blockquote or callout it shows as a heading but is none of the note's
                    self.out.headings.append((start, len(m.group(1)), heading_text(m.group(2) or ""), i))
                self.in_list = self.in_table = False
                self.open_para(start, end, "heading", i, quoted)
                self.flush()
                return False
        if (
            para_open
            and self.para_kind == "para"
            and indent < 4
            and (first == "=" or first == "-")
            and quoted == self.para_quoted  # an underline cannot continue a blockquote lazily (CommonMark)
            and _SETEXT.match(stripped)
        ):
            if not self.para_quoted:  # in a quote: shown as a heading, none of the note's (as an ATX one there)
                text = " ".join(part.strip() for part in self.body[self.para_start : self.para_end].split("\n"))
                level = 1 if first == "=" else 2
                self.out.headings.append((self.para_start, level, text.strip(), self.para_line))
            self.para_kind = "heading"
            self.flush()
            return False
        if indent < 4 and first in "-*_" and _THEMATIC.match(stripped):
            self.flush()  # `***` / `- - -`: a thematic break, neither a list item nor text
            return self.mode != _NORMAL
        # inside a list an item may sit at any indent (a nested item under a tab-indented parent)
        if (indent < 4 or self.in_list) and first in "-*+0123456789" and (item := _LIST_ITEM.match(stripped)):
            self.flush()
            if self.mode != _NORMAL:
                return True
            self.in_list, self.in_table = True, False
            rest = stripped[item.end() :]
            pad = len(rest) - len(rest.lstrip(" "))
            self.item_col = indent + item.end() + (pad if pad < 4 and rest.strip() else 0)
            if self.fence_in_item(stripped, item.end(), indent, start, end, quoted):
                return False
            self.open_para(start, end, "list", i, quoted)
            return False
        if "|" in stripped and (self.in_table or self._table_starts(i, lines, n)):
            self.flush()
            if self.mode != _NORMAL:
                return True
            self.in_table = True
            self.open_para(start, end, "row", i, quoted)
            self.flush()
            return False
        self.in_table = False
        if para_open:
            self.para_end = end
            return False
        if indent < 2:
            self.in_list = False  # a paragraph at the margin ends the list
        self.open_para(start, end, "para", i, quoted)
        return False

    def fence_in_item(self, stripped: str, at: int, indent: int, start: int, end: int, quoted: bool) -> bool:
        """Open a fence that starts a list item's content on the marker's line (`- ```js`, `1. - ~~~`), as
        CommonMark reads a list item (GFM example 298); True when one was opened. Content indented 4 or more
        columns past the marker is indented code, left as it was."""
        line = stripped
        while True:
            rest = stripped[at:]
            content = rest.lstrip(" \t")
            if not content or indent_of(rest) >= 4:
                return False
            item = _LIST_ITEM.match(content) if content[0] in "-*+0123456789" else None
            if item is None:
                break
            stripped, at = content, item.end()  # a list item holding a list item: read past its marker too
        length = _fence_length(content) if content[0] in "`~" else 0
        if length:  # the fence starts the item's text: the block ends at a line indented less than it
            self.open_fence(content[0], length, quoted, indent + len(line) - len(content), start, end)
        return length > 0

    def open_fence(self, char: str, length: int, quoted: bool, col: int, start: int, end: int) -> None:
        """Enter a fenced code block; `col`: the list item's text column it ends below (0: none)."""
        self.mode = _FENCE
        self.fence_char, self.fence_len, self.fence_quoted, self.fence_col = char, length, quoted, col
        self.out.ignored.append((start, end))

    @staticmethod
    def _table_starts(i: int, lines: list[str], n: int) -> bool:
        if i + 1 >= n:
            return False
        nxt = lines[i + 1].strip()
        if "|" not in nxt or "-" not in nxt:
            return False
        nxt = _QUOTE.sub("", nxt, count=1) if nxt.startswith(">") else nxt
        return _TABLE_DELIM.match(nxt) is not None


def lay_out(body: str) -> Layout:
    """Mark code, comments, math, prose blocks and headings in a body with "\\n" line ends."""
    return _Scanner(body).feed(body.split("\n"))
