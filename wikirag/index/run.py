"""The index pipeline: vault -> plan -> ledger (write-ahead) -> LightRAG storages -> ledger (done).

`run_index(config)` is the sync entry point the CLI calls; `index_vault` is its async body. A run:
1. scans and parses the vault and names every note's entity (inject.note_entity_names);
2. computes each note's *signature*: a hash of its bytes, its entity name and what each of its links
   resolves to. A note whose signature differs from the ledger's is re-derived; this is how a new note
   named X turns other notes' unresolved [[X]] into real edges without touching their files;
3. processes changed notes in batches: save the ledger with `pending` (what will be rewritten), write
   chunks, re-derive every touched entity and relation from all notes' fragments, flush LightRAG's
   stores, clear `pending`. A crash anywhere leaves `pending` for the next run to redo.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from wikirag.errors import VaultNotFound, WikiragError
from wikirag.index.apply import run_plan
from wikirag.index.budget import VaultSubset, apply_budget
from wikirag.index.derived import load_derived, save_derived
from wikirag.index.ledger import Ledger
from wikirag.index.lexical_sync import search_files_ready, sync_after_run
from wikirag.index.live import EmbeddingProgress, LiveRun
from wikirag.index.manifest import drop_manifest, load_unchanged, save_manifest, stat_signature
from wikirag.index.parsecache import load_parse_cache, save_parse_cache
from wikirag.index.planning import DERIVATION_VERSION, Plan, plan_index, stable_digest
from wikirag.index.rebuild import REBUILDING, finish_rebuild, rebuild_pending, refuse_while_pending, wipe_workspace
from wikirag.index.report import IndexReport, Progress, fill_plan_counts, fill_totals
from wikirag.index.store_model import adopt_store_embedding, require_store_embedding, require_store_targets
from wikirag.index.summaries import MODE_KEY, TODO_KEY, summary_work
from wikirag.lightrag.embeddings import EmbeddingCounter
from wikirag.lightrag.engine import check_vector_width, embedding_spec, open_engine, preload_embedder
from wikirag.lightrag.hinting import HintingLLM
from wikirag.lightrag.tokens import count_tokens
from wikirag.lightrag.writer import StoreWriter
from wikirag.settings import WikiragConfig
from wikirag.storage.ledger_store import ledger_store, recorded_meta, unfinished_writes
from wikirag.storage.locks import writer_lock
from wikirag.storage.postgres import keep_vectors_inline, tend_changed_tables
from wikirag.storage.server_env import require_server_env
from wikirag.storage.workspace import record_vault
from wikirag.vault.memory import cyclic_gc_paused, freeze_long_lived, thaw_long_lived
from wikirag.vault.model import Vault
from wikirag.vault.read import scan_vault


def _store_meta(config: WikiragConfig) -> dict[str, Any]:
    """What the ledger head records about the store; "servers": where the pass-through storages were written
    (credential-free), which a writer pointed elsewhere is refused (store_model.require_store_targets)."""
    return {"embedding": embedding_spec(config).identity, "workspace": config.workspace,
            "servers": dict(config.storage.servers)}


def StoreLock(config: WikiragConfig):  # noqa: N802  (was a class; callers use it as one)
    """One writer per store workspace: a second `index` (or `watch`) gets a clear message. A file lock in
    the workspace folder, or a PostgreSQL advisory lock when the index lives there (storage.writer_lock)."""
    return writer_lock(config.storage, config.workspace_dir, config.workspace)


def open_ledger_store(config: WikiragConfig):
    """Where this workspace's ledger lives: beside the data (storage.ledger_store)."""
    return ledger_store(config.storage, config.workspace_dir, config.workspace)


@contextlib.asynccontextmanager
async def open_store_engine(config: WikiragConfig, **kwargs: Any) -> Any:
    """`open_engine` for a writer (`index`, `watch`), with the cyclic collector paused while LightRAG loads its
    stores: the file stores make millions of long-lived objects and no cycles, and each full collection
    meanwhile re-traced all of them (≈2 s of a 13,000-note run; see vault.memory.cyclic_gc_paused). On
    PostgreSQL, LightRAG's vectors are kept inside their rows (storage.postgres.keep_vectors_inline)."""
    async with contextlib.AsyncExitStack() as stack:
        with cyclic_gc_paused():
            rag = await stack.enter_async_context(open_engine(config, **kwargs))
        if config.storage.uses_postgres and config.storage.vector == "PGVectorStorage":
            keep_vectors_inline(config.storage)  # LightRAG has just made its tables; the writer holds the lock
        yield rag


