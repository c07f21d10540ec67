"""parse_note: link grammar, frontmatter, tags, headings, block ids, exclusions, lines, sections, contexts."""

from __future__ import annotations

import pytest

from wikirag.markdown.layout import lay_out
from wikirag.markdown.parse import parse_note
from wikirag.models import Heading, WikiLink


def links(text: str) -> list[WikiLink]:
    return parse_note(text, "folder/Here.md").links


def only_link(text: str) -> WikiLink:
    found = links(text)
    assert len(found) == 1, found
    return found[0]


# -- the link grammar (in the spirit of obsidian-export's references.rs) ---------------------------------

LINK_FORMS = [
    # source, expected fields (the rest keep their defaults: None / False / "wikilink")
    ("[[Note]]", {"target": "Note"}),
    ("[[Note|label]]", {"target": "Note", "label": "label"}),
    ("[[ Note | spaced label ]]", {"target": "Note", "label": "spaced label"}),
    ("[[Note|]]", {"target": "Note"}),
    ("[[Note#Heading]]", {"target": "Note", "heading": "Heading"}),
    ("[[Note#H1#H2]]", {"target": "Note", "heading": "H1#H2"}),
    ("[[Note # Spaced heading ]]", {"target": "Note", "heading": "Spaced heading"}),
    ("[[Note#^block-1]]", {"target": "Note", "block": "block-1"}),
    ("[[Note#^blk|see]]", {"target": "Note", "block": "blk", "label": "see"}),
    ("[[Note#Heading|label]]", {"target": "Note", "heading": "Heading", "label": "label"}),
    ("[[#Heading]]", {"target": "", "heading": "Heading"}),
    ("[[#^blk]]", {"target": "", "block": "blk"}),
    ("[[folder/Note]]", {"target": "folder/Note"}),
    ("[[Note.md]]", {"target": "Note.md"}),
    ("[[v1.2 notes]]", {"target": "v1.2 notes"}),
    ("[[1]]", {"target": "1"}),
    ("[[Note\\|label]]", {"target": "Note", "label": "label"}),
    ("![[Note]]", {"target": "Note", "embed": True}),
    ("![[img.png]]", {"target": "img.png", "embed": True}),
    ("![[img.png|300]]", {"target": "img.png", "label": "300", "embed": True}),
    ("![[img.png|300x200]]", {"target": "img.png", "label": "300x200", "embed": True}),
    ("![[doc.pdf#page=3]]", {"target": "doc.pdf", "heading": "page=3", "embed": True}),
    ("[text](Note.md)", {"target": "Note.md", "label": "text", "kind": "markdown"}),
    ("[text](Note)", {"target": "Note", "label": "text", "kind": "markdown"}),
    ("[text](Note%20Name.md)", {"target": "Note Name.md", "label": "text", "kind": "markdown"}),
    ("[text](<Note Name.md>)", {"target": "Note Name.md", "label": "text", "kind": "markdown"}),
    ("[text](./x.md)", {"target": "./x.md", "label": "text", "kind": "markdown"}),
    ("[text](../up/x.md)", {"target": "../up/x.md", "label": "text", "kind": "markdown"}),
    ("[text](/root.md)", {"target": "/root.md", "label": "text", "kind": "markdown"}),
    ("[t](Note.md#Part%20Two)", {"target": "Note.md", "heading": "Part Two", "label": "t", "kind": "markdown"}),
    ("[t](Note.md#^blk)", {"target": "Note.md", "block": "blk", "label": "t", "kind": "markdown"}),
    ("[t](#Heading)", {"target": "", "heading": "Heading", "label": "t", "kind": "markdown"}),
    ('[t](Note.md "A title")', {"target": "Note.md", "label": "t", "kind": "markdown"}),
    ("[t](a(b).md)", {"target": "a(b).md", "label": "t", "kind": "markdown"}),
    ("[](Note.md)", {"target": "Note.md", "kind": "markdown"}),
    ("![alt](img.png)", {"target": "img.png", "label": "alt", "embed": True, "kind": "markdown"}),
    ("[wrapped\ntext](Note.md)", {"target": "Note.md", "label": "wrapped text", "kind": "markdown"}),
]


@pytest.mark.parametrize(("source", "fields"), LINK_FORMS, ids=[s for s, _ in LINK_FORMS])
def test_link_forms(source: str, fields: dict) -> None:
    link = only_link(f"Before {source} after.")
    expected = {"heading": None, "block": None, "label": None, "embed": False, "kind": "wikilink", **fields}
    actual = {k: getattr(link, k) for k in expected}
    assert actual == expected
    assert link.raw == source


NOT_LINKS = [
    "[[]]",
    "[[ ]]",
    "[[|label only]]",
    "[[#]]",
    "a footnote[^1]",
    "[[unclosed",
    "[[a]b]]",
    "[[split\nacross lines]]",
    "[web](https://example.com)",
    "[mail](mailto:a@example.com)",
    "[app](obsidian://open?vault=x)",
    "[proto-relative](//example.com/x.md)",
    "[empty]()",
    "[ref][id]",
    "`[[in a code span]]`",
    "%%[[in a comment]]%%",
    "<!-- [[in an HTML comment]] -->",
    "$$[[in math]]$$",
    "$[[in inline math]]$",
    "[across\n\na blank line](Note.md)",
    "[across\n- a list item](Note.md)",
    "[across\n# a heading](Note.md)",
    "[into\n> a quote](Note.md)",
]


