"""One warm engine for many questions: the MCP server, benchmarks and `wikirag search` share it.

It holds an open LightRAG (opened on first need: `lexical` searches and note lookups never start it), the
names table and the lexical index, and reloads the two files when an `index`/`watch` run has replaced them.
Everything here reads; the only writer is `watch_vault`, which `wikirag mcp --watch` runs beside it.
"""

from __future__ import annotations

import calendar
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikirag.errors import QueryFailed, StoreNotFound
from wikirag.index.lexical import LEXICAL_FILENAME, NAMES_FILENAME, LexicalIndex, load_index
from wikirag.index.store_model import adopt_store_embedding
from wikirag.query.notes import NoteTable, obsidian_uri, read_note_table, unfinished_index
from wikirag.query.search import SearchResult, search_notes
from wikirag.settings import WikiragConfig
from wikirag.vault.links import is_note
from wikirag.vault.on_disk import nfc, walk_folders
from wikirag.vault.read import read_vault_note


@dataclass
class NoteText:
    path: str
    title: str
    obsidian_uri: str
    aliases: list[str]
    tags: list[str]
    status: str
    properties: dict[str, Any]
    content: str  # from `offset`, at most `max_chars` characters
    total_chars: int = 0  # the whole note
    next_offset: int | None = None  # where the rest starts; None when `content` reaches the end


@dataclass
class Link:
    note: str | None  # the note on the other end, when that end is a note
    name: str  # the entity on the other end
    description: str
    origin: str  # "link": from wikilinks/frontmatter; "llm": from LightRAG's extraction


@dataclass
class Neighbours:
    path: str
    title: str
    links: list[Link] = field(default_factory=list)
    backlinks: list[Link] = field(default_factory=list)
    graph: list[dict[str, Any]] = field(default_factory=list)  # depth >= 2: {name, note, depth, via}
    # each list holds at most `limit` items (a hub note can have thousands); these say how many there were
    links_total: int = 0
    backlinks_total: int = 0
    graph_total: int = 0


@dataclass
class StoreStatus:
    vault: str
    store: str
    workspace: str
    notes: int
    indexed: int
    pending_extraction: int
    failed: int
    chunks: int
    lexical_index: bool
    last_run: dict[str, Any]
    stale_notes: int  # notes changed in the vault since the last run finished
    watching: bool
    unfinished: str | None = None  # query.notes.unfinished_index: an interrupted run's writes are owed


