"""LightRAG construction and teardown: the one place that builds a `LightRAG` instance.

Traps handled here (checked against lightrag-hku 1.5.7):
- LightRAG's modules call `load_dotenv(".env")` at import: we import them from a neutral folder so a
  `.env` lying in the user's current folder is not silently read into our process.
- An `ENTITY_TYPES` env var makes the constructor refuse to start: we say so in one line.
- The default tokenizer downloads o200k_base: we pass an offline one (tokens.py).
- The SDK ignores `LIGHTRAG_*_STORAGE` env vars: storages are passed explicitly.
- An `llm_model_func` is mandatory even when no LLM will be called: without a configured LLM we pass a
  function that refuses, so an unexpected LLM call fails loudly instead of hanging on a network call.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from wikirag.errors import ConfigError, LLMNotConfigured, StoreLocked
from wikirag.lightrag.answers import forget_answers, keep_answers
from wikirag.lightrag.embeddings import (
    EMBEDDING_PROVIDERS,
    EmbeddingCounter,
    EmbeddingSpec,
    dim_mismatch,
    make_embedding_func,
    preload_local_model,
    require_local_model,
)
from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.storages import lightrag_environment, lightrag_storage_kwargs
from wikirag.lightrag.tokens import lightrag_tokenizer
from wikirag.lightrag.vector_cache import cached_embedding_func
from wikirag.markdown.chunking import lightrag_chunking_func
from wikirag.settings import RETRY_MAX_WAIT_S, LLMSettings, WikiragConfig
from wikirag.storage.postgres import storage_unreachable
from wikirag.storage.server_env import require_server_env
from wikirag.storage.settings import StorageSettings

FILE_STORAGES = lightrag_storage_kwargs(StorageSettings())


def embedding_spec(config: WikiragConfig) -> EmbeddingSpec:
    provider, _, model = config.embedding.model.partition(":")
    if not model:
        raise ConfigError(f"embedding model {config.embedding.model!r}: write it as provider:model")
    if provider not in EMBEDDING_PROVIDERS:
        raise ConfigError(f"embedding model {config.embedding.model!r}: unknown provider {provider!r} "
                          f"(use one of {', '.join(EMBEDDING_PROVIDERS)})")
    if provider == "local":
        require_local_model(model, config.embedding.dim)  # before a run makes the store folder
    return EmbeddingSpec(provider=provider, model=model, dim=config.embedding.dim,
                         request_dim=provider == "openai" and config.embedding_dim_given)


WIDTH_PROBE = "wikirag checks the width of this model's vectors"


async def check_vector_width(config: WikiragConfig) -> None:
    """Refuse an [embedding] dim that an API or Ollama model's vectors disagree with. wikirag cannot know their
    width in advance, so a writer embeds one short text before it writes or records anything: left to LightRAG,
    a wrong dim failed deep in its vector stores, after the store had recorded it. The local models' width is
    known and checked with the settings (embedding_spec)."""
    import numpy as np

    spec = embedding_spec(config)
    if spec.provider == "local":
        return
    func = make_embedding_func(spec, EmbeddingCounter(), config.embedding.base_url)
    vectors = np.asarray(await func.func([WIDTH_PROBE]))
    width = vectors.shape[-1] if vectors.ndim else 0
    if width != spec.dim:
        raise ConfigError(dim_mismatch(config.embedding.model, spec.dim, width))


def preload_embedder(config: WikiragConfig) -> None:
    """Begin loading the configured local embedding model now, off the main thread (embeddings.
    preload_local_model); nothing for an API model or a bad setting (the engine reports that)."""
    with contextlib.suppress(ConfigError):
        spec = embedding_spec(config)
        if spec.provider == "local":
            preload_local_model(spec.model)


# LightRAG cancels an embedding call after twice its `default_embedding_timeout` (30 s): right for a remote
# API, wrong for the local model, which cannot hang but on a loaded 2-core machine can take over a minute for
# one coalesced round of long chunks (measured: a docs vault's index failed at load 8 with "Worker execution
# timeout after 60s"). The local model gets a generous bound instead.
LOCAL_EMBEDDING_TIMEOUT_S = 900


def _embedding_timeout(config: WikiragConfig, embedding_func: Any) -> dict[str, int]:
    local = embedding_func is not None or config.embedding.model.startswith("local:")
    return {"default_embedding_timeout": LOCAL_EMBEDDING_TIMEOUT_S} if local else {}


def lightrag_llm_kwargs(settings: LLMSettings) -> dict[str, Any]:
    """LightRAG constructor arguments that follow the LLM settings.

    - `llm_model_max_async`: LightRAG queues per role (extract, keyword, query) with this many workers
      each; wikirag's semaphore caps them all together, this keeps the queues from holding idle slots.
    - `default_llm_timeout`: LightRAG cancels a call after twice this; it must outlast wikirag's retries.
    """
    attempts = settings.max_retries + 1
    budget = settings.timeout_s * attempts + RETRY_MAX_WAIT_S * settings.max_retries
    return {"llm_model_max_async": settings.effective_concurrency(), "default_llm_timeout": int(budget / 2) + 1}


def _addon_params() -> dict[str, Any]:
    """LightRAG's default `addon_params` without the recursive chunker's separator cascade. The constructor
    checks that cascade with lightrag.chunker.recursive_character, whose import pulls in langchain (~0.2 s of
    every process that opens a store). The cascade only shapes documents enqueued through LightRAG's own
    pipeline (`ainsert`), and wikirag enqueues none: it writes its chunks itself (lightrag.writer)."""
    from lightrag.addon_params import default_addon_params

    params = default_addon_params()
    recursive = params.get("chunker", {}).get("recursive_character")
    if isinstance(recursive, dict):
        recursive.pop("separators", None)
    return params


async def _no_llm(prompt: str, *args: Any, **kwargs: Any) -> str:
    raise LLMNotConfigured("this step needs an LLM and none is configured (set WIKIRAG_LLM)")


# LightRAG keeps each workspace's storage data in process-wide shared dicts keyed by the workspace name
# alone, not by folder: two stores holding a workspace of the same name would read each other's data
# inside one process. We track which store each open workspace belongs to, refuse a clash, and reset
# the shared data when the process's last engine closes.
_open_workspaces: dict[str, tuple[str, int]] = {}  # workspace -> (store path, engines open)
_open_lock = threading.Lock()


def _store_identity(config: WikiragConfig) -> str:
    """Where a workspace's data lives: the store folder, or the database for PostgreSQL storages."""
    return f"postgresql://{config.storage.target}" if config.storage.uses_postgres else str(config.store.resolve())


