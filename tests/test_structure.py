"""The one structure pass: chunking, routing's prose measure, link sections and the opening paragraph all read
`markdown.layout.lay_out` (through `markdown.structure`), so they agree on every golden fixture note and on
the sample vault, whatever code fences, setext headings or comments the note holds."""

from __future__ import annotations

from bisect import bisect_right
from pathlib import Path

import pytest

from tests.golden import VAULTS
from wikirag.graph.contribution import note_contribution, opening_paragraph
from wikirag.lightrag.tokens import lightrag_tokenizer
from wikirag.markdown.chunking import chunk_text
from wikirag.markdown.parse import parse_note
from wikirag.markdown.structure import prose_chars, sections
from wikirag.models import Resolution
from wikirag.plan.routing import _prose_chars

ROOT = Path(__file__).resolve().parents[1]
NOTES = sorted([*VAULTS.rglob("*.md"), *(ROOT / "sample_vault").rglob("*.md")])

TRICKY = """Intro with a [[Link A]] in it.

```python
# not a heading
print("[[Not a link]]")

# still code after a blank line
```

Setext heading
==============

Text under the setext heading with [[Link B]].

%% a comment
# not a heading either
%%

## Real subsection

- a list item with [[Link C]]
"""


def _section_at(parts, line: int):
    return parts[max(0, bisect_right([p.start_line for p in parts], line) - 1)]


@pytest.mark.parametrize("path", [*NOTES, None], ids=[str(p.relative_to(ROOT)) for p in NOTES] + ["tricky"])
def test_chunk_headings_link_sections_and_prose_agree(path):
    if path is None:
        note = parse_note(TRICKY, "Tricky.md")
    else:
        try:
            note = parse_note(path.read_text(encoding="utf-8"), path.name)
        except (UnicodeDecodeError, OSError):
            pytest.skip("not a UTF-8 note")
    body = note.body
    parts = sections(body)
    # chunk headings: every chunk (cut small, so there are many) sits under its section's heading path
    for chunk in chunk_text(body, lightrag_tokenizer(), 40, 4):
        assert chunk.headings == _section_at(parts, chunk.start_line).headings, chunk.content[:60]
    # link sections: the parser's heading path for each body link is its section's
    for link in note.links:
        if link.frontmatter_key is None:
            assert list(link.section) == _section_at(parts, link.line - note.body_line_offset).headings, link.raw
    # routing's prose measure is the sum of the sections' prose
    assert _prose_chars(body) == prose_chars(body) == sum(p.prose_chars for p in parts)
    # the opening paragraph never starts inside code or a heading line
    opening = opening_paragraph(note)
    assert not opening.startswith(("#", "```", "~~~"))


def test_the_tricky_note_has_the_structure_obsidian_shows():
    note = parse_note(TRICKY, "Tricky.md")
    parts = sections(note.body)
    assert [p.headings for p in parts] == [[], ["Setext heading"], ["Setext heading", "Real subsection"]]
    chunks = chunk_text(note.body, lightrag_tokenizer(), 1200, 100)
    assert len(chunks) == 1 and "# still code after a blank line" in chunks[0].content
    assert [link.section for link in note.links] == [(), ("Setext heading",), ("Setext heading", "Real subsection")]
    assert opening_paragraph(note) == "Intro with a Link A in it."
    assert "not a heading" not in "".join(h.text for h in note.headings)


@pytest.mark.parametrize(("body", "opening"), [
    # mathwiki's every note, the obsidian-tasks docs' related-pages line: tags alone are passed over
    ('<div class="topSpace"></div>\n\nAn abelian group is a group whose operation commutes.\n',
     "An abelian group is a group whose operation commutes."),
    ('<span class="related-pages">#plugin/calendar #css</span>\n\nThe Tasks plugin adds CSS classes.\n',
     "The Tasks plugin adds CSS classes."),
    ("<center><b>Bold</b> words in a centred line.</center>\n\nLater.\n", "Bold words in a centred line."),
    ("Code keeps `<div>` and a <file> placeholder.\n", "Code keeps `<div>` and a <file> placeholder."),
])
def test_the_opening_paragraph_leaves_html_tags_out(body, opening):
    assert opening_paragraph(parse_note(body, "Note.md")) == opening