@pytest.mark.parametrize("source", NOT_LINKS)
def test_not_links(source: str) -> None:
    assert links(f"Text {source} text.") == []


def test_links_in_code_and_comments_are_counted() -> None:
    text = "```\n[[a]] [b](b.md)\n```\n`[[c]]` %% [[d]] %% <!-- [[e]] --> [ok](https://x.y) [[f]]\n"
    note = parse_note(text, "n.md")
    assert [link.target for link in note.links] == ["f"]
    assert note.links_in_code_ignored == 5


FENCES = [
    ("```\n[[x]]\n```\n[[after]]", ["after"]),
    ("~~~\n[[x]]\n~~~\n[[after]]", ["after"]),
    ("````\n```\n[[x]]\n```\n````\n[[after]]", ["after"]),  # a shorter fence does not close
    ("~~~~\n[[x]]\n~~~\n[[still code]]\n~~~~~\n[[after]]", ["after"]),
    ("```\n[[x]]\n~~~\n[[still code]]", []),  # other fence character; unclosed runs to the end
    ("```python\n[[x]]\n```\n[[after]]", ["after"]),
    ("   ```\n[[x]]\n   ```\n[[after]]", ["after"]),  # up to 3 spaces of indent
    ("``` not `a` fence\n[[yes]]", ["yes"]),  # a backtick info string is not a fence
    ("text\n    [[lazy]]", ["lazy"]),  # indented, but continues a paragraph
    ("text\n\n    [[code]]\n\n[[after]]", ["after"]),  # indented after a blank line: code
    ("- item\n\n    [[in list]]", ["in list"]),  # indented inside a list: not code
    ("\t[[tab code]]", []),
    ("> ```\n> [[quoted fence]]\n> ```\n[[after]]", ["after"]),
    ("> ```\n> [[quoted]]\nnot quoted [[out]]", ["out"]),  # the fence ends with its blockquote
    # a fence may open a list item's content on the marker's line (CommonMark/GFM list items, GFM example 298)
    ("- a\n- ```\n  [[x]]\n\n\n  ```\n- [[c]]", ["c"]),
    ("1. ```bash\n   [[x]] #not-a-tag\n   ```\n2. [[after]]", ["after"]),
    ("- ~~~\n  [[x]]\n  ~~~\n[[after]]", ["after"]),
    ("- - ```\n    [[x]]\n    ```\n[[after]]", ["after"]),  # a list item holding a list item holding a fence
    ("- ``` not `a` fence [[yes]]", ["yes"]),  # a backtick info string is not a fence here either
    # an unclosed fence in a list item ends with the item: a line indented less than the item's text (GFM 4.5)
    ("- ```\n  [[x]]\n- [[next]]", ["next"]),
    ("- item\n  ```\n  [[x]]\n[[after]]", ["after"]),  # a fence is never continued lazily
    ("- item\n\n  ```\n  [[x]]\n\n  [[still code]]\n\n[[after]]", ["after"]),
    ("1. ```\n   [[x]]\n  [[y]]", ["y"]),
    ("- ```\n  [[x]]\n\n\n[[after]]", ["after"]),
    ("> - ```\n>   [[x]]\n> [[y]]", ["y"]),
    ("- item\n  ```\n  [[x]]\n  ```\n  [[in item]]", ["in item"]),
    # a closing fence in a list item may be indented with a tab; at the margin a tab is 4 columns: no closing fence
    ("- item\n\t```\n\t[[x]]\n\t```\n\t[[in item]]", ["in item"]),
    ("- a\n\t- b\n\n\t  ```\n\t  [[x]]\n\t  ```\n\n\t  [[after]]", ["after"]),
    ("```\n[[x]]\n\t```\n[[still code]]", []),
    # indented code inside a list item: 4 columns past the item's text, after a blank line (GFM example 232)
    ("1.  A paragraph\n    with [[two]] lines.\n\n        [[indented code]]\n\n    > [[quote]]", ["two", "quote"]),
    ("- item\n\n\t\t[[code]]\n\n  [[para]]", ["para"]),
    ("- item\n      [[lazy]]", ["lazy"]),  # no blank line: the item's paragraph goes on
    ("- a\n    - b\n\n        - [[c]]", ["c"]),  # deeper than `a` but not 4 past `b`: an item
]


@pytest.mark.parametrize(("text", "targets"), FENCES)
def test_code_blocks(text: str, targets: list[str]) -> None:
    assert [link.target for link in links(text)] == targets


SPANS = [
    ("`[[x]]` [[y]]", ["y"]),
    ("``a ` [[x]]`` [[y]]", ["y"]),  # a double-backtick span holds a single backtick
    ("`unmatched [[y]]", ["y"]),
    ("``[[y]]`", ["y"]),  # runs of different length do not match
    ("`over a\nline [[x]]` [[y]]", ["y"]),  # a span may cross a line break inside a paragraph
    ("`open\n\n[[y]]` x", ["y"]),  # but not a blank line
    ("\\`[[y]]` x", ["y"]),  # an escaped backtick opens nothing
    ("`a\\` [[y]] `b`", ["y"]),  # backslashes are literal inside a span
]


@pytest.mark.parametrize(("text", "targets"), SPANS)
def test_code_spans(text: str, targets: list[str]) -> None:
    assert [link.target for link in links(text)] == targets