def _claim_workspace(config: WikiragConfig) -> None:
    store = _store_identity(config)
    with _open_lock:
        owner, count = _open_workspaces.get(config.workspace, (store, 0))
        if owner != store:
            raise StoreLocked(
                f"this process already has workspace {config.workspace!r} open from {owner}; "
                "close it before opening the same workspace name from another store"
            )
        _open_workspaces[config.workspace] = (store, count + 1)


def _release_workspace(config: WikiragConfig) -> None:
    with _open_lock:
        owner, count = _open_workspaces.pop(config.workspace)
        if count > 1:
            _open_workspaces[config.workspace] = (owner, count - 1)
        elif not _open_workspaces:
            import_lightrag()
            from lightrag.kg.shared_storage import finalize_share_data

            finalize_share_data()


@contextlib.asynccontextmanager
async def open_engine(
    config: WikiragConfig,
    *,
    llm_func: Callable[..., Any] | None = None,
    embedding_counter: EmbeddingCounter | None = None,
    embedding_func: Any = None,
    storages: dict[str, str] | None = None,
    tokenizer: Any = None,
    reading: tuple[str, ...] | None = None,
) -> AsyncIterator[Any]:
    """An initialised LightRAG for the config's store and workspace; storages finalised on exit.
    `tokenizer` replaces tiktoken (retrieval-only engines pass lightrag.readtokens.retrieval_tokenizer()).
    `reading` names the only storages to load (CONTEXT_STORAGES for a context-only query): a reader that
    never writes skips loading the LLM cache, documents and trackers, most of a large store's bytes."""
    if os.environ.get("ENTITY_TYPES") is not None:
        raise ConfigError("the ENTITY_TYPES environment variable is set; LightRAG 1.5 refuses to start with it")
    require_server_env(config.storage)  # LightRAG's constructor raised a ValueError; before the folder is made
    import_lightrag()
    from lightrag import LightRAG

    from wikirag.lightrag.graph_copy import install as install_graph_copy

    install_graph_copy()  # the file store's graph loads from a JSON copy when it matches the GraphML
    counter = embedding_counter or EmbeddingCounter()
    config.workspace_dir.mkdir(parents=True, exist_ok=True)
    _claim_workspace(config)
    env = contextlib.ExitStack()
    try:
        embed = embedding_func or make_embedding_func(embedding_spec(config), counter, config.embedding.base_url)
        # Each distinct text is embedded once per store and model (renames, rebuilds, unchanged records).
        identity = embedding_spec(config).identity if embedding_func is None else f"given:{embed.model_name}"
        embed, vectors = cached_embedding_func(embed, config.workspace_dir, identity)
        env.callback(vectors.close)
        env.enter_context(lightrag_environment(config.storage))  # server storages read env vars
        rag = LightRAG(
            working_dir=str(config.store),
            workspace=config.workspace,
            embedding_func=embed,
            llm_model_func=llm_func or _no_llm,
            # Part of LightRAG's LLM cache key: switching models never reuses another model's answers.
            llm_model_name=config.llm.model or "none",
            **(lightrag_llm_kwargs(config.llm) if config.llm.model else {}),
            # Retrieval without an LLM passes lightrag.readtokens' counter: tiktoken's table is slow to load.
            tokenizer=tokenizer or lightrag_tokenizer(config.index.encoding),
            chunk_token_size=config.index.chunk_token_size,
            chunk_overlap_token_size=config.index.chunk_overlap_token_size,
            chunking_func=lightrag_chunking_func(),
            entity_extract_max_gleaning=config.index.gleaning,
            enable_content_headings=True,
            # LightRAG's query-answer cache keys an answer by the question and settings, not by the context it
            # was written from: after an edit, or with BM25's chunks in the context (query.retrieve), it served
            # an answer from another context. Off for answers and their keywords; extraction keeps its cache.
            enable_llm_cache=False,
            addon_params=_addon_params(),
            **_embedding_timeout(config, embedding_func),
            **(storages or lightrag_storage_kwargs(config.storage)),
        )
        try:
            if reading is None:
                await rag.initialize_storages()
            else:
                await _initialize_some(rag, reading)
        except Exception as exc:
            problem = storage_unreachable(config.storage, exc)
            if problem is None:
                raise
            raise problem from None
        try:
            if reading is None:  # a reader loads no LLM cache: nothing to journal
                await keep_answers(rag, config.workspace_dir)
            yield rag
        finally:
            try:
                if reading is None:
                    await rag.finalize_storages()
                    forget_answers(rag)  # finalising wrote LightRAG's cache file: the journal is redundant
                else:
                    await _finalize_some(rag, reading)
            finally:
                await _stop_call_queues(rag)
    finally:
        env.close()
        _release_workspace(config)


