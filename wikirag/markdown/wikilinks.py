"""The link grammar, as a value type's parts: `[[target#heading^block|label]]`, embeds `![[...]]`,
Markdown links `[label](dest)` to local files, and what Obsidian displays for each.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import unquote

from wikirag.markdown.properties import no_nul

# Patterns start with a literal so `re` can skip ahead fast; a leading `!` (embed) is checked by hand.
WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")


# A Markdown link `[text](dest "title")` is read in steps rather than by one pattern: a pattern tried again from
# every `[` read on to the end of the text each time when the text never closes (`[a\](` repeated: 60 KB took
# 11 s). The steps read what the pattern `\[(T)\](D)` read. T is a run of text pieces: a character other than
# `[ ] \` and newline, an escape `\x`, a bracketed `[x]` (one level of nesting), and (across lines) a newline
# that does not start a blank line. D is `(`, a destination (`<x>`, or a run of a character other than
# whitespace and `( ) < > \`, an escape, or a bracketed `(x)`) and an optional title, then `)`. Each kind of
# piece starts with its own character, so where a run stops depends only on where it stands now, not where it
# started: two runs that meet go on together, and `_Runs` remembers where each stop leads.
_TEXT_PLAIN = re.compile(r"[^\[\]\n\\]*+")
_TEXT_PLAIN_ACROSS_LINES = re.compile(r"[^\[\]\n\\]*+(?:\n(?![ \t]*\n)[^\[\]\n\\]*+)*+")
_TEXT_PIECE = re.compile(r"\\.|\[[^\[\]\n]*\]")
_DEST_PLAIN = re.compile(r"[^\s()<>\\]*+")
_DEST_PIECE = re.compile(r"\\.|\([^\s()]*\)")
_DEST_ANGLE = re.compile(r"<[^<>\n]*>")
_SPACE = re.compile(r"\s*+")
_TITLE_AND_CLOSE = re.compile(r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)")


class _Runs:
    """Where a greedy run of pieces from a position stops, in text[:endpos]: runs of `plain` characters, joined
    by the pieces of `piece`. Each stop a run passes (a character `plain` does not take) is remembered, so a run
    that reaches one already passed is not read again: reads from many starts cost one read of the text."""

    def __init__(self, text: str, endpos: int, plain: re.Pattern[str], piece: re.Pattern[str]) -> None:
        self.text, self.endpos, self.plain, self.piece = text, endpos, plain, piece
        self.stops: dict[int, int] = {}

    def end(self, pos: int) -> int:
        text, endpos, plain, piece, stops = self.text, self.endpos, self.plain, self.piece, self.stops
        passed = []
        while True:
            pos = plain.match(text, pos, endpos).end()  # type: ignore[union-attr]  # a `*` run always matches
            end = stops.get(pos)
            if end is not None:
                break
            passed.append(pos)
            m = piece.match(text, pos, endpos)
            if m is None:
                end = pos
                break
            pos = m.end()
        for p in passed:
            stops[p] = end
        return end


class MarkdownLinks:
    """The Markdown links `[text](dest)` in text[:endpos] (the `[` that starts each; a `!` before it is the
    caller's), as the pattern `[T](D)` above read them, in time linear in the text.

    `across_lines`: the text may go on across a soft line break (never a blank line); the parser keeps such a
    match only inside one paragraph or list item, so it cannot join list items, headings or quotes."""

    def __init__(self, text: str, endpos: int | None = None, across_lines: bool = False) -> None:
        self.text = text
        self.endpos = len(text) if endpos is None else min(endpos, len(text))
        plain = _TEXT_PLAIN_ACROSS_LINES if across_lines else _TEXT_PLAIN
        self.label_runs = _Runs(text, self.endpos, plain, _TEXT_PIECE)
        self.dest_runs = _Runs(text, self.endpos, _DEST_PLAIN, _DEST_PIECE)
        self.dests: dict[int, tuple[int, int, int] | None] = {}  # `(` -> (destination start, its end, link end)
        self.closes: dict[int, int] = {}  # destination end -> link end (-1: none)

    def search(self, pos: int) -> tuple[int, int, str, str] | None:
        """(start, end, text, destination) of the first link starting at or after pos; None when none."""
        text, endpos = self.text, self.endpos
        label_end = self.label_runs.end
        while (a := text.find("[", pos, endpos)) >= 0:
            pos = a + 1
            # The pattern's text could end only where the run stops: any shorter run stops before a piece, and no
            # piece starts with `]`.
            t = label_end(a + 1)
            if t + 1 < endpos and text[t] == "]" and text[t + 1] == "(":
                dest = self._destination(t + 1)
                if dest is not None:
                    return a, dest[2], text[a + 1 : t], text[dest[0] : dest[1]]
        return None

    def _destination(self, at: int) -> tuple[int, int, int] | None:
        """The destination after the `(` at text[at], and the link's end; None when there is no link."""
        if at in self.dests:
            return self.dests[at]
        text, endpos = self.text, self.endpos
        d = _SPACE.match(text, at + 1, endpos).end()  # type: ignore[union-attr]
        if d < endpos and text[d] == "<":
            m = _DEST_ANGLE.match(text, d, endpos)
            g = m.end() if m else d  # no other destination starts with `<`
        else:
            g = self.dest_runs.end(d)  # as for the text: only the run's own stop can meet the space or `)`
        end = -1
        if g > d:
            if g not in self.closes:  # several destinations may run on to the same stop
                m = _TITLE_AND_CLOSE.match(text, g, endpos)
                self.closes[g] = m.end() if m else -1
            end = self.closes[g]
        found = self.dests[at] = (d, g, end) if end >= 0 else None
        return found


_EXTERNAL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:|//")  # http:, mailto:, obsidian://, //host


_SIZE_LABEL = re.compile(r"\d+(?:x\d+)?")  # `![[img.png|300]]`, `![[img.png|300x200]]`


def split_wikilink(inner: str) -> tuple[str, str | None, str | None, str | None] | None:
    """`Target#H1#H2|label` or `Target#^block|label` -> (target, heading, block, label); None when empty.

    `\\|` (how a pipe is written inside a table) is a plain `|` everywhere.
    """
    if "|" not in inner and "#" not in inner:  # a bare `[[Target]]`: the general steps reduce to a strip
        target = inner.strip()
        return (target, None, None, None) if target else None
    path, bar, label = inner.replace("\\|", "|").partition("|")
    target, hash_, fragment = path.partition("#")
    target = target.strip()
    heading = block = None
    if hash_:
        parts = [p.strip() for p in fragment.split("#")]
        parts = [p for p in parts if p]
        if parts and parts[-1].startswith("^"):
            block = parts.pop()[1:].strip() or None
        heading = "#".join(parts) or None
    if not target and heading is None and block is None:
        return None  # `[[]]`, `[[ ]]`, `[[|x]]`, `[[#]]`: Obsidian makes no link
    return target, heading, block, (label.strip() or None) if bar else None


def split_destination(dest: str) -> tuple[str, str | None, str | None] | None:
    """A Markdown link destination -> (target, heading, block), URL-decoded; None when external/empty."""
    if dest.startswith("<") and dest.endswith(">"):
        dest = dest[1:-1]
    dest = dest.strip()
    if not dest or _EXTERNAL.match(dest):
        return None
    path, hash_, fragment = dest.partition("#")
    target = _decoded(path)
    heading = block = None
    if hash_:
        fragment = _decoded(fragment)
        if fragment.startswith("^"):
            block = fragment[1:] or None
        else:
            heading = "#".join(p.strip() for p in fragment.split("#") if p.strip()) or None
    if not target and heading is None and block is None:
        return None
    return target, heading, block


def _decoded(part: str) -> str:
    """URL-decoded; a `%00` is U+FFFD (properties.no_nul: no name holds a NUL, and PostgreSQL's text cannot)."""
    return no_nul(unquote(part).strip())


def display_text(target: str, heading: str | None, block: str | None, label: str | None, embed: bool) -> str:
    """What a reader sees for a link: the label, else `Target > H1 > H2` (size labels are not text)."""
    if label and not (embed and _SIZE_LABEL.fullmatch(label)):
        return label
    parts = [target] if target else []
    if heading:
        parts.extend(heading.split("#"))
    return " > ".join(parts) or (block or "")


def wikilink_matches(text: str) -> Iterator[tuple[int, int, bool, str]]:
    """(start, end, embed, inner) for each `[[...]]` / `![[...]]`; start includes the `!`."""
    for m in WIKILINK.finditer(text):
        a = m.start()
        embed = a > 0 and text[a - 1] == "!"
        yield a - embed, m.end(), embed, m.group(1)


def markdown_link_matches(
    text: str, pos: int = 0, endpos: int | None = None
) -> Iterator[tuple[int, int, bool, str, str]]:
    """(start, end, embed, text, destination) for each `[text](dest)` / `![alt](dest)` in text[pos:endpos]."""
    links = MarkdownLinks(text, endpos)
    while (m := links.search(pos)) is not None:
        a, pos, label, dest = m
        embed = a > 0 and text[a - 1] == "!"
        yield a - embed, pos, embed, label, dest


def flatten_markdown_links(text: str) -> str:
    """Each `[text](dest)` / `![alt](dest)` as its text, stripped; a link inside a link's text too."""
    links = MarkdownLinks(text)
    pieces: list[str] = []
    pos = 0  # copied up to here
    while (m := links.search(pos)) is not None:
        a, b, label, _ = m
        a -= a > pos and text[a - 1] == "!"
        pieces += (text[pos:a], flatten_markdown_links(label.strip()) if "](" in label else label.strip())
        pos = b
    return "".join(pieces) + text[pos:] if pieces else text
