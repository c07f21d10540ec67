"""Scanning, defensive reading and the in-memory Vault (incremental updates included)."""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from functools import partial
from pathlib import Path

import pytest

from wikirag.errors import VaultNotFound
from wikirag.vault.ignore import IgnoreRules
from wikirag.vault.links import LinkIndex
from wikirag.vault.model import Vault
from wikirag.vault.on_disk import find_on_disk, walk_folders
from wikirag.vault.read import NOT_REGULAR, read_note, read_vault_note, scan_vault

needs_symlinks = pytest.mark.skipif(os.name == "nt", reason="needs symlinks")


def write(root: Path, rel: str, text: str | bytes = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- scan -------------------------------------------------------------------------------------------------


def test_scan_lists_notes_and_attachments_sorted(tmp_path: Path) -> None:
    for rel in ["b.md", "A.md", "sub/c.MD", "sub/img.png", "z/deep/d.md", "canvas.canvas"]:
        write(tmp_path, rel)
    for rel in [".obsidian/app.md", ".trash/old.md", ".git/x.md", ".wikirag/store.md", "sub/.hidden.md"]:
        write(tmp_path, rel)
    scan = scan_vault(tmp_path)
    assert [n.path for n in scan.notes] == ["A.md", "b.md", "sub/c.MD", "z/deep/d.md"]
    assert scan.attachments == ["canvas.canvas", "sub/img.png"]
    assert scan.issues == []
    note = scan.notes[2]
    assert note.abs_path == tmp_path / "sub" / "c.MD"
    assert note.size == 0 and note.mtime_ns > 0


def test_scan_reports_paths_in_nfc(tmp_path: Path) -> None:
    write(tmp_path, unicodedata.normalize("NFD", "Caf\u00e9/Cr\u00e8me.md"))
    scan = scan_vault(tmp_path)
    assert [n.path for n in scan.notes] == ["Caf\u00e9/Cr\u00e8me.md"]
    assert scan.notes[0].abs_path.exists()


def test_nfc_twins_keep_one_and_report_the_other(tmp_path: Path) -> None:
    write(tmp_path, "Caf\u00e9.md", "nfc")
    write(tmp_path, unicodedata.normalize("NFD", "Caf\u00e9.md"), "nfd")
    if len(list(tmp_path.iterdir())) < 2:
        pytest.skip("this file system normalises names")
    scan = scan_vault(tmp_path)
    assert [n.path for n in scan.notes] == ["Caf\u00e9.md"]
    assert len(scan.issues) == 1
    assert scan.issues[0].skipped and "Unicode normalisation" in scan.issues[0].message


def test_missing_vault_raises(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFound, match="no such vault folder"):
        scan_vault(tmp_path / "nope")
    write(tmp_path, "file.md")
    with pytest.raises(VaultNotFound):
        Vault.load(tmp_path / "file.md")


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("drafts/**", "drafts/a.md", True),
        ("drafts/**", "drafts/x/y.md", True),
        ("drafts/**", "notes/drafts/a.md", False),
        ("**/drafts/*.md", "notes/drafts/a.md", True),
        ("**/drafts/*.md", "drafts/a.md", True),
        ("**/drafts/*.md", "drafts/x/a.md", False),
        ("*.md", "a.md", True),
        ("a?.md", "ab.md", True),
        ("a?.md", "a/.md", False),
        ("[ab].md", "b.md", True),
        ("[!ab].md", "c.md", True),
        ("[!ab].md", "a.md", False),
    ],
)
def test_exclude_glob_rules(pattern: str, path: str, matches: bool) -> None:
    assert IgnoreRules(exclude=[pattern]).file_ignored(path) is matches


def test_exclude_globs(tmp_path: Path) -> None:
    for rel in [
        "keep.md",
        "drafts/a.md",
        "x/drafts/b.md",
        "Templates/t.md",
        "deep/Templates/u.md",
        "n.excalidraw.md",
        "sub/m.excalidraw.md",
        "/".join(["p", "q", "secret.md"]),
    ]:
        write(tmp_path, rel)
    scan = scan_vault(tmp_path, exclude=["drafts/**", "Templates", "*.excalidraw.md", "/p/q/*.md"])
    assert [n.path for n in scan.notes] == ["keep.md", "x/drafts/b.md"]


