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
from wikirag.markdown.layout import lay_out

# [text](target "title") and ![alt](target); the target may hold one level of parentheses ("Foo_(bar)")
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?((?:[^()\s<>]|\([^()\s]*\))*)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# A URL's own characters (RFC 3986), so one written into CJK prose with no space after it ends where the URL does;
# the look-behind instead of \b, so a URL right after a CJK character (a word character) is found too.
_URL_CHARS = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+"
_BARE_URL = re.compile(rf"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://{_URL_CHARS}|(?<![A-Za-z0-9.-])www\.{_URL_CHARS}")
# HTML elements only: `<string>`, `<date>` or `$a<n$ … $b>c$` in prose are words, not tags
_HTML = ("a|abbr|article|aside|audio|b|blockquote|br|button|caption|center|cite|code|col|colgroup|dd|del|details|"
         "div|dl|dt|em|embed|figcaption|figure|font|footer|form|h[1-6]|header|hr|i|iframe|img|input|ins|kbd|label|li|"
         "main|mark|nav|object|ol|option|p|picture|pre|q|s|section|select|small|source|span|strong|sub|summary|sup|"
         "svg|table|tbody|td|textarea|tfoot|th|thead|time|tr|u|ul|video")
_TAG = re.compile(rf"</?(?:{_HTML})(?=[\s/>])[^<>\n]*>", re.IGNORECASE)


def _link(match: re.Match[str]) -> str:
    return match.group(1) if _SCHEME.match(match.group(2)) else match.group(0)


def _outside_addresses_and_tags(text: str) -> str:
    text = _MD_LINK.sub(_link, text)
    return _TAG.sub(" ", _BARE_URL.sub(" ", text))


def searchable_text(text: str) -> str:
    """`text` with comments, math, outside addresses and HTML tags replaced by spaces; code is left as written
    (a URL or `<div>` inside a code span is what someone types)."""
    layout = lay_out(text)
    hidden = list(layout.hidden)
    if hidden:
        text = mask_spans(text, hidden, count=False)[0]  # blanked in place: the offsets below still hold
    code = sorted(span for span in layout.ignored if span not in set(hidden))
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
