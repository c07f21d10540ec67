"""The link grammar, as a value type's parts: `[[target#heading^block|label]]`, embeds `![[...]]`,
Markdown links `[label](dest)` to local files, and what Obsidian displays for each.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import unquote

# Patterns start with a literal so `re` can skip ahead fast; a leading `!` (embed) is checked by hand.
WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")


_DESTINATION = (
    r"\(\s*(<[^<>\n]*>|(?:[^\s()<>\\]|\\.|\([^\s()]*\))+)"  # destination, balanced parentheses
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"  # optional title
)


MARKDOWN_LINK = re.compile(r"\[((?:[^\[\]\n\\]|\\.|\[[^\[\]\n]*\])*)\]" + _DESTINATION)  # one level of nesting


# The text may go on across a soft line break (never a blank line): the parser keeps such a match only inside one
# paragraph or list item, so it cannot join list items, headings or quotes.
MARKDOWN_LINK_ACROSS_LINES = re.compile(r"\[((?:[^\[\]\n\\]|\\.|\n(?![ \t]*\n)|\[[^\[\]\n]*\])*)\]" + _DESTINATION)


_ANY_MARKDOWN_LINK = re.compile("!?" + MARKDOWN_LINK.pattern)


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


def markdown_link_matches(
    text: str, pos: int = 0, endpos: int | None = None
) -> Iterator[tuple[int, int, bool, str, str]]:
    """(start, end, embed, text, destination) for each `[text](dest)` / `![alt](dest)` in text[pos:endpos]."""
    for m in MARKDOWN_LINK.finditer(text, pos, len(text) if endpos is None else endpos):
        a = m.start()
        embed = a > 0 and text[a - 1] == "!"
        yield a - embed, m.end(), embed, m.group(1), m.group(2)

