"""Questions over the index in LightRAG's modes, with or without an LLM, citing the vault's notes.

LightRAG's graph modes search entities with "low-level" keywords and relations with "high-level"
keywords, which it normally asks an LLM for. Without an LLM we derive them from the vault itself:
note titles, aliases, entity names and tags found in the question (low level), plus the question's own
salient phrases (both levels). Given keywords, `aquery_data` retrieves with no LLM call at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikirag.errors import QueryFailed, StoreNotFound
from wikirag.index.store_model import adopt_store_embedding
from wikirag.lightrag.engine import open_engine
from wikirag.lightrag.query import errors_held, failure_message, query_param, too_short_for_retrieval
from wikirag.llm.retry import LLMCallError, llm_call_error
from wikirag.query.notes import NoteTable, obsidian_uri, read_note_table, read_question, unfinished_index
from wikirag.redaction import redact
from wikirag.settings import STORE_DIRNAME, WikiragConfig

if TYPE_CHECKING:
    from wikirag.index.ledger import Ledger

MODES = ("naive", "local", "global", "hybrid", "mix", "bypass")
# LightRAG 1.5's own default, and the graph mode whose answers read the expected notes most often on all five
# question sets (docs/retrieval.md, "What an answer reads"); its cited sources rank as hybrid's do.
DEFAULT_MODE = "mix"

_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me
    more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves tell explain describe give list show find
    know did does role
    """.split()
)
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_NOTHING_FOUND = ("No relevant", "Query returned no results")  # LightRAG's failure messages that mean no match


@dataclass
class Source:
    path: str
    title: str
    obsidian_uri: str
    found_by: list[str] = field(default_factory=lambda: ["lightrag"])  # with fusion: also lexical, names


@dataclass
class QueryResult:
    question: str
    mode: str
    answer: str | None
    no_answer_reason: str | None
    keywords: dict[str, list[str]]
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    # The LLM failed (unreachable, key refused, rate limited, 5xx): the context came back without its answer,
    # or the answer stopped part way; `no_answer_reason` says why. The CLI exits with status 3.
    answer_failed: bool = False
    notes: list[str] = field(default_factory=list)  # why a result may be short, e.g. an interrupted index


def find_vault(start: Path, environ: dict[str, str] | None = None) -> Path:
    """The vault whose store holds `start`, looking upwards like git does; WIKIRAG_VAULT wins."""
    env = os.environ if environ is None else environ
    if env.get("WIKIRAG_VAULT"):
        return Path(env["WIKIRAG_VAULT"])
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / STORE_DIRNAME).is_dir():
            return folder
    raise StoreNotFound(f"{start}: no {STORE_DIRNAME} store here or above; run `wikirag index VAULT` first")


# --- keywords without an LLM ---------------------------------------------------------------------


class Vocabulary:
    """Names the question may mention (entity names, note titles and aliases, tags): a NoteTable."""

    @staticmethod
    def from_ledger(ledger: Ledger) -> NoteTable:
        from wikirag.index.search_rows import names_table

        return NoteTable(names_table(ledger))


def _phrases(question: str) -> list[str]:
    """Runs of non-stopwords: "How did the Enigma machine work" -> ["Enigma machine work"]."""
    phrases, run = [], []
    for word in _WORD.findall(question):
        if word.casefold() in _STOPWORDS or len(word) < 2:
            if run:
                phrases.append(" ".join(run))
            run = []
        else:
            run.append(word)
    if run:
        phrases.append(" ".join(run))
    return phrases


def derive_keywords(question: str, notes: NoteTable) -> tuple[list[str], list[str]]:
    """(high-level, low-level) keywords for LightRAG's graph retrieval, from the vault's own names
    (one automaton pass over the question, longest names first)."""
    found: list[str] = []
    for surface in notes.names_in(question):
        name = notes.display_name(surface)
        if name not in found:
            found.append(name)
    words = {w.casefold().lstrip("#") for w in _WORD.findall(question)}
    tags = sorted(t for t in notes.tags() if t.split("/")[-1] in words)
    phrases = _phrases(question)
    low = found or phrases or [question]
    high = [*tags, *phrases] or [question]
    return high, low