def test_obsidian_excluded_files(tmp_path: Path) -> None:
    filters = ["Templates/", "Arch", "/\\.excalidraw\\.md$/", "/(unclosed/", ""]
    write(tmp_path, ".obsidian/app.json", json.dumps({"userIgnoreFilters": filters}))
    for rel in [
        "Templates/t.md",
        "Templatesque.md",
        "Archive/a.md",
        "Architecture.md",
        "arch.md",
        "x.excalidraw.md",
        "Keep.md",
    ]:
        write(tmp_path, rel)
    scan = scan_vault(tmp_path)
    # prefixes are case-sensitive and not folder-bound; /regex/ is searched anywhere in the path
    assert [n.path for n in scan.notes] == ["Keep.md", "Templatesque.md", "arch.md"]
    assert [(i.path, i.skipped) for i in scan.issues] == [(".obsidian/app.json", False)]
    assert "'/(unclosed/' is no valid regex" in scan.issues[0].message


@pytest.mark.parametrize("filters", ['"Notes"', '{"drafts/": true}', "3"])
def test_excluded_files_that_are_not_a_list_exclude_nothing_and_say_so(tmp_path: Path, filters: str) -> None:
    """Found while fuzzing `.obsidian/app.json`: `"userIgnoreFilters": "Notes"` was iterated letter by letter,
    so every file starting with N, o, t, e or s was silently left out (a dict's keys became prefixes too)."""
    write(tmp_path, ".obsidian/app.json", f'{{"userIgnoreFilters": {filters}}}')
    for name in ("Note.md", "sub/a.md", "drafts/b.md", "keep.md"):
        write(tmp_path, name)
    scan = scan_vault(tmp_path)
    assert [n.path for n in scan.notes] == ["Note.md", "drafts/b.md", "keep.md", "sub/a.md"]
    assert [(i.path, i.skipped) for i in scan.issues] == [(".obsidian/app.json", False)]
    assert "not a list" in scan.issues[0].message


def test_two_bad_regexes_in_app_json_are_one_line(tmp_path: Path) -> None:
    """One file, one line: each invalid Excluded files regex used to get a line of its own."""
    write(tmp_path, ".obsidian/app.json", '{"userIgnoreFilters": ["/(a/", "/[b/", "ok/"]}')
    [issue] = scan_vault(tmp_path).issues
    assert issue.path == ".obsidian/app.json" and "'/(a/'" in issue.message and "'/[b/'" in issue.message


def test_unreadable_app_json_is_reported(tmp_path: Path) -> None:
    write(tmp_path, ".obsidian/app.json", "{not json")
    write(tmp_path, "a.md")
    scan = scan_vault(tmp_path)
    assert [n.path for n in scan.notes] == ["a.md"]
    assert scan.issues[0].path == ".obsidian/app.json"
    assert scan.issues[0].message.startswith("unreadable, Excluded files not applied")


def test_ignore_rules_check_every_folder_above_a_file() -> None:
    rules = IgnoreRules(["Scratch", "drafts/**"], ["Templates/"])
    assert rules.ignored("a/Scratch/b.md")
    assert rules.ignored("drafts/x/y.md")
    assert rules.ignored("Templates/deep/t.md")
    assert rules.ignored("a/.hidden/b.md")
    assert not rules.ignored("a/b.md")


@needs_symlinks
def test_symlinks(tmp_path: Path) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    write(outside, "secret.md", "# secret")
    write(vault, "real/Target.md", "# target")
    os.symlink(outside / "secret.md", vault / "leak.md")
    os.symlink(outside, vault / "leakdir", target_is_directory=True)
    os.symlink(vault / "real", vault / "alias", target_is_directory=True)
    os.symlink(vault, vault / "real" / "loop", target_is_directory=True)
    os.symlink(vault / "real" / "Target.md", vault / "Shortcut.md")
    os.symlink(vault / "gone.md", vault / "broken.md")
    scan = scan_vault(vault)
    assert [n.path for n in scan.notes] == ["Shortcut.md", "real/Target.md"]
    assert sorted((i.path, i.message) for i in scan.issues) == [
        ("broken.md", "broken symlink; skipped"),
        ("leak.md", "symlink leads outside the vault; not followed"),
        ("leakdir", "symlink leads outside the vault; not followed"),
    ]