class WarmEngine:
    """Use as `async with WarmEngine(config) as engine:`; every method is safe to call many times."""

    def __init__(self, config: WikiragConfig, *, graph: bool = True, **engine_kwargs: Any) -> None:
        """`graph=False` serves `naive`/`lexical` only and loads no graph storages (a cold CLI search)."""
        self.config = config
        self.graph = graph
        self.engine_kwargs = engine_kwargs
        self.watching = False
        self._stack = contextlib.AsyncExitStack()
        self._rag: Any = None
        self._notes: NoteTable | None = None
        self._lexical: LexicalIndex | None = None
        self._stamp: tuple[float, float] | None = None

    async def __aenter__(self) -> WarmEngine:
        if adopt_store_embedding(self.config) is None:  # questions are embedded with the store's own model
            raise StoreNotFound.at(self.config.workspace_dir, self.config.vault)
        self._reload()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()
        self._rag = None

    # --- state ---
    def _files_stamp(self) -> tuple[float, float]:
        def mtime(name: str) -> float:
            try:
                return (self.config.workspace_dir / name).stat().st_mtime
            except OSError:
                return 0.0

        return mtime(NAMES_FILENAME), mtime(LEXICAL_FILENAME)

    def _reload(self) -> None:
        stamp = self._files_stamp()
        if stamp != self._stamp:
            self._notes = read_note_table(self.config)
            self._lexical = load_index(self.config.workspace_dir)
            self._stamp = stamp

    @property
    def notes(self) -> NoteTable:
        self._reload()
        assert self._notes is not None
        return self._notes

    async def rag(self) -> Any:
        if self._rag is None:
            from wikirag.lightrag.engine import open_engine

            kwargs = dict(self.engine_kwargs)
            if not self.config.llm.model:  # no LLM: count tokens without tiktoken, load what retrieval reads
                from wikirag.lightrag.engine import CONTEXT_STORAGES
                from wikirag.lightrag.readtokens import retrieval_tokenizer

                kwargs.setdefault("tokenizer", retrieval_tokenizer())
                kwargs.setdefault("reading", CONTEXT_STORAGES["graph" if self.graph else "naive"])
            self._rag = await self._stack.enter_async_context(open_engine(self.config, **kwargs))
        return self._rag

    # --- reading ---
    async def search(self, query: str, limit: int = 10, mode: str = "naive") -> SearchResult:
        notes, mode = self.notes, mode.strip().lower()
        if not self.graph and mode not in ("naive", "lexical"):
            raise QueryFailed(f"this engine was opened without the graph; mode {mode!r} needs it")
        rag = None if mode == "lexical" else await self.rag()
        return await search_notes(self.config, query, notes=notes, lexical=self._lexical, limit=limit, mode=mode,
                                  rag=rag)

    async def query(self, question: str, mode: str | None = None, llm_func: Any = None, **kwargs: Any) -> Any:
        from wikirag.query.retrieve import DEFAULT_MODE, query_store

        notes = self.notes
        return await query_store(self.config, question, mode=mode or DEFAULT_MODE, rag=await self.rag(), notes=notes,
                                 lexical=self._lexical, llm_func=llm_func, **kwargs)

    def resolve(self, path_or_title: str) -> str:
        path = self.notes.resolve(path_or_title)
        if path is None:
            raise QueryFailed(f"no note named {path_or_title!r} in {self.config.vault.name}")
        return path

    def get_note(self, path_or_title: str, offset: int = 0, max_chars: int | None = None) -> NoteText:
        """The note's text from `offset`, at most `max_chars` characters (an agent reads a long note in pages),
        with its properties (from the whole note's frontmatter)."""
        from wikirag.markdown.properties import load_properties, split_frontmatter

        path = self.resolve(path_or_title)
        read = read_vault_note(self.config.vault, path)
        if read.text is None:
            raise QueryFailed(f"{path}: {read.issues[0].message.removesuffix('; skipped')}")
        text = read.text
        block, _body = split_frontmatter(text)
        properties = load_properties(block).data if block else {}
        note = self.notes.notes[path]
        start = min(max(0, offset), len(text))
        end = len(text) if max_chars is None else min(len(text), start + max(1, max_chars))
        return NoteText(path=path, title=self.notes.title(path), obsidian_uri=obsidian_uri(self.config.vault, path),
                        aliases=list(note.get("aliases", [])), tags=list(note.get("tags", [])),
                        status=note.get("status", ""), properties=properties, content=text[start:end],
                        total_chars=len(text), next_offset=end if end < len(text) else None)

    def neighbors(self, path_or_title: str, depth: int = 1, limit: int | None = None) -> Neighbours:
        """Outgoing relations, backlinks, and (depth >= 2) entities further out, from the links table; each list
        cut at `limit` items, with the totals."""
        path = self.resolve(path_or_title)
        notes = self.notes
        note_of = {notes.entity(p): p for p in notes.notes}
        table = notes.links()
        me = notes.entity(path)
        out = Neighbours(path=path, title=notes.title(path))
        edges: dict[str, list[tuple[str, str, str, str]]] = {}  # entity -> [(other, description, origin, file)]
        for file, relations in table.items():
            for src, tgt, description, origin in relations:
                edges.setdefault(src, []).append((tgt, description, origin, file))
                edges.setdefault(tgt, []).append((src, description, origin, file))
        for src, tgt, description, origin in table.get(path, []):
            other = tgt if src == me else src
            out.links.append(Link(note_of.get(other), other, description, origin))
        for file, relations in table.items():
            if file == path:
                continue
            for src, tgt, description, origin in relations:
                if me in (src, tgt):
                    other = src if tgt == me else tgt
                    out.backlinks.append(Link(note_of.get(other, file), other, description, origin))
        seen = {me}
        frontier = [me]
        for level in range(1, max(1, depth) + 1):
            following = []
            for name in frontier:
                for other, _description, _origin, _file in edges.get(name, []):
                    if other not in seen:
                        seen.add(other)
                        following.append(other)
                        if level >= 2:
                            out.graph.append({"name": other, "note": note_of.get(other), "depth": level,
                                              "via": name})
            frontier = following
        out.links_total, out.backlinks_total, out.graph_total = len(out.links), len(out.backlinks), len(out.graph)
        if limit is not None:
            out.links, out.backlinks, out.graph = out.links[:limit], out.backlinks[:limit], out.graph[:limit]
        return out

    def status(self) -> StoreStatus:
        notes = self.notes
        statuses = [n.get("status", "") for n in notes.notes.values()]
        last = notes.last_run
        return StoreStatus(
            vault=str(self.config.vault), store=str(self.config.store), workspace=self.config.workspace,
            notes=len(statuses), indexed=statuses.count("indexed"),
            pending_extraction=statuses.count("pending_extraction"), failed=statuses.count("failed"),
            chunks=sum(int(n.get("chunks", 0)) for n in notes.notes.values()),
            lexical_index=self._lexical is not None, last_run=last,
            stale_notes=self._stale(last, notes), watching=self.watching,
            unfinished=unfinished_index(self.config),
        )

    def _stale(self, last: dict[str, Any], notes: NoteTable) -> int:
        """Notes saved, added or deleted since the last run finished (stat data only, no reads)."""
        from wikirag.vault.ignore import IgnoreRules

        finished = last.get("finished_at")
        if not finished:
            return 0
        since = calendar.timegm(time.strptime(finished, "%Y-%m-%dT%H:%M:%SZ")) + 1
        rules, _issues = IgnoreRules.for_vault(self.config.vault, self.config.exclude,
                                              templates=self.config.index.templates)
        root = self.config.vault
        seen, count = set(), 0
        # A stack, not Path.rglob: in Python 3.11 it takes a call per folder, past the limit ~1,000 folders deep
        for folder, dirnames, filenames in walk_folders(root):
            dirnames[:] = [name for name in dirnames if not name.startswith(".")]
            for name in filenames:
                file = Path(folder, name)
                rel = nfc(file.relative_to(root).as_posix())  # as the index records it (NFD on macOS)
                if not is_note(name) or name.startswith(".") or rules.ignored(rel):
                    continue
                seen.add(rel)
                try:
                    if file.stat().st_mtime > since:
                        count += 1
                except OSError:
                    continue
        return count + sum(1 for path in notes.notes if path not in seen)