COMMENTS = [
    ("%% [[x]] %% [[y]]", ["y"]),
    ("%%\n[[x]]\n\n[[x2]]\n%%\n[[y]]", ["y"]),  # across blank lines
    ("text %% open\n\n[[x]]\n# H", []),  # unclosed: to the end
    ("<!-- [[x]] --> [[y]]", ["y"]),
    ("<!--\n[[x]]\n\n-->\n[[y]]", ["y"]),
    ("`%%` [[y]] `%%`", ["y"]),  # %% inside code opens nothing
    ("%% `[[x]]` %% [[y]]", ["y"]),
    ("%%\n```\n%%\n[[y]]", ["y"]),  # a fence inside a comment is text
    ("$$\n[[x]]\n$$\n[[y]]", ["y"]),
    ("$$ [[x]] $$ [[y]]", ["y"]),
    ("$$\n[[x]]\n\n[[x2]]\n$$ [[y]]", ["y"]),  # a display-math block spans blank lines
    ("costs $$5 [[y]]", ["y"]),  # `$$` never closed: literal
    ("$5 and $10 for [[y]]", ["y"]),  # single dollars are not math
    ("$[[x]]$ and [[y]]", ["y"]),  # inline math holds no link
    ("$[t](x.md)$ [[y]]", ["y"]),
    ("[the $R/I$ ring](y.md)", ["y.md"]),  # math inside a link's text is fine
    ("[a $b](x.md) c$ [[y]]", ["y"]),  # math that cuts a link: no link
    ("\\$[[y]]$", ["y"]),  # escaped opener
    ("$ [[y]]$ and $[[z]] $", ["y", "z"]),  # a space after the opener or before the closer
    ("$[[y]]$5", ["y"]),  # a closer before a digit
    ("$x\n[[y]]$", ["y"]),  # inline math stays on its line
    ("[[y$a]] and [[z$b]]", ["y$a", "z$b"]),  # a dollar inside a wikilink opens no math
    ("$\\textrm{`}$ [[y]] `code`", ["y"]),  # a backtick inside math opens no code span
]


@pytest.mark.parametrize(("text", "targets"), COMMENTS)
def test_comments_and_math(text: str, targets: list[str]) -> None:
    assert [link.target for link in links(text)] == targets


def test_60_kb_of_dollars_and_math_is_read_once() -> None:
    """The math pattern read each `\\$` of `\\$` repeated on to the line's end, and each `$a$` searched back to the
    paragraph's start for a `[[` and read the one it found to the line's end (60 KB: over 20 s each)."""
    escaped = "\\$" * 30_000 + " [[x]]"
    assert lay_out(escaped).math == [] and [link.target for link in links(escaped)] == ["x"]
    after_an_open_link = "[[" + " $a$" * 15_000 + " [[x]]"
    assert lay_out(after_an_open_link).math == [(3 + 4 * i, 6 + 4 * i) for i in range(15_000)]
    assert [link.target for link in links(after_an_open_link)] == ["x"]
    before_a_link = "$a$ " * 15_000 + "[[x]] $[[y]]$ [[z $b$ c]]"
    assert len(lay_out(before_a_link).math) == 15_001  # `$[[y]]$` is math; `$b$` sits inside the link [[z $b$ c]]
    assert [link.target for link in links(before_a_link)] == ["x", "z $b$ c"]


# -- frontmatter ------------------------------------------------------------------------------------------


def fm(yaml: str, body: str = "Body.\n"):
    return parse_note(f"---\n{yaml}\n---\n{body}", "Folder/My Note.md")


def test_frontmatter_fields() -> None:
    note = fm(
        "title: A Title\ntype: person\ndescription: Short.\ntags: [One, '#two', one]\n"
        "aliases: [Al, Bee]\nwikirag: inject\nextra: {a: 1}"
    )
    assert (note.title, note.type, note.description) == ("A Title", "person", "Short.")
    assert note.tags == ["one", "two"]
    assert note.aliases == ["Al", "Bee"]
    assert note.route_override == "inject"
    assert note.frontmatter["extra"] == {"a": 1}
    assert note.body_line_offset == 9
    assert note.frontmatter_error is None


FRONTMATTER_VARIANTS = [
    ('tags: "one, #two three"', "tags", ["one", "two", "three"]),
    ("tags: one, #two", "tags", ["one"]),  # YAML: ` #` starts a comment (Obsidian reads YAML too)
    ("tag: single", "tags", ["single"]),
    ("Tags: [Upper]", "tags", ["upper"]),
    ("tags:\n  - a\n  - b/c", "tags", ["a", "b/c"]),
    ("tags: [2024, x2024]", "tags", ["x2024"]),
    ("tags: [\"١٢٣\", \"²\", 12]", "tags", ["١٢٣", "²"]),  # only 0-9 make a tag all digits, as inline
    ("tags:", "tags", []),
    ("tags: ~", "tags", []),
    ("aliases: One, Two", "aliases", ["One", "Two"]),
    ("alias: Solo", "aliases", ["Solo"]),
    ("Aliases: [X, null, 3]", "aliases", ["X", "3"]),
    ("aliases: [true, False]", "aliases", ["true", "false"]),  # a YAML boolean shows as Obsidian shows it
    ("aliases: TRUE", "aliases", ["true"]),
    ("title: 1984", "title", "1984"),
    ("title: 1e3", "title", "1000"),  # a number as JavaScript writes it, not Python's 1000.0
    ("aliases: [1.0, 2.5, 1e21]", "aliases", ["1", "2.5", "1e+21"]),
    ("title:", "title", "My Note"),
    ('title: ""', "title", "My Note"),
    ("summary: From summary", "description", "From summary"),
    ("wikirag: EXTRACT", "route_override", "extract"),
    ("TYPE: Concept", "type", "Concept"),
]


