"""`wikirag watch`: follow the vault's file events and keep the index exactly in step.

One code path: every batch goes through `pipeline.index_vault`, the same incremental run as
`wikirag index`, with the watcher's in-memory Vault updated file by file (so a save does not rescan
10,000 notes) and one LightRAG instance kept open between batches.

Events are only hints: a batch re-reads every touched path from disk (a moved folder, an editor's
write-temp-then-rename, a file deleted and recreated), so the order and kind of events cannot make the
index drift. Events are coalesced until the vault has been quiet for `quiet_seconds`: a `git checkout`
touching 500 notes becomes one batch.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wikirag.errors import VaultNotFound
from wikirag.index.handoff import HandoffServer
from wikirag.index.parsecache import refresh_parse_cache
from wikirag.index.rebuild import rebuild_pending
from wikirag.index.report import IndexReport
from wikirag.index.run import RunState, StoreLock, hinting_llm, index_vault, open_store_engine
from wikirag.index.store_model import adopt_store_embedding
from wikirag.index.watch_events import (
    EventCollector,
    apply_paths,
    changed_on_disk,
    folder_identity,
    rules_changed,
    still_as_read,
)
from wikirag.index.watch_observers import Watches
from wikirag.lightrag.embeddings import EmbeddingCounter
from wikirag.lightrag.engine import check_vector_width, preload_embedder
from wikirag.redaction import redact
from wikirag.settings import WikiragConfig
from wikirag.storage.server_env import require_server_env
from wikirag.vault.ignore import IgnoreRules
from wikirag.vault.model import Vault

FULL_RESCAN_ABOVE = 2000  # a batch touching more paths than this re-reads the whole vault instead


@dataclass
class BatchReport:
    """What one watch batch did; printed as one JSON line under `--json`."""

    batch: int
    paths_touched: int
    notes_changed: int
    notes_deleted: int
    notes_new: int
    entities_written: int
    entities_deleted: int
    relations_written: int
    relations_deleted: int
    chunks_written: int
    chunks_deleted: int
    entities: int
    relations: int
    seconds: float
    issues: list[str] = field(default_factory=list)
    error: str | None = None  # the batch failed (disk full, store or embedding error); retried with backoff
    # The vault paths the batch's events touched, re-read from disk, sorted (empty for a retry). Events come in
    # the order of the changes, so a successful batch that lists the path of a change applied every earlier one.
    paths: list[str] = field(default_factory=list)


async def watch_vault(
    config: WikiragConfig,
    *,
    quiet_seconds: float = 1.0,
    on_batch: Callable[[BatchReport], None] | None = None,
    on_initial: Callable[[IndexReport], None] | None = None,
    on_notice: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    poll_seconds: float = 0.1,
    retry_seconds: float = 30.0,
    **engine_kwargs: Any,
) -> None:
    """Index once, then follow the vault until `stop` is set (or Ctrl-C). `on_notice` hears, in one line, what
    the watch cannot act on: the vault folder gone (moved, renamed or deleted) and its return."""
    stop = stop or threading.Event()
    VaultNotFound.unless_folder(config.vault)
    require_server_env(config.storage)  # a server storage LightRAG cannot connect to: one line, nothing opened
    # The engine opened below embeds every batch: with the store's own model (refused in one line when the
    # settings name another, or when the ledger was written to other servers), its vectors' width checked
    # before anything is written, as `index` does.
    handoff = HandoffServer(config)  # takes the `wikirag index` runs of the same settings while it watches
    adopt_store_embedding(config, writer=True)  # nothing while a rebuild cut short is marked: finished below
    if engine_kwargs.get("embedding_func") is None:
        await check_vector_width(config)
    with StoreLock(config):
        if rebuild_pending(config) is not None:  # a rebuild cut short: finished as `index` would, before an
            await index_vault(config, locked=True, **engine_kwargs)  # engine opens on what it left
        # The observer starts before the vault is read, so nothing saved during the initial index is
        # missed: those events simply make the first batch re-read the files.
        collector = EventCollector(config.vault, config.store)
        watches = Watches(collector, config.vault)
        root = folder_identity(config.vault)
        await handoff.start()  # an `index` asking now waits for the initial run, then gets a batch of its own

        def read_whole() -> Vault:
            collector.reading()
            read = None
            try:
                read = Vault.load(config.vault, exclude=config.exclude, store=config.store,
                                  templates=config.index.templates)
            finally:
                collector.follow(read.symlinks if read is not None else vault.symlinks)
            return read

        try:
            vault = Vault.load(config.vault, exclude=config.exclude, store=config.store,
                               templates=config.index.templates)
            collector.follow(vault.symlinks)
            counter = engine_kwargs.pop("embedding_counter", None) or EmbeddingCounter()
            hinting = hinting_llm(config, engine_kwargs.pop("llm_func", None))
            run = {"rag": None, "hinting": hinting, "locked": True, "embedding_counter": counter,
                   "state": RunState()}  # ledger, indexes and plan stay in memory between batches
            async with open_store_engine(config, embedding_counter=counter, llm_func=hinting, **engine_kwargs) as rag:
                run["rag"] = rag
                retry = _Retry(retry_seconds)
                failures = _Retry(retry_seconds)
                batch = 0
                cache_rows = _ParseCacheSync(vault)
                started = time.perf_counter()
                try:
                    initial = await index_vault(config, vault=vault, should_stop=stop.is_set, **run)
                except Exception as exc:  # noqa: BLE001  (any failure: the watcher reports it and retries)
                    failures.failed()
                    if on_batch:
                        on_batch(_failed_batch(batch, set(), exc, time.perf_counter() - started))
                else:
                    # While idle, what the first save would otherwise pay: backlinks of every note (80 ms at
                    # 13,000 notes), and the full collection of what the run froze and handed back to the
                    # collector at its end (index.run.thaw_long_lived; 0.6 s at 13,000 notes)
                    vault.prepare_updates()
                    gc.collect()
                    if engine_kwargs.get("embedding_func") is None:
                        preload_embedder(config)  # and the local model, when the initial run embedded nothing
                    cache_rows.sync(config, run["state"], vault)
                    if on_initial:
                        on_initial(initial)
                    retry.after(initial, hinting is not None)
                rescan = reread = gone = False
                while not stop.is_set():
                    await handoff.pause(poll_seconds)
                    watches.stop_retired(time.monotonic())
                    now = folder_identity(config.vault)
                    if gone and now is not None:
                        if on_notice:
                            on_notice(f"the vault folder {config.vault} is back")
                        gone, rescan = False, True  # what changed while it was away is read from disk
                    if now != root or collector.root_lost:  # the vault folder was removed or replaced
                        if now is None:
                            handoff.answer(handoff.take(), error=f"the vault folder {config.vault} is gone")
                            if not gone and on_notice:
                                on_notice(f"the vault folder {config.vault} is gone (moved, renamed or deleted): "
                                          "waiting for it to come back; to follow it under a new name, stop and "
                                          "start `wikirag watch` there")
                            gone = True
                            continue  # gone (rm -rf, a sync tool, a restore): wait for it to come back
                        # Back as another folder: the old one's watches died with it (its inode number may
                        # come round again, hence root_lost). Watch the new one and read it whole.
                        collector.root_lost = False
                        watches.again_in_place()
                        root, rescan = now, True
                    handed = handoff.take()  # an `index` handed over: a batch now, of everything that changed
                    quiet = 0 if handed else quiet_seconds
                    if collector.take_settings_touched(quiet) and rules_changed(vault, IgnoreRules.for_vault(
                            config.vault, config.exclude, config.store, config.index.templates)[0]):
                        rescan = True  # Excluded files or template folders changed: read the vault whole anew
                    reals = collector.drain_if_quiet(quiet)
                    if reals and collector.take_rewatch():  # before the batch reads the folder that arrived
                        rescan = watches.again() or rescan
                    if not reals and not handed and not retry.due() and not failures.due() and not rescan:
                        continue
                    # Empty for a retry: notes whose extraction failed, or a failed batch
                    paths, relinked = collector.touched(reals or (), vault.symlinks)
                    batch += 1
                    started = time.perf_counter()
                    try:
                        whole = rescan or reread or relinked or len(paths) > FULL_RESCAN_ABOVE
                        if handed and not whole:  # what the events have not told yet, by a stat scan
                            on_disk, whole = changed_on_disk(vault, config.exclude, config.store,
                                                                 config.index.templates)
                            paths |= on_disk
                        # Until the vault is current: a failure part-way through the paths (or the read) leaves
                        # it partly updated and the retry's batch names none of them, so the retry reads whole.
                        reread = True
                        if whole or apply_paths(vault, paths, cache_rows.paths):
                            rescan = False
                            vault = read_whole()
                            cache_rows.paths |= set(vault.notes)
                        reread = False
                        report = await index_vault(config, vault=vault, should_stop=stop.is_set, **run)
                    except Exception as exc:  # noqa: BLE001
                        # The write-ahead ledger on disk still says what the store misses; the next attempt
                        # (after a backoff, or at the next change) re-plans from it and the vault.
                        failures.failed()
                        failed = _failed_batch(batch, paths, exc, time.perf_counter() - started)
                        handoff.answer(handed, error=failed.error)
                        if on_batch:
                            on_batch(failed)
                        continue
                    cache_rows.sync(config, run["state"], vault)
                    handoff.answer(handed, report)
                    failures.succeeded()
                    retry.after(report, hinting is not None)
                    if on_batch:
                        on_batch(_batch_report(batch, paths, report, time.perf_counter() - started))
                # Stopped: the rows still racy at their batch, stat data of a save moments before it, are
                # trusted now, at least 2 s later in most cases (a long-running watch's usual stop)
                cache_rows.sync(config, run["state"], vault)
        finally:
            await handoff.close()
            watches.stop()


class _ParseCacheSync:
    """The notes whose parse-cache rows (stat data included) the watch has yet to bring in step with what it
    read (index.parsecache.refresh_parse_cache), so that the next `wikirag index` does not read them again."""

    def __init__(self, vault: Vault) -> None:
        self.paths = set(vault.notes)  # the watch's own read of the vault: rows differing from it are written
        self.racy: set[str] = set()  # written with stat data too fresh to trust: written again later

    def sync(self, config: WikiragConfig, state: RunState, vault: Vault) -> None:
        """After a batch that planned `vault` (its body token counts are the rows'). A note written racy is
        read again first: a save in the same clock tick as the one read would have kept its stat data, and its
        event may not be taken yet (the watch stopping)."""
        if not self.paths or state.plan is None or state.plan.vault is not vault:
            return
        for path in sorted(self.racy & self.paths):
            if not still_as_read(vault, path):
                vault.stats.pop(path, None)
                vault.clean.discard(path)
        self.racy = refresh_parse_cache(config.workspace_dir, config.index.encoding, vault, state.plan.body_tokens,
                                        self.paths)
        self.paths = set(self.racy)


class _Retry:
    """Backoff for notes whose LLM extraction failed (rate limit, outage): they stay indexed from their
    links and are retried after `first` seconds, doubling up to ten minutes, until they succeed."""

    MAX_SECONDS = 600.0

    def __init__(self, first: float) -> None:
        self.first = first
        self.delay = first
        self.at: float | None = None

    def after(self, report: IndexReport, has_llm: bool) -> None:
        if has_llm and report.notes_pending_extraction:
            self.at = time.monotonic() + self.delay
            self.delay = min(self.delay * 2, self.MAX_SECONDS)
        else:
            self.at, self.delay = None, self.first

    def failed(self) -> None:
        """A whole batch failed: try again after the current delay, then back off."""
        self.at = time.monotonic() + self.delay
        self.delay = min(self.delay * 2, self.MAX_SECONDS)

    def succeeded(self) -> None:
        self.at, self.delay = None, self.first

    def due(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


def _failed_batch(batch: int, paths: set[str], exc: BaseException, seconds: float) -> BatchReport:
    message = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
    return BatchReport(batch=batch, paths_touched=len(paths), notes_changed=0, notes_deleted=0, notes_new=0,
                       entities_written=0, entities_deleted=0, relations_written=0, relations_deleted=0,
                       chunks_written=0, chunks_deleted=0, entities=0, relations=0, seconds=round(seconds, 3),
                       error=redact(message), paths=sorted(paths))


def _batch_report(batch: int, paths: set[str], report: IndexReport, seconds: float) -> BatchReport:
    return BatchReport(
        batch=batch,
        paths_touched=len(paths),
        notes_changed=report.notes_changed,
        notes_deleted=report.notes_deleted,
        notes_new=report.notes_new,
        entities_written=report.entities_written,
        entities_deleted=report.entities_deleted,
        relations_written=report.relations_written,
        relations_deleted=report.relations_deleted,
        chunks_written=report.chunks_written,
        chunks_deleted=report.chunks_deleted,
        entities=report.entities,
        relations=report.relations,
        seconds=round(seconds, 3),
        # Only the touched files' problems: a broken note is reported when it changes, not every batch.
        issues=[i for i in report.issues if i.split(": ", 1)[0] in paths
                or any(i.startswith(p + "/") for p in paths)],
        paths=sorted(paths),
    )
