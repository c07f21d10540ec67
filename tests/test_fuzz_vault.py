"""A vault fuzzer: hypothesis builds hostile vaults and runs `index` -> edit -> `index` through the real CLI.

Each generated vault mixes ordinary notes (unicode names: CJK, combining marks, RTL, emoji, random code points,
names the index cannot store (an ESC, `<SEP>`: one line each);
case clashes such as Note.md / note.md / NOTE.MD; titles and aliases that clash with other notes' names; links
with `..`, absolute paths and `~`; headings, code, comments, callouts; frontmatter routes) with bad files:
0-byte, a sparse 50 MB file (over the reader's size limit), NUL-filled, a few NULs, Latin-1, UTF-16 with and
without BOM, YAML bombs (billion laughs anchors), broken and non-mapping YAML, 100k-character lines (alone and
with a YAML bomb), unreadable files and folders, broken symlinks, symlink loops (file and folder), a symlink out
of the vault, a named pipe, a name that is not UTF-8, two names equal after NFC, folders named like notes, and
`.obsidian/app.json` variants. Files are deleted or replaced between the run's one scan and its reads, by hooks
after `scan_vault` (every file of the `early` kinds) and in the reader (the file about to be read); never one
of two NFC twins. Runs per vault: index, edits (rewrite, delete, add, rename, good <-> bad), index, an unchanged
index (answered from the manifest: every file gets its own old mtime), the human `index` and `stats` renderings,
and a fresh index into another store.
After the runs it asserts:

- no traceback: exit code 0, no exception, "Traceback" nowhere in the output;
- the `--json` report's `issues` hold exactly one line per bad file, naming it, and none for a good file;
- nothing outside the store folders was written (bytes and mtime of every file, and the set of paths);
- the store equals a fresh index of the final vault (tests/storekit.py `snapshot`), the unchanged run changes
  nothing, and nothing from the file outside the vault reaches the store.

Unreadable files: as root, `chmod 000` denies nothing, so there `os.open` (what the reader opens notes with) and
`os.scandir` raise PermissionError for the chosen paths instead; as another user the real `chmod 000` is used.

Examples: 12 by default, derandomized, so CI always runs the same vaults (~15 s). WIKIRAG_FUZZ_EXAMPLES=N runs
N random vaults instead, WIKIRAG_FUZZ_NO_SHRINK=1 reports a failure at once instead of shrinking it (shrinking
these examples can take many minutes):
`WIKIRAG_FUZZ_EXAMPLES=300 WIKIRAG_FUZZ_NO_SHRINK=1 python -m pytest tests/test_fuzz_vault.py -q`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.storekit import snapshot
from wikirag.cli import app
from wikirag.index import run as index_run
from wikirag.settings import load_config
from wikirag.vault import model as vault_model

EXAMPLES = int(os.environ.get("WIKIRAG_FUZZ_EXAMPLES", "0") or 0)
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
runner = CliRunner()

settings.register_profile("fuzz-ci", max_examples=12, deadline=None, derandomize=True, database=None,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("fuzz-long", max_examples=max(EXAMPLES, 1), deadline=None,
                          suppress_health_check=list(HealthCheck))
PROFILE = settings.get_profile("fuzz-long" if EXAMPLES else "fuzz-ci")
if os.environ.get("WIKIRAG_FUZZ_NO_SHRINK"):  # a long hunt: report failures as found, do not shrink them
    PROFILE = settings(PROFILE, phases=[Phase.explicit, Phase.reuse, Phase.generate], report_multiple_bugs=True)

# --- what a vault is made of --------------------------------------------------------------------------------

STEMS = ["Note", "note", "NOTE", "日本語", "中文笔记", "e\u0301te\u0301", "\u00e9t\u00e9", "שלום", "مرحبا",
         "\u202eevil", "🙂", "👩\u200d💻", "a b", "x..y", "con", "#tag", "[br]", "a|b", "%2e%2e", "-", "_", "Ünïcödé",
         "한국어", "]y", "[red]", "esc\x1b[2J", "x<SEP>y"]  # the last two: names the index cannot store
FOLDERS = ["", "", "sub", "Sub", "日本", "e\u0301", "deep/er", "a b", "x["]  # x[ + ]y.md: the path x[/]y.md
WORDS = ["alpha", "Beta", "gamma", "日本語", "café", "שלום", "emoji🙂", "naïve", "e\u0301t\u00e9", "Ünïcödé", "x"]
HOSTILE_TARGETS = ["../outside", "../../etc/passwd", "/etc/passwd", "/abs/Note", "..", ".", "../", "a/../../b",
                   "C:\\Windows\\win", "%2e%2e/x", "Note#Heading", "note^block", "~/secret", "sub/../../x"]
BAD_KINDS = ["big", "nul", "utf16bom", "utf16", "bomb", "longline", "unreadable", "vanish", "broken", "loop",
             "outside", "fewnuls", "latin1", "badyaml", "yamllist", "bomblong", "fifo"]
GOOD_KINDS = ["note", "note", "note", "empty", "replace", "attachment", "mddir", "yamlodd", "vanishearly",
              "replaceearly"]
# Valid YAML of odd types where strings are expected: read as well as can be, no problem line.
YAML_ODD = """---
title: 12345
aliases: [[nested, list], {a: b}, null, 3.5, .nan, 2024-01-01]
tags: {x: y}
type: [a, b]
description: 2024-01-01
wikirag: EXTRACT
created: 2024-01-01T10:00:00
2024-01-01: date key
null: null key
1.5: float key
related: [[[Target]], "[[Note|alias]]"]
---
"""
BIG = 50 * 1024 * 1024
SECRET = "a secret outside the vault"
APP_JSONS = ['{"userIgnoreFilters": ["nothing-here/", "/^zzz/"]}', '{not json', '{"userIgnoreFilters": "Notes"}',
             '{"userIgnoreFilters": 3}', '{"userIgnoreFilters": ["/(a/", "/[b/"]}', '["a list"]']
APP_JSON_SAYS = {"{not": "unreadable", '"Notes"': "not a list", " 3}": "not a list", '"/(a/"': "no valid regex",
                 '["a list"]': "unreadable"}
BOMB = "\n".join(["a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]"] + [
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(8)])


@dataclass
class Entry:
    """One file (or folder) of the vault and the issue line, if any, the reader owes it."""

    kind: str
    text: str = ""  # note text (for note/replace/longline: the good content)
    then: Entry | None = None  # replace: what the file becomes between scan and read
    children: dict[str, Entry] = field(default_factory=dict)  # unreadable folders

    def __repr__(self) -> str:  # short: a failing example prints readably
        text = self.text if len(self.text) < 120 else f"{self.text[:60]}...({len(self.text)} chars)"
        return f"Entry({self.kind!r}, {text!r}" + (f", then={self.then!r}" if self.then else "") + ")"


# An issue line's path -> the words the message must hold.
EXPECT = {"big": "larger than", "nul": "binary", "utf16bom": "UTF-16", "utf16": "binary", "bomb": "frontmatter",
          "longline": "characters", "unreadable": "cannot read", "vanish": "vanished", "broken": "broken symlink",
          "loop": "symlink loop", "outside": "outside the vault", "badname": "not valid UTF-8",
          "nfc": "NFC", "lockeddir": "cannot list", "fewnuls": "NUL byte", "latin1": "invalid UTF-8",
          "badyaml": "invalid YAML", "yamllist": "not a mapping", "bomblong": "frontmatter",
          "fifo": "not a regular file"}


@st.composite
def note_text(draw, names: list[str]) -> str:
    targets = st.sampled_from(HOSTILE_TARGETS + names + ["Missing note"])
    forms = st.sampled_from(["[[{}]]", "[[{}|alias]]", "![[{}]]", "[x]({}.md)", "[x](<{}>)", "[[{}#h]]"])
    parts = []
    if draw(st.booleans()):
        naming = st.sampled_from(WORDS + names)  # titles and aliases that clash with other notes' names
        fm = {"title": " ".join(draw(st.lists(naming, min_size=1, max_size=2))),
              "aliases": draw(st.lists(naming, max_size=2)),
              "tags": draw(st.lists(st.sampled_from(["t1", "日本", "x/y"]), max_size=2))}
        if draw(st.booleans()):
            fm["related"] = f"[[{draw(targets)}]]"
        if route := draw(st.sampled_from([None, None, "skip", "extract", "inject", "Extract"])):
            fm["wikirag"] = route  # extract without an LLM: indexed from links, pending extraction
        parts.append("---\n" + "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fm.items())
                     + "\n---\n")
    for _ in range(draw(st.integers(1, 3))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8))
        links = [draw(forms).format(draw(targets)) for _ in range(draw(st.integers(0, 3)))]
        shape = draw(st.sampled_from(["{}", "{}", "# {}", "## {} ^block-1", "```\n{}\n```", "%% {} %%", "$$ {} $$",
                                      "> [!note] {}", "- [ ] {} #tag/sub", "| {} | cell |"]))
        parts.append(shape.format(" ".join(words + links)) + "\n")
    return "\n".join(parts)


@st.composite
def entry(draw, names: list[str], kinds: list[str] | None = None) -> Entry:
    kind = draw(st.sampled_from(kinds or GOOD_KINDS + BAD_KINDS))
    if kind in ("note", "unreadable", "vanish"):
        return Entry(kind, draw(note_text(names)))
    if kind in ("replace", "replaceearly"):
        then = draw(entry(names, ["note", "nul", "bomb", "longline", "fewnuls"]))
        return Entry(kind, draw(note_text(names)), then=then)
    if kind in ("longline", "bomblong"):
        return Entry(kind, " ".join(draw(st.sampled_from(WORDS)) for _ in range(20)) * 1200)
    if kind == "yamlodd":
        return Entry(kind, YAML_ODD + draw(note_text(names)))
    if kind in ("fewnuls", "latin1", "badyaml", "yamllist"):
        return Entry(kind, draw(note_text(names)))
    if kind == "utf16bom":
        return Entry(kind, draw(note_text(names)))
    if kind == "utf16":
        return Entry(kind, "plain ascii text of a note\n" * draw(st.integers(1, 4)))
    return Entry(kind)


# Any printable code point but "/" (surrogates and NUL cannot be in a name); a leading "." hides a file.
RANDOM_STEM = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/"), min_size=1,
                      max_size=8).filter(lambda t: not t.startswith("."))


@st.composite
def file_name(draw) -> str:
    folder = draw(st.sampled_from(FOLDERS))
    stem = "".join(draw(st.lists(st.sampled_from(STEMS) | RANDOM_STEM, min_size=1, max_size=2)))
    suffix = draw(st.sampled_from([".md", ".md", ".MD", ".Md"]))  # any case is a note
    return f"{folder}/{stem}{suffix}" if folder else f"{stem}{suffix}"


@st.composite
def vault_spec(draw) -> dict[str, Entry]:
    paths = draw(st.lists(file_name(), min_size=2, max_size=7, unique=True))
    names = [Path(p).stem for p in paths]
    spec = {p: draw(entry(names)) for p in paths}
    for p, e in list(spec.items()):
        if e.kind == "attachment":  # attachments are not .md
            del spec[p]
            spec[p[:-3] + ".png"] = e
    if draw(st.booleans()):  # a name that is the NFD spelling of another (combining marks)
        spec[unicodedata.normalize("NFD", "café.md")] = Entry("note", "decomposed")
        spec[unicodedata.normalize("NFC", "café.md")] = Entry("note", "composed")
    if draw(st.booleans()):
        spec["locked"] = Entry("lockeddir", children={"inside.md": Entry("note", "hidden from the scan")})
    if draw(st.booleans()):
        spec["badname"] = Entry("badname", "not utf-8 name")
    if draw(st.booleans()):
        spec["loopdir"] = Entry("dirloop")  # a folder symlink back to the vault root
    if draw(st.booleans()):  # Obsidian's Excluded files, well or badly written
        spec[".obsidian/app.json"] = Entry("appjson", draw(st.sampled_from(APP_JSONS)))
    return spec


# --- writing a vault ---------------------------------------------------------------------------------------


def content(e: Entry) -> bytes:
    if e.kind in ("note", "unreadable", "vanish", "replace", "longline", "yamlodd", "vanishearly", "replaceearly"):
        return e.text.encode()
    if e.kind == "empty":
        return b""
    if e.kind == "nul":
        return b"\0" * 4096
    if e.kind == "utf16bom":
        return e.text.encode("utf-16")  # with BOM
    if e.kind == "utf16":
        return e.text.encode("utf-16-le")
    if e.kind == "bomb":
        return f"---\n{BOMB}\n---\nbody\n".encode()
    if e.kind == "bomblong":  # two problems in one file: still one line
        return f"---\n{BOMB}\n---\n{e.text}\n".encode()
    if e.kind == "fewnuls":
        return e.text.encode() + b"\0\0"
    if e.kind == "latin1":
        return e.text.encode() + "\ncaf\u00e9 in Latin-1\n".encode("latin-1")
    if e.kind == "badyaml":
        return b"---\ntitle: [unclosed\n---\n" + e.text.encode()
    if e.kind == "yamllist":
        return b"---\n- just\n- a list\n---\n" + e.text.encode()
    if e.kind == "appjson":
        return e.text.encode()
    if e.kind == "attachment":
        return b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    raise AssertionError(e.kind)


@dataclass
class World:
    root: Path  # the temporary tree: vault/, outside/, cwd/, fresh/
    vault: Path
    spec: dict[str, Entry]
    denied: set[str] = field(default_factory=set)  # absolute paths os.open refuses (as root)
    denied_dirs: set[str] = field(default_factory=set)
    chmodded: list[Path] = field(default_factory=list)
    clock: int = 0  # every write gets its own mtime, a day back: older than the manifest's racy window

    def age(self, path: Path | bytes) -> None:
        """Give a file just written its own old mtime, so the "nothing changed" manifest can be trusted."""
        self.clock += 1
        t = (int(time.time()) - 86_400 + self.clock) * 1_000_000_000
        os.utime(path, ns=(t, t), follow_symlinks=False)


def write_entry(w: World, rel: str, e: Entry) -> None:
    path = w.vault / rel
    if e.kind == "badname":
        os.makedirs(w.vault, exist_ok=True)
        with open(os.fsencode(w.vault) + b"/bad\xff\xfename.md", "wb") as fh:
            fh.write(e.text.encode())
        w.age(os.fsencode(w.vault) + b"/bad\xff\xfename.md")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    remove(path)
    if e.kind == "lockeddir":
        path.mkdir()
        for name, child in e.children.items():
            (path / name).write_bytes(content(child))
            w.age(path / name)
        deny(w, path, folder=True)
    elif e.kind == "mddir":  # a folder named like a note
        path.mkdir()
        (path / "inner.md").write_text("a note in a folder named X.md [[Note]]\n")
        w.age(path / "inner.md")
    elif e.kind == "big":
        with open(path, "wb") as fh:
            fh.truncate(BIG)  # sparse: instant, and over the reader's 5 MiB limit
    elif e.kind == "broken":
        os.symlink("no such file.md", path)
    elif e.kind == "loop":
        os.symlink(path.name + ".2", path)
        remove(Path(str(path) + ".2"))
        os.symlink(path.name, str(path) + ".2")  # a.md -> a.md.2 -> a.md (a .2 file is no note: one line)
        w.age(Path(str(path) + ".2"))
    elif e.kind == "outside":
        os.symlink(w.root / "outside" / "secret.md", path)
    elif e.kind == "dirloop":
        os.symlink(".", path)
    elif e.kind == "fifo":  # a named pipe: opening it to read would block for ever
        os.mkfifo(path)
    else:
        path.write_bytes(content(e))
        if e.kind == "unreadable":
            deny(w, path)
    w.age(path)


def remove(path: Path) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        os.chmod(path, 0o755)
        shutil.rmtree(path)
    else:  # files, links, pipes
        path.unlink()


def deny(w: World, path: Path, folder: bool = False) -> None:
    if AS_ROOT:
        (w.denied_dirs if folder else w.denied).add(str(path))
    else:
        os.chmod(path, 0)
        w.chmodded.append(path)


@contextlib.contextmanager
def denial_hooks(w: World, mp: pytest.MonkeyPatch) -> Iterator[None]:
    """As root, chmod 000 denies nothing: refuse the chosen paths in os.open / os.scandir instead."""
    real_open, real_scandir = os.open, os.scandir

    def fake_open(path, flags, *args, **kwargs):  # noqa: ANN001, ANN202
        if os.path.abspath(os.fspath(path)) in w.denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    def fake_scandir(path="."):  # noqa: ANN001, ANN202
        if isinstance(path, (str, os.PathLike)) and os.path.abspath(os.fspath(path)) in w.denied_dirs:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    mp.setattr(os, "open", fake_open)
    mp.setattr(os, "scandir", fake_scandir)
    yield


@contextlib.contextmanager
def mid_scan(w: World, mp: pytest.MonkeyPatch, touched: set[str], hooked_paths: set[str]) -> Iterator[None]:
    """Delete (`vanish`) or replace (`replace`) a note after the scan listed it, before it is read; the `early`
    kinds act right after the run's one scan (it answers "nothing changed?" and lists what is read)."""
    real = vault_model.read_note
    real_scan = index_run.scan_vault

    def swap(abs_path: str, then: Entry | None) -> None:
        touched.add(abs_path)
        if then is None:
            os.unlink(abs_path)
            return
        tmp = Path(abs_path + ".swap")
        tmp.write_bytes(content(then))
        os.replace(tmp, abs_path)

    def first_look(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        scan = real_scan(*args, **kwargs)
        for rel, e in early_swaps(w.spec).items():
            swap(os.path.abspath(w.vault / rel), e.then)
        return scan

    mp.setattr(index_run, "scan_vault", first_look)
    # By the name on disk: of two NFC twins only the one the scan listed is read, and only it may be touched.
    spared = twins(w.spec)
    pending = {os.path.abspath(w.vault / rel): (rel, e) for rel, e in w.spec.items()
               if e.kind == "replace" or e.kind == "vanish" and rel not in spared}

    def hooked(abs_path, rel, *args, **kwargs):  # noqa: ANN001, ANN202
        disk_rel, e = pending.pop(os.path.abspath(abs_path), (None, None))
        if e is not None:
            hooked_paths.add(disk_rel)
            swap(os.path.abspath(abs_path), e.then)
        return real(abs_path, rel, *args, **kwargs)

    mp.setattr(vault_model, "read_note", hooked)
    yield


def twins(spec: dict[str, Entry]) -> set[str]:
    """Files that share their NFC name with another. The hooks never delete one: the scan lists one of the two,
    and deleting that one after the scan would let the other appear on the next run, as a file created mid-run
    does; the "unchanged run changes nothing" check cannot allow that. They stay, as ordinary notes."""
    names = Counter(unicodedata.normalize("NFC", rel) for rel in spec)
    return {rel for rel in spec if names[unicodedata.normalize("NFC", rel)] > 1}


def early_swaps(spec: dict[str, Entry]) -> dict[str, Entry]:
    """The `early` files the hook right after the scan deletes or replaces."""
    spared = twins(spec)
    return {rel: e for rel, e in spec.items()
            if e.kind == "replaceearly" or e.kind == "vanishearly" and rel not in spared}


def settle(spec: dict[str, Entry], hooked: set[str]) -> dict[str, Entry]:
    """The vault after a run's mid-scan hooks: vanished files gone, replaced ones what they became. A file the
    run never read (an NFC name clash) was not touched: it stays, as an ordinary note."""
    out = {}
    early = early_swaps(spec)
    for rel, e in spec.items():
        if e.kind in ("vanish", "replace") and rel not in hooked or e.kind == "vanishearly" and rel not in early:
            out[rel] = Entry("note", e.text)
        elif e.kind not in ("vanish", "vanishearly"):
            out[rel] = e.then if e.kind in ("replace", "replaceearly") else e
    return out


def expected_issues(spec: dict[str, Entry]) -> dict[str, list[str]]:
    """Issue path -> the words of each line owed to it, as the scan meets the files (per folder, in name order).
    Two files whose names are equal after NFC share a path: the first one's own line, and the clash line.
    An `early` file is listed by the scan as it was, then read as the hook after the scan left it."""
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    spared = twins(spec)
    # A folder named like a note holds one: what the scan compares is that note's path.
    files = {(f"{r}/inner.md" if e.kind == "mddir" else r): (Entry("note") if e.kind == "mddir" else e)
             for r, e in spec.items()}
    for rel in sorted(files, key=lambda r: (str(Path(r).parent), Path(r).name)):
        e = files[rel]
        if e.kind == "badname":
            out.setdefault("bad\ufffd\ufffdname.md", []).append(EXPECT["badname"])
            continue
        if e.kind == "dirloop":
            continue
        if e.kind == "appjson":
            says = [v for k, v in APP_JSON_SAYS.items() if k in e.text]
            if says:
                out[rel] = says
            continue
        shown = unicodedata.normalize("NFC", rel)
        if e.kind in ("broken", "outside"):  # reported before the NFC comparison, and not part of it
            out.setdefault(shown, []).append(EXPECT[e.kind])
            continue
        if e.kind == "fifo":  # the same, and said of notes only
            if shown.lower().endswith(".md"):
                out.setdefault(shown, []).append(EXPECT[e.kind])
            continue
        if e.kind == "loop":
            out.setdefault(shown, []).append(EXPECT["loop"])
            out.setdefault(shown + ".2", []).append(EXPECT["loop"])
            continue
        if shown.lower().endswith(".md") and (refused := refusal(shown)):  # said of each spelling, before NFC
            out.setdefault(shown, []).append(refused)
            continue
        if shown in seen:
            out.setdefault(shown, []).append(EXPECT["nfc"])
            continue
        seen.add(shown)
        kind = e.then.kind if e.kind in ("replace", "replaceearly") else e.kind
        if kind in ("vanish", "vanishearly"):  # a twin is spared: read as the note it is
            kind = "note" if rel in spared else "vanish"
        if kind in EXPECT and (shown.lower().endswith(".md") or kind == "lockeddir"):  # attachments are not read
            out.setdefault(shown, []).append(EXPECT[kind])
    return out


def refusal(path: str) -> str | None:
    """The words of the line for a note whose path the index cannot store (a graph store's refusal), else None."""
    if "<SEP>" in path:
        return "list separator"
    return "graph store" if any(ord(c) < 32 and c not in "\t\n\r" for c in path) else None


# --- checking -----------------------------------------------------------------------------------------------


def outside_store(w: World, stores: list[Path]) -> dict[str, tuple]:
    """Every path of the temporary tree outside the stores: files by bytes + mtime, links by target."""
    out: dict[str, tuple] = {}
    skip = {str(s) for s in stores}
    for dirpath, dirnames, filenames in os.walk(os.fsencode(w.root), followlinks=False):
        here = os.fsdecode(dirpath)
        dirnames[:] = [d for d in dirnames if os.path.join(here, os.fsdecode(d)) not in skip]
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st_ = os.lstat(full)
            key = os.fsdecode(full)
            if stat.S_ISLNK(st_.st_mode):
                out[key] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st_.st_mode):
                out[key] = ("dir",)
            elif not stat.S_ISREG(st_.st_mode):  # a pipe: never opened
                out[key] = ("special", st_.st_mode, st_.st_mtime_ns)
            elif st_.st_size > 1024 * 1024 or not os.access(full, os.R_OK):
                out[key] = ("file", st_.st_size, st_.st_mtime_ns)
            else:
                with open(full, "rb") as fh:
                    out[key] = ("file", hashlib.sha256(fh.read()).hexdigest(), st_.st_mtime_ns)
    return out