@pytest.mark.parametrize(("yaml", "field", "value"), FRONTMATTER_VARIANTS)
def test_frontmatter_variants(yaml: str, field: str, value: object) -> None:
    note = fm(yaml)
    assert note.frontmatter_error is None
    assert getattr(note, field) == value


def test_a_frontmatter_route_that_is_no_route_is_ignored_and_said() -> None:
    note = fm("wikirag: maybe\ntitle: Kept")
    assert note.route_override is None and note.title == "Kept"  # the rest of the block is read
    assert note.frontmatter_error == "frontmatter wikirag: 'maybe' ignored; use inject, extract, skip"


def test_frontmatter_is_read_as_yaml_1_2_as_obsidian_reads_it() -> None:
    # PyYAML's YAML 1.1 made `no` False, `on` True, `1:30` the number 90 and `012` octal 10
    note = fm("title: No\naliases: [NO, Yes, on, off]\ntime: 1:30\noctal: 012\nhex: 0x1F\nflag: false\n"
              "when: 2024-03-14T10:00:00Z")
    assert (note.title, note.aliases) == ("No", ["NO", "Yes", "on", "off"])
    assert {k: note.frontmatter[k] for k in ("time", "octal", "hex", "flag", "when")} == {
        "time": "1:30", "octal": 12, "hex": 31, "flag": False, "when": "2024-03-14T10:00:00Z"}
    assert fm("title: true").title == "true"


def test_a_list_keeps_its_items_whole() -> None:
    note = fm("aliases:\n  - Smith, John\ntags:\n  - multi word\n  - ok\nalias: A, B")
    assert (note.aliases, note.tags) == (["Smith, John", "A", "B"], ["ok"])  # a string is still split


def test_frontmatter_values_are_json_safe() -> None:
    note = fm("d: 2024-03-14\nt: 2024-03-14 10:20:30\nn: .nan\nb: true\n1: int key\nnested: [2024-01-02]")
    assert note.frontmatter == {
        "d": "2024-03-14",
        "t": "2024-03-14 10:20:30",  # as written: YAML 1.2, as Obsidian reads it, has no timestamps
        "n": "nan",
        "b": True,
        "1": "int key",
        "nested": ["2024-01-02"],
    }


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("tags: [unclosed", "invalid YAML at line 3"),
        ("a: b: c", "invalid YAML at line 2"),
        ("- a list", "frontmatter is a YAML list, not a mapping of keys"),
        ("a: &x [*x, *x]\nb: &y [*a]", "invalid YAML"),
        ("title: A\ntags: [x]\ntitle: B", "invalid YAML at line 4: duplicate key 'title'"),
        ("a:\n  b: 1\n  b: 2", "invalid YAML at line 4: duplicate key 'b'"),
    ],
)
def test_broken_frontmatter(yaml: str, message: str) -> None:
    note = fm(yaml, body="[[Body link]]\n")
    assert note.frontmatter_error is not None
    assert note.frontmatter_error.startswith(message)
    assert "\n" not in note.frontmatter_error
    assert note.frontmatter == {}
    # the block is still frontmatter: its text is not body, the body is read as usual
    assert [link.target for link in note.links] == ["Body link"]
    assert note.links[0].line == yaml.count("\n") + 4


def test_a_date_that_is_none_stays_text_and_the_other_properties_stay() -> None:
    note = fm("created: 2024-13-45\naliases: [Later]\nupdated: 2024-02-30 10:00\nmade: 2024-01-02")
    assert note.frontmatter_error is None
    assert note.frontmatter == {"created": "2024-13-45", "aliases": ["Later"], "updated": "2024-02-30 10:00",
                                "made": "2024-01-02"}
    assert note.aliases == ["Later"]


def test_self_referencing_yaml_is_an_error_not_a_hang() -> None:
    note = fm("a: &x [*x]")
    assert note.frontmatter_error == "frontmatter too large or self-referencing (YAML anchors)"


def test_frontmatter_needs_the_first_line_and_a_closing_line() -> None:
    assert parse_note("\n---\ntitle: x\n---\n", "n.md").frontmatter == {}
    unclosed = parse_note("---\ntitle: x\n[[Link]]\n", "n.md")
    assert unclosed.body_line_offset == 0 and unclosed.frontmatter == {}
    assert unclosed.links[0].line == 3
    assert parse_note("---\n---\nbody", "n.md").body_line_offset == 2


def test_a_fence_inside_frontmatter_does_not_hide_the_body() -> None:
    # The property block ends at the next `---` line whatever it holds (as in Obsidian); a fence opened in
    # it does not run on into the body (found by tests/test_property.py's unclosed-fence case).
    note = parse_note("---\n```\n---\n[[Body Link]]\n", "n.md")
    assert [link.target for link in note.links] == ["Body Link"]
    assert note.links[0].line == 4


def test_frontmatter_links() -> None:
    note = fm('related: ["[[A]]", "[[B#H|bee]]"]\nup: "![[C]]"\nplain: [[D]]\nnested:\n  k: "x [[E]] y"')
    got = [(link.target, link.heading, link.label, link.embed, link.frontmatter_key, link.line) for link in note.links]
    assert got == [
        ("A", None, None, False, "related", 2),
        ("B", "H", "bee", False, "related", 2),
        ("C", None, None, True, "up", 3),
        ("E", None, None, False, "nested", 6),
    ]
    assert note.links[1].context == "related: bee"
    assert note.links[3].context == "nested: x E y"