# --- the query -----------------------------------------------------------------------------------


def _source_paths(data: dict[str, Any], notes: NoteTable) -> list[str]:
    """LightRAG's own source order: its reference list (notes by chunk count), then any other chunk's note."""
    paths: list[str] = []
    for ref in data.get("references", []):
        for path in str(ref.get("file_path", "")).split("<SEP>"):
            if path and path not in paths:
                paths.append(path)
    for chunk in data.get("chunks", []):
        path = chunk.get("file_path", "")
        if path and path not in paths:
            paths.append(path)
    return [p for p in paths if p in notes.notes]


async def query_store(
    config: WikiragConfig,
    question: str,
    *,
    mode: str = DEFAULT_MODE,
    top_k: int | None = None,
    chunk_top_k: int | None = None,
    max_total_tokens: int | None = None,
    response_type: str | None = None,
    context_only: bool = False,
    llm_func: Callable[..., Any] | None = None,
    on_token: Callable[[str], None] | None = None,
    rag: Any = None,
    notes: NoteTable | None = None,
    fusion: bool = True,
    lexical: Any = None,
    **engine_kwargs: Any,
) -> QueryResult:
    """Retrieve (and answer, with an LLM) in one of LightRAG's modes. A caller asking many questions
    passes an open `rag` (engine.open_engine) and the `notes` table to skip reopening the store.

    `fusion` (default) ranks the source notes by LightRAG's context (its chunks' notes, and in the graph
    modes the notes owning its entities) fused with BM25 and the names in the question (query.ranking).
    An LLM answer in naive, mix and local mode also reads what BM25 finds (`_fused_context`); the global and
    hybrid context is LightRAG's. `fusion=False` keeps LightRAG's own source order and context."""
    mode = mode.strip().lower()  # `-m MIX` is `-m mix`
    if mode not in MODES:
        raise QueryFailed(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    question = read_question(question)
    # without an open store: check there is one, and embed the question with the store's own model
    if rag is None and adopt_store_embedding(config) is None:
        raise StoreNotFound.at(config.workspace_dir, config.vault)
    if mode == "bypass" and llm_func is None:
        raise QueryFailed("mode 'bypass' sends the question straight to the LLM, and none is configured")
    if mode != "bypass" and too_short_for_retrieval(question):
        raise QueryFailed(f"the question {question.strip()!r} is too short for LightRAG's retrieval: at least 3 "
                          "characters, a Chinese, Japanese or Korean one counting 2 (`wikirag search` takes it)")
    notes = notes or read_note_table(config)
    use_llm = llm_func is not None and not context_only
    high, low = ("", "")
    if not use_llm:
        high, low = derive_keywords(question, notes)

    param_kwargs: dict[str, Any] = {"mode": mode}
    if top_k:
        param_kwargs["top_k"] = top_k
    if chunk_top_k:
        param_kwargs["chunk_top_k"] = chunk_top_k
    if max_total_tokens:
        param_kwargs["max_total_tokens"] = max_total_tokens
    if response_type:
        param_kwargs["response_type"] = response_type
    if not use_llm:
        param_kwargs.update(hl_keywords=high, ll_keywords=low)
    param_kwargs["stream"] = bool(use_llm and on_token)
    param_kwargs["include_references"] = True
    param_kwargs["enable_rerank"] = False  # no reranker is configured; LightRAG would warn per query
    param = query_param(**param_kwargs)
    failed_before = getattr(llm_func, "last_error", None)  # LLMClient's; a failure during this query is new
    instead = {"mode": mode, "top_k": top_k, "chunk_top_k": chunk_top_k, "max_total_tokens": max_total_tokens,
               "notes": notes, "fusion": fusion, "lexical": lexical}  # for the context without an answer

    async with contextlib.AsyncExitStack() as stack:
        if rag is None:
            if not use_llm:  # a context only: count tokens without tiktoken, load only what retrieval reads
                from wikirag.lightrag.engine import CONTEXT_STORAGES
                from wikirag.lightrag.readtokens import retrieval_tokenizer

                engine_kwargs.setdefault("tokenizer", retrieval_tokenizer())
                engine_kwargs.setdefault("reading", CONTEXT_STORAGES["naive" if mode == "naive" else "graph"])
            rag = await stack.enter_async_context(open_engine(config, llm_func=llm_func, **engine_kwargs))
        nothing_found = False
        cut_off: LLMCallError | None = None
        try:
            with errors_held():  # a failure is raised below as one line; LightRAG's own log lines of it are dropped
                if use_llm:
                    with _fused_context(rag, config, notes, question, mode, fusion, lexical) as lexical:
                        raw = await rag.aquery_llm(question, param)
                else:
                    raw = await rag.aquery_data(question, param)
                # LightRAG returns None or a failure dict on some errors instead of raising.
                if not isinstance(raw, dict) or raw.get("status") == "failure":
                    message = raw.get("message") if isinstance(raw, dict) else "LightRAG returned nothing"
                    empty = isinstance(raw, dict) and str(message).startswith(_NOTHING_FOUND)
                    if not empty:
                        down = _llm_failure(llm_func, failed_before, message)
                        if down is not None:
                            raise down  # the LLM's failure, not LightRAG's: the context is shown instead (below)
                        raise QueryFailed(f"query failed: {failure_message(message)}")
                    raw = {"data": {}, "metadata": raw.get("metadata")}  # nothing matched: an empty context, no error
                    nothing_found = True  # (with an LLM: LightRAG asked it nothing; its canned "Sorry" is no answer)
        except LLMCallError as down:
            return await _context_instead(config, question, down, rag=rag, **instead)
        data = raw.get("data") or {}
        answer = None
        llm = raw.get("llm_response") or {}
        if use_llm and llm.get("llm_generated") is False:
            nothing_found = True  # LightRAG's canned reply without a call (no context, or no keywords for it)
        if use_llm and not nothing_found:
            if llm.get("is_streaming") and llm.get("response_iterator") is not None:
                received: list[str] = []
                try:
                    answer = await _collect(llm["response_iterator"], on_token, received)
                except Exception as exc:
                    cut_off = llm_call_error(exc)
                    if cut_off is None:
                        raise  # not the LLM's doing
                    if not received:  # nothing shown yet: as if the call had failed before streaming
                        return await _context_instead(config, question, cut_off, rag=rag, **instead)
                    answer = "".join(received)
            else:
                answer = llm.get("content")
            if answer is None:
                raise QueryFailed("the LLM returned no answer")
    paths = _source_paths(data, notes)
    found_by: list[list[str]] = [["lightrag"] for _ in paths]
    if fusion and mode != "bypass":  # bypass retrieves nothing: its answer cites no note
        from wikirag.index.lexical import load_index
        from wikirag.query.search import fused_sources

        lexical = lexical if lexical is not None else load_index(config.workspace_dir)
        context = QueryResult(question, mode, None, None, {}, data.get("entities", []),
                              data.get("relationships", []), data.get("chunks", []))
        # as many sources as LightRAG cited (at least 5): the fused ranking chooses which
        ranked = fused_sources(notes, lexical, question, context, paths)[:max(5, len(paths))]
        paths, found_by = [p for p, _ in ranked], [f for _, f in ranked]
    sources = [Source(p, notes.title(p), obsidian_uri(config.vault, p), f) for p, f in zip(paths, found_by,
                                                                                          strict=True)]
    keywords = (raw.get("metadata") or {}).get("keywords") or {}
    reason = None
    if cut_off is not None:
        reason = f"the answer stopped part way, the LLM failed ({_one_line(cut_off)})"
    elif answer is None and use_llm:
        other = "`wikirag search` may find notes" + ("" if mode == "naive" else "; so may `-m naive`")
        reason = f"LightRAG's {mode} retrieval found nothing for this question, so the LLM was not asked ({other})"
    elif answer is None:
        reason = ("--context-only was given" if context_only and llm_func is not None
                  else "no LLM is configured (set WIKIRAG_LLM to get answers); showing retrieved context")
    return QueryResult(
        question=question,
        mode=mode,
        answer=answer,
        no_answer_reason=reason,
        keywords={"high_level": list(keywords.get("high_level") or high or []),
                  "low_level": list(keywords.get("low_level") or low or [])},
        entities=data.get("entities", []),
        relations=data.get("relationships", []),
        chunks=data.get("chunks", []),
        sources=sources,
        notes=[note for note in (unfinished_index(config),) if note],
        answer_failed=cut_off is not None,
    )


def _llm_failure(llm_func: Any, failed_before: Any, message: object) -> LLMCallError | None:
    """The LLM's failure behind LightRAG's failure `message`: LightRAG returns it as text only, so it is the
    LLMClient's last error when that is new and LightRAG's message carries it. None for any other failure (a bug
    stays a QueryFailed)."""
    error = getattr(llm_func, "last_error", None)
    if not isinstance(error, LLMCallError) or error is failed_before:
        return None
    return error if str(error) in str(message) else None


def _one_line(error: LLMCallError) -> str:
    """The LLM's error in one line (a provider's 5xx body may run to many): provider, model, error class,
    message; already redacted, and again, as every message that may show a provider's text."""
    text = " ".join(redact(str(error)).split())
    return text if len(text) <= 300 else text[:300] + " …"


async def _context_instead(config: WikiragConfig, question: str, error: LLMCallError, **kwargs: Any
                           ) -> QueryResult:
    """The retrieved context, as without an LLM, with the LLM's failure as the reason; `bypass` has none."""
    if kwargs["mode"] == "bypass":
        raise QueryFailed(f"mode 'bypass' retrieves no context to show instead: the LLM failed ({_one_line(error)})")
    result = await query_store(config, question, context_only=True, **kwargs)
    result.no_answer_reason = f"the LLM failed ({_one_line(error)}); showing retrieved context"
    result.answer_failed = True
    return result


@contextlib.contextmanager
def _fused_context(rag: Any, config: WikiragConfig, notes: NoteTable, question: str, mode: str, fusion: bool,
                   lexical: Any) -> Iterator[Any]:
    """With fusion, an LLM answer's context also draws on BM25 (lightrag.context_order): in naive and mix mode
    its chunks are LightRAG's vector chunks and BM25's in turn, in local mode its entities are LightRAG's and
    those of BM25's notes in turn (query.ranking). Global and hybrid mode, and `fusion=False`, keep LightRAG's
    own context (hybrid's lost on the sample set: docs/retrieval.md, "What an answer reads"). Yields the lexical
    index it loaded (or was given), so the sources' ranking reads it once."""
    chunks, entities = mode in ("naive", "mix"), mode == "local"
    if not fusion or not (chunks or entities):
        yield lexical
        return
    from wikirag.index.lexical import load_index
    from wikirag.lightrag.context_order import ContextOrder, context_order, reorder_context
    from wikirag.query.ranking import context_chunk_order, context_entity_order

    lexical = lexical if lexical is not None else load_index(config.workspace_dir)
    reorder_context(rag)
    order = ContextOrder(chunks=context_chunk_order(lexical, question) if chunks else None,
                         entities=context_entity_order(notes, lexical, question) if entities else None)
    with context_order(order):
        yield lexical


async def _collect(iterator: AsyncIterator[str], on_token: Callable[[str], None] | None,
                   parts: list[str]) -> str:
    """The streamed answer; `parts` holds what came, should the stream fail part way."""
    async for piece in iterator:
        parts.append(piece)
        if on_token:
            on_token(piece)
    return "".join(parts)


def ask(config: WikiragConfig, question: str, **kwargs: Any) -> QueryResult:
    """Sync twin of `query_store` for the CLI."""
    return asyncio.run(query_store(config, question, **kwargs))
