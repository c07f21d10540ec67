"""Pathological note text (long runs of one character or pattern, as pasted logs and generated tables hold): each
spot that grew with the square of such a run now reads the text once. The old code is kept here as the oracle
the new code must agree with on random soup; the pathological inputs themselves give the expected answer.
bench/pathological.py times them."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from wikirag.graph.contribution import _block_text, _Hidden, opening_paragraph
from wikirag.lightrag import lazy_encoding
from wikirag.lightrag.tokens import get_encoding
from wikirag.markdown.layout import Layout, heading_text, lay_out
from wikirag.markdown.parse import _key_lines, _LinkLines, parse_note
from wikirag.markdown.payloads import _DRAWING_FENCE, _DRAWING_LINES, _SCENE, MIN_PAYLOAD, payloads
from wikirag.markdown.searchable import _outside_links, searchable_text
from wikirag.markdown.structure import _Holes, prose_chars, sections
from wikirag.markdown.wikilinks import wikilink_matches
from wikirag.plan.mentions import sentence_names


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


# --- structure: prose per section --------------------------------------------------------------------------

MARKDOWN = soup("# h", "## h #", "\n", "\n\n", "```", "~~~", "`", "$$", "$", "$a$", "%%", "<!--", "-->", "a b", "- ",
                "> ", "    ", "\t", "|", "|-|", "---", "===", "[[x]]", "\\", "C#", " #")



def _old_holes(layout: Layout) -> list[tuple[int, int]]:
    spans = list(layout.ignored)
    spans += [(a, b) for a, b, kind in layout.blocks if kind == "heading"]
    spans.sort()
    return spans


def _old_cut(body: str, start: int, end: int, holes: list[tuple[int, int]]) -> str:
    parts, pos = [], start
    for a, b in holes:
        if b <= pos or a >= end:
            continue
        if a > pos:
            parts.append(body[pos:a])
        pos = max(pos, b)
    if pos < end:
        parts.append(body[pos:end])
    return "".join(parts)


@settings(max_examples=800, deadline=None)
@given(MARKDOWN, st.lists(st.integers(0, 200), max_size=4))
def test_a_stretch_without_its_holes_is_what_a_pass_over_every_hole_gave(body, cuts):
    layout = lay_out(body)
    old, new = _old_holes(layout), _Holes(layout)
    marks = sorted({0, len(body), *layout.line_starts, *(min(c, len(body)) for c in cuts)})
    for i, start in enumerate(marks):
        for end in marks[i:]:
            assert new.cut(body, start, end) == _old_cut(body, start, end, old)


def test_twenty_thousand_one_line_sections_each_hold_their_own_prose():
    """Each section read every hole (heading lines are holes): 80 KB of `# a` lines took 12 s."""
    assert [s.prose_chars for s in sections("# a\n" * 20_000)] == [0] * 20_000
    body = "# a\n`c` d\n" * 8_000
    assert [s.prose_chars for s in sections(body)] == [1] * 8_000
    assert prose_chars(body) == 8_000


# --- searchable: Markdown links to outside addresses -------------------------------------------------------

_OLD_MD_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?((?:[^()\s<>]|\([^()\s]*\))*)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _old_outside_links(text: str) -> str:
    return _OLD_MD_LINK.sub(lambda m: m.group(1) if _SCHEME.match(m.group(2)) else m.group(0), text)


@settings(max_examples=2000, deadline=None)
@given(soup("[", "]", "(", ")", "](", " ", "  ", "\n", "\t", '"', "<", ">", "a", "http:", "https://x", "b c", "\\",
            "[a](", ")]", '"t"'))
@example('see [a]( "t u") [b](https://y) end')
@example("[a [b](https://x)")
@example('[x](  "t") [y](https://z "t")')
@example("[](\n\n\"t\"\n)[q](https://r)")
@example("[a](<https://x>) [b](https://x_(y)) [c](https://x (y))")
def test_outside_links_read_as_the_pattern_did(text):
    assert _outside_links(text) == _old_outside_links(text)


def test_brackets_and_spaces_that_never_make_a_link_are_the_text():
    """The pattern read from every `[` to the next `]` (a minute for 80 KB of `[`) and tried every split of the
    spaces after `(` between a target and a title (30 s for `[](` and 80 KB of spaces)."""
    for text in ("[" * 80_000, "[a" * 40_000, "[[a#" * 20_000, "[](" + " " * 80_000 + "x", "[a](" * 20_000):
        assert searchable_text(text) == text
    assert searchable_text("[a](" + " " * 80_000 + "https://x.org)") == "a"
    assert searchable_text("[" * 40_000 + "a](https://x.org)") == "[" * 39_999 + "a"  # the first `[` opens it


def test_thousands_of_comments_and_math_blocks_are_left_out_beside_code():
    """Each code span was looked for among all comments and math, in a set built again for each: 80 KB of
    `$$` lines took 50 s, of `%%` 23 s."""
    for unit in ("%%", "%%a%%\n\n", "$$\n", "%%a%% `c` "):
        text = unit * (80_000 // len(unit))
        assert searchable_text(text).split() == ["`c`"] * text.count("`c`")


# --- comments in the first paragraph (a note's description) ------------------------------------------------


def _old_block_text(body: str, start: int, end: int, layout: Layout) -> str:
    hidden = [(a, b) for a, b in layout.hidden if b > start and a < end]
    text = body[start:end]
    for a, b in reversed(hidden):
        text = text[: max(0, a - start)] + text[min(len(text), b - start):]
    return " ".join(line.strip() for line in text.split("\n") if line.strip())


@settings(max_examples=800, deadline=None)
@given(MARKDOWN)
@example("a %%b%% c <!-- d --> e $$f$$ g\n%%\nh\n%% i")
def test_a_block_without_comments_and_math_is_what_the_slices_gave(body):
    layout = lay_out(body)
    hidden = _Hidden(layout.hidden)
    for start, end, _kind in layout.blocks:
        assert _block_text(body, start, end, hidden) == _old_block_text(body, start, end, layout)


def test_the_opening_paragraph_after_ten_thousand_comments():
    """Each block looked at every comment of the note: 80 KB of `%%a%%` paragraphs took 5 s."""
    note = parse_note("%%a%%\n\n" * 10_000 + "Hello there.", "n.md")
    assert opening_paragraph(note) == "Hello there."
    note = parse_note("Hi" + " %%a%%" * 12_000 + " there.", "n.md")
    assert opening_paragraph(note) == "Hi there."


# --- frontmatter: the line of a key with `:` or a closing quote ------------------------------------------------


def _old_is_key_line(line: str, key: str) -> bool:
    """`key:` / `"key":` at the start of a top-level line: tried on every line for each key with `:` or ending in
    a quote or space until such keys' lines were listed in one pass (6,000 of them, each with a link: 7.7 s)."""
    if not line or line[0] in " \t-#":
        return False
    rest = line.lstrip("\"'")
    return rest.startswith(key) and rest[len(key) :].lstrip("\"' ").startswith(":")


