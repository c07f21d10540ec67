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
_BARE_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://\S+|\bwww\.\S+")
_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")


def _link(match: re.Match[str]) -> str:
    return match.group(1) if _SCHEME.match(match.group(2)) else match.group(0)


def searchable_text(text: str) -> str:
    """`text` with comments, math, outside addresses and HTML tags replaced by spaces."""
    layout = lay_out(text)
    if layout.hidden:
        text = mask_spans(text, list(layout.hidden), count=False)[0]
    text = _MD_LINK.sub(_link, text)
    return _TAG.sub(" ", _BARE_URL.sub(" ", text))