def index(w: World, *extra: str) -> dict:
    result = runner.invoke(app, ["index", str(w.vault), "--json", *extra])
    output = result.output
    with contextlib.suppress(ValueError, AttributeError):
        output += result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, output
    assert "Traceback" not in output, output
    return json.loads(result.stdout)


def check_issues(report: dict, expected: dict[str, list[str]]) -> None:
    lines = report["issues"]
    by_path: dict[str, list[str]] = {}
    for line in lines:
        owner = next((p for p in sorted(expected, key=len, reverse=True) if line.startswith(p + ": ")), None)
        assert owner is not None, f"an issue line for a file that is not bad: {line!r} (expected {expected})"
        by_path.setdefault(owner, []).append(line)
    for path, words in expected.items():
        got = by_path.get(path, [])
        assert len(got) == len(words), f"{path!r}: expected one issue line for each of {words!r}, got {got}"
        for word in words:
            assert any(word in line for line in got), f"{path!r}: no line says {word!r}: {got}"


def run_index(w: World, mp: pytest.MonkeyPatch, stores: list[Path]) -> None:
    """One `index` run with its mid-scan hooks; checks the report and that nothing outside the store moved."""
    expected = expected_issues(w.spec)
    before = outside_store(w, stores)
    touched: set[str] = set()
    hooked: set[str] = set()
    with mp.context() as m, mid_scan(w, m, touched, hooked):
        report = index(w)
    after = outside_store(w, stores)
    w.spec = settle(w.spec, hooked)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)} - touched
    changed -= {p for p in changed if any(p.startswith(t + ".swap") for t in touched)}
    assert not changed, f"written outside the store: {sorted(changed)}"
    check_issues(report, expected)


