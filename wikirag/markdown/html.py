"""HTML tags in a note's Markdown: what a reader of the rendered note does not see as text.

Only HTML elements are tags: `<string>`, `<date>` or `$a<n$ … $b>c$` in prose are words, not tags. The text
between tags stays (`<center><b>Bold</b> words</center>` reads "Bold words").
"""

from __future__ import annotations

import re

_ELEMENTS = ("a|abbr|article|aside|audio|b|blockquote|br|button|caption|center|cite|code|col|colgroup|dd|del|details|"
             "div|dl|dt|em|embed|figcaption|figure|font|footer|form|h[1-6]|header|hr|i|iframe|img|input|ins|kbd|label|"
             "li|main|mark|nav|object|ol|option|p|picture|pre|q|s|section|select|small|source|span|strong|sub|summary|"
             "sup|svg|table|tbody|td|textarea|tfoot|th|thead|time|tr|u|ul|video")
HTML_TAG = re.compile(rf"</?(?:{_ELEMENTS})(?=[\s/>])[^<>\n]*>", re.IGNORECASE)
_INLINE_CODE = re.compile(r"(`[^`\n]*`)")


def _gap(tag: re.Match[str]) -> str:
    return "" if tag.group().startswith("</") else " "  # `more</span>.` reads "more.", `a<br>b` "a b"


def without_html_tags(text: str) -> str:
    """`text` with its HTML tags left out (an opening or lone tag leaves a space), except inside inline code
    (`<div>` there is what someone types). For text without code blocks: a description, a link's sentence."""
    if "<" not in text:
        return text
    if "`" not in text:
        return HTML_TAG.sub(_gap, text)
    return "".join(piece if k % 2 else HTML_TAG.sub(_gap, piece) for k, piece in enumerate(_INLINE_CODE.split(text)))