def _odd(key: str) -> bool:
    return ":" in key or key.endswith(('"', "'", " "))


key_soup = soup('"', "'", " ", ":", "a", "b", "a:", "-", "#", "\t", size=10)


def _lines_and_keys(lines: list[str]) -> st.SearchStrategy[tuple[list[str], list[str]]]:
    """Lines and keys, most of them a start of a line less its opening quotes."""
    starts = [ln.lstrip("\"'")[:n] for ln in lines for n in range(len(ln) + 1)]
    keys = st.sampled_from(starts) | key_soup if starts else key_soup
    return st.tuples(st.just(lines), st.lists(keys, max_size=12))


@settings(max_examples=500, deadline=None)
@given(st.lists(key_soup, max_size=8).flatmap(_lines_and_keys))
@example((['a:b: "[[x]]"', '"a:b" : c', "a:b'': d", "a:b' :: e"], ["a:b", "a:b'", "a:b'' ", "a:b' :", "a"]))
def test_each_key_is_on_the_line_the_search_per_key_found(lines_and_keys):
    lines, keys = lines_and_keys
    found = _key_lines(lines, {k for k in keys if _odd(k)})
    for key in keys:
        assert found.get(key, 0) == next((i for i, ln in enumerate(lines) if _old_is_key_line(ln, key)), 0), key


def test_six_thousand_keys_with_colons_and_quotes_each_find_their_line():
    for key in ('"k:{}"', "k{}'", '"k{} "', "'k:{}:'"):
        text = "---\n" + "".join(f'{key.format(i)}: "[[a{i}]]"\n' for i in range(6_000)) + "---\nBody.\n"
        links = parse_note(text, "n.md").links
        assert [(link.target, link.line) for link in links] == [(f"a{i}", i + 2) for i in range(6_000)], key


link_soup = soup("[", "]", "[[", "]]", "!", "a", "b", " ", "|", "#", "[[a]]", "![[b]]", "[[a|b]]", size=14)


def _raws(texts: list[str]) -> list[str]:
    return [("![[" if embed else "[[") + inner + "]]" for t in texts for _, _, embed, inner in wikilink_matches(t)]


