"""Parse one note the way Obsidian reads it: frontmatter, links, headings, tags, block ids.

`parse_note(text, path)` is pure: a string in, a `ParsedNote` out; no filesystem, no await. `layout.lay_out`
marks code, comments and math in one line pass; the link, tag and block-id patterns then run once over
the body with those regions blanked out ("masked"), so positions stay the body's own. The rules and the
fixture that pins each one are listed in docs/parsing.md.
"""

from __future__ import annotations

import posixpath
import re
from bisect import bisect_left, bisect_right

from wikirag.markdown.context import BodyLinks, FoundLink, clip_context, mask_spans
from wikirag.markdown.layout import Layout, lay_out
from wikirag.markdown.lines import is_escaped
from wikirag.markdown.properties import FrontmatterBlock, Properties, load_properties, split_frontmatter
from wikirag.markdown.tags import LinkSpans, inline_tags
from wikirag.markdown.wikilinks import (
    WIKILINK,
    MarkdownLinks,
    display_text,
    split_destination,
    split_wikilink,
    wikilink_matches,
)
from wikirag.models import Heading, ParsedNote, WikiLink

# a line break in a link's text, with the next line's indent and `>` markers: one space, as Obsidian shows it
_SOFT_BREAK = re.compile(r"[ \t]*\n[ \t]*(?:>[ \t]?)*[ \t]*")


BLOCK_ID = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$", re.MULTILINE)  # must follow a space or start a line


# ASCII bytes -> b" " for what str.split() treats as whitespace, b"x" for the rest (word counting)
_WORD_TABLE = bytes(32 if chr(c).isspace() else 120 for c in range(128)) + b"x" * 128


def normalize_text(text: str) -> str:
    """Drop a leading BOM and turn CRLF and lone CR into "\\n" (what Obsidian shows)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def note_name(path: str) -> str:
    base = posixpath.basename(path)
    return base[:-3] if base.lower().endswith(".md") else base


def parse_note(text: str, path: str) -> ParsedNote:
    """Parse a note's text; `path` is its vault-relative POSIX path. Never raises on content."""
    text = normalize_text(text)
    block, body = split_frontmatter(text)
    props = load_properties(block) if block is not None else Properties()
    offset = block.lines if block is not None else 0

    layout = lay_out(body)
    masked, in_code = mask_spans(body, layout.ignored)
    outside_code = masked  # Markdown links are found here: their text may hold inline math (`[$R/I$](x.md)`)
    if layout.math:  # `$[[x]]$`, `$a #b$`: math, no link or tag
        masked, in_math = mask_spans(masked, layout.math)
        in_code += in_math
    found = _find_links(body, masked, outside_code, layout)
    link_starts = [f.start for f in found]

    links = _frontmatter_links(block, props) if block is not None and props.error is None else []
    if found:
        links.extend(BodyLinks(body, masked, layout, found, link_starts, offset).build())

    tags = list(props.tags)
    if "#" in masked:
        seen = set(tags)  # `in tags` read the list for each tag: 40,000 distinct tags took 27 s
        spans = LinkSpans((f.start, f.end, _text_end(body, f)) for f in found)
        tags.extend(t for t in inline_tags(masked, spans) if t not in seen)

    name = note_name(path)
    return ParsedNote(
        path=path,
        name=name,
        title=props.title or name,
        type=props.type,
        description=props.description,
        aliases=props.aliases,
        tags=tags,
        frontmatter=props.data,
        frontmatter_error=props.error or props.problem,
        body=body,
        body_line_offset=offset,
        headings=[Heading(level, title, line + offset + 1) for _, level, title, line in layout.headings],
        block_ids=_block_ids(masked, layout.blocks),
        links=links,
        links_in_code_ignored=in_code,
        words=count_words(body),
        route_override=props.route_override,
    )


def count_words(text: str) -> int:
    """`len(text.split())` without making the word strings: for ASCII text, map whitespace to b" " and
    everything else to b"x", then count the word starts."""
    if not text.isascii():
        return len(text.split())
    marks = text.encode("ascii").translate(_WORD_TABLE)
    return marks.count(b" x") + (marks[:1] == b"x")


