"""Small readings of one Markdown line or position, shared by the layout scan and the parser: a line's indent in
columns, an ATX heading's text, and whether a character is escaped by a backslash."""

from __future__ import annotations


def indent_of(text: str) -> int:
    """Leading columns, a tab counting to the next multiple of 4 (CommonMark)."""
    col = 0
    for ch in text:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def heading_text(raw: str) -> str:
    """ATX heading content without the optional closing `#` sequence: the last run of `#`, when it is the whole
    text or follows a space or tab. By hand: a pattern for it was tried again from every space of a long run
    of spaces (a 20 KB heading of spaces took 4 s)."""
    text = raw.strip()
    bare = text.rstrip("#")
    if len(bare) == len(text):
        return text
    before = bare.rstrip(" \t")
    if bare and len(before) == len(bare):
        return text  # `C#`: the run is part of the last word
    return before.strip()


def is_escaped(body: str, pos: int, floor: int) -> bool:
    """True when body[pos] is preceded by an odd run of backslashes."""
    k = pos - 1
    while k >= floor and body[k] == "\\":
        k -= 1
    return (pos - 1 - k) % 2 == 1
