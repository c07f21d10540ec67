"""LinkIndex: Obsidian's resolution rules, as data."""

from __future__ import annotations

import time
import unicodedata

import pytest

from wikirag.models import Resolution, WikiLink
from wikirag.vault.links import LinkIndex, wanted_name

VAULT = [
    "Note.md",
    "zzzz/Note.md",
    "a/b/Note.md",
    "zzzz/Twin.md",
    "m/Twin.md",
    "a/b/Twin.md",
    "people/Ada Lovelace.md",
    "Caf\u00e9.md",
    "v1.2 notes.md",
    "attachments/img.png",
    "docs/Guide.md",
    "docs/Sibling.md",
    "Home.md",
]


def resolve(target: str, from_path: str = "Home.md", paths: list[str] | None = None) -> Resolution:
    return LinkIndex(VAULT if paths is None else paths).resolve(WikiLink(raw="", target=target), from_path)


CASES = [
    # target, linking note, status, path
    ("Ada Lovelace", "Home.md", "resolved", "people/Ada Lovelace.md"),
    ("ada lovelace", "Home.md", "resolved", "people/Ada Lovelace.md"),
    ("ADA LOVELACE.MD", "Home.md", "resolved", "people/Ada Lovelace.md"),
    ("people/Ada Lovelace", "Home.md", "resolved", "people/Ada Lovelace.md"),
    ("  Ada Lovelace  ", "Home.md", "resolved", "people/Ada Lovelace.md"),
    ("v1.2 notes", "Home.md", "resolved", "v1.2 notes.md"),
    ("Cafe\u0301", "Home.md", "resolved", "Caf\u00e9.md"),  # NFD text, NFC name
    ("CAF\u00c9", "Home.md", "resolved", "Caf\u00e9.md"),
    ("img.png", "Home.md", "resolved", "attachments/img.png"),
    ("IMG.PNG", "Home.md", "resolved", "attachments/img.png"),
    ("attachments/img.png", "Home.md", "resolved", "attachments/img.png"),
    ("img", "Home.md", "unresolved", None),  # attachments keep their extension
    ("Nobody", "Home.md", "unresolved", None),
    ("", "docs/Guide.md", "self", "docs/Guide.md"),
    ("Guide", "docs/Guide.md", "self", "docs/Guide.md"),
    ("./Sibling.md", "docs/Guide.md", "resolved", "docs/Sibling.md"),
    ("./Sibling", "docs/Guide.md", "resolved", "docs/Sibling.md"),
    ("../Home.md", "docs/Guide.md", "resolved", "Home.md"),
    ("../../Home.md", "docs/Guide.md", "unresolved", None),  # climbs out of the vault
    ("./Home", "docs/Guide.md", "unresolved", None),  # relative paths do not fall back to names
    ("/docs/Sibling.md", "Home.md", "resolved", "docs/Sibling.md"),
    ("Sibling", "Home.md", "resolved", "docs/Sibling.md"),
    # the tie-break
    ("Note", "Home.md", "ambiguous", "Note.md"),  # exact vault path first
    ("Note", "zzzz/Twin.md", "ambiguous", "Note.md"),  # ... even over the note's own folder
    ("Twin", "Home.md", "ambiguous", "m/Twin.md"),  # the shortest path
    ("Twin", "zzzz/Note.md", "ambiguous", "zzzz/Twin.md"),  # the linking note's own folder
    ("Twin", "a/b/Note.md", "ambiguous", "a/b/Twin.md"),
    ("b/Note", "Home.md", "resolved", "a/b/Note.md"),  # path suffix, one match
    ("zzzz/Note", "Home.md", "resolved", "zzzz/Note.md"),  # full vault path
    ("b/Twin", "a/x.md", "resolved", "a/b/Twin.md"),  # relative to the note's folder
    ("q/Note", "Home.md", "unresolved", None),
    ("ote", "Home.md", "unresolved", None),  # the name must be whole
]


@pytest.mark.parametrize(("target", "source", "status", "path"), CASES)
def test_resolution(target: str, source: str, status: str, path: str | None) -> None:
    res = resolve(target, source)
    assert (res.status, res.path) == (status, path)


def test_ambiguous_links_list_their_candidates() -> None:
    res = resolve("Twin")
    assert res.candidates == ("a/b/Twin.md", "m/Twin.md", "zzzz/Twin.md")
    assert resolve("Ada Lovelace").candidates == ()


