"""`wikirag mcp`: the vault's index as a Model Context Protocol server over stdio (official `mcp` SDK).

One warm engine per process (query.engine.WarmEngine) serves every call. Tools are read-only and return
structured JSON (each output schema is made from the library's own result dataclass: `output_model`) citing
notes by path, title, heading and obsidian:// URI; graph facts say whether they came from a link or from LLM
extraction. A tool's problem (unknown note, bad mode, empty query) is raised as ToolError: the client gets an
error result it can read, the server goes on. stdout is the protocol channel: nothing else may be printed there.
`--watch` runs `watch_vault` (the same path as `wikirag watch`, holding the one writer lock) beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import threading
import typing
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, create_model

from wikirag.errors import WikiragError
from wikirag.query import retrieve
from wikirag.query.engine import Link, Neighbours, NoteText, StoreStatus, WarmEngine
from wikirag.query.search import SearchHit, SearchResult
from wikirag.settings import WikiragConfig

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
log = logging.getLogger("wikirag.mcp")


def output_model(cls: type, name: str, *, types: dict[str, Any] | None = None, **descriptions: str) -> type[BaseModel]:
    """A tool's output schema from the library's own dataclass: the same fields and types (a nested dataclass
    may be swapped for its own model in `types`), with a description where one is given. The schema cannot
    drift from what the library returns."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kind = (types or {}).get(f.name, hints[f.name])
        fields[f.name] = (kind, Field(description=descriptions[f.name]) if f.name in descriptions else ...)
    return create_model(name, **fields)


Hit = output_model(SearchHit, "Hit", matched_by="rankings that found it: names, lexical (BM25), lightrag, graph, "
                   "anchor (what other notes say where they link to it)",
                   heading="the section of the best passage, as 'Title > Section'")
SearchOut = output_model(SearchResult, "SearchOut", types={"hits": list[Hit]})
Source = output_model(retrieve.Source, "Source",
                      found_by="lightrag (its context), lexical (BM25), names (named in the question), graph, "
                      "anchor (what other notes say where they link to it)")
NoteOut = output_model(NoteText, "NoteOut", next_offset="call again with offset = next_offset for the rest; "
                       "null: the content reaches the end of the note")
LinkOut = output_model(Link, "LinkOut", origin="link: from wikilinks/frontmatter; llm: extracted")
NeighboursOut = output_model(Neighbours, "NeighboursOut", types={"links": list[LinkOut], "backlinks": list[LinkOut]})
StatusOut = output_model(
    StoreStatus, "StatusOut", stale_notes="notes changed in the vault since the last run",
    notes="notes in the index: indexed, pending_extraction, failed (and any a running index is extracting)",
    unfinished="set when the last index run stopped before writing everything (the next `wikirag index` ends it)",
    indexed="notes done: their links written and, where routed to the LLM, extracted",
    pending_extraction="notes written from their links that wait for LLM extraction (no LLM, or not yet run)",
    failed="notes whose LLM extraction failed (their links are written; the next run tries again)")


class Fact(BaseModel):
    kind: Literal["entity", "relation"]
    name: str = Field(description="entity name, or 'source -> target' for a relation")
    description: str
    notes: list[str] = Field(description="vault paths of the notes the fact is recorded from")
    origin: Literal["link", "llm", "unknown"] = Field(description="link: from wikilinks/frontmatter; llm: extracted")


class Passage(BaseModel):
    path: str
    content: str


class QueryOut(BaseModel):
    question: str
    mode: str
    answer: str | None
    no_answer_reason: str | None
    answer_failed: bool = Field(False, description="the LLM failed: the context came without its answer, or the "
                                "answer stopped part way; no_answer_reason says why")
    keywords: dict[str, list[str]]
    facts: list[Fact]
    passages: list[Passage]
    sources: list[Source]


def _split(value: Any) -> list[str]:
    return [v for v in str(value or "").split("<SEP>") if v]