FREEZE_ABOVE = 2000  # notes; below, the cyclic collector's passes cost little


@dataclass
class RunState:
    """What `watch` keeps in memory between its batches: the ledger (with its entity and relation indexes)
    and the last plan (token counts and routing decisions of untouched notes). Dropped after a failed run,
    so the next one starts from the store."""

    ledger: Ledger | None = None
    plan: Plan | None = None


def run_index(config: WikiragConfig, *, dry_run: bool = False, rebuild: bool = False,
              progress: Progress | None = None, **kwargs: Any) -> IndexReport:
    """Index the vault into its store (sync wrapper for the CLI; keywords as `index_vault`)."""
    return asyncio.run(index_vault(config, dry_run=dry_run, rebuild=rebuild, progress=progress, **kwargs))


async def index_vault(config: WikiragConfig, *, dry_run: bool = False, rebuild: bool = False,
                      progress: Progress | None = None, vault: Vault | None = None, rag: Any = None,
                      hinting: HintingLLM | None = None, llm_func: Callable[..., Any] | None = None,
                      budget_usd: float | None = None, locked: bool = False, state: RunState | None = None,
                      batch: bool = False, drop_llm_cache: bool = False,
                      should_stop: Callable[[], bool] | None = None,
                      **engine_kwargs: Any) -> IndexReport:
    """Bring the store in step with the vault.

    `watch` passes its in-memory `vault` (kept current file by file), an open `rag` with its `hinting`
    LLM wrapper, `locked=True` (it holds the writer lock for its whole session) and its `state` (kept
    between batches); `wikirag index` passes none of them. `llm_func` replaces the configured provider
    (tests pass a fake LLM). `batch`: extraction requests go through the provider's batch API first
    (index/batching.py). `rebuild` keeps LightRAG's LLM cache (paid answers) unless `drop_llm_cache`.
    """
    started = time.perf_counter()
    VaultNotFound.unless_folder(config.vault)
    report = IndexReport(str(config.vault), str(config.store), config.workspace, dry_run=dry_run)
    watching = progress is not None  # someone shows progress: price the run for the live line
    progress = progress or (lambda stage, done, total: None)

    _check_settings(config, llm_func or hinting)  # a dry run says a bad setting too
    if rag is not None:  # an open engine's loaded storages would outlive a wipe
        refuse_while_pending(config)
    elif not rebuild and rebuild_pending(config) is not None:  # one cut short (index.rebuild): this run finishes it
        rebuild = True
    if dry_run:
        ledger = Ledger.load(open_ledger_store(config)) if not rebuild else Ledger()
        fill_plan_counts(report, plan_index(config, ledger, vault), ledger)
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    if batch:
        from wikirag.llm.batch import check_batch

        check_batch(config.llm)
    scanned = None  # asked before the store opens (an embedded server starts): a run that finds nothing changed
    if vault is None and not rebuild:  # ends on the manifest alone, lock-free: writers drop it before writing
        scanned = _scanned(config)
        if _unchanged(config, _config_key(config), report, started, scanned[1]):
            return report
    if not rebuild:  # a store keeps the local model it was built with unless a setting names another, and is
        adopt_store_embedding(config, writer=True)  # refused when its ledger was written to other servers
    if rag is None and engine_kwargs.get("embedding_func") is None:
        await check_vector_width(config)  # an API model's: before the lock, a --rebuild's wipe or any record
        preload_embedder(config)  # something changed: the model loads while the run plans
    try:
        # a caller's own embedding too: a server's vector collection is named for its model
        wipe = (lambda: wipe_workspace(config, keep_llm_cache=not drop_llm_cache,
                                       embedding_func=engine_kwargs.get("embedding_func"))) if rebuild else None
        return await _index(config, report, started, progress, wipe, vault, rag, hinting, llm_func,
                            budget_usd, locked, state, should_stop, engine_kwargs, batch, watching, scanned)
    except BaseException:
        if state is not None:  # the in-memory ledger may hold a half-applied batch: reload it next time
            state.ledger = state.plan = None
        raise
    finally:  # the caller lives on (watch, a library): what this run froze and dropped in cycles (a LightRAG
        thaw_long_lived()  # instance) must stay collectable; what is still alive just moves to the oldest generation