def test_attachments_are_marked() -> None:
    assert resolve("img.png").is_attachment
    assert not resolve("Note").is_attachment


# Obsidian's own tie-break (MetadataCache._getLinkpathDest in its app.js): after the exact path, the files
# whose path starts with the linking note's folder, then the rest, each by path length.
@pytest.mark.parametrize(("source", "paths", "chosen"), [
    ("x.md", ["longfoldername/Note.md", "a/b/Note.md"], "a/b/Note.md"),  # shorter, though deeper
    ("projects/x.md", ["archive/Note.md", "projects/deep/er/Note.md"], "projects/deep/er/Note.md"),  # subtree
    ("a/x.md", ["c/Note.md", "ab/Note.md"], "ab/Note.md"),  # "starts with the folder" is a string test
    ("x.md", ["bb/Note.md", "aa/Note.md"], "aa/Note.md"),  # a tie: alphabetical (Obsidian: its load order)
])
def test_several_same_name_notes_resolve_as_obsidian_picks(source, paths, chosen) -> None:
    res = resolve("Note", source, [*paths, source])
    assert (res.status, res.path) == ("ambiguous", chosen)


def test_a_path_suffix_need_not_start_at_a_folder() -> None:
    # Obsidian compares the lower-cased path with endsWith: `[[b/Note]]` finds xab/Note.md
    assert resolve("b/Note", "x.md", ["xab/Note.md", "x.md"]) == Resolution("resolved", "xab/Note.md")
    assert resolve("b/Note", "x.md", ["xab/Note.md", "b/Note.md", "x.md"]).path == "b/Note.md"  # exact first


def test_case_only_twins_prefer_the_exact_spelling() -> None:
    paths = ["Note.md", "note.md"]
    assert resolve("/note.md", "x.md", paths).path == "note.md"
    assert resolve("Note", "x.md", paths).status == "ambiguous"
    # a bare name too: [[note]] is note.md (it went to Note.md, alphabetically first), and from Note.md itself
    # it is a link to its twin, not to itself
    assert (resolve("note", "x.md", paths).path, resolve("Note", "x.md", paths).path) == ("note.md", "Note.md")
    assert resolve("note", "Note.md", paths) == Resolution("ambiguous", "note.md", ("Note.md", "note.md"))


def test_add_and_remove_keep_lookups_current() -> None:
    index = LinkIndex(["a/Note.md"])
    link = WikiLink(raw="[[Note]]", target="Note")
    assert index.resolve(link, "x.md").path == "a/Note.md"
    index.add("Note.md")
    assert (index.resolve(link, "x.md").status, index.resolve(link, "x.md").path) == ("ambiguous", "Note.md")
    index.remove("Note.md")
    assert index.resolve(link, "x.md") == Resolution("resolved", "a/Note.md")
    index.remove("a/Note.md")
    assert index.resolve(link, "x.md").status == "unresolved"
    assert "a/Note.md" not in index


def test_duplicate_names() -> None:
    index = LinkIndex([*VAULT, "people/ada lovelace.md", "img.png.md"])
    assert index.duplicate_names() == [
        ["Note.md", "a/b/Note.md", "zzzz/Note.md"],
        ["a/b/Twin.md", "m/Twin.md", "zzzz/Twin.md"],
        ["people/Ada Lovelace.md", "people/ada lovelace.md"],
    ]


def test_lookup_is_by_dict_not_by_scan() -> None:
    """10,000 lookups in a 50,000-file index: milliseconds with dicts, minutes with a scan per link."""
    index = LinkIndex([f"f{i % 50}/Note {i}.md" for i in range(50_000)])
    links = [WikiLink(raw="", target=f"note {i * 5}") for i in range(10_000)]
    start = time.perf_counter()
    resolved = [index.resolve(link, "x.md") for link in links]
    assert time.perf_counter() - start < 2.0
    assert resolved[-1].path == "f45/Note 49995.md"


def test_nfc_index_of_nfd_paths() -> None:
    nfd = unicodedata.normalize("NFD", "Caf\u00e9.md")
    index = LinkIndex([unicodedata.normalize("NFC", nfd)])
    assert index.resolve(WikiLink(raw="", target="caf\u00e9"), "x.md").path == "Caf\u00e9.md"