def snapshot_diff(got: dict, want: dict) -> list[str]:
    """Which records differ between two snapshots (the plain `==` diff hides them in long dicts)."""
    out = []
    for part in sorted(got.keys() | want.keys()):
        a, b = got.get(part), want.get(part)
        if a == b:
            continue
        if not (isinstance(a, dict) and isinstance(b, dict)):
            out.append(f"{part}: {a!r} != {b!r}"[:600])
            continue
        for key in sorted(a.keys() | b.keys(), key=str):
            if a.get(key) != b.get(key):
                line = f"{part}[{key!r}]: store {a.get(key, '<absent>')!r} != fresh {b.get(key, '<absent>')!r}"
                out.append(line[:600])
    return out


@st.composite
def edits(draw, spec: dict[str, Entry]) -> list[tuple[str, str, Entry | None]]:
    """A few edits between the runs: rewrite, delete, add, turn a good note bad or a bad file good."""
    names = [Path(p).stem for p in spec]
    fixed = ("lockeddir", "badname", "dirloop", "appjson")
    plain = sorted(p for p, e in spec.items() if e.kind not in fixed and p != "anchor.md")
    ops: list[tuple[str, str, Entry | None]] = []
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["rewrite", "delete", "add", "rename"] if plain else ["add"]))
        if op == "rename":
            old = draw(st.sampled_from(plain))
            if spec[old].kind in ("note", "empty"):
                ops.append(("delete", old, None))
                ops.append(("write", draw(file_name()), spec[old]))
        elif op == "add":
            ops.append(("write", draw(file_name()), draw(entry(names))))
        elif op == "delete":
            ops.append(("delete", draw(st.sampled_from(plain)), None))
        else:  # a note made unreadable keeps its last indexed version, which no fresh index has: that is
            # test_index.py's test_a_folder_or_note_that_cannot_be_read_keeps_what_the_index_holds_of_it
            kinds = [k for k in GOOD_KINDS + BAD_KINDS if k != "unreadable"]
            ops.append(("write", draw(st.sampled_from(plain)), draw(entry(names, kinds))))
    return ops