async def _index(config: WikiragConfig, report: IndexReport, started: float, progress: Progress,
                 wipe: Callable[[], Awaitable[dict[str, Any]]] | None,
                 vault: Vault | None, rag: Any, hinting: HintingLLM | None, llm_func: Callable[..., Any] | None,
                 budget_usd: float | None, locked: bool, state: RunState | None,
                 should_stop: Callable[[], bool] | None, engine_kwargs: dict[str, Any], batch: bool,
                 watching: bool, scanned: tuple[Any, dict[str, Any]] | None = None) -> IndexReport:
    async with contextlib.AsyncExitStack() as stack:
        if not locked:
            stack.enter_context(StoreLock(config))
        carried = await wipe() if wipe is not None else {}  # --rebuild, under the lock
        record_vault(config.workspace_dir, config.vault)  # whose index this is: found again after a rename
        progress("scan", 0, 1)
        scan = files = None
        config_key = _config_key(config)
        if vault is None:  # `wikirag index`: ask (again, now under the lock) whether anything can have changed
            if scanned is None:
                scanned = _scanned(config)
            scan, files = scanned
            if _unchanged(config, config_key, report, started, files):
                return report
            drop_manifest(config.workspace_dir)
        ledger = state.ledger if state is not None and state.ledger is not None else None
        if ledger is None:
            ledger = Ledger.load(open_ledger_store(config))
        require_store_embedding(config, ledger.meta.get("embedding"))
        require_store_targets(config, ledger.meta.get("servers"))
        if "servers" not in ledger.meta and len(ledger.notes):  # an older wikirag's: these servers from now on
            ledger.meta["servers"] = dict(config.storage.servers)
            ledger.save()  # the head only
        ledger.meta.update(carried)
        cache = load_parse_cache(config.workspace_dir, config.index.encoding) if vault is None else {}
        derived = load_derived(config.workspace_dir, config_key) if vault is None else None
        plan = plan_index(config, ledger, vault, cache, scan=scan, previous=state.plan if state else None,
                          derived=derived)
        if state is not None:
            state.ledger, state.plan = ledger, plan
            ledger.entity_index()  # built once, then kept current: each batch looks its names up
        if len(plan.vault.notes) > FREEZE_ABOVE:
            freeze_long_lived()  # vault, ledger and plan live to the end: later collections need not trace them
        if vault is None:  # writes only the rows of notes that changed
            save_parse_cache(config.workspace_dir, config.index.encoding, plan.vault.notes, plan.vault.digests,
                             plan.body_tokens, cache, plan.vault.stats, plan.vault.clean, plan.figures)
            save_derived(config.workspace_dir, config_key, plan, derived)
        progress("scan", 1, 1)
        fill_plan_counts(report, plan, ledger)
        if budget_usd is not None and plan.llm_model:
            apply_budget(plan, config, budget_usd, report)
        report.recovered_pending = not ledger.pending.empty()
        if (not plan.to_process and not plan.deleted and ledger.pending.empty()
                and search_files_ready(config.workspace_dir) and not summary_work(ledger, plan.llm_model)):
            fill_totals(report, ledger)
            finish_rebuild(config, ledger)  # a rebuild cut short after its wipe, with every note written since
            _remember_clean_run(config, files, plan, report)
            report.seconds = round(time.perf_counter() - started, 3)
            return report

        # batch: a submitted one; summaries: the mode and to-do list of description summaries
        kept = {k: v for k, v in ledger.meta.items()
                if k in ("names_digest", "batch", MODE_KEY, TODO_KEY, REBUILDING)}
        ledger.meta = {**_store_meta(config), **kept}
        counter = engine_kwargs.pop("embedding_counter", None) or EmbeddingCounter()
        calls_before, texts_before = counter.calls, counter.texts
        if rag is None:
            hinting = hinting_llm(config, llm_func)
            rag = await stack.enter_async_context(open_store_engine(
                config, embedding_counter=counter, llm_func=hinting, **engine_kwargs))
            if len(plan.vault.notes) > FREEZE_ABOVE:
                freeze_long_lived()  # LightRAG's loaded stores live to the end too
        usage_before = _usage(hinting)
        live = live_run(plan, config, hinting, estimate=watching, batch=batch)
        api = None
        if batch and hinting is not None:
            from wikirag.llm.batch import batch_api

            api = batch_api(hinting.llm_func)
        shown = EmbeddingProgress(progress, counter)
        ticker = asyncio.ensure_future(shown.tick())
        try:
            await run_plan(StoreWriter(rag), ledger, plan, config, report, shown, hinting, live=live, batch=api,
                           should_stop=should_stop)
        finally:
            ticker.cancel()
        if not ledger.notes:  # no note to write (an empty vault): the head still records the store's model, so
            ledger.save()  # readers find an empty index rather than none
        usage_after = _usage(hinting)
        (report.llm_calls, report.llm_input_tokens, report.llm_output_tokens, report.llm_cached_input_tokens,
         report.llm_cache_write_input_tokens) = (a - b for a, b in zip(usage_after, usage_before, strict=True))
        report.embedding_calls = counter.calls - calls_before
        report.embedding_texts = counter.texts - texts_before
        if len(plan.vault.notes) > FREEZE_ABOVE:
            freeze_long_lived()  # and the entity and relation indexes apply built
        records = None
        if ledger.pending.empty():  # the search files and LightRAG's document rows follow the store
            records = await sync_after_run(rag, ledger, config.workspace_dir,
                                           {"finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                            "notes_indexed": len(plan.to_process), "notes_deleted": len(plan.deleted)})
        fill_totals(report, ledger, records)
        if ledger.pending.empty() and not report.interrupted:
            finish_rebuild(config, ledger)  # every note written: readers may read the rebuilt index
        if ledger.pending.empty() and not summary_work(ledger, plan.llm_model):
            _remember_clean_run(config, files, plan, report)
    if config.storage.uses_postgres:
        _refresh_statistics(config)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _refresh_statistics(config: WikiragConfig) -> None:
    """Give the tables this run changed much fresh planner statistics (storage.postgres.tend_changed_tables);
    a failure here costs query speed, never the run."""
    import psycopg

    with contextlib.suppress(WikiragError, psycopg.Error):
        tend_changed_tables(config.storage)


_MANIFEST_FIELDS = ("notes_total", "notes_skipped", "notes_failed", "notes_pending_extraction", "entities",
                    "relations", "chunks", "issues")


def _scanned(config: WikiragConfig) -> tuple[Any, dict[str, Any]]:
    """The vault's files as the scan finds them, and their stat signature (what the manifest compares)."""
    scan = scan_vault(config.vault, config.exclude, config.store, config.index.templates)
    return scan, stat_signature(scan)


def _unchanged(config: WikiragConfig, config_key: str, report: IndexReport, started: float,
               files: dict[str, Any]) -> bool:
    """Whether nothing changed since the last completed run (index.manifest); if so `report` says what it held."""
    figures = load_unchanged(config.workspace_dir, config_key, files)
    if figures is None or not search_files_ready(config.workspace_dir):
        return False
    shared = config.storage.uses_postgres and not config.storage.embedded  # a server other machines may write to
    if shared and REBUILDING in (recorded_meta(config.storage, config.workspace_dir, config.workspace) or {}):
        return False  # another machine's rebuild was cut short in the shared ledger: this run finishes it
    # Writes a ledger head owes (a run on another machine, on a shared ledger; a store copied mid-run): this run
    # ends them. Not asked of the embedded server, which reading the head would start: on one machine the
    # manifest is dropped before any write, so a run cut short leaves none to trust.
    owed = shared or not config.storage.uses_postgres
    if owed and unfinished_writes(config.storage, config.workspace_dir, config.workspace) is not None:
        return False
    vars(report).update(figures, notes_unchanged=figures["notes_total"] - figures["notes_skipped"],
                        seconds=round(time.perf_counter() - started, 3))
    return True


def _config_key(config: WikiragConfig) -> str:
    """Everything besides the files that decides what an index holds, and where it is held: a run that switches
    storage classes, PostgreSQL database or another server (NEO4J_URI, QDRANT_URL, ...) with no note changed
    must not say "unchanged" from the manifest."""
    storage = config.storage
    where: list[Any] = [storage.classes, storage.target if storage.uses_postgres else ""]  # no password in either
    if storage.servers:  # appended only when there are some: the key of a file or PostgreSQL store stays as it was
        where.append([list(pair) for pair in storage.servers])
    # `templates` decides which files are read: the scan's stat signature says that (a store keeps its key)
    index = {key: value for key, value in vars(config.index).items() if key != "templates"}
    return stable_digest([DERIVATION_VERSION, index, vars(config.route), config.route_overrides,
                          config.llm.model, embedding_spec(config).identity, config.exclude, where])


def _remember_clean_run(config: WikiragConfig, files: dict[str, Any] | None, plan: Plan, report: IndexReport) -> None:
    """Record the files' stat data after a run that left nothing to do (not when an LLM is configured
    and notes still wait for extraction: the next run has work)."""
    if files is None or report.interrupted or (plan.llm_model and report.notes_pending_extraction):
        return
    save_manifest(config.workspace_dir, _config_key(config), files,
                  {name: getattr(report, name) for name in _MANIFEST_FIELDS})


def hinting_llm(config: WikiragConfig, llm_func: Callable[..., Any] | None = None) -> HintingLLM | None:
    """The LLM LightRAG extracts with, wrapped to show each chunk its note's hint; None without one.
    Token usage is what the provider reports (llm.LLMUsage), kept on the wrapper as `usage`."""
    if llm_func is None and config.llm.model:
        from wikirag.llm.client import make_llm_func
        from wikirag.llm.usage import LLMUsage

        usage = LLMUsage()
        client = make_llm_func(config.llm, usage)
        client.cache_first_turn = config.index.gleaning > 0  # the gleaning call re-reads the first turn
        hinting = HintingLLM(client)
        hinting.usage = usage
        return hinting
    return HintingLLM(llm_func) if llm_func is not None else None


def _usage(hinting: HintingLLM | None) -> tuple[int, int, int, int, int]:
    if hinting is None:
        return 0, 0, 0, 0, 0
    usage = hinting.usage
    if usage is None:  # a caller-supplied function without usage accounting: count calls only
        return hinting.calls, 0, 0, 0, 0
    return (usage.calls, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
            usage.cache_write_input_tokens)


def live_run(plan: Plan, config: WikiragConfig, hinting: HintingLLM | None, *, estimate: bool,
             batch: bool = False) -> LiveRun | None:
    """The live progress line's inputs: the run's extract-routed notes, the LLM's usage and price, and (when
    someone watches) the cost model's estimate for them (with prompt caching, or at batch price)."""
    if hinting is None:
        return None
    candidates = [p for p in plan.to_process if plan.extracting(p)]
    live = LiveRun(total=len(candidates), usage=hinting.usage, client=hinting.llm_func, batched=batch)
    if not plan.llm_model or hinting.usage is None:
        return live
    from wikirag.plan.cost import estimate_vault
    from wikirag.plan.cost_settings import CostSettings

    try:
        settings = CostSettings.from_config(config)
        live.price = settings.price()
        if estimate and candidates:
            subset = VaultSubset(plan.vault, candidates)
            hints = {p: count_tokens(plan.hints[p], config.index.encoding) for p in candidates}
            scenario = estimate_vault(subset, {p: plan.decisions[p] for p in candidates}, settings, hints=hints,
                                      vanilla=False).scenarios["wikirag"]
            live.estimate_usd = scenario.usd_batch if batch else scenario.usd_cached
    except WikiragError:  # a model without a price: the line shows tokens only
        live.price = None
    return live


def _check_settings(config: WikiragConfig, llm_func: Callable[..., Any] | None) -> None:
    """Fail on a bad embedding, LLM or server storage setting before anything is written or deleted."""
    embedding_spec(config)
    require_server_env(config.storage)
    if config.llm.model and llm_func is None:
        from wikirag.llm.spec import parse_llm_spec

        parse_llm_spec(config.llm.model)


def store_exists(config: WikiragConfig) -> bool:
    return open_ledger_store(config).exists()

