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
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import unquote

from wikirag.markdown.layout import Layout, lay_out
from wikirag.markdown.properties import FrontmatterBlock, Properties, load_properties, split_frontmatter
from wikirag.models import Heading, LinkKind, ParsedNote, WikiLink

# Patterns start with a literal so `re` can skip ahead fast; a leading `!` (embed) is checked by hand.
WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")
MARKDOWN_LINK = re.compile(
    r"\[((?:[^\[\]\n\\]|\\.|\[[^\[\]\n]*\])*)\]"  # text, one level of nested brackets
    r"\(\s*(<[^<>\n]*>|(?:[^\s()<>\\]|\\.|\([^\s()]*\))+)"  # destination, balanced parentheses
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"  # optional title
)
_ANY_MARKDOWN_LINK = re.compile("!?" + MARKDOWN_LINK.pattern)
_EXTERNAL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:|//")  # http:, mailto:, obsidian://, //host
# Obsidian tags: no ASCII punctuation but - _ /, no Unicode punctuation; must follow whitespace (by hand)
TAG = re.compile(r"#([^\s!-,.:-@\[-\^`{-~\u2000-\u206f\u2e00-\u2e7f]+)")
BLOCK_ID = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$", re.MULTILINE)  # must follow a space or start a line
_SIZE_LABEL = re.compile(r"\d+(?:x\d+)?")  # `![[img.png|300]]`, `![[img.png|300x200]]`
# a sentence ends at . ! ? … (then closing quotes/brackets) before whitespace, or at CJK 。！？
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][.!?\u2026\u3002\uff01\uff1f\"'\u201d\u2019)\]]*")
_CJK_STOPS = "\u3002\uff01\uff1f"
_LINE_PREFIX = re.compile(r"(?:[ ]{0,3}>[ ]?)*[ \t]*")
_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[.\][ \t]+)?")
_HEADING_MARKER = re.compile(r"#{1,6}[ \t]+")
_TRAILING_BLOCK_ID = re.compile(r"[ \t]\^[A-Za-z0-9-]+[ \t]*$|^\^[A-Za-z0-9-]+$")
CONTEXT_CHARS = 300
# ASCII bytes -> b" " for what str.split() treats as whitespace, b"x" for the rest (word counting)
_WORD_TABLE = bytes(32 if chr(c).isspace() else 120 for c in range(128)) + b"x" * 128


class _Found(NamedTuple):
    """A link found in the body, before line, section and context are known."""

    start: int
    end: int
    embed: bool
    kind: LinkKind
    target: str
    heading: str | None
    block: str | None
    label: str | None


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
    masked, in_code = _mask(body, layout.ignored)
    found = _find_links(body, masked)
    link_starts = [f.start for f in found]
    link_ends = [f.end for f in found]

    links = _frontmatter_links(block, props) if block is not None and props.error is None else []
    if found:
        links.extend(_BodyLinks(body, masked, layout, found, link_starts, offset).build())

    tags = list(props.tags)
    for m in TAG.finditer(masked) if "#" in masked else ():
        a, tag = m.start(), m.group(1)
        if (a and not masked[a - 1].isspace()) or tag.isdigit() or _inside(a, link_starts, link_ends):
            continue  # `#` must follow whitespace; `#123` is no tag
        tag = tag.lower()
        if tag not in tags:
            tags.append(tag)

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
        frontmatter_error=props.error,
        body=body,
        body_line_offset=offset,
        headings=[Heading(level, title, line + offset + 1) for _, level, title, line in layout.headings],
        block_ids=_block_ids(masked),
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


# -- link grammar -----------------------------------------------------------------------------------------


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
    target = unquote(path).strip()
    heading = block = None
    if hash_:
        fragment = unquote(fragment).strip()
        if fragment.startswith("^"):
            block = fragment[1:] or None
        else:
            heading = "#".join(p.strip() for p in fragment.split("#") if p.strip()) or None
    if not target and heading is None and block is None:
        return None
    return target, heading, block


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