# -- tags, headings, block ids, words ---------------------------------------------------------------------


def test_link_text_across_a_soft_line_break() -> None:
    note = parse_note("- [a wrapped\n  label](A.md) ends. Next.\n> [quoted\n> label](B.md)\n", "n.md")
    got = [(link.label, link.line, link.context) for link in note.links]
    assert got == [("a wrapped label", 1, "a wrapped label ends. Next."), ("quoted label", 3, "quoted label")]


def test_an_image_inside_a_link_is_an_embed() -> None:
    note = parse_note("See [![alt](pic.png) #in](Note.md) and [![b](web.png)](https://x.y) #out. Next.", "n.md")
    got = [(link.target, link.embed, link.context) for link in note.links]
    assert got == [
        ("Note.md", False, "See alt #in and b #out."),
        ("pic.png", True, "See alt #in and b #out."),
        ("web.png", True, "See alt #in and b #out."),
    ]
    # a tag in a link's text is a tag, after the image too (Obsidian 1.13.7 reads `[Discord #tf](https://x.y)`
    # as tagged `tf`: cyanheads/obsidian-mcp-server#140)
    assert note.tags == ["in", "out"]


def test_a_link_inside_a_links_text_is_the_link_and_the_outer_one_is_text() -> None:
    """CommonMark 6.3: links may not contain other links; where they nest, the inner-most is the link (spec
    examples 518-520: `[foo [bar](/uri)](/uri)` is the text `[foo `, a link `bar`, and the text `](/uri)`)."""
    assert [(link.target, link.label) for link in links("[foo [bar](Inner.md)](Outer.md)")] == [("Inner.md", "bar")]
    assert [link.target for link in links("[a *[b [c](Deep.md)](Mid.md)*](Outer.md)")] == ["Deep.md"]
    assert links("[see [the docs](https://x.y) here](Outer.md)") == []  # an outside link is a link too
    # an image is no link: the outer link stands beside the embed, as before
    assert [link.target for link in links("[![alt](pic.png)](Outer.md)")] == ["Outer.md", "pic.png"]


def test_a_links_text_may_hold_inline_code() -> None:
    """CommonMark example 517 (`[link *foo **bar** `#`*](/uri)` is a link): a code span binds tighter than a
    link's brackets, so it may sit in the text, a `]` inside it included."""
    link = only_link("See [the `foo()` function](API.md) here.")
    assert (link.target, link.label) == ("API.md", "the `foo()` function")
    assert link.context == "See the `foo()` function here."
    assert [(x.target, x.label) for x in links("[`a]`](x.md) and [a `b](x.md)` c](y.md)")] == [
        ("x.md", "`a]`"), ("y.md", "a `b](x.md)` c")]
    note = parse_note("[x `[[W]]` y](N.md)", "n.md")
    assert [x.target for x in note.links] == ["N.md"] and note.links_in_code_ignored == 1
    assert links("`[a](` x.md)") == []  # the code holds the link's start: no link


def test_no_tag_inside_inline_math() -> None:
    assert parse_note("$a #b$ and #c, $x^2$ #d", "n.md").tags == ["c", "d"]


def test_inline_math_stays_in_link_contexts() -> None:
    note = parse_note("Since $a #b$ holds, see [[X]].", "n.md")
    assert note.links[0].context == "Since $a #b$ holds, see X."


def test_inline_tags() -> None:
    text = "#start and #Mixed/Case, #dash-ed_x #123 #1a a#b http://x.y/#frag `#code` (#paren) #tag. #日本 #Start"
    note = parse_note(text, "n.md")
    assert note.tags == ["start", "mixed/case", "dash-ed_x", "1a", "tag", "日本"]


# Obsidian 1.13.7's metadata cache, read back in cyanheads/obsidian-mcp-server#138 and #140: a tag opens where an
# inline chunk starts (whitespace, the tag before it, a paired emphasis run, a link, a bracket, an escape)
TAGS = [
    ("#a#b #c/#d", ["a", "b", "c/", "d"]),
    ("#1984#x #y#1984#z", ["y"]),  # no tag chained to an all-digit one
    ("**#b** *#i* ==#h== ~~#s~~", ["b", "i", "h", "s"]),
    ("a *#t\na ==#u\n~#v~\nx===#w==", []),  # no partner, a lone `~`, a run of three `=`
    ("x _#u_ y snake_case_#w #q_name_ z", ["u", "w", "q_name_"]),  # a closing `_` ends a tag; one inside is its
    ("x _#t_b\na_ _#s", []),  # a run before a letter cannot close; `a_ _` fails to pair
    ("[[x]]#a [b](N.md)#c [#d](N.md) [see #e](N.md) [#f] x [g]#h [#i](https://x.y)", [*"acdefhi"]),
    ("[[N#h]] [[N|#l]] [t](N.md#x) ![alt #m](p.png) x [#n x []#o [^#p]", []),
    ("(#a) a#b .#c \"#d\" x\u2014#e \\#f", []),
    ("\\]#g \\\\#h", ["g", "h"]),  # after an escape, but not an escaped `#`
    ("#a. #b, #c\u2014d #\u0661\u0662 #\u2705x #12", ["a", "b", "c", "\u0661\u0662", "\u2705x"]),
    ("x\u00a0#a y\u3000#b", ["a", "b"]),  # NBSP and the ideographic space are whitespace
]