@needs_symlinks
def test_the_scan_never_follows_a_symlink_into_wikirag_s_store(tmp_path: Path) -> None:
    """The store is a hidden folder of the vault, so the scan never walks it; a symlink to it (or into it) made
    its files the vault's attachments, which `watch` never saw change."""
    vault = tmp_path / "vault"
    write(vault, "Note.md", "# note")
    write(vault, ".wikirag/v/wikirag_index.sqlite", b"SQLite format 3\x00")
    write(vault, ".shelf/Deep.md", "# deep")  # another hidden folder: a symlink to it is followed, as before
    os.symlink(vault / ".wikirag", vault / "Store", target_is_directory=True)
    os.symlink(vault / ".wikirag" / "v" / "wikirag_index.sqlite", vault / "index.sqlite")
    os.symlink(vault / ".shelf", vault / "Shelf", target_is_directory=True)
    scan = scan_vault(vault, store=vault / ".wikirag")
    assert [n.path for n in scan.notes] == ["Note.md", "Shelf/Deep.md"]
    assert scan.attachments == []
    assert sorted((i.path, i.message) for i in scan.issues) == [
        ("Store", "symlink leads into wikirag's store; not followed"),
        ("index.sqlite", "symlink leads into wikirag's store; not followed"),
    ]
    assert Vault.load(vault, store=vault / ".wikirag").attachments == set()
    assert "Store/v/wikirag_index.sqlite" in scan_vault(vault).attachments  # what happened without the store


@needs_symlinks
def test_the_scan_records_the_symlinks_that_lead_inside_the_vault(tmp_path: Path) -> None:
    """What `watch` maps events through: an event names the real path that changed, never the link's."""
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    write(outside, "secret.md")
    write(vault, "real/Target.md")
    write(vault, ".shelf/sub/Deep.md")
    os.symlink(vault / "real" / "Target.md", vault / "Shortcut.md")
    os.symlink(vault / ".shelf", vault / "Shelf", target_is_directory=True)
    os.symlink(vault / "real", vault / "alias", target_is_directory=True)  # the real folder is walked instead
    os.symlink(vault / "gone", vault / "broken")
    os.symlink(outside / "secret.md", vault / "leak.md")
    links = scan_vault(vault).symlinks
    real = os.path.realpath
    assert links.paths == {"Shortcut.md", "Shelf", "alias", "broken"}
    assert links.vault_paths(real(vault / "real" / "Target.md")) == ["Shortcut.md"]
    assert links.vault_paths(real(vault / "real")) == ["Shortcut.md"]  # the target's folder moved or removed
    assert links.vault_paths(real(vault / ".shelf" / "sub" / "Deep.md")) == ["Shelf/sub/Deep.md"]
    assert links.vault_paths(real(vault / "real" / "Other.md")) == []  # the real folder's own path stands
    assert all(links.relinks(real(vault / p)) for p in (".shelf", "real", "gone"))
    assert not links.relinks(real(vault / ".shelf" / "sub" / "Deep.md"))
    assert links.touches("Shelf") and not links.touches("real")