def _find_links(body: str, masked: str, outside_code: str, layout: Layout) -> list[FoundLink]:
    """Wikilinks in `masked` (code, comments and math blanked), Markdown links in `outside_code` (math kept,
    so a link's text may hold it, but a link that inline math holds or cuts is none). A Markdown link's text
    may go on across a soft line break within one paragraph or list item, as in Obsidian."""
    math = layout.math
    found: list[FoundLink] = []
    if "[" not in outside_code:
        return found
    clean = masked is body  # nothing was masked: no need to compare
    for m in WIKILINK.finditer(masked):  # `wikilink_matches`, inlined
        a, b = m.span()
        if a > 0 and masked[a - 1] == "\\" and is_escaped(masked, a, 0):
            continue  # `\[[a]]` is literal text, as in Obsidian
        embed = a > 0 and masked[a - 1] == "!" and not is_escaped(masked, a - 1, 0)
        a -= embed
        if not clean and masked[a:b] != body[a:b]:
            continue  # part of it sits in code or a comment
        parts = split_wikilink(m.group(1))
        if parts is not None:
            found.append(FoundLink(a, b, embed, "wikilink", *parts))
    if "](" in outside_code:
        wiki_spans = [(f.start, f.end) for f in found]
        clean = outside_code is body
        math_starts = [s for s, _ in math]
        ignored = layout.ignored  # sorted by mask_spans
        ignored_starts = [s for s, _ in ignored] if not clean else []

        one_block = _OneBlock(layout.blocks)

        def markdown(pos: int, endpos: int, images_only: bool) -> bool:
            """Read the Markdown links in outside_code[pos:endpos] into `found`; True when one that is no image
            was read: the text holding it is then no link (CommonMark 6.3: the inner-most link wins)."""
            linked = False
            links = MarkdownLinks(outside_code, endpos, across_lines=True)
            while (m := links.search(pos)) is not None:
                a, b, text, dest = m
                if "\n" in text and not one_block(a, b):
                    pos = a + 1  # text across list items, a heading or a quote: no link from this `[`
                    continue
                pos = b
                embed = a > 0 and outside_code[a - 1] == "!"
                a -= embed
                if images_only and not embed:
                    continue  # an image's text is its alt text: only an image inside it counts
                t0 = a + embed + 1
                t1 = t0 + len(text)
                if any(s < b and a < e for s, e in wiki_spans):
                    continue
                # code or a comment that holds or cuts the link leaves none; in its text it is text (`[`f`](x.md)`)
                if not clean and outside_code[a:b] != body[a:b] and not _spans_inside(a, b, t0, t1, ignored,
                                                                                      ignored_starts):
                    continue
                if math and not _spans_inside(a, b, t0, t1, math, math_starts):
                    continue
                # `[![alt](pic.png)](x.md)`: the image is an embed of pic.png, as Obsidian shows
                holds_link = "](" in text and markdown(t0, t1, embed)
                linked |= holds_link
                if holds_link or is_escaped(outside_code, a + embed, 0):  # `\[t](x.md)` is literal text
                    continue  # `[a [b](x.md)](y.md)`: the link is `b`, the rest is text
                linked |= not embed
                parts = split_destination(dest)
                if parts is not None:
                    label = body[t0:t1]  # as written, code spans included
                    label = _SOFT_BREAK.sub(" ", label) if "\n" in label else label
                    found.append(FoundLink(a, b, embed, "markdown", *parts, label.strip() or None))
            return linked

        markdown(0, len(outside_code), False)
        found.sort(key=lambda f: f.start)
    return found


class _OneBlock:
    """Does body[a:b] lie within one paragraph or list item? (block starts are listed on the first call)"""

    def __init__(self, blocks: list[tuple[int, int, str]]) -> None:
        self.blocks, self.starts = blocks, None

    def __call__(self, a: int, b: int) -> bool:
        if self.starts is None:
            self.starts = [start for start, _, _ in self.blocks]
        k = bisect_right(self.starts, a) - 1
        return k >= 0 and b <= self.blocks[k][1] and self.blocks[k][2] in ("para", "list")


def _spans_inside(a: int, b: int, t0: int, t1: int, spans: list[tuple[int, int]], starts: list[int]) -> bool:
    """True when every span (sorted) that meets body[a:b] lies within its text body[t0:t1]."""
    k = max(bisect_right(starts, a) - 1, 0)
    while k < len(spans) and spans[k][0] < b:
        s, e = spans[k]
        if e > a and not (t0 <= s and e <= t1):
            return False
        k += 1
    return True


def _block_ids(masked: str, blocks: list[tuple[int, int, str]]) -> list[str]:
    """`^id` at the end of a block's last line names the block; at the end of an inner line of a paragraph
    or list item it is text, as in Obsidian."""
    if "^" not in masked:
        return []
    found = [m for m in BLOCK_ID.finditer(masked) if m.start() == 0 or masked[m.start() - 1] in " \t\n"]
    if not found:
        return []
    ends = {end for _, end, _ in blocks}
    return list(dict.fromkeys(m.group(1) for m in found if m.end() in ends))


def _text_end(body: str, link: FoundLink) -> int:
    """Where a Markdown link's text ends (its `](`), where tags may stand; -1 for wikilinks and images."""
    if link.kind != "markdown" or link.embed:
        return -1
    return body.rfind("](", link.start, link.end)