@settings(max_examples=1000, deadline=None)
@given(st.lists(link_soup, max_size=8), st.lists(link_soup, max_size=4), st.integers(0, 9), st.integers(0, 9))
@example(["[[[a]]]", "x ![[a]]", "![[b]] [[b]]"], ["![[a]]", "[[b]]", "[[c]]"], 0, 5)
def test_a_link_not_on_its_line_is_on_the_line_the_search_from_there_found(lines, others, start, default):
    """A frontmatter link not after the one before on its line was looked for in each line from there on
    (4,000 written with an escape: 1.1 s); the lines holding each link's text are now listed once."""
    holders = _LinkLines(lines)
    for raw in _raws(lines + others):
        expected = next((i for i in range(start, len(lines)) if raw in lines[i]), default)
        assert holders.first(raw, start, default) == expected, raw


def test_four_thousand_links_written_with_an_escape_each_find_their_line():
    text = "---\nz: \"[[z]]\"\nk:\n" + "".join(f'  - "\\x5B[a{i}]]"\n' for i in range(4_000)) + "---\nBody.\n"
    links = parse_note(text, "n.md").links
    assert [(link.target, link.line) for link in links] == [("z", 2), *((f"a{i}", 3) for i in range(4_000))]


# --- tags and names: membership in a list -------------------------------------------------------------------


def test_forty_thousand_distinct_tags_come_once_each_in_order():
    tags = [f"t{i}" for i in range(40_000)]  # 27 s when each was looked for in the list
    note = parse_note(" ".join(f"#{t} #T{i}" for i, t in enumerate(tags)), "n.md")
    assert note.tags == tags


def test_a_sentence_of_thousands_of_names_names_each_once():
    names = [f"Name{i}" for i in range(40_000)]  # 20 s when each was looked for in the list
    text = " and ".join(names + names)
    assert sentence_names(text) == [names[1:] + names[:1]]  # the first opens the sentence, and comes again


# --- tokens: small tables ----------------------------------------------------------------------------------


def test_many_tiny_texts_build_few_small_tables():
    """Each tiny text built a table of its own (a few ms each) until 24 KB had passed: a note of 5,000 one-line
    paragraphs took 18 s to chunk in a fresh process. The full encoder now takes over after a few dozen."""
    shared = get_encoding("o200k_base")
    enc = lazy_encoding.LazyEncoding(shared.name, shared._pat_str, shared._special_tokens, shared.ranks)
    built = []
    make = enc._make
    enc._make = lambda ranks: built.append(len(ranks)) or make(ranks)
    texts = [f"# a{i}" for i in range(1_000)]
    assert [enc.encode(t, disallowed_special=()) for t in texts] == [shared.encode(t, disallowed_special=())
                                                                      for t in texts]
    assert enc._full is not None
    assert len(built) <= 50


# --- payloads: an Excalidraw drawing's fence --------------------------------------------------------------------


def _old_drawings(text: str) -> list[tuple[int, int]]:
    """Each opener looked for its closer from there on (a fence string no line closes, once): what each drawing
    spans, from its first line to its last."""
    found, unclosed, pos = [], set(), 0
    while opener := _DRAWING_FENCE.search(text, pos):
        pos = opener.end()
        fence = opener.group(1)
        closer = None if fence in unclosed else re.compile(rf"^{fence}[ \t]*$", re.MULTILINE).search(text, pos)
        if closer is None:
            unclosed.add(fence)
            continue
        start, end, pos = pos + 1, closer.start(), closer.end()
        if opener.group(2) == "json" and not _SCENE.match(text, start, end):
            continue
        lines = list(_DRAWING_LINES[opener.group(2)].finditer(text, start, end))
        if sum(m.end() - m.start() for m in lines) >= MIN_PAYLOAD:
            found.append((lines[0].start(), lines[-1].end()))
    return found


_B64_LINE = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY" * 4 + "\n"


@settings(max_examples=2000, deadline=None)
@given(soup("```json\n", "````json\n", "~~~compressed-json\n", "```compressed-json\n", "```\n", "````\n", "~~~\n",
            "``` \n", '{"type": "excalidraw",\n', _B64_LINE, "\n", "x\n", "```` ```\n", size=16))
@example("````json\n```json\n```\n" + '{"type": "excalidraw",\n' + _B64_LINE + "````\n")
def test_drawings_are_the_fences_the_search_per_opener_found(text):
    assert [(p.start, p.end) for p in payloads(text) if "base64" not in p.stand_in] == _old_drawings(text)


def test_a_drawing_after_openers_of_a_thousand_lengths():
    """Each length of opener no line closes looked for its closer to the end: 725 KB of them took 5 to 8 s."""
    openers = "".join("`" * k + "json\nx\n" for k in range(3, 1200))
    text = '"excalidraw"\n' + openers + "~~~compressed-json\n" + _B64_LINE * 20 + "~~~\n"
    assert len(text) > 700_000
    assert [(p.start, p.end) for p in payloads(text)] == [(len(text) - 4 - len(_B64_LINE) * 20, len(text) - 5)]