def _origins(engine: WarmEngine) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    """Where graph facts came from, per relation (sorted ends) and per entity: "link" wins over "llm"."""
    pairs: dict[tuple[str, str], str] = {}
    entities: dict[str, str] = {n.get("entity", ""): "link" for n in engine.notes.notes.values()}
    for relations in engine.notes.links().values():
        for src, tgt, _description, origin in relations:
            key = (min(src, tgt), max(src, tgt))
            if pairs.get(key) != "link":
                pairs[key] = origin
            for end in (src, tgt):
                if entities.get(end) != "link":
                    entities[end] = origin
    return pairs, entities


def _ledger_ready(config: WikiragConfig) -> bool:
    """Whether the store has a ledger to serve: not while a rebuild cut short is marked (the watch finishes it,
    and the old ledger, on another model maybe, is about to go). A store object of its own each time: one kept
    open still reads the database file the wipe deleted."""
    from wikirag.index.rebuild import rebuild_unfinished
    from wikirag.storage.ledger_store import ledger_store

    if rebuild_unfinished(config):  # in its wipe, or writing the notes again: readers are refused until done
        return False
    store = ledger_store(config.storage, config.workspace_dir, config.workspace)
    try:
        return store.exists()
    finally:
        getattr(store, "close", lambda: None)()