def _frontmatter_links(block: FrontmatterBlock, props: Properties) -> list[WikiLink]:
    """Wikilinks written as strings in frontmatter values (`related: ["[[A]]"]`), as Obsidian indexes them."""
    if "[[" not in block.text:
        return []
    lines = block.text.split("\n")
    key_lines = _key_lines(lines, {key for key in props.data if ":" in key or key.endswith(('"', "'", " "))})
    holders = _LinkLines(lines)
    links: list[WikiLink] = []
    for key, value in props.data.items():
        strings = _strings_in(value)
        if not strings:
            continue
        key_line = key_lines.get(key, 0)
        cursor, col = key_line, 0  # the line to look on, and where on it the last link was found
        for text in strings:
            flat, places = _flatten_wikilinks(text)
            context = f"{key}: {flat}"
            n = 0
            for _, _, embed, inner in wikilink_matches(text):
                parts = split_wikilink(inner)
                if parts is None:
                    continue
                place, shown = places[n]
                n += 1
                raw = ("![[" if embed else "[[") + inner + "]]"
                k = lines[cursor].find(raw, col)
                if k < 0:  # not after the last link on its line: the first line from there that holds it
                    cursor = holders.first(raw, cursor, key_line)
                    k = lines[cursor].find(raw)
                at, col = cursor, k + len(raw) if k >= 0 else 0
                target, heading, block_id, label = parts
                links.append(
                    WikiLink(
                        raw=raw,
                        target=target,
                        heading=heading,
                        block=block_id,
                        label=label,
                        embed=embed,
                        line=at + 2,  # the opening `---` is line 1
                        context=clip_context(context, len(key) + 2 + place, shown),
                        frontmatter_key=key,
                    )
                )
    return links


class _LinkLines:
    """The lines of a frontmatter block holding each link's text (`[[x]]`, `![[x]]`), listed in one pass when
    first asked: a link not on its key's line (written with an escape, `"\\x5B[a]]"`) was looked for in every
    line after it, so 4,000 such links took 1.1 s (9,000: 4.7 s). Its text holds no bracket or newline between
    `[[` and `]]`, so each place holding it is a match of WIKILINK (they cannot overlap)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.by_text: dict[str, list[int]] | None = None

    def first(self, raw: str, start: int, default: int) -> int:
        """The first line from `start` on that holds `raw`, else `default`."""
        if self.by_text is None:
            self.by_text = {}
            for i, line in enumerate(self.lines):
                for m in WIKILINK.finditer(line) if "[[" in line else ():
                    self.by_text.setdefault(m.group(), []).append(i)
                    if m.start() and line[m.start() - 1] == "!":
                        self.by_text.setdefault("!" + m.group(), []).append(i)
        holding = self.by_text.get(raw, ())
        k = bisect_left(holding, start)
        return holding[k] if k < len(holding) else default


def _key_lines(lines: list[str], odd_keys: set[str]) -> dict[str, int]:
    """The first line on which each key starts a top-level line as `key:` / `"key":`, in one pass: looking for
    a key's line read the block once per key (6,000 keys: 6 s; 6,000 keys with `:` or a closing quote: 7.7 s).
    Such a line, less its leading quotes, holds every key that is the text before one of its `:`, less none, some
    or all of the quotes and spaces just before that `:`. A key without `:` that ends in no quote or space can
    only be the text before the first `:` less all of them; `odd_keys`, the others, are looked up among the rest,
    sliced only at their lengths."""
    lengths = {len(key) for key in odd_keys}
    found: dict[str, int] = {}
    for i, line in enumerate(lines):
        if line and line[0] not in " \t-#":
            rest = line.lstrip("\"'")
            colon = rest.find(":")
            if colon < 0:
                continue
            found.setdefault(rest[:colon].rstrip("\"' "), i)
            while colon >= 0 and lengths:
                end = colon  # each end of a key before this colon: the quotes and spaces before it, one by one
                while True:
                    if end in lengths and (key := rest[:end]) in odd_keys:
                        found.setdefault(key, i)
                    if end == 0 or rest[end - 1] not in "\"' ":
                        break
                    end -= 1
                colon = rest.find(":", colon + 1)
    return found


def _strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if "[[" in value else []
    if isinstance(value, list):
        return [s for v in value for s in _strings_in(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_in(v)]
    return []


def _flatten_wikilinks(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with each wikilink as what it shows; where each shows, and its length."""
    pieces, places, pos, at = [], [], 0, 0
    for a, b, embed, inner in wikilink_matches(text):
        parts = split_wikilink(inner)
        if parts is not None:
            shown = display_text(*parts, embed)
            at += a - pos
            pieces += [text[pos:a], shown]
            places.append((at, len(shown)))
            at += len(shown)
            pos = b
    return "".join(pieces) + text[pos:], places