@needs_symlinks
def test_a_symlink_loop_is_reported_as_a_symlink_loop(tmp_path: Path) -> None:
    """Found by the vault fuzzer: a.md -> b.md -> a.md was reported as "cannot read (Too many levels of
    symbolic links)", the raw errno text, instead of saying what is wrong with the file."""
    os.symlink("b.md", tmp_path / "a.md")
    os.symlink("a.md", tmp_path / "b.md")
    scan = scan_vault(tmp_path)
    assert scan.notes == []
    assert sorted((i.path, i.message, i.skipped) for i in scan.issues) == [
        ("a.md", "symlink loop; skipped", True), ("b.md", "symlink loop; skipped", True)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_named_like_a_note_is_reported_not_skipped_silently(tmp_path: Path) -> None:
    """Found by the vault fuzzer: a named pipe called pipe.md was left out without a word (reading it would
    block forever, so skipping is right; saying nothing is not)."""
    os.mkfifo(tmp_path / "pipe.md")
    os.mkfifo(tmp_path / "pipe.bin")  # not a note: wikirag never reads it, nothing to say
    write(tmp_path, "a.md")
    scan = scan_vault(tmp_path)
    assert [n.path for n in scan.notes] == ["a.md"]
    assert [(i.path, i.message, i.skipped) for i in scan.issues] == [
        ("pipe.md", "not a regular file (a named pipe, socket or device); skipped", True)]


@needs_symlinks
def test_a_symlink_to_a_fifo_is_reported_as_one_not_as_broken(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.bin")
    os.symlink(tmp_path / "pipe.bin", tmp_path / "link.md")
    os.symlink(tmp_path / "gone.md", tmp_path / "dangling.md")
    scan = scan_vault(tmp_path)
    assert [(i.path, i.message) for i in scan.issues] == [
        ("dangling.md", "broken symlink; skipped"),
        ("link.md", "not a regular file (a named pipe, socket or device); skipped")]


def test_nfc_twins_line_tells_which_spelling_was_skipped(tmp_path: Path) -> None:
    """Found by the vault fuzzer: the clash line read "Café.md: same name as 'Café.md' ...", the two
    spellings printing alike, so nothing said which file was left out."""
    nfd = unicodedata.normalize("NFD", "Caf\u00e9.md")
    write(tmp_path, "Caf\u00e9.md", "nfc")
    write(tmp_path, nfd, "nfd")
    if len(list(tmp_path.iterdir())) < 2:
        pytest.skip("this file system normalises names")
    [issue] = scan_vault(tmp_path).issues
    kept = scan_vault(tmp_path).notes[0].abs_path.name
    skipped = nfd if kept != nfd else "Caf\u00e9.md"
    assert ascii(skipped) in issue.message and ascii(kept) in issue.message and ascii(kept) != ascii(skipped)


@needs_symlinks
def test_a_note_is_found_on_disk_where_the_scan_found_it_among_spellings_of_its_name(tmp_path: Path) -> None:
    """Found by a review: reading a note by its vault path (get_note, search passages) took the spelling as
    written when it was there, though the scan keeps the first spelling it meets and skips the others."""
    nfd = partial(unicodedata.normalize, "NFD")
    vault = tmp_path / "vault"
    write(vault, "Caf\u00e9.md", "nfc")
    write(vault, nfd("Caf\u00e9.md"), "nfd")  # sorts first: kept
    write(vault, "Caf\u00e9/a.md", "nfc folder")
    write(vault, "Caf\u00e9/c.md", "only in the nfc folder")
    write(vault, nfd("Caf\u00e9") + "/a.md", "nfd folder")  # walked first
    write(vault, "Key.md", "ascii")
    write(vault, "\u212aey.md", "kelvin sign")  # the same name in NFC, sorting after
    write(vault, "\u00dcber/x.md", "real folder")
    write(vault, ".hidden/x.md", "linked folder")
    write(vault, ".hidden/y.md", "only in the linked folder")
    os.symlink(vault / ".hidden", vault / nfd("\u00dcber"), target_is_directory=True)  # sorts first, walked last
    write(vault, "Th\u00e9.md", "a file")
    os.symlink(tmp_path / "outside.md", vault / nfd("Th\u00e9.md"))  # sorts first, leads out: passed over
    write(tmp_path, "outside.md", "outside")
    if len(os.listdir(vault)) < 11:
        pytest.skip("this file system normalises names")
    scan = scan_vault(vault)
    assert {n.path: Path(n.disk_path).read_text() for n in scan.notes} == {
        "Caf\u00e9.md": "nfd", "Caf\u00e9/a.md": "nfd folder", "Caf\u00e9/c.md": "only in the nfc folder",
        "Key.md": "ascii", "Th\u00e9.md": "a file", "\u00dcber/x.md": "real folder",
        "\u00dcber/y.md": "only in the linked folder"}
    for note in scan.notes:
        assert find_on_disk(vault, note.path) == note.disk_path, note.path
        assert read_vault_note(vault, note.path).text == Path(note.disk_path).read_text(), note.path
    assert find_on_disk(vault, "Nowhere.md") is None


@needs_symlinks
def test_a_symlinked_folder_is_walked_when_its_target_is_not(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(vault, "store/Deep.md", "x")
    write(vault, "Top.md", "x")
    os.symlink(vault / "store", vault / "aaa", target_is_directory=True)  # sorts before the real folder
    assert [n.path for n in scan_vault(vault, exclude=["store"]).notes] == ["Top.md", "aaa/Deep.md"]
    assert [n.path for n in scan_vault(vault).notes] == ["Top.md", "store/Deep.md"]  # real folders win


# -- read_note ------------------------------------------------------------------------------------------------


def read(tmp_path: Path, data: bytes, **kw):
    return read_note(write(tmp_path, "n.md", data), "n.md", **kw)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"\xef\xbb\xbf# T\r\nx\r\n", "# T\nx\n"),
        (b"a\rb\r\nc\n", "a\nb\nc\n"),
        (b"", ""),
        ("caf\u00e9 \U0001f510".encode(), "caf\u00e9 \U0001f510"),
    ],
)
def test_read_clean_text(tmp_path: Path, data: bytes, text: str) -> None:
    result = read(tmp_path, data)
    assert (result.text, result.issues) == (text, [])
    assert result.digest == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("data", "text", "message"),
    [
        (b"a\x00b\x00c", "abc", "2 NUL bytes removed"),
        (b"caf\xe9", "caf\ufffd", "1 invalid UTF-8 sequence replaced (first at byte 3)"),
        (
            b"\x00caf\xe9 na\xefve",
            "caf\ufffd na\ufffdve",
            "1 NUL byte removed; 2 invalid UTF-8 sequences replaced (first at byte 4)",
        ),
        (b"x" * 10_001, "x" * 10_001, "a line of 10,001 characters (over 10,000), kept"),
    ],
)
def test_read_repairs_and_reports_one_line(tmp_path: Path, data: bytes, text: str, message: str) -> None:
    result = read(tmp_path, data)
    assert result.text == text
    assert [(i.path, i.message, i.skipped) for i in result.issues] == [("n.md", message, False)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "looks binary (64 NUL bytes in the first 8 KiB); skipped"),
        ("# hi".encode("utf-16"), "UTF-16 text (only UTF-8 is read); skipped"),
        (b"x" * 101, "larger than 100 bytes (101 bytes); skipped"),
    ],
)
def test_read_skips(tmp_path: Path, data: bytes, message: str) -> None:
    result = read(tmp_path, data, max_bytes=100)
    assert result.text is None
    assert [(i.message, i.skipped) for i in result.issues] == [(message, True)]


