"""Which stored chunks a note's extracted records may cite (units.member_chunks): the chunks holding text of the
sections routed to LLM extraction, found here from the chunks' characters (as a link finds its chunks)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from wikirag.graph.contribution import note_contribution
from wikirag.graph.hygiene import EntityNames
from wikirag.index.extract import Member, attribute
from wikirag.index.units import member_chunks
from wikirag.lightrag.ids import xml_safe
from wikirag.lightrag.tokens import lightrag_tokenizer
from wikirag.markdown.chunking import chunk_text
from wikirag.markdown.parse import parse_note
from wikirag.markdown.structure import sections

TOK = lightrag_tokenizer()


def _contribution(body: str, size: int, overlap: int):
    note = parse_note(body, "n.md")
    return note, note_contribution(note, [], {"n.md": "n"}, {}, TOK, chunk_size=size, chunk_overlap=overlap,
                                   default_type="note")


def _by_characters(body: str, size: int, overlap: int, spans: list[tuple[int, int]], ids: dict[str, str]) -> list[str]:
    """The ids of the chunks whose characters meet a span's lines, each once, in the order the note holds them."""
    starts = [0, *(i + 1 for i, ch in enumerate(body) if ch == "\n")]
    ranges = [(starts[a - 1], starts[b] if b < len(starts) else len(body) + 1) for a, b in spans]
    return list(dict.fromkeys(ids[xml_safe(c.content)] for c in chunk_text(body, TOK, size, overlap)
                              if any(c.start < hi and c.end > lo for lo, hi in ranges)))


def test_a_section_repeating_a_long_paragraph_cites_the_window_that_holds_a_name():
    """Identical chunks are stored once, with the first one's lines: the extracted section B, repeating A's
    20 KB one-line paragraph, had only its heading's chunk to cite, so a name in the paragraph cited that."""
    paragraph = "Words about the weather today. " * 650 + "Zephyr wrote this."
    body = f"# A\n\n{paragraph}\n\n# B\n\n{paragraph}\n"
    note, contribution = _contribution(body, 1200, 100)
    b = sections(note.body)[-1]
    chunks = member_chunks(contribution, [(b.start_line, b.end_line)])
    section_b = note.body[note.body.index("# B"):]
    assert len(chunks) > 3 and all(c.content in section_b for c in chunks)
    assert [c.id for c in chunks] == _by_characters(note.body, 1200, 100, [(b.start_line, b.end_line)],
                                                    {c.content: c.id for c in contribution.chunks})
    nodes = [{"name": "Zephyr", "type": "person", "description": "", "unit": "u"}]
    raw = attribute(nodes, [], Member("n.md", section_b, "", chunks), {"u"}, EntityNames(), shared=False)
    cited = {c.id: c.content for c in contribution.chunks}[raw["entities"][0][3]]
    assert "Zephyr" in cited


def test_a_long_line_cut_into_windows_gives_each_window_to_its_own_section_only():
    """A 20 KB one-line paragraph in an extracted section: every window of it is that section's, and no window
    of the paragraph in the section left to the links is."""
    prose_text = "".join(f"Plain {i} goes on. " for i in range(1100))
    body = "# Linked\n\n" + "See [[x]] and more. " * 1000 + "\n\n# Prose\n\n" + prose_text + "\n"
    note, contribution = _contribution(body, 1200, 100)
    prose = sections(note.body)[-1]
    chunks = member_chunks(contribution, [(prose.start_line, prose.end_line)])
    assert len(chunks) > 2 and all("[[x]]" not in c.content for c in chunks)
    assert all(f"Plain {i} " in "".join(c.content for c in chunks) for i in range(1100))
    assert [c.id for c in chunks] == _by_characters(note.body, 1200, 100, [(prose.start_line, prose.end_line)],
                                                    {c.content: c.id for c in contribution.chunks})


units = st.sampled_from(["# A\n", "## B\n", "# A\n\n", "\n", "\n\n", "Zephyr ", "word ", "lorem ipsum dolor " * 8,
                         "```\n", "x\n---\n", "[[y]] ", "- item\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(units, min_size=1, max_size=40).map("".join), st.lists(st.booleans(), max_size=12))
@example("# A\n\n" + "lorem ipsum dolor " * 16 + "\n\n# A\n\n" + "lorem ipsum dolor " * 16, [False, True])
def test_the_chunks_of_extracted_sections_are_those_whose_characters_are_in_them(body, chosen):
    note, contribution = _contribution(body, 20, 5)
    parts = sections(note.body)
    spans = [(s.start_line, s.end_line) for s, pick in zip(parts, chosen, strict=False) if pick]
    if not spans:
        return
    expected = _by_characters(note.body, 20, 5, spans, {c.content: c.id for c in contribution.chunks})
    got = [c.id for c in member_chunks(contribution, spans)]
    assert got == (expected or [c.id for c in contribution.chunks])