def apply_edits(w: World, ops: list[tuple[str, str, Entry | None]]) -> None:
    for op, rel, e in ops:
        old = w.spec.pop(rel, None)
        if old is not None and old.kind == "loop":
            remove(w.vault / (rel + ".2"))
        remove(w.vault / rel)
        w.denied.discard(str(w.vault / rel))
        if op == "write":
            if e.kind == "attachment":
                rel = rel[:-3] + ".png"
                remove(w.vault / rel)
                w.spec.pop(rel, None)
            write_entry(w, rel, e)
            w.spec[rel] = e


@PROFILE
@given(spec=vault_spec(), data=st.data())
def test_hostile_vaults_index_edit_index(fast_embedding, spec: dict[str, Entry], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory(prefix="wikirag-fuzz-") as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp)
        (root / "outside").mkdir()
        (root / "outside" / "secret.md").write_text(f"{SECRET} [[Note]]\n")
        (root / "cwd").mkdir()
        mp.chdir(root / "cwd")  # a stray relative write would land here, and be seen
        w = World(root, root / "vault", {})
        w.vault.mkdir()
        for rel, e in spec.items():
            write_entry(w, rel, e)
        write_entry(w, "anchor.md", Entry("note", "a note that stays, so no run meets an empty vault"))
        w.spec = dict(spec)
        store, fresh = w.vault / ".wikirag", root / "fresh"
        try:
            with denial_hooks(w, mp):
                run_index(w, mp, [store, fresh])
                apply_edits(w, data.draw(edits(w.spec), label="edits"))
                run_index(w, mp, [store, fresh])
                kept = snapshot(load_config(w.vault))
                run_index(w, mp, [store, fresh])  # nothing changed: often answered from the manifest
                assert snapshot(load_config(w.vault)) == kept
                outside = outside_store(w, [store, fresh])
                for command in ("index", "stats"):  # the human renderings print every hostile name
                    human = runner.invoke(app, [command, str(w.vault)])
                    assert human.exit_code == 0 and human.exception is None, (command, repr(human.exception))
                    assert "Traceback" not in human.output
                assert snapshot(load_config(w.vault)) == kept
                assert outside_store(w, [store, fresh]) == outside
                before = outside
                fresh_report = index(w, "--store", str(fresh))
                assert outside_store(w, [store, fresh]) == before
                check_issues(fresh_report, expected_issues(w.spec))
                got, want = snapshot(load_config(w.vault)), snapshot(load_config(w.vault, store=fresh))
                assert got == want, f"store != fresh index: {snapshot_diff(got, want)}"
                # Links with `..` or absolute targets never reach a file outside the vault.
                assert not any(SECRET in c.get("content", "") for c in got["chunks"].values())
                noted = {p for n in got["nodes"].values() for p in n.get("file_path", [])}
                assert noted <= set(got["ledger_notes"]), noted - set(got["ledger_notes"])
        finally:
            for path in w.chmodded:
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o755)