def test_read_never_raises_for_missing_or_odd_files(tmp_path: Path) -> None:
    gone = read_note(tmp_path / "gone.md", "gone.md")
    assert (gone.text, gone.issues[0].message) == (None, "vanished before it could be read; skipped")
    (tmp_path / "dir.md").mkdir()
    odd = read_note(tmp_path / "dir.md", "dir.md")
    assert odd.text is None and odd.issues[0].skipped
    assert odd.issues[0].message.startswith("cannot read (")


def test_size_limit_is_a_parameter_of_the_vault(tmp_path: Path) -> None:
    write(tmp_path, "small.md", "x")
    write(tmp_path, "big.md", "x" * 2000)
    vault = Vault.load(tmp_path, max_bytes=1000)
    assert list(vault.notes) == ["small.md"]
    assert vault.issues[0].path == "big.md" and vault.issues[0].skipped


# -- the Vault model ------------------------------------------------------------------------------------------


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    write(tmp_path, "Home.md", "[[Ada]] and [[Babbage]] and [[Ghost]] and ![[pic.png]] and [[#Home]]\n")
    write(tmp_path, "people/Ada.md", "---\nrelated: '[[Home]]'\n---\nWorked with [[Babbage]].\n")
    write(tmp_path, "people/Babbage.md", "No links.\n")
    write(tmp_path, "Lonely.md", "Nothing.\n")
    return tmp_path


def test_vault_load_resolves_and_counts_backlinks(vault_dir: Path) -> None:
    vault = Vault.load(vault_dir)
    assert sorted(vault.notes) == ["Home.md", "Lonely.md", "people/Ada.md", "people/Babbage.md"]
    assert vault.attachments == set()
    statuses = [(link.target, res.status, res.path) for link, res in vault.outgoing("Home.md")]
    assert statuses == [
        ("Ada", "resolved", "people/Ada.md"),
        ("Babbage", "resolved", "people/Babbage.md"),
        ("Ghost", "unresolved", None),
        ("pic.png", "unresolved", None),
        ("", "self", "Home.md"),
    ]
    assert vault.backlinks("people/Babbage.md") == {"Home.md", "people/Ada.md"}
    assert vault.backlinks("Home.md") == {"people/Ada.md"}  # frontmatter links count; self links do not
    assert vault.unresolved() == {"Ghost": {"Home.md"}, "pic.png": {"Home.md"}}
    assert vault.digests["Lonely.md"] == hashlib.sha256(b"Nothing.\n").hexdigest()
    link = vault.notes["people/Ada.md"].links[1]
    assert vault.resolve("people/Ada.md", link).path == "people/Babbage.md"


