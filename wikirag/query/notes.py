"""What a query needs to know about the notes, read through one narrow seam: `read_note_table(config)`.

Queries never load the whole ledger: the index run writes a names row per note beside it (index.search_rows),
holding its title, entity, aliases, tags, status and chunk count. If the rows are missing (a store built
before they existed) the ledger is read once as a fallback. Names found in a question are matched by an
Aho-Corasick automaton (pyahocorasick): one pass over the question, whatever the number of names, instead
of one regular expression per name.
"""

from __future__ import annotations

import re
import unicodedata
import urllib.parse
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import orjson

from wikirag.errors import QueryFailed
from wikirag.index.lexical import IS_CJK, NAMES_FILENAME
from wikirag.index.search_rows import read_rows
from wikirag.settings import WikiragConfig
from wikirag.vault.links import is_note

_WORDCHAR = re.compile(r"\w")
_SURROGATE = re.compile("[\ud800-\udfff]")


def fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def file_stem(path: str) -> str:
    """`PurePath(path).stem` of a vault path, without building a path object (13,000 of them cost a cold
    query 0.2 s)."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def as_question(text: str) -> str:
    """A question as the library takes it: lone surrogates replaced by U+FFFD (a shell hands Python bytes that
    are not UTF-8 as lone surrogates, and JSON may escape them, "\\udc80"; no result holding one can be written
    out as UTF-8), and in NFC as the vault's names are (a question typed or pasted in NFD, as macOS file names
    are, would split "école" at its combining accent)."""
    return unicodedata.normalize("NFC", _SURROGATE.sub("\ufffd", text))


MAX_QUESTION_CHARS = 8_000  # about 1,400 words: a question with a paragraph of context fits


def unfinished_index(config: WikiragConfig) -> str | None:
    """One line when the last index run stopped before writing everything it promised (a kill, a crash, a
    Ctrl-C mid-batch): answers may miss those notes until the next `wikirag index` completes the run."""
    from wikirag.storage.ledger_store import unfinished_writes

    owed = unfinished_writes(config.storage, config.workspace_dir, config.workspace)
    if owed is None:
        return None
    what = f"{owed} note{'s' if owed != 1 else ''} unwritten" if owed else "some links unwritten"
    return (f"the last index run was interrupted and left {what}: results may miss them until "
            f"`wikirag index {config.vault}` completes it")


def read_question(text: str, what: str = "question") -> str:
    """`as_question`, refusing an empty text and one over MAX_QUESTION_CHARS: LightRAG embeds a question whole
    and its keywords (37 s for a pasted 700 KB), and BM25 and the passages read every word of it."""
    question = as_question(text)
    if not question.strip():
        raise QueryFailed(f"the {what} is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise QueryFailed(f"the {what} is {len(question):,} characters long; at most {MAX_QUESTION_CHARS:,} are "
                          "read (ask about a note in a few words instead of pasting it)")
    return question


@dataclass
class NoteTable:
    """Per note path: title, entity, aliases, entities, tags, status, doc_id, chunks, links."""

    notes: dict[str, dict[str, Any]]
    workspace_dir: Path | None = None
    last_run: dict[str, Any] = field(default_factory=dict)
    _memo: dict[Any, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    def memo(self, key: Any, anchor: Any, make: Any) -> Any:
        """`make()`, computed once per `key` while `anchor` (the other object it is derived from, such as a
        loaded lexical index's figures) is the same object: a warm engine asks per question."""
        hit = self._memo.get(key)
        if hit is None or hit[0] is not anchor:
            hit = self._memo[key] = (anchor, make())
        return hit[1]

    def entity(self, path: str) -> str:
        """The name of the entity the note stands for (its file name when the row names none)."""
        return self.notes[path].get("entity") or file_stem(path)

    @cached_property
    def by_name(self) -> dict[str, list[str]]:
        """Folded title / entity / alias / file name -> the notes so named (Obsidian resolves these). A note
        whose file name it is comes first, then one whose title or entity it is, then one whose alias it is:
        Obsidian resolves a link by file name, so `Note A.md` is what "Note A" means even when another note
        lists it as an alias."""
        ranked: dict[str, dict[str, int]] = {}
        for path, note in self.notes.items():
            stem = file_stem(path)
            named = [(stem, 0), (note.get("title") or stem, 1), (self.entity(path), 1),
                     *((alias, 2) for alias in note.get("aliases", []))]
            for name, rank in named:
                if name:
                    paths = ranked.setdefault(fold(name), {})
                    paths[path] = min(rank, paths.get(path, rank))
        return {name: sorted(paths, key=lambda p: (paths[p], p)) for name, paths in ranked.items()}

    @cached_property
    def _automaton(self) -> Any:
        import ahocorasick

        automaton = ahocorasick.Automaton()
        surfaces: dict[str, str] = {}
        for surface in self.by_name:
            surfaces[surface] = surface
        for note in self.notes.values():
            for name in note.get("entities", []):
                surfaces.setdefault(fold(name), name)
        for surface, name in surfaces.items():
            if len(surface) >= 3 or surface.isdigit() or IS_CJK.search(surface):
                automaton.add_word(surface, (surface, name))
        if len(automaton):
            automaton.make_automaton()
        return automaton

    def names_in(self, text: str) -> list[str]:
        """Folded names found in the text at word boundaries (CJK ends need none), longest first, no
        name inside a longer one found at the same place."""
        automaton = self._automaton
        if not len(automaton):
            return []
        folded = fold(text)
        spans: list[tuple[int, int, str]] = []
        for end, (surface, _name) in automaton.iter(folded):
            start = end - len(surface) + 1
            if not IS_CJK.match(surface[0]) and start > 0 and _WORDCHAR.match(folded[start - 1]):
                continue
            if not IS_CJK.match(surface[-1]) and end + 1 < len(folded) and _WORDCHAR.match(folded[end + 1]):
                continue
            spans.append((start, end + 1, surface))
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        # A span is dropped when a kept one starts at or before it and ends at or after it: the furthest end
        # of the kept spans starting at or before each position, as a Fenwick tree of prefix maxima (a list of
        # kept spans scanned per span took 12 s for a question naming one note 8,000 times).
        furthest = [-1] * (len(folded) + 2)
        kept: dict[str, None] = {}
        for start, end, surface in spans:
            reach, i = -1, start + 1
            while i > 0:
                reach, i = max(reach, furthest[i]), i - (i & -i)
            if reach >= end:
                continue
            kept[surface] = None
            i = start + 1
            while i < len(furthest):
                furthest[i], i = max(furthest[i], end), i + (i & -i)
        return list(kept)

    def display_name(self, surface: str) -> str:
        """The entity name a folded surface stands for (LightRAG's names keep their case)."""
        paths = self.by_name.get(surface)
        if paths:
            return self.entity(paths[0])
        found = self._automaton.get(surface, None)
        return found[1] if found else surface

    def notes_named_in(self, text: str) -> list[str]:
        """Notes whose title, alias or file name the text mentions, longest name first."""
        out: list[str] = []
        for surface in self.names_in(text):
            for path in self.by_name.get(surface, []):
                if path not in out:
                    out.append(path)
        return out

    @cached_property
    def entity_notes(self) -> dict[str, str]:
        """Entity name -> the note it stands for (graph-mode sources map LightRAG's entities back to notes)."""
        out: dict[str, str] = {}
        for path in sorted(self.notes):
            out.setdefault(self.entity(path), path)
        return out

    def tags(self) -> set[str]:
        return {t for note in self.notes.values() for t in note.get("tags", [])}

    def resolve(self, path_or_title: str) -> str | None:
        """A note by vault path (with or without .md), title, alias or file name, as Obsidian resolves
        [[links]]: an exact path first, then the shortest path among notes so named. The name is tried whole
        before `|` and `#` are read as link syntax: files may be named "C#.md" or " draft .md". A link or embed
        as written in a note (`[[X#Heading|shown]]`, `![[X]]`, `[[X\\|shown]]` in a table) names X."""
        text = path_or_title.strip()
        link = text.removeprefix("!") if text.startswith("![[") else text
        link = link.removeprefix("[[").removesuffix("]]")
        target = link.split("|")[0].removesuffix("\\").split("#")[0].strip()
        for raw in dict.fromkeys((path_or_title, text, link, target)):
            if found := self._lookup(raw):
                return found
        return None

    @cached_property
    def _by_path(self) -> dict[str, str]:
        return {fold(p[:-3] if is_note(p) else p): p for p in self.notes}

    def _lookup(self, raw: str) -> str | None:
        for candidate in (raw, f"{raw}.md"):
            if candidate in self.notes:
                return candidate
        folded = fold(raw[:-3] if is_note(raw) else raw)
        if folded in self._by_path:
            return self._by_path[folded]
        paths = self.by_name.get(folded) or self.by_name.get(fold(Path(raw).stem))
        if paths:
            return sorted(paths, key=lambda p: (p.count("/"), len(p), p))[0]
        return None

    def title(self, path: str) -> str:
        note = self.notes.get(path) or {}
        return note.get("title") or file_stem(path)

    def links(self) -> dict[str, list[list[str]]]:
        """Per note its relations [source, target, description, origin] (read on demand: the larger rows)."""
        if self.workspace_dir is None:
            return {}
        return read_rows(self.workspace_dir, "links") or {}


def read_note_table(config: WikiragConfig) -> NoteTable:
    """The names table of a store (the seam between queries and the ledger's storage): the rows the last
    index run wrote (index.search_rows), else, for a store without them, derived from the ledger once."""
    head = config.workspace_dir / NAMES_FILENAME
    notes = read_rows(config.workspace_dir, "names") if head.is_file() else None
    if notes is not None:
        try:
            last_run = orjson.loads(head.read_bytes()).get("last_run", {})
        except (OSError, orjson.JSONDecodeError, AttributeError):
            last_run = {}
        return NoteTable(notes, config.workspace_dir, last_run)
    from wikirag.index.ledger import Ledger
    from wikirag.index.search_rows import names_table
    from wikirag.storage.ledger_store import ledger_store

    ledger = Ledger.load(ledger_store(config.storage, config.workspace_dir, config.workspace))
    return NoteTable(names_table(ledger), None)


@lru_cache(maxsize=64)
def _vault_name(vault: Path) -> str:
    return vault.resolve().name  # resolving is a few system calls: once per vault, not once per source


def obsidian_uri(vault: Path, path: str, heading: str = "") -> str:
    """obsidian://open?vault=…&file=… (a heading is appended to the file as Obsidian's #anchor)."""
    file = path[:-3] if is_note(path) else path
    if heading and " > " in heading:  # a section below the note's title
        file += "#" + heading.split(" > ")[-1]
    return "obsidian://open?" + urllib.parse.urlencode(
        {"vault": _vault_name(vault), "file": file}, quote_via=urllib.parse.quote
    )