@pytest.mark.parametrize(("text", "tags"), TAGS)
def test_tags_open_where_obsidian_starts_an_inline_chunk(text: str, tags: list[str]) -> None:
    assert parse_note(text + "\n", "n.md").tags == tags


def test_a_heading_inside_a_quote_callout_or_list_item_is_none_of_the_notes() -> None:
    text = "# Top\n\n> ## Quoted\n> [[A]]\n\n> [!note] Callout\n> ### In callout\n\n- # In item\n\n> Setext\n> ---\n"
    note = parse_note(text, "n.md")
    assert note.headings == [Heading(1, "Top", 1)]
    assert note.links[0].section == ("Top",)


def test_tags_merge_frontmatter_first() -> None:
    assert fm("tags: [b, A]", body="#a and #c\n").tags == ["b", "a", "c"]


def test_headings() -> None:
    text = "# One\ntext\n## Two ##\n####### seven is not a heading\n#nospace\n```\n# in code\n```\nSetext\n===\n"
    assert parse_note(text, "n.md").headings == [
        Heading(1, "One", 1),
        Heading(2, "Two", 3),
        Heading(1, "Setext", 9),
    ]


def test_heading_lines_count_the_frontmatter() -> None:
    assert fm("a: 1", body="# H\n").headings == [Heading(1, "H", 4)]


def test_block_ids() -> None:
    text = "Para ^p1\n\n- item ^item-2\n\n^own-line\n\nnot^mid and `^code`\n\n```\nx ^fenced\n```\n"
    assert parse_note(text, "n.md").block_ids == ["p1", "item-2", "own-line"]


def test_a_block_id_counts_only_on_the_blocks_last_line() -> None:
    text = "one ^inner\ntwo ^last\n\n- a ^no\n  b ^item\n- c ^c\n\n> q ^qin\n> r ^q\n\ntext\n^below\n"
    assert parse_note(text, "n.md").block_ids == ["last", "item", "c", "q", "below"]
    # an item nested under a tab is its own block (the list goes on at any indent)
    assert parse_note("- top\n\t- nested ^n1\n\t\t- deeper ^n2\n\t- back ^n3\n", "n.md").block_ids == ["n1", "n2", "n3"]


def test_words_count_the_body_only() -> None:
    assert fm("title: many words here", body="one two\nthree\n").words == 3


# -- where a link sits: line, section, context ------------------------------------------------------------


def test_line_numbers_are_file_lines() -> None:
    note = fm("a: 1\nb: 2", body="\n[[L6]]\n\n```\n[[no]]\n```\n[[L11]]")
    assert [(link.target, link.line) for link in note.links] == [("L6", 6), ("L11", 11)]


def test_sections_follow_the_heading_path() -> None:
    text = "[[top]]\n# A\n[[a]]\n## B\n[[b]]\n### C\n[[c]]\n## D\n[[d]]\n# E [[e]]\n"
    got = [(link.target, link.section) for link in links(text)]
    assert got == [
        ("top", ()),
        ("a", ("A",)),
        ("b", ("A", "B")),
        ("c", ("A", "B", "C")),
        ("d", ("A", "D")),
        ("e", ("E [[e]]",)),  # a link in a heading sits in that heading's section
    ]


CONTEXTS = [
    ("First one. Then [[A]] is here! Last?", "Then A is here!"),
    ("See [[A|the label]] and [[B]].", "See the label and B."),
    ("Wrapped over\ntwo lines with [[A]] in it.", "Wrapped over two lines with A in it."),
    ("- item with [[A]]. Second sentence.", "item with A. Second sentence."),
    ("1. [ ] task [[A]] ^blk", "task A"),
    ("| a | b |\n|---|---|\n| cell [[A\\|x]] | other |", "cell x | other"),
    ("not a table | [[A]] |", "not a table | A |"),  # no delimiter row: a paragraph
    ("## Heading with [[A]]", "Heading with A"),
    ("> quoted [[A]]\n> more", "quoted A more"),
    ("Dr. Who met [[A]].", "Who met A."),  # a naive split: abbreviations end sentences
    ("Pi is 3.14 and [[A]] too.", "Pi is 3.14 and A too."),
    ("Link [[A#H1#H2]] here.", "Link A > H1 > H2 here."),
    ("Text %% hidden %% [[A]] and $$x$$ done.", "Text A and done."),
    ("Code `x.y()` and [[A]].", "Code `x.y()` and A."),
    ("See [site](https://x.y) and [[A]].", "See site and A."),
    ("![[img.png|300]]\n![[A]]\n![[B|cap]]", "A"),  # links stacked one per line: one context each
    ("東京は大きい。[[A]]は小さい。", "Aは小さい。"),
    ("Use <b>[[A]]</b> with `<div>` and <span class=\"x\">more</span>.", "Use A with `<div>` and more."),
    ("| ![[a.png\\|100]] </br> **[[A\\|Amazon]]** | b |\n|---|---|\n| c | d |", "a.png **Amazon** | b"),
]


@pytest.mark.parametrize(("text", "context"), CONTEXTS)
def test_contexts(text: str, context: str) -> None:
    link = next(link for link in links(text) if link.target == "A")
    assert link.context == context