def test_update_file_resolves_links_that_were_waiting(vault_dir: Path) -> None:
    vault = Vault.load(vault_dir)
    write(vault_dir, "Ghost.md", "Boo. [[Home]]\n")
    assert vault.update_file("Ghost.md") == []
    assert vault.outgoing("Home.md")[2][1].path == "Ghost.md"
    assert vault.backlinks("Ghost.md") == {"Home.md"}
    assert vault.backlinks("Home.md") == {"people/Ada.md", "Ghost.md"}
    assert "Ghost" not in vault.unresolved()

    write(vault_dir, "attachments/pic.png", b"\x89PNG")
    vault.update_file("attachments/pic.png")
    assert vault.attachments == {"attachments/pic.png"}
    assert vault.outgoing("Home.md")[3][1].path == "attachments/pic.png"
    assert vault.backlinks("attachments/pic.png") == {"Home.md"}


def test_update_file_of_a_removed_folder_forgets_its_files_and_their_problems(vault_dir: Path) -> None:
    import shutil

    write(vault_dir, "people/raw.md", b"\x00\x01\x02\x03" * 600)  # binary: skipped, with a problem
    vault = Vault.load(vault_dir)
    assert any(i.path == "people/raw.md" for i in vault.issues)
    shutil.rmtree(vault_dir / "people")
    vault.update_file("people")
    assert not any(p.startswith("people/") for p in vault.notes)
    assert not any(i.path.startswith("people/") for i in vault.issues)
    assert vault.backlinks("Home.md") == set()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_update_file_reports_a_note_that_became_a_named_pipe_as_the_scan_does(vault_dir: Path) -> None:
    # `watch` forgot the note and said nothing, where `index` reports the pipe; never opened (a read would block)
    vault = Vault.load(vault_dir)
    (vault_dir / "people" / "Ada.md").unlink()
    os.mkfifo(vault_dir / "people" / "Ada.md")
    os.mkfifo(vault_dir / "pipe.md")
    os.mkfifo(vault_dir / "pipe.png")  # not a note: no line, as in the scan
    said = [vault.update_file(p) for p in ("people/Ada.md", "pipe.md", "pipe.png")]
    assert [[i.message for i in issues] for issues in said] == [[NOT_REGULAR], [NOT_REGULAR], []]
    assert "people/Ada.md" not in vault.notes
    assert sorted(i.path for i in vault.issues) == sorted(i.path for i in Vault.load(vault_dir).issues)
    assert vault.update_file("pipe.md") == said[1] and len([i for i in vault.issues if i.path == "pipe.md"]) == 1


def test_update_file_reparses_a_changed_note(vault_dir: Path) -> None:
    vault = Vault.load(vault_dir)
    write(vault_dir, "people/Ada.md", "Now links to [[Lonely]] only.\n")
    vault.update_file("people/Ada.md")
    assert [res.path for _, res in vault.outgoing("people/Ada.md")] == ["Lonely.md"]
    assert vault.backlinks("Lonely.md") == {"people/Ada.md"}
    assert vault.backlinks("people/Babbage.md") == {"Home.md"}
    assert vault.backlinks("Home.md") == set()