async def _stop_call_queues(rag: Any) -> None:
    """Stop LightRAG's call queues (embedding, each LLM role, rerank) before the event loop closes. Their
    workers catch a cancellation that reaches them while they run a call and go back to waiting for the next
    one, so after a run that failed with embedding calls still in flight, asyncio.run's final cancellation
    waited on them forever. `shutdown` sets the flag their loop checks, then cancels them."""
    funcs = [getattr(rag.embedding_func, "func", None), getattr(rag, "rerank_model_func", None)]
    funcs += [state.wrapped for state in (getattr(rag, "_role_llm_states", None) or {}).values()]
    for func in funcs:
        shutdown = getattr(func, "shutdown", None)
        if shutdown is not None:
            try:
                await shutdown(graceful=False)
            except Exception as exc:  # a queue that cannot stop must not hide the run's own outcome
                logging.getLogger("wikirag").debug("stopping a LightRAG call queue: %s", exc)


# What LightRAG's context-only retrieval (`aquery_data` with keywords given) reads, per mode: checked against
# 1.5.7's `aquery_data` -> `kg_query` / `naive_query` (the LLM cache is only consulted when an LLM is called).
CONTEXT_STORAGES = {
    "naive": ("text_chunks", "chunks_vdb"),
    "graph": ("text_chunks", "chunks_vdb", "entities_vdb", "relationships_vdb", "chunk_entity_relation_graph"),
}


async def _initialize_some(rag: Any, names: tuple[str, ...]) -> None:
    """LightRAG.initialize_storages for the named storages only (same order, same pipeline setup)."""
    import asyncio

    from lightrag.base import StoragesStatus
    from lightrag.kg.shared_storage import get_default_workspace, initialize_pipeline_status, set_default_workspace

    rag._owning_loop = asyncio.get_running_loop()
    if get_default_workspace() is None:
        set_default_workspace(rag.workspace)
    await initialize_pipeline_status(workspace=rag.workspace)
    for name in names:
        await getattr(rag, name).initialize()
    rag._storages_status = StoragesStatus.INITIALIZED

    async def _nothing_to_flush() -> None:  # `_query_done` flushes the LLM cache, which a reader never loads
        return None

    rag._query_done = _nothing_to_flush


async def _finalize_some(rag: Any, names: tuple[str, ...]) -> None:
    from lightrag.base import StoragesStatus

    rag._shutdown_parser_executor()
    for name in names:
        await getattr(rag, name).finalize()
    rag._storages_status = StoragesStatus.FINALIZED