def markdown_link_matches(text: str) -> Iterator[tuple[int, int, bool, str, str]]:
    """(start, end, embed, text, destination) for each `[text](dest)` / `![alt](dest)`."""
    for m in MARKDOWN_LINK.finditer(text):
        a = m.start()
        embed = a > 0 and text[a - 1] == "!"
        yield a - embed, m.end(), embed, m.group(1), m.group(2)


def _find_links(body: str, masked: str) -> list[_Found]:
    found: list[_Found] = []
    if "[" not in masked:
        return found
    clean = masked is body  # nothing was masked: no need to compare
    for m in WIKILINK.finditer(masked):  # `wikilink_matches`, inlined
        a, b = m.span()
        embed = a > 0 and masked[a - 1] == "!"
        a -= embed
        if not clean and masked[a:b] != body[a:b]:
            continue  # part of it sits in code or a comment
        parts = split_wikilink(m.group(1))
        if parts is not None:
            found.append(_Found(a, b, embed, "wikilink", *parts))
    if "](" in masked:
        wiki_spans = [(f.start, f.end) for f in found]
        for a, b, embed, text, dest in markdown_link_matches(masked):
            if (not clean and masked[a:b] != body[a:b]) or any(s < b and a < e for s, e in wiki_spans):
                continue
            parts = split_destination(dest)
            if parts is not None:
                found.append(_Found(a, b, embed, "markdown", *parts, text.strip() or None))
        found.sort(key=lambda f: f.start)
    return found


def _count_links(segment: str) -> int:
    """Link-looking text in a region Obsidian does not read (code, comments, math)."""
    n = 0
    if "[[" in segment:
        n += sum(1 for *_, inner in wikilink_matches(segment) if split_wikilink(inner) is not None)
    if "](" in segment:
        n += sum(1 for *_, dest in markdown_link_matches(segment) if split_destination(dest) is not None)
    return n


def _mask(body: str, spans: list[tuple[int, int]], count: bool = True) -> tuple[str, int]:
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
            ignored += _count_links(segment)
        parts.append(body[pos:a])
        if "\n" in segment:
            parts.append("\n".join(" " * len(x) for x in segment.split("\n")))
        else:
            parts.append(" " * len(segment))
        pos = b
    parts.append(body[pos:])
    return "".join(parts), ignored


def _block_ids(masked: str) -> list[str]:
    if "^" not in masked:
        return []
    found = (m for m in BLOCK_ID.finditer(masked) if m.start() == 0 or masked[m.start() - 1] in " \t\n")
    return list(dict.fromkeys(m.group(1) for m in found))


def _inside(pos: int, starts: list[int], ends: list[int]) -> bool:
    k = bisect_right(starts, pos) - 1
    return k >= 0 and pos < ends[k]


# -- frontmatter links ----------------------------------------------------------------------------------


def _frontmatter_links(block: FrontmatterBlock, props: Properties) -> list[WikiLink]:
    """Wikilinks written as strings in frontmatter values (`related: ["[[A]]"]`), as Obsidian indexes them."""
    if "[[" not in block.text:
        return []
    lines = block.text.split("\n")
    links: list[WikiLink] = []
    for key, value in props.data.items():
        key_line = next((i for i, ln in enumerate(lines) if _is_key_line(ln, key)), 0)
        cursor = key_line
        for text in _strings_in(value):
            context = f"{key}: {_flatten_wikilinks(text)}"
            for _, _, embed, inner in wikilink_matches(text):
                parts = split_wikilink(inner)
                if parts is None:
                    continue
                raw = ("![[" if embed else "[[") + inner + "]]"
                at = next((i for i in range(cursor, len(lines)) if raw in lines[i]), key_line)
                cursor = at
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
                        context=_clip(context, display_text(*parts, embed)),
                        frontmatter_key=key,
                    )
                )
    return links