def test_an_index_of_the_wanted_names_resolves_as_the_whole_one() -> None:
    """`wanted_name` says under which name a link's candidates are filed: an index of only those files (what a
    run re-resolving a few edited notes builds) gives each link the resolution the whole index gives."""
    sources = ["Home.md", "docs/Guide.md", "zzzz/Twin.md", "a/b/Note.md", "a/x.md"]
    targets = {case[0] for case in CASES} | {
        "./../Home", "/attachments/img.png", "../docs/./Sibling", "./", "/", "..", "./b/..", "a/b/../b/Note",
        "B/NOTE.MD", "Caf\u00e9.md", "people/", "#Heading only", "/docs/Sibling.md/.", "./Sibling.md/x/../."}
    whole = LinkIndex(VAULT)
    for source in sources:
        for target in sorted(targets):
            link = WikiLink(raw="", target=target)
            name = wanted_name(link, source)
            part = LinkIndex(VAULT, names=set() if name is None else {name})
            assert part.resolve(link, source) == whole.resolve(link, source), (target, source)
    assert len(LinkIndex(VAULT, names={"note"})._by_path) < len(whole._by_path)  # it did leave files out


def test_a_name_thousands_of_notes_share_resolves_without_a_scan_per_link() -> None:
    """Docs exported to a vault hold an index.md per folder, each folder's notes linking [[index]]: the tie-break
    ranked every candidate for every link (4,000 x 4,000 ranks, 10 s of `stats` for 4,000 notes)."""
    paths = [f"s{i // 50}/p{i}/index.md" for i in range(4_000)] + [f"s{i // 50}/p{i}/README.md" for i in range(4_000)]
    index = LinkIndex(paths)
    start = time.perf_counter()
    resolved = [index.resolve(WikiLink(raw="", target="index"), f"s{i // 50}/p{i}/README.md") for i in range(4_000)]
    assert time.perf_counter() - start < 2.0
    assert [r.path for r in resolved] == paths[:4_000]
    assert resolved[0].status == "ambiguous" and len(resolved[0].candidates) == 4_000
    start = time.perf_counter()  # as Obsidian links a shared name ("shortest path when possible"): 30 s before
    qualified = [index.resolve(WikiLink(raw="", target=f"p{i}/index"), "x.md") for i in range(4_000)]
    assert time.perf_counter() - start < 2.0
    assert [r.path for r in qualified] == paths[:4_000] and qualified[0].status == "resolved"


def test_the_tie_break_among_many_candidates_is_the_ranked_one(monkeypatch) -> None:
    """Over a large bucket (sorted once) a link resolves as when every candidate is tried and ranked."""
    import random

    from wikirag.vault import links

    rng = random.Random(7)
    folders = ["", "a", "ab", "a/b", "A/B", "ab/c", "abc", "b", "b/a", "z/a/b", "Caf\u00e9", "caf\u00e9/x", "x/y/z"]
    names = ["Note.md", "note.md", "NOTE.md", "Other.md", "img.png"]
    every = sorted({f"{f}/{n}".lstrip("/") for f in folders for n in names if rng.random() < 0.8}
                   | {f"d{i}/{n}" for i in range(40) for n in ("Note.md", "Other.md", "img.png")})
    targets = ["Note", "note", "NOTE.md", "Other", "img.png", "b/Note", "a/b/note.md", "d1/Note", "d/Note", "1/Other",
               "B/NOTE", "\u00e9/Note", "y/z/img.png", "b/Other"]
    for paths in (every, [p for p in every if "/" in p]):  # with files at the root (exact paths), and without
        asked = [(WikiLink(raw="", target=t), s) for t in targets for s in [*paths, "new/x.md", "d7/x.md", "abz/x.md"]]
        with monkeypatch.context() as patched:
            patched.setattr(links, "_SORTED_FROM", 10**9)  # every bucket tried and ranked whole, as before
            ref = links.LinkIndex(paths)
            ranked = [ref.resolve(link, source) for link, source in asked]
        index = links.LinkIndex(paths)
        assert [index.resolve(link, source) for link, source in asked] == ranked
        index.add("d0/x/Other.md")  # a new file in a bucket sorted already: sorted again
        wanted = "Other.md" if "Other.md" in paths else "d0/x/Other.md"
        assert index.resolve(WikiLink(raw="", target="Other"), "d0/x/y.md").path == wanted
    assert index._ordered  # the sorted buckets were used