@pytest.mark.parametrize(("body", "opening"), [
    ("- [[Data Architecture]]\n    - Explore architecture patterns.\n- [[Data Ingestion]]\n",
     "Data Architecture; Explore architecture patterns. Data Ingestion"),
    ("- one item\n  wrapped on\n- two item\n", "one item wrapped on; two item"),
    ("1. first\n2) second\n", "first; second"),
    ("- [ ] task one\n- [x] done two\n", "task one; done two"),
    ("- ![[diagram.png]]\n\nProse after.\n", "Prose after."),  # an embed alone is no description
    ("- first ^item-1\n- second\n", "first; second"),  # block ids are for links, not read
    ("- a\n* </span>\n+ b\n", "a; b"),  # an item of a tag alone: it raised IndexError, and the run with it
    ("- # In a list item\n- ## Second #tag\n- #tag-only\n", "In a list item; Second #tag; #tag-only"),
    ("==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==\n\n# Excalidraw Data\n\n"
     "## Text Elements\nRotor wiring diagram ^abc12345\n", "Rotor wiring diagram"),  # a drawing's text elements
])
def test_the_opening_text_reads_as_shown_lists_as_their_items(body, opening):
    assert opening_paragraph(parse_note(body, "Note.md")) == opening


@pytest.mark.parametrize(("body", "opening"), [
    ("Date Created: 11/04/2023 10:41:04\nTags: #Proposition\n\n_Proof_. Assume the sequence increases.\n",
     "Date Created: 11/04/2023 10:41:04 Tags: #Proposition"),  # `Key: value` lines are text to Obsidian
    ("up:: [[ACCESS 笔记组织法]]\n\n卡片笔记的写法。\n", "卡片笔记的写法。"),
    ("- x:: [[Other]]\n- up:: [[Parent]]\n\nThe card itself.\n", "The card itself."),
    ("See also Breaking Changes: releases ending in .0.0 break things.\n",
     "See also Breaking Changes: releases ending in .0.0 break things."),  # one line of prose with a colon
    ("Note: this one is prose.\nIt goes on without a key.\n", "Note: this one is prose. It goes on without a key."),
])
def test_the_opening_paragraph_passes_over_dataview_fields(body, opening):
    assert opening_paragraph(parse_note(body, "Note.md")) == opening


def test_a_link_names_the_chunks_holding_it_even_on_a_line_cut_into_windows():
    """Every window of a paragraph cut into token windows covers its lines: a link there names only the
    window(s) holding it (it named them all: a 540 KB line of 50,000 links made a 1.9 GB ledger). A link in
    a paragraph packed whole names that chunk; one in frontmatter names the first chunk."""
    body = ("---\nrelated: \"[[Target 5]]\"\n---\n# Long\n\n"
            + "\n\n".join(f"Paragraph {i} on [[Target {i}]], " + "words " * 150 for i in range(3)) + "\n\n"
            + " ".join(f"Note [[Target {i}]] here." for i in range(600)) + "\n\nLast [[Target 1]] again.\n")
    note = parse_note(body, "Long.md")
    unresolved = {f"target {i}": f"Target {i}" for i in range(600)}
    contribution = note_contribution(note, [(link, Resolution("unresolved")) for link in note.links],
                                     {"Long.md": "Long"}, unresolved, lightrag_tokenizer(), chunk_size=200,
                                     chunk_overlap=20, default_type="note")
    chunks = contribution.chunks
    assert len(chunks) > 30 and len(contribution.relations) == 600
    for relation in contribution.relations:
        holding = [c.id for c in chunks if f"[[{relation.tgt}]]" in c.content]
        expected = list(dict.fromkeys([chunks[0].id, *holding])) if relation.tgt == "Target 5" else holding
        assert relation.chunk_ids == expected, relation.tgt
        assert holding