def test_update_file_keeps_a_note_it_cannot_read_now(vault_dir: Path, monkeypatch) -> None:
    # `watch` sees a chmod as a change: an unreadable note is kept as it was, not forgotten (see read.py _KEPT)
    vault = Vault.load(vault_dir)
    before = vault.notes["people/Ada.md"]
    real_open = os.open

    def refused(path, flags, *args, **kwargs):  # noqa: ANN001, ANN202  (root is not stopped by chmod 000)
        if str(path).endswith("Ada.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    issues = vault.update_file("people/Ada.md")
    assert [i.message for i in issues] == ["cannot read (Permission denied); skipped, and what the index holds "
                                           "of it is kept"]
    assert vault.notes["people/Ada.md"] is before
    assert vault.backlinks("people/Babbage.md") == {"Home.md", "people/Ada.md"}


def test_a_new_root_note_takes_over_the_tie_break(vault_dir: Path) -> None:
    vault = Vault.load(vault_dir)
    write(vault_dir, "Babbage.md", "The root copy.\n")
    vault.update_file("Babbage.md")
    res = vault.outgoing("Home.md")[1][1]
    assert (res.status, res.path, res.candidates) == ("ambiguous", "Babbage.md", ("Babbage.md", "people/Babbage.md"))
    assert vault.backlinks("people/Babbage.md") == set()
    assert vault.duplicate_names() == [["Babbage.md", "people/Babbage.md"]]


def test_remove_file_and_folders(vault_dir: Path) -> None:
    vault = Vault.load(vault_dir)
    (vault_dir / "people" / "Ada.md").unlink()
    vault.update_file("people/Ada.md")  # a vanished file is removed
    assert "people/Ada.md" not in vault.notes
    assert vault.outgoing("Home.md")[0][1].status == "unresolved"
    assert vault.backlinks("people/Babbage.md") == {"Home.md"}
    vault.remove_file("people")  # a whole folder
    assert sorted(vault.notes) == ["Home.md", "Lonely.md"]
    assert vault.unresolved() == {
        "Ada": {"Home.md"},
        "Babbage": {"Home.md"},
        "Ghost": {"Home.md"},
        "pic.png": {"Home.md"},
    }


def test_update_file_ignores_excluded_paths_and_replaces_issues(vault_dir: Path) -> None:
    vault = Vault.load(vault_dir, exclude=["drafts/**"])
    write(vault_dir, "drafts/Ghost.md", "x")
    assert vault.update_file("drafts/Ghost.md") == []
    assert "drafts/Ghost.md" not in vault.notes
    write(vault_dir, "Bad.md", b"caf\xe9")
    assert [i.message for i in vault.update_file("Bad.md")] == ["1 invalid UTF-8 sequence replaced (first at byte 3)"]
    write(vault_dir, "Bad.md", "fixed")
    assert vault.update_file("Bad.md") == []
    assert vault.issues == []
    write(vault_dir, "Bad.md", b"\x00" * 100)
    assert vault.update_file("Bad.md")[0].skipped
    assert "Bad.md" not in vault.notes


def test_update_file_re_resolves_only_the_links_that_name_the_file(vault_dir: Path, monkeypatch) -> None:
    for i in range(200):
        write(vault_dir, f"bulk/N{i}.md", f"[[N{(i + 1) % 200}]] [[Home]] [[Nobody]]\n")
    vault = Vault.load(vault_dir)
    calls: list[str] = []
    original = LinkIndex.resolve

    def counting(self, link, from_path):
        calls.append(link.target)
        return original(self, link, from_path)

    monkeypatch.setattr(LinkIndex, "resolve", counting)
    write(vault_dir, "Ghost.md", "[[Home]]\n")
    vault.update_file("Ghost.md")
    # Ghost's own link, plus Home's 5 links (it is the one note naming Ghost): not the 600+ others
    assert sorted(calls) == sorted(["Home", "Ada", "Babbage", "Ghost", "pic.png", ""])
    calls.clear()
    write(vault_dir, "bulk/N5.md", "changed [[N7]]\n")
    vault.update_file("bulk/N5.md")
    assert calls == ["N7"]


def test_random_bytes_without_nuls_are_skipped_but_latin1_text_is_read(tmp_path):
    import random

    rng = random.Random(3)
    noise = bytes(rng.choice(range(1, 256)) for _ in range(5000))  # no NUL byte at all
    (tmp_path / "noise.md").write_bytes(noise)
    (tmp_path / "latin.md").write_bytes("Caf\xe9 cr\xe8me, na\xefve r\xe9sum\xe9. ".encode("latin-1") * 40)
    noise_read = read_note(tmp_path / "noise.md", "noise.md")
    assert noise_read.text is None and "control bytes" in noise_read.issues[0].message
    latin = read_note(tmp_path / "latin.md", "latin.md")
    assert latin.text is not None and latin.text.startswith("Caf\ufffd cr\ufffdme")


def test_a_pause_of_the_collector_does_not_unfreeze_what_a_run_froze():
    """A big run freezes its long-lived objects (index.run); a later cyclic_gc_paused block used to unfreeze
    them all, handing 1.5 million objects back to the next full collection."""
    import gc

    from wikirag.vault.memory import cyclic_gc_paused, freeze_long_lived, thaw_long_lived

    kept = [[i] for i in range(1000)]
    try:
        freeze_long_lived()
        frozen = gc.get_freeze_count()
        assert frozen >= len(kept)
        with cyclic_gc_paused():
            more = [[i] for i in range(100)]
        assert gc.get_freeze_count() >= frozen + len(more)
    finally:
        thaw_long_lived()
    assert gc.get_freeze_count() == 0
    with cyclic_gc_paused():
        pass
    assert gc.get_freeze_count() == 0


def test_read_note_files_gives_the_whole_files_as_lightrag_would_get_them(tmp_path):
    """Frontmatter kept; BOM dropped, CRLF and lone CR made "\\n", undecodable bytes replaced (not fatal);
    a note whose file is gone falls back to its parsed body."""
    from wikirag.vault.read import read_note_files

    (tmp_path / "a.md").write_bytes(b"\xef\xbb\xbf---\r\ntags: [x]\r\n---\r\nAda \xff\xfe wrote\rit.\n" + b"z" * 70000)
    (tmp_path / "b.md").write_text("# B\n\nBody [[a]].\n", encoding="utf-8")
    vault = Vault.load(tmp_path)
    (tmp_path / "b.md").unlink()
    texts = read_note_files(vault, ["a.md", "b.md"])
    assert texts["a.md"] == "---\ntags: [x]\n---\nAda \ufffd\ufffd wrote\nit.\n" + "z" * 70000
    assert texts["b.md"] == vault.notes["b.md"].body


def test_a_path_too_long_to_index_is_one_line_and_the_rest_is_read(tmp_path: Path) -> None:
    # PostgreSQL's key on a path holds about 2,700 bytes: such a note aborted the whole run on the embedded
    # backend. It is skipped on every backend alike, with one line naming it, by the scan and by `watch`.
    deep = "/".join(["ф" * 100] * 11) + "/Deep.md"  # 2,200 + 7 + 10 bytes
    write(tmp_path, deep, "deep\n")
    write(tmp_path, "/".join(["ф" * 100] * 11) + "/pic.png", b"\x89PNG")
    write(tmp_path, "Home.md", "[[Deep]]\n")
    scan = scan_vault(tmp_path)
    assert [n.path for n in scan.notes] == ["Home.md"] and scan.attachments == []
    lines = [(i.path, i.message) for i in scan.issues]
    assert [p for p, _ in lines] == sorted([deep, deep.replace("Deep.md", "pic.png")])
    assert all("bytes long, more than the index keeps (2,048); skipped" in m for _, m in lines)
    vault = Vault.load(tmp_path)
    assert list(vault.notes) == ["Home.md"] and vault.outgoing("Home.md")[0][1].status == "unresolved"
    write(tmp_path, deep, "edited\n")
    said = vault.update_file(deep)
    assert [i.path for i in said] == [deep] and deep not in vault.notes
    assert len([i for i in vault.issues if i.path == deep]) == 1


def test_a_note_a_thousand_folders_deep_is_found_on_disk(tmp_path: Path) -> None:
    """Found by fuzzing: find_on_disk walked one recursive call per folder, so a note under ~1,000 nested folders
    (a 2,000-byte path, which the index keeps) raised RecursionError in `search` and `get_note`."""
    folder = tmp_path
    for _ in range(1000):
        folder = folder / "d"
        folder.mkdir()
    (folder / "deep.md").write_text("deep [[top]]\n")
    path = "d/" * 1000 + "deep.md"
    try:
        assert [n.path for n in scan_vault(tmp_path).notes] == [path]
        assert find_on_disk(tmp_path, path) == str(folder / "deep.md")
        assert find_on_disk(tmp_path, "d/" * 1000 + "gone.md") is None
        assert read_vault_note(tmp_path, path).text == "deep [[top]]\n"
    finally:  # deepest first: pytest's own tmp cleanup (shutil.rmtree) recurses per folder and would fail the run
        (folder / "deep.md").unlink()
        while folder != tmp_path:
            folder.rmdir()
            folder = folder.parent


def test_walk_folders_is_os_walk_without_the_recursion(tmp_path: Path) -> None:
    """The same folders, names and order as os.walk (top down), pruned in place the same way, symlinked folders
    listed and not entered; and no RecursionError at depth 1,500 (Python 3.11's os.walk raises one)."""
    folder = tmp_path / "deep"
    for _ in range(1500):
        folder = folder / "d"
        folder.mkdir(parents=True)
    for rel in ("a/b/n.md", "a/c/n.md", "a/.hidden/n.md", "x.md"):
        (tmp_path / "tree" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / rel).write_text("n\n")
    (tmp_path / "tree" / "link").symlink_to(tmp_path / "tree" / "a", target_is_directory=True)

    def walked(walk, top: Path) -> list:
        out = []
        for dirpath, dirnames, filenames in walk(top):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            out.append((dirpath, list(dirnames), list(filenames)))
        return out

    try:
        assert walked(walk_folders, tmp_path / "tree") == walked(os.walk, tmp_path / "tree")
        assert not any(".hidden" in dirpath or "/link" in dirpath for dirpath, _, _ in walked(walk_folders, tmp_path))
        assert len(walked(walk_folders, tmp_path / "deep")) == 1501
    finally:  # deepest first: pytest's own tmp cleanup (shutil.rmtree) recurses per folder
        while folder != tmp_path:
            folder.rmdir()
            folder = folder.parent