def _is_key_line(line: str, key: str) -> bool:
    """`key:` / `"key":` at the start of a top-level line."""
    if not line or line[0] in " \t-#":
        return False
    rest = line.lstrip("\"'")
    return rest.startswith(key) and rest[len(key) :].lstrip("\"' ").startswith(":")


def _strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if "[[" in value else []
    if isinstance(value, list):
        return [s for v in value for s in _strings_in(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_in(v)]
    return []


def _flatten_wikilinks(text: str) -> str:
    pieces, pos = [], 0
    for a, b, embed, inner in wikilink_matches(text):
        parts = split_wikilink(inner)
        if parts is not None:
            pieces += [text[pos:a], display_text(*parts, embed)]
            pos = b
    return "".join(pieces) + text[pos:]


# -- body links: line, section, context -----------------------------------------------------------------


class _BodyLinks:
    """Line, section and context for each link found in a body."""

    def __init__(
        self, body: str, masked: str, layout: Layout, found: list[_Found], starts: list[int], offset: int
    ) -> None:
        self.body, self.masked, self.layout, self.found = body, masked, layout, found
        self.starts = starts
        self.ends = [f.end for f in found]
        self.displays = [display_text(f.target, f.heading, f.block, f.label, f.embed) for f in found]
        self.offset = offset
        self.visible = _mask(body, list(layout.hidden), count=False)[0] if layout.hidden else body
        self.block_starts = [b[0] for b in layout.blocks]
        self.sentences: dict[int, list[int]] = {}
        self.rendered: dict[tuple[int, int], str] = {}
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
        for found, display in zip(self.found, self.displays, strict=True):
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
                    context=context(start, display),
                )
            )
        return out

    def context(self, at: int, display: str) -> str:
        """The sentence holding the link (the whole line for list items, table rows and headings)."""
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
            nl = self.body.find("\n", at, be)
            we = be if nl < 0 else nl
        text = self.rendered.get((ws, we))
        if text is None:
            text = self.rendered[ws, we] = self._render(ws, we, kind)
        return text if len(text) <= CONTEXT_CHARS else _clip(text, display)

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
            if self.masked[pos : self.found[k].start].strip():
                return False
            pos, seen, k = self.found[k].end, True, k + 1
        return seen and not self.masked[pos:end].strip()

    def _render(self, start: int, end: int, kind: str) -> str:
        """body[start:end] with links flattened, comments and math dropped; code stays as written."""
        visible, found, displays, pieces, pos = self.visible, self.found, self.displays, [], start
        for i in range(bisect_left(self.starts, start), len(found)):
            f = found[i]
            if f.start >= end:
                break
            pieces += (visible[pos : f.start], displays[i])
            pos = f.end
        pieces.append(visible[pos:end])
        text = "".join(pieces)
        if kind == "para" and "\n" not in text:
            # a sentence on one line (the common case): the steps below, without the per-line loop
            if text[:1] in (" ", "\t", ">") and (start == 0 or self.body[start - 1] == "\n"):
                text = text[_LINE_PREFIX.match(text).end() :]
            text = " ".join(text.split())
            if "](" in text:
                text = _ANY_MARKDOWN_LINK.sub(_link_text, text)
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
            text = _ANY_MARKDOWN_LINK.sub(_link_text, text)
        return _TRAILING_BLOCK_ID.sub("", text) if "^" in text else text


def _link_text(m: re.Match[str]) -> str:
    return m.group(1).strip()


def _clip(text: str, focus: str, width: int = CONTEXT_CHARS) -> str:
    """At most `width` characters of `text`, centred on `focus` when it has to be cut."""
    if len(text) <= width:
        return text
    at = max(text.find(focus), 0)
    start = max(0, min(at + len(focus) // 2 - width // 2, len(text) - width))
    cut = text[start : start + width - 2].strip()
    return ("…" if start > 0 else "") + cut + ("…" if start + width - 2 < len(text) else "")
