"""Properties: parse_note never raises, and never finds a link inside code; the YAML fast path agrees."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.test_pathological import _old_is_key_line
from wikirag.markdown.parse import parse_note

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text without lone surrogates (they cannot come out of a UTF-8 decode), NULs and control characters included
any_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=400)
# Markdown-ish text with the characters that drive the parser
markdownish = st.text(alphabet="ab [[]]|#^!-*>`~%$<>\n\t\\()./:\"'=", max_size=300)


@SETTINGS
@given(any_text)
def test_parse_never_raises(text: str) -> None:
    note = parse_note(text, "x/Note.md")
    assert note.words <= len(text.split())  # words are whitespace-separated runs of the body
    assert all(1 <= link.line <= text.count("\n") + 1 for link in note.links)


@SETTINGS
@given(markdownish)
def test_parse_never_raises_on_markdown_soup(text: str) -> None:
    note = parse_note(text, "Note.md")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for link in note.links:
        if link.frontmatter_key is None:
            assert link.raw in lines[link.line - 1]


# prose that cannot open or close code, comments or math, so what we put in code stays code. The texts
# below start with a line of their own: a first line `---` opens frontmatter, which ends at the next `---`
# line even inside what would be a fence (Obsidian reads "---\n```\n---\n[[X]]" as a property block and a
# link), and that rule has its own tests.
prose = st.text(alphabet="abc XYZ[]|#!-.,\n", max_size=60)
code_body = st.text(alphabet="abc [[]]|#!-\n", max_size=40).map(lambda s: s + "[[CODEX]]")


@SETTINGS
@given(prose, code_body, prose, st.sampled_from(["```", "~~~", "````", "~~~~~"]))
def test_no_link_inside_a_fence(before: str, code: str, after: str, fence: str) -> None:
    text = f"Intro\n{before}\n{fence}\n{code}\n{fence}\n{after}"
    assert "CODEX" not in [link.target for link in parse_note(text, "n.md").links]


@SETTINGS
@given(prose, code_body, prose)
def test_no_link_inside_an_unclosed_fence(before: str, code: str, after: str) -> None:
    text = f"Intro\n{before}\n```\n{code}\n{after}"
    assert "CODEX" not in [link.target for link in parse_note(text, "n.md").links]


@SETTINGS
@given(prose, st.text(alphabet="abc [[]]|#! ", max_size=30), prose, st.integers(1, 3))
def test_no_link_inside_a_code_span(before: str, code: str, after: str, ticks: int) -> None:
    fence = "`" * ticks
    text = f"{before} {fence}{code}[[CODEX]]{fence} {after}"
    assert "CODEX" not in [link.target for link in parse_note(text, "n.md").links]


# -- the frontmatter fast path gives what PyYAML gives ----------------------------------------------------

key = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
scalar = st.one_of(
    st.from_regex(r"[A-Za-z][A-Za-z0-9 ._/-]{0,10}", fullmatch=True),
    st.from_regex(r"-?[0-9]{1,4}", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True),
    st.sampled_from(["yes", "No", "null", "true", "~", "1.5", "012", "a: b", "x #y", "[[A]]", ""]),
    st.from_regex(r'"[^"\\\n]{0,10}"', fullmatch=True),
    st.from_regex(r"'[^'\n]{0,10}'", fullmatch=True),
)
value = st.one_of(scalar, st.lists(scalar, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"))
block = st.lists(st.tuples(key, value), max_size=6).map(lambda pairs: "\n".join(f"{k}: {v}".rstrip() for k, v in pairs))




# -- Markdown links read in steps give what the patterns gave -------------------------------------------------

# The patterns the parser used until their reads from every `[` made a 60 KB note of `[a\](` take 11 s: the
# reference MarkdownLinks must agree with.
_OLD_DESTINATION = (
    r"\(\s*(<[^<>\n]*>|(?:[^\s()<>\\]|\\.|\([^\s()]*\))+)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
_OLD_MARKDOWN_LINK = re.compile(r"\[((?:[^\[\]\n\\]|\\.|\[[^\[\]\n]*\])*)\]" + _OLD_DESTINATION)
_OLD_ACROSS_LINES = re.compile(r"\[((?:[^\[\]\n\\]|\\.|\n(?![ \t]*\n)|\[[^\[\]\n]*\])*)\]" + _OLD_DESTINATION)
_OLD_ANY_MARKDOWN_LINK = re.compile("!?" + _OLD_MARKDOWN_LINK.pattern)

link_soup = st.lists(
    st.sampled_from(
        ["[", "]", "(", ")", "\\", "!", " ", "\n", "\n\n", "\t", "a", "x.md", "<", ">", '"', "'", "#", "](", "[a]"]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=3000, deadline=None)
@given(link_soup, st.integers(0, 40), st.integers(0, 40), st.booleans())
@example("[a](b) ![c](<d e> 'f') [g [h] \\] i](j(k) \"l\")", 0, 99, False)
@example("[a\\](b\\)](c)[d\n e](f)[g\n\nh](i)[j\\\n](k)", 0, 99, True)
@example("[x](<a>  'b'  ) [y](a\\ b) [z](a (b)) [w](<a) [v](a\\", 3, 30, False)
def test_markdown_links_are_read_as_the_patterns_read_them(text: str, pos: int, endpos: int, across: bool) -> None:
    from wikirag.markdown.wikilinks import MarkdownLinks, flatten_markdown_links

    pattern = _OLD_ACROSS_LINES if across else _OLD_MARKDOWN_LINK
    links = MarkdownLinks(text, endpos, across_lines=across)
    expected, found, at = [], [], pos
    while (m := pattern.search(text, at, endpos)) is not None:
        expected.append((m.start(), m.end(), m.group(1), m.group(2)))
        at = m.end()
    while (got := links.search(pos)) is not None:
        found.append(got)
        pos = got[1]
    assert found == expected
    for start in reversed(range(len(text) + 2)):  # from every position, last first: each read is remembered
        m = pattern.search(text, start, endpos)
        assert links.search(start) == (m and (m.start(), m.end(), m.group(1), m.group(2)))
    assert flatten_markdown_links(text) == _OLD_ANY_MARKDOWN_LINK.sub(lambda m: m.group(1).strip(), text)


# -- frontmatter links' lines, found in one pass, are where the search per key and per link found them --------


def _lines_as_searched(block: str, data: dict) -> list[int]:
    """The lines _frontmatter_links gave until the search per key (6,000 keys: 6 s) and per link (20,000 links on
    one line: 2 s) went: the reference for the one-pass lookups."""
    from wikirag.markdown.parse import _strings_in
    from wikirag.markdown.wikilinks import split_wikilink, wikilink_matches

    lines, found = block.split("\n"), []
    for key, value in data.items():
        key_line = next((i for i, ln in enumerate(lines) if _old_is_key_line(ln, key)), 0)
        cursor = key_line
        for text in _strings_in(value):
            for _, _, embed, inner in wikilink_matches(text):
                if split_wikilink(inner) is not None:
                    raw = ("![[" if embed else "[[") + inner + "]]"
                    cursor = next((i for i in range(cursor, len(lines)) if raw in lines[i]), key_line)
                    found.append(cursor + 2)
    return found


fm_key = st.sampled_from(["a", '"b"', "'c d'", '"e:f"', "g:h", '"i "', "\"j'\"", "'k\"'", "l m", '"n" ', "o"])
fm_value = st.sampled_from(
    [
        '"[[A]]"', "[[A]]", '["[[A]]", "[[B]]"]', '&x "[[A]]"', "*x", '"[[A]] [[A]]"', "x", '"[[B|b]] t ![[A]]"',
        '[&y "[[C]]", *y]', '"[[A]]x[[A]]"', '"[[\\u0041]]"', "|\n  [[A]]\n  [[B]] [[A]]", '\n  - "[[A]]"\n  - "[[B]]"',
    ]
)


@SETTINGS
@example([("a", '"[[A]]x[[A]]"'), ("b", "[&y \"[[A]]\", *y]")])
@given(st.lists(st.tuples(fm_key, fm_value), max_size=6, unique_by=lambda pair: pair[0]))
def test_frontmatter_links_are_on_the_lines_the_search_found(pairs: list[tuple[str, str]]) -> None:
    from wikirag.markdown.properties import load_properties, split_frontmatter

    text = "---\n" + "\n".join(f"{k}: {v}" for k, v in pairs) + "\n---\nBody.\n"
    block, _ = split_frontmatter(text)
    props = load_properties(block)
    links = [link.line for link in parse_note(text, "n.md").links if link.frontmatter_key is not None]
    assert links == (_lines_as_searched(block.text, props.data) if props.error is None else [])