def build_server(config: WikiragConfig, *, watch: bool = False, llm_func: Any = None,
                 **engine_kwargs: Any) -> MCPServer:
    """The MCP server for one store; `engine_kwargs` go to LightRAG's engine (tests pass a hash embedder)."""

    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[WarmEngine]:
        stop = threading.Event()
        watcher: asyncio.Task | None = None
        if watch:
            from wikirag.index.watch import watch_vault

            watcher = asyncio.create_task(watch_vault(config, stop=stop, on_batch=_log_batch, on_notice=_log_notice,
                                                      **engine_kwargs))
            while not _ledger_ready(config) and not watcher.done():  # a first index, or a rebuild cut short
                await asyncio.sleep(0.2)  # being finished, is still being built
            if watcher.done() and watcher.exception() is not None:
                raise watcher.exception()
        # the engine's LightRAG asks this LLM (query_store cannot hand one to an open engine)
        async with WarmEngine(config, **({"llm_func": llm_func} if llm_func else {}), **engine_kwargs) as engine:
            engine.watching = watch
            try:
                yield engine
            finally:
                stop.set()
                if watcher is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(watcher, timeout=10)

    server = MCPServer(
        "wikirag",
        instructions=(f"Search and read the Obsidian vault '{config.vault.name}' indexed by wikirag: `search` for "
                      "ranked notes with passages, `query` for LightRAG's graph retrieval, `get_note` to read a "
                      "note, `neighbors` for its links and backlinks, `status` for the index's state."),
        lifespan=lifespan,
        log_level="WARNING",
    )

    def engine_of(ctx: Context) -> WarmEngine:
        return ctx.request_context.lifespan_context

    @contextlib.contextmanager
    def tool_errors() -> Iterator[None]:
        """wikirag's one-line errors reach the model as tool errors, not as a crash of the server."""
        try:
            yield
        except WikiragError as exc:  # at most 1,000 characters: a message naming a 1 MB argument echoed it whole
            message = str(exc)
            raise ToolError(message if len(message) <= 1000 else message[:1000] + " …") from None

    @server.tool(annotations=READ_ONLY)
    async def search(
        query: Annotated[str, Field(min_length=1, description="Keywords or a question")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=50, description="How many notes")] = 10,
        mode: Annotated[Literal["naive", "mix", "hybrid", "local", "global", "lexical"],
                        Field(description="LightRAG retrieval fused with BM25 and names; lexical: BM25 + names only")]
        = "naive",
    ) -> SearchOut:
        """Find notes: ranked notes with their best passages (BM25 + names + LightRAG, fused). No LLM call."""
        with tool_errors():
            result = await engine_of(ctx).search(query, limit=limit, mode=mode)
        return SearchOut.model_validate(asdict(result))

    @server.tool(annotations=READ_ONLY)
    async def query(
        question: Annotated[str, Field(min_length=1, description="The question")],
        ctx: Context,
        mode: Annotated[Literal["naive", "local", "global", "hybrid", "mix"],
                        Field(description="LightRAG's retrieval mode")] = retrieve.DEFAULT_MODE,
        fusion: Annotated[bool, Field(description="rank sources with BM25 and names too; false: LightRAG's order")]
        = True,
    ) -> QueryOut:
        """LightRAG retrieval: entities, relations and passages with their notes; an answer when an LLM is set."""
        engine = engine_of(ctx)
        with tool_errors():
            result = await engine.query(question, mode=mode, llm_func=llm_func, fusion=fusion)
        pairs, entities = _origins(engine) if result.relations or result.entities else ({}, {})
        facts = [Fact(kind="entity", name=str(e.get("entity_name", "")), description=str(e.get("description", "")),
                      notes=_split(e.get("file_path")), origin=entities.get(str(e.get("entity_name")), "unknown"))
                 for e in result.entities]
        for r in result.relations:
            src, tgt = str(r.get("src_id")), str(r.get("tgt_id"))
            facts.append(Fact(kind="relation", name=f"{src} -> {tgt}", description=str(r.get("description", "")),
                              notes=_split(r.get("file_path")),
                              origin=pairs.get((min(src, tgt), max(src, tgt)), "unknown")))
        return QueryOut(question=result.question, mode=result.mode, answer=result.answer,
                        no_answer_reason=result.no_answer_reason, answer_failed=result.answer_failed,
                        keywords=result.keywords, facts=facts,
                        passages=[Passage(path=str(c.get("file_path", "")), content=str(c.get("content", "")))
                                  for c in result.chunks],
                        sources=[Source(**asdict(s)) for s in result.sources])

    @server.tool(annotations=READ_ONLY)
    async def get_note(
        path_or_title: Annotated[str, Field(min_length=1, description="Vault path, title, alias or [[link]]")],
        ctx: Context,
        offset: Annotated[int, Field(ge=0, description="First character to return (the next_offset of a call)")] = 0,
        max_chars: Annotated[int, Field(ge=1000, le=200_000, description="Most characters to return")] = 40_000,
    ) -> NoteOut:
        """Read one note: its Markdown text and properties (names resolve as Obsidian resolves links). A long note
        comes in pages: next_offset says where the rest starts."""
        with tool_errors():
            return NoteOut.model_validate(asdict(engine_of(ctx).get_note(path_or_title, offset, max_chars)))

    @server.tool(annotations=READ_ONLY)
    async def neighbors(
        note: Annotated[str, Field(min_length=1, description="Vault path, title, alias or [[link]]")],
        ctx: Context,
        depth: Annotated[int, Field(ge=1, le=3, description="1: links and backlinks; 2-3: the graph further out")]
        = 1,
        limit: Annotated[int, Field(ge=1, le=2000, description="Most items in each list (the totals say how many)")]
        = 200,
    ) -> NeighboursOut:
        """A note's links, backlinks and graph neighbours, each with its relation sentence and origin."""
        with tool_errors():
            return NeighboursOut.model_validate(asdict(engine_of(ctx).neighbors(note, depth, limit)))

    @server.tool(annotations=READ_ONLY)
    async def status(ctx: Context) -> StatusOut:
        """The index: notes indexed, pending extraction, last run, store location, notes changed since."""
        return StatusOut.model_validate(asdict(engine_of(ctx).status()))

    return server


def _log_notice(message: str) -> None:
    print(f"wikirag watch: {message}", file=sys.stderr)


def _log_batch(batch: Any) -> None:
    """One stderr line per watch batch (stdout is the protocol's): what changed, or why it failed."""
    if batch.error:
        print(f"wikirag watch: batch {batch.batch} failed, retrying with backoff: {batch.error}", file=sys.stderr)
        return
    print(f"wikirag watch: batch {batch.batch}: +{batch.notes_new} new ~{batch.notes_changed} changed "
          f"-{batch.notes_deleted} deleted", file=sys.stderr)
    for issue in batch.issues:
        print(f"wikirag watch: {issue}", file=sys.stderr)


def serve_stdio(config: WikiragConfig, *, watch: bool = False, llm_func: Any = None) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    build_server(config, watch=watch, llm_func=llm_func).run()
