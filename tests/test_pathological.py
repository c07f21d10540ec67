"""Pathological note text (long runs of one character or pattern, as pasted logs and generated tables hold): each
spot that grew with the square of such a run now reads the text once. The old code is kept here as the oracle
the new code must agree with on random soup; the pathological inputs themselves give the expected answer.
bench/pathological.py times them."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from wikirag.markdown.layout import heading_text
from wikirag.markdown.parse import parse_note


def soup(*units: str, size: int = 30) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(units), max_size=size).map("".join)


# --- layout: an ATX heading's closing `#` run ---------------------------------------------------------------

_OLD_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")


def _old_heading_text(raw: str) -> str:
    return _OLD_ATX_CLOSING.sub("", raw.strip()).strip()


@settings(max_examples=2000, deadline=None)
@given(soup("#", "##", " ", "\t", "a", "b c", "C#", "\u00a0", "\u2003", "\n", size=14))
@example("# #")
@example("a #\t#")
@example("###")
@example("a \u00a0#")
def test_heading_text_drops_the_closing_run_as_the_pattern_did(raw):
    assert heading_text(raw) == _old_heading_text(raw)


def test_a_heading_with_a_long_run_of_spaces_keeps_its_text():
    """The pattern was tried from every space of the run: `# a` + 20 KB of spaces + `b` took 4 s to parse."""
    for gap in (" ", "\t", " \t"):
        text = "a" + gap * 40_000 + "b"
        assert heading_text(text) == text
        assert heading_text(text[:-1] + "#") == "a"
        assert parse_note("# " + text, "n.md").headings[0].text == text
