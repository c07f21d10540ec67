"""The words of a chunk that BM25 should index: what a reader reads, without what only renders or points away.

Left out (replaced by spaces):
- comments (`%%…%%`, `<!--…-->`) and math (`$$…$$` blocks): the layout pass's `hidden` spans, which link
  contexts already leave out. LaTeX is symbols, not words (`\\sum_{k=n+1}^{m} a_k b_k` tokenizes to
  "sum", "k", "n", "m"…), and in a proof-heavy note it made up most of the chunk's length, so BM25's length
  normalisation buried the note's statement;
- addresses outside the vault: a markdown link or image whose target has a scheme (`https:`, `obsidian:`,
  `mailto:`) keeps its text and loses the target, and bare URLs go (`https://github.dev/…/AWS%20Fargate.md`
  gave "github", "dev", "aw", "20fargat"…: a wiki whose every note ends in a footer of edit links had its
  short notes' lengths set by the footer);
- HTML tags (`<span class="git-footer">`); the text between them stays.

Kept: prose, headings, code (people search for the syntax they type), wikilinks and the targets of markdown
links inside the vault (note names, like a wikilink's target).
"""

from __future__ import annotations

import re

from wikirag.markdown.context import mask_spans
from wikirag.markdown.html import HTML_TAG
from wikirag.markdown.layout import lay_out

# [text](target "title") and ![alt](target); the target may hold one level of parentheses ("Foo_(bar)").
# Read by hand in pieces: the text runs from the `[` to the next `]` (no newline between); after `](` and all the
# spaces there come `_TARGET_ON`, else (spaces first, no target) `_TITLE_ON`.
_TARGET_ON = re.compile(r"<?((?:[^()\s<>]|\([^()\s]*\))*)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_TITLE_ON = re.compile(r"\"[^\"\n]*\"\s*\)")
_SPACES = re.compile(r"\s*")
_CLOSE_OR_NEWLINE = re.compile(r"[\]\n]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# A URL's own characters (RFC 3986), so one written into CJK prose with no space after it ends where the URL does;
# the look-behind instead of \b, so a URL right after a CJK character (a word character) is found too.
_URL_CHARS = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+"
_BARE_URL = re.compile(rf"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://{_URL_CHARS}|(?<![A-Za-z0-9.-])www\.{_URL_CHARS}")


def _outside_links(text: str) -> str:
    """Each Markdown link whose target has a scheme, as its text. What one pattern did, read in pieces: it was
    tried again from every `[` up to the next `]` (a minute for a line of 80,000 `[`), and tried every split of
    a run of spaces after `(` between the target and a title (30 s for `[](` and 80,000 spaces). Every `[`
    before one `]` reaches the same rest, so each `]` is read once; the spaces are taken whole first, and
    given back only to a title, which needs at least one before it (the target is then empty)."""
    pieces: list[str] = []
    pos = search = 0  # copied up to pos; the next `[` is looked for from search
    while (i := text.find("[", search)) >= 0:
        close = _CLOSE_OR_NEWLINE.search(text, i + 1)
        if close is None:
            break
        j = close.start()
        rest = None
        if text.startswith("](", j):
            k = _SPACES.match(text, j + 2).end()
            rest = _TARGET_ON.match(text, k)
            target = rest.group(1) if rest is not None else ""
            if rest is None and k > j + 2:
                rest = _TITLE_ON.match(text, k)
        if rest is None:
            search = j + 1  # no link from any `[` before this `]` or newline
            continue
        if _SCHEME.match(target):
            pieces += (text[pos:i], text[i + 1 : j])
            pos = rest.end()
        search = rest.end()
    return "".join(pieces) + text[pos:] if pieces else text


def _outside_addresses_and_tags(text: str) -> str:
    text = _outside_links(text) if "](" in text else text
    return HTML_TAG.sub(" ", _BARE_URL.sub(" ", text))


def searchable_text(text: str) -> str:
    """`text` with comments, math, outside addresses and HTML tags replaced by spaces; code is left as written
    (a URL or `<div>` inside a code span is what someone types)."""
    layout = lay_out(text)
    hidden = list(layout.hidden)
    if hidden:
        text = mask_spans(text, hidden, count=False)[0]  # blanked in place: the offsets below still hold
    shown = set(hidden)
    code = sorted(span for span in layout.ignored if span not in shown)
    parts: list[str] = []
    pos = 0
    for a, b in code:
        if b <= pos:
            continue
        parts.append(_outside_addresses_and_tags(text[pos:max(a, pos)]))
        parts.append(text[max(a, pos):b])
        pos = b
    parts.append(_outside_addresses_and_tags(text[pos:]))
    return "".join(parts)