def test_long_contexts_are_cut_around_the_link() -> None:
    text = "word " * 200 + "[[A]] " + "more " * 200 + "."
    context = only_link(text).context
    assert len(context) <= 300
    assert "A" in context.split()
    assert context.startswith("…") and context.endswith("…")


def test_a_link_written_twice_in_a_long_sentence_is_cut_around_each() -> None:
    """Each context centred on the first place the link's text showed, so both copies got the first one's."""
    first, second = links("[[A]] " + "early " * 60 + "[[A]] " + "late " * 60 + ".")
    assert first.context.startswith("A early early") and "late" not in first.context
    assert second.context.startswith("…") and second.context.endswith("…")
    assert "early A late" in second.context
    in_a_list = links("- [[A]] " + "early " * 60 + "[[A]] " + "late " * 60 + "\n- [[A]]")
    assert ["early A late" in link.context for link in in_a_list] == [False, True, False]
    note = fm('k: "[[B|x]] ' + "early " * 60 + '[[C|x]] ' + "late " * 60 + '"')
    assert "early x late" in note.links[1].context and "early x late" not in note.links[0].context


def test_a_long_sentence_holding_every_private_use_character_is_still_cut_around_its_link() -> None:
    """The links' places are read back from marks the sentence must not hold; with none left, a link's text
    is looked for in the sentence."""
    every = "".join(map(chr, range(0xE000, 0xF900)))
    link = only_link(every + " " + "word " * 40 + "[[A]] " + "more " * 60 + ".")
    assert link.context.startswith("…word") and "word A more" in link.context and link.context.endswith("…")


def test_newlines_and_bom_are_normalised() -> None:
    note = parse_note("\ufeff---\r\ntitle: T\r\n---\r\n[[A]]\r\r[[B]]", "n.md")
    assert note.title == "T"
    assert [(link.target, link.line) for link in note.links] == [("A", 4), ("B", 6)]
    assert "\r" not in note.body


def test_name_and_title() -> None:
    note = parse_note("", "a/b/Some Name.MD")
    assert (note.name, note.title, note.words, note.links) == ("Some Name", "Some Name", 0, [])


def test_an_integer_beyond_64_bits_is_kept_exactly_as_text_and_the_parse_cache_keeps_the_note(tmp_path) -> None:
    huge = "1" + "0" * 400
    note = fm(f"big: {huge}\nsmall: 12\nneg: -9223372036854775808")
    assert note.frontmatter == {"big": huge, "small": 12, "neg": -(2**63)}

    from tests.storekit import HashEmbedding
    from wikirag.index.parsecache import load_parse_cache
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Big.md").write_text(f"---\nbig: {huge}\n---\nA number.\n", encoding="utf-8")
    (vault / "Other.md").write_text("Another note.\n", encoding="utf-8")
    config = load_config(vault, store=tmp_path / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    assert set(load_parse_cache(config.workspace_dir, config.index.encoding)) == {"Big.md", "Other.md"}


def test_notes_come_back_from_the_parse_cache_as_parsed(tmp_path) -> None:
    """Every sample note read back from the parse cache equals its parse (links, headings and sections
    included, links still frozen and hashable); a row lacking a field (written by an older wikirag) gets the
    field's default."""
    import dataclasses
    import json
    import sqlite3
    import zlib
    from pathlib import Path

    from wikirag.index.parsecache import load_parse_cache, save_parse_cache
    from wikirag.vault.model import Vault

    vault = Vault.load(Path(__file__).resolve().parents[1] / "sample_vault")
    notes = vault.notes
    assert sum(len(n.links) for n in notes.values()) > 50 and any(n.headings for n in notes.values())
    written = save_parse_cache(tmp_path, "o200k_base", notes, vault.digests, dict.fromkeys(notes, 7))
    assert written == len(notes)
    cache = load_parse_cache(tmp_path, "o200k_base")
    assert {p: note for p, (_d, note, _t) in cache.items()} == notes
    link = next(link for n in notes.values() for link in n.links if link.section)
    back = next(x for _d, n, _t in cache.values() for x in n.links if x == link)
    assert isinstance(back.section, tuple) and hash(back) == hash(link)
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.target = "elsewhere"  # type: ignore[misc]

    path = next(p for p, n in notes.items() if n.links)
    db = sqlite3.connect(tmp_path / "wikirag_index.sqlite")
    head, rest = map(json.loads, db.execute("SELECT note FROM parsed_notes WHERE path = ?",
                                            (path,)).fetchone()[0].split("\n"))
    del head["route_override"], rest["links"][0]["context"], rest["block_ids"]
    rest_text = json.dumps(rest)
    head["rest_crc"] = zlib.crc32(rest_text.encode())  # as a row written before these fields existed would be
    with db:
        db.execute("UPDATE parsed_notes SET note = ? WHERE path = ?", (json.dumps(head) + "\n" + rest_text, path))
    db.close()
    old = load_parse_cache(tmp_path, "o200k_base")[path][1]
    assert old.route_override is None and old.links[0].context == "" and old.block_ids == []
    assert old.links[1:] == notes[path].links[1:] and old.body == notes[path].body


def test_a_damaged_parse_cache_row_is_parsed_again_not_trusted(tmp_path) -> None:
    """A row whose deferred part was damaged (truncated, or edited without its checksum) is dropped when the cache
    loads, so its note is read and parsed again: the run completes, rewrites the row and equals a fresh index.
    (Its decoding happens long after the load, where an error would fail every run.)"""
    import sqlite3
    from pathlib import Path

    from tests.storekit import HashEmbedding, copy_vault, indexed_copy, snapshot
    from wikirag.index.parsecache import load_parse_cache
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    sample = Path(__file__).resolve().parents[1] / "sample_vault"
    config = indexed_copy(sample, tmp_path / "vault")
    db = sqlite3.connect(config.workspace_dir / "wikirag_index.sqlite")
    row = db.execute("SELECT note FROM parsed_notes WHERE path = 'Index.md'").fetchone()[0]
    with db:
        db.execute("UPDATE parsed_notes SET note = ? WHERE path = 'Index.md'", (row[: len(row) // 2],))
        db.execute("UPDATE parsed_notes SET note = ? WHERE path = 'people/Alan Turing.md'",
                   (db.execute("SELECT note FROM parsed_notes WHERE path = 'people/Alan Turing.md'").fetchone()[0]
                    .replace("Turing", "Touring"),))
    db.close()
    cache = load_parse_cache(config.workspace_dir, config.index.encoding)
    assert "Index.md" not in cache and "people/Alan Turing.md" not in cache and len(cache) > 40
    (config.vault / "A new note.md").write_text("# A new note\n\nAbout [[Index]].\n", encoding="utf-8")
    run_index(config, embedding_func=HashEmbedding().func())
    again = load_parse_cache(config.workspace_dir, config.index.encoding)
    assert again["Index.md"][1].links and "Secret Writing" in again["Index.md"][1].title
    fresh = load_config(copy_vault(config.vault, tmp_path / "fresh"), store=tmp_path / "fresh_store")
    run_index(fresh, embedding_func=HashEmbedding().func())
    assert snapshot(config) == snapshot(fresh)


def test_a_cached_note_decodes_its_text_and_links_only_when_read(tmp_path) -> None:
    """A note from the parse cache holds its names and figures decoded and the rest as the row's text until a
    field of it is read; then it is a plain ParsedNote equal to the parse, whichever field was read first, and
    it compares, copies, converts (asdict) and takes a new value as a parsed note does."""
    import copy
    import dataclasses
    from pathlib import Path

    from wikirag.index.parsecache import CachedNote, load_parse_cache, save_parse_cache
    from wikirag.models import ParsedNote
    from wikirag.vault.model import Vault

    vault = Vault.load(Path(__file__).resolve().parents[1] / "sample_vault")
    notes = vault.notes
    save_parse_cache(tmp_path, "o200k_base", notes, vault.digests, dict.fromkeys(notes, 7))
    cache = load_parse_cache(tmp_path, "o200k_base")
    path = next(p for p, n in notes.items() if n.links and n.headings and n.aliases)
    lazy = {p: note for p, (_d, note, _t) in cache.items()}
    assert all(type(n) is CachedNote for n in lazy.values())
    note = lazy[path]
    assert (note.title, note.aliases, note.tags, note.words) == (notes[path].title, notes[path].aliases,
                                                                notes[path].tags, notes[path].words)
    assert type(note) is CachedNote  # head fields read: nothing else decoded
    assert note.links == notes[path].links and type(note) is ParsedNote and note == notes[path]
    for field in ("body", "headings", "frontmatter", "description", "block_ids"):
        other = load_parse_cache(tmp_path, "o200k_base")[path][1]
        assert getattr(other, field) == getattr(notes[path], field) and other == notes[path]
    fresh = load_parse_cache(tmp_path, "o200k_base")
    assert notes[path] == fresh[path][1] and fresh[path][1] == notes[path]  # either side of ==
    assert dataclasses.asdict(load_parse_cache(tmp_path, "o200k_base")[path][1]) == dataclasses.asdict(notes[path])
    assert copy.deepcopy(load_parse_cache(tmp_path, "o200k_base")[path][1]) == notes[path]
    changed = load_parse_cache(tmp_path, "o200k_base")[path][1]
    changed.body = "new text"
    assert changed.body == "new text" and changed.links == notes[path].links
    replaced = dataclasses.replace(load_parse_cache(tmp_path, "o200k_base")[path][1], title="T")
    assert replaced.title == "T" and replaced.links == notes[path].links
    fields = {f.name: getattr(notes[path], f.name) for f in dataclasses.fields(ParsedNote)}
    made = CachedNote(**fields)  # as dataclasses.replace makes one when every field is given
    assert made == notes[path] and type(made) is ParsedNote


# A unit repeated to 60 KB, and what follows it: the link pattern read on from each `[` to the end (10-24 s a
# note): a link's text runs on over `\]` and `[a\]` and never meets a `]` before a destination; the text from
# every escaped `[` reaches the one `](`, with nothing in the brackets; every destination runs on over `\)`.
HOSTILE = [("[a\\](", ""), ("\\[", "]("), ("[a\\]", "]("), ("[a](b\\)", "")]


@pytest.mark.parametrize(("unit", "tail"), HOSTILE, ids=[unit for unit, _ in HOSTILE])
def test_a_60_kb_run_of_link_openers_that_never_close_is_text(unit: str, tail: str) -> None:
    text = unit * (60_000 // len(unit)) + tail
    note = parse_note(text, "n.md")
    assert note.links == [] and note.words == 1
    assert parse_note(f"```\n{text}\n```\n", "n.md").links_in_code_ignored == 0
    (link,) = parse_note(f"[[A]] {text}", "n.md").links
    assert link.context == f"A {text}"[:298] + "…"
