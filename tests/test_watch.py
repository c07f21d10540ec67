"""`watch` with real watchdog observers on temp vaults: after it settles, the store equals a fresh index."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.storekit import HashEmbedding, copy_vault, ledger_doc, snapshot
from wikirag.errors import StoreLocked
from wikirag.index.run import run_index
from wikirag.index.watch import watch_vault
from wikirag.index.watch_events import ignored_path
from wikirag.settings import load_config
from wikirag.vault.model import Vault

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
QUIET = 0.3
STUCK = 300  # seconds: a wait on the watcher fails only past this, when it is stuck rather than slow


class Watcher:
    """Runs watch_vault on a thread; `settle()` returns once the watcher has applied every change made so far."""

    def __init__(self, vault: Path, store: Path) -> None:
        self.config = load_config(vault, store=store)
        self.stop = threading.Event()
        self.batches: list = []
        self.notices: list[str] = []
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.fences = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(watch_vault(self.config, quiet_seconds=QUIET, stop=self.stop,
                                    on_initial=lambda r: self.ready.set(), on_batch=self.batches.append,
                                    on_notice=self.notices.append, poll_seconds=0.05, retry_seconds=0.3,
                                    embedding_func=HashEmbedding().func()))
        except BaseException as exc:  # surfaced by the test
            self.error = exc
            self.ready.set()

    def __enter__(self) -> Watcher:
        self.thread.start()
        assert self.ready.wait(STUCK), "initial index did not finish"
        assert self.error is None, self.error
        return self

    def settle(self, timeout: float = STUCK) -> None:
        """Return once a successful batch has applied every change made before the call.

        The signal is a fence: an empty folder made after the changes (it holds no note: the index stays as
        it is). Watchdog delivers a vault's events in the order they happened, and a batch takes every event
        that came before its last one, so once a batch lists the fence among its paths, it or an earlier
        batch took every change made before it. (Waiting for a spell with no new batch instead returned while
        a long batch still ran on a loaded machine.) A fence made before the watcher follows a vault folder
        that was replaced is never seen (that batch reads the new folder whole), so when the watcher has
        reported nothing for 5 s another is made; any of them will do, a later one is a batch with nothing
        to do.
        """
        deadline = time.monotonic() + timeout
        fences: list[str] = []
        reports, still_since = -1, 0.0
        while True:
            assert self.error is None, self.error
            batches = list(self.batches)
            if any(fence in b.paths for b in batches for fence in fences) and not batches[-1].error:
                return
            if len(batches) != reports:
                reports, still_since = len(batches), time.monotonic()
            if not fences or time.monotonic() - still_since > 5:
                self.fences += 1
                fences.append(f"settle-fence-{self.fences}")
                (self.config.vault / fences[-1]).mkdir()
                still_since = time.monotonic()
            if time.monotonic() > deadline:
                raise AssertionError(f"no batch applied the changes in {timeout} s: {batches[-3:]}")
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(STUCK)
        assert self.error is None, self.error


def wait_until(condition: Callable[[], object], timeout: float = STUCK) -> bool:
    """Poll `condition` until it holds; False after `timeout` (the caller's assertion then says what is missing)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def fresh_snapshot(vault: Path, store: Path) -> dict:
    config = load_config(vault, store=store)
    run_index(config, embedding_func=HashEmbedding().func())
    return snapshot(config)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_vault(SAMPLE, tmp_path / "vault")


def test_scripted_edits_end_equal_to_a_fresh_index(vault, tmp_path):
    with Watcher(vault, tmp_path / "store") as watcher:
        (vault / "concepts" / "Purple cipher.md").write_text("Purple, broken by [[William Friedman]].\n")
        watcher.settle()
        assert watcher.batches, "a new note must produce a batch"
        turing = vault / "people" / "Alan Turing.md"
        for i in range(5):  # rapid repeated saves
            turing.write_text(turing.read_text() + f"\nSave {i} mentions [[Bombe]].\n")
        (vault / "people" / "Tommy Flowers.md").rename(vault / "people" / "Thomas Flowers.md")
        shutil.move(str(vault / "daily"), str(vault / "journal"))  # move a whole folder
        (vault / "projects" / "Venona.md").unlink()
        watcher.settle()
        (vault / "projects" / "Venona.md").write_text("Venona, recreated under the same name.\n")
        # an editor's atomic save: write a temp file, then rename it over the note
        tmp = vault / "projects" / ".Bombe.md.tmp"
        tmp.write_text("The Bombe, rewritten atomically; see [[Alan Turing]].\n")
        os.replace(tmp, vault / "projects" / "Bombe.md")
        (vault / "projects" / "Bombe.md.swp").write_bytes(b"\x00swap")
        watcher.settle()
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def test_a_vault_folder_removed_and_made_again_is_followed(vault, tmp_path):
    with Watcher(vault, tmp_path / "store") as watcher:
        kept = vault / "people" / "Alan Turing.md"
        saved = kept.read_text()
        shutil.rmtree(vault)  # a sync tool or a restore replaces the whole folder
        time.sleep(QUIET)
        vault.mkdir()
        (vault / "Alan Turing.md").write_text(saved)
        (vault / "Back.md").write_text("The vault came back; see [[Alan Turing]].\n")
        watcher.settle()
        (vault / "Later.md").write_text("A note saved after the folder came back.\n")  # the new folder is watched
        watcher.settle()
    assert not [b for b in watcher.batches if b.error]
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def test_a_vault_given_as_a_relative_path_is_watched_in_its_subfolders(vault, tmp_path, monkeypatch):
    monkeypatch.chdir(vault)
    with Watcher(Path("."), tmp_path / "store") as watcher:
        (vault / "people" / "Ada Lovelace.md").write_text("Ada, in a subfolder; see [[Alan Turing]].\n")
        watcher.settle()
        assert any(b.notes_new for b in watcher.batches), watcher.batches
        assert any("people/Ada Lovelace.md" in b.paths for b in watcher.batches)  # as the vault names it
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def test_a_burst_of_500_files_is_coalesced(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Hub.md").write_text("Hub.\n")
    staging = tmp_path / "staging"  # written beside the vault, then renamed in: the burst itself takes
    staging.mkdir()                  # milliseconds even on a loaded machine (as a sync tool delivers files)
    for i in range(500):
        (staging / f"N{i:03}.md").write_text(f"Note {i} links [[Hub]] and [[N{(i + 1) % 500:03}]].\n")
    with Watcher(vault, tmp_path / "store") as watcher:
        for path in sorted(staging.iterdir()):
            path.replace(vault / path.name)
        watcher.settle()
        assert len(watcher.batches) <= 5, [b.paths_touched for b in watcher.batches]
        assert sum(b.notes_new for b in watcher.batches) == 500, watcher.batches
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def test_an_unresolved_embed_resolves_when_its_attachment_appears(vault, tmp_path):
    (vault / "Gallery.md").write_text("Picture: ![[rotor-photo.png]]\n")
    with Watcher(vault, tmp_path / "store") as watcher:
        assert snapshot(watcher.config)["nodes"]["rotor-photo.png"]["entity_type"] == "unresolved"
        (vault / "attachments" / "rotor-photo.png").write_bytes(b"\x89PNG\r\n")
        watcher.settle()
        nodes = snapshot(watcher.config)["nodes"]
        assert nodes["rotor-photo.png"]["entity_type"] == "attachment"
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def test_watch_holds_the_writer_lock(vault, tmp_path):
    with Watcher(vault, tmp_path / "store") as watcher, pytest.raises(StoreLocked):
        run_index(watcher.config, embedding_func=HashEmbedding().func())


@pytest.mark.parametrize("path, ignored", [
    (".obsidian/workspace.json", True), (".wikirag/x/ledger.json", True), ("notes/.note.md.swp", True),
    ("notes/note.md~", True), ("notes/#note.md#", True), ("notes/4913", True), ("notes/note.md", False),
    ("attachments/img.png", False),
])
def test_ignored_paths(path, ignored):
    assert ignored_path(path) is ignored


def _ring_vault_and_watch(tmp_path: Path, seeds: int) -> tuple[Path, Path, list[str]]:
    """A vault of `seeds` notes linked in a ring, its store, and the real CLI's `watch` command for them."""
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(seeds):
        (vault / f"Seed{i}.md").write_text(f"Seed {i} links [[Seed{(i + 1) % seeds}]].\n")
    store = tmp_path / "store"
    command = [sys.executable, "-m", "wikirag.cli", "watch", str(vault), "--store", str(store),
               "--quiet-seconds", "0.2", "--json"]
    return vault, store, command


def _burst_batch_began(vault: Path, store: Path, notes_before: int) -> bool:
    """Whether the watcher's batch for the burst has begun: its write-ahead ledger names notes of the burst."""
    return len(ledger_doc(load_config(vault, store=store).workspace_dir).get("notes", {})) > notes_before


@pytest.mark.slow
def test_killed_mid_batch_then_restarted_equals_a_fresh_index(tmp_path):
    """SIGKILL the real CLI watcher while it indexes a burst; a restart must catch up exactly."""
    vault, store, command = _ring_vault_and_watch(tmp_path, 30)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # the initial index report
        assert line, proc.stderr.read()
        for i in range(200):
            (vault / f"Burst{i}.md").write_text(f"Burst {i} cites [[Seed{i % 30}]] and [[Missing {i % 7}]].\n")
        # Killed inside the batch: its ledger is written ahead, then 200 notes are embedded (seconds).
        assert wait_until(lambda: _burst_batch_began(vault, store, 30)), "the burst's batch never began"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    config = load_config(vault, store=store)
    report = run_index(config)  # the restart catches up (the same path watch starts with)
    assert report.notes_total == 230
    fresh = load_config(vault, store=tmp_path / "fresh")
    run_index(fresh)
    assert snapshot(config) == snapshot(fresh)


class FlakyLLM:
    """Fails every call until `healthy` is set, like a provider in an outage."""

    def __init__(self) -> None:
        from tests.fakes import FakeLLM

        self.inner = FakeLLM()
        self.healthy = threading.Event()
        self.failures = 0

    async def __call__(self, *args, **kwargs):
        if not self.healthy.is_set():
            self.failures += 1
            raise RuntimeError("503 upstream unavailable")
        return await self.inner(*args, **kwargs)


def test_an_llm_outage_never_stops_the_watcher(tmp_path):
    from wikirag.index.ledger import Ledger

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Essay.md").write_text("---\nwikirag: extract\n---\nCharles Babbage met Ada Lovelace in London.\n")
    llm = FlakyLLM()
    config = load_config(vault, store=tmp_path / "store", overrides={"llm": {"model": "fake:flaky"}})
    stop, done, extracted = threading.Event(), threading.Event(), threading.Event()

    def on_batch(batch) -> None:  # on the watcher's thread, between batches: the ledger is the batch's own
        entry = Ledger.load(config.workspace_dir).notes.get("Essay.md")
        if llm.healthy.is_set() and entry is not None and entry.status == "indexed":
            extracted.set()

    def run() -> None:
        asyncio.run(watch_vault(config, quiet_seconds=QUIET, stop=stop, on_batch=on_batch,
                                poll_seconds=0.05, retry_seconds=0.3, llm_func=llm,
                                embedding_func=HashEmbedding().func()))
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_until(lambda: llm.failures >= 2)  # the first run and at least one retry failed
    assert llm.failures >= 2 and not done.is_set()
    llm.healthy.set()
    wait_until(extracted.is_set)  # not a guess at how long the retries take: their backoff doubles
    stop.set()
    thread.join(STUCK)
    entry = Ledger.load(config.workspace_dir).notes["Essay.md"]
    assert entry.status == "indexed", entry.error
    assert any(f.rank == 2 for f in entry.entities)  # the retry extracted once the LLM came back


class Fault:
    """An injected failure the test switches on and off: raised by whatever it replaces while armed."""

    def __init__(self, exc: BaseException) -> None:
        self.exc, self.armed, self.raised = exc, threading.Event(), 0

    def check(self) -> None:
        if self.armed.is_set():
            self.raised += 1
            raise self.exc


@pytest.mark.parametrize("where, exc", [
    ("flush", OSError(28, "No space left on device")),
    ("flush", PermissionError(13, "Permission denied")),
    ("upsert", RuntimeError("store connection lost")),
    ("embedding", RuntimeError("embedding server returned 500")),
])
def test_watch_survives_a_failing_batch_and_catches_up(vault, tmp_path, monkeypatch, where, exc):
    from wikirag.lightrag.writer import StoreWriter

    fault = Fault(exc)
    if where == "embedding":
        original_embed = HashEmbedding.__call__

        async def embed(self, texts, **kwargs):
            fault.check()
            return await original_embed(self, texts, **kwargs)

        monkeypatch.setattr(HashEmbedding, "__call__", embed)
    else:
        name = "flush" if where == "flush" else "upsert_entities"
        original = getattr(StoreWriter, name)

        async def failing(self, *args, **kwargs):
            fault.check()
            return await original(self, *args, **kwargs)

        monkeypatch.setattr(StoreWriter, name, failing)
    with Watcher(vault, tmp_path / "store") as watcher:
        fault.armed.set()
        (vault / "New note.md").write_text("A new note about [[Alan Turing]] and [[Enigma]].\n")
        wait_until(lambda: any(b.error for b in watcher.batches))
        failed = [b for b in watcher.batches if b.error]
        assert failed and type(exc).__name__ in failed[0].error, watcher.batches
        assert watcher.thread.is_alive()
        fault.armed.clear()
        watcher.settle()
        assert not watcher.batches[-1].error  # the retry went through
        after = snapshot(watcher.config)
    assert after == fresh_snapshot(vault, tmp_path / "fresh")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM, SIGINT ignored as in a background job", "SIGINT"])
def test_watch_stops_cleanly_on_a_signal(tmp_path, how):
    vault, store, command = _ring_vault_and_watch(tmp_path, 20)
    background = how.startswith("SIGTERM")

    def ignore_sigint() -> None:  # what `cmd &` in a non-interactive shell does to the child
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ignore_sigint if background else None)
    try:
        assert proc.stdout.readline(), proc.stderr.read()  # the initial index report
        for i in range(60):
            (vault / f"Burst{i}.md").write_text(f"Burst {i} cites [[Seed{i % 20}]].\n")
        assert wait_until(lambda: _burst_batch_began(vault, store, 20)), "the burst's batch never began"
        proc.send_signal(signal.SIGTERM if background else signal.SIGINT)  # while the batch is in flight
        assert proc.wait(STUCK) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    config = load_config(vault, store=store)
    run_index(config)  # the lock was released, and the next run completes what was left
    fresh = load_config(vault, store=tmp_path / "fresh")
    run_index(fresh)
    assert snapshot(config) == snapshot(fresh)


def test_watchdogs_shutdown_race_line_is_dropped_and_nothing_else(caplog):
    import logging

    import wikirag.index.watch  # noqa: F401  (installs the filter)

    logger = logging.getLogger("watchdog.observers.inotify")
    with caplog.at_level(logging.DEBUG, logger="watchdog.observers.inotify"):
        logger.error("InotifyEmitter.queue_events() called when the thread is inactive")
        logger.error("inotify watch limit reached")
    assert [r.getMessage() for r in caplog.records] == ["inotify watch limit reached"]


def test_the_watcher_does_its_first_saves_setup_before_it_reports_ready(vault, tmp_path, monkeypatch):
    """Before `on_initial` (ready: saves are followed from now), the watcher builds the vault's backlinks and runs
    the full collection that the initial run's frozen objects are owed, so the first save costs what later ones
    do (0.8 s instead of 1.4-1.8 s at 13,000 notes, bench/scale.py); a save then updates the index as before."""
    import gc

    order: list[str] = []
    real_prepare, real_collect = Vault.prepare_updates, gc.collect
    monkeypatch.setattr(Vault, "prepare_updates", lambda self: (order.append("backlinks"), real_prepare(self))[1])
    monkeypatch.setattr(gc, "collect", lambda *a: (order.append("collect"), real_collect(*a))[1])
    with Watcher(vault, tmp_path / "store") as watcher:
        assert order == ["backlinks", "collect"]
        note = sorted(vault.rglob("*.md"))[3]
        note.write_text(note.read_text(encoding="utf-8") + "\nA line written while watched.\n", encoding="utf-8")
        watcher.settle()
        assert sum(b.notes_changed for b in watcher.batches) == 1


needs_symlinks = pytest.mark.skipif(os.name == "nt", reason="needs symlinks")


def _vault_with_symlinks(tmp_path: Path) -> tuple[Path, Path]:
    """A vault whose Shortcut.md links to real/Target.md, and whose folder Shelf links to the dot-folder .shelf
    (the scan follows both: their targets lie inside the vault), and its Target.md."""
    vault = tmp_path / "vault"
    target = vault / "real" / "Target.md"
    target.parent.mkdir(parents=True)
    target.write_text("Target, first version.\n")
    (vault / ".shelf").mkdir()
    (vault / ".shelf" / "Deep.md").write_text("Deep, first version.\n")
    os.symlink(target, vault / "Shortcut.md")
    os.symlink(vault / ".shelf", vault / "Shelf", target_is_directory=True)
    return vault, target


@needs_symlinks
def test_an_edit_to_the_target_of_a_symlinked_note_or_folder_reaches_the_link(tmp_path):
    """Found by a review: watchdog reports an edit under the link's target's real path (real/Target.md,
    .shelf/Deep.md), never under the link's, so Shortcut.md and Shelf/Deep.md kept their old text."""
    vault, target = _vault_with_symlinks(tmp_path)
    with Watcher(vault, tmp_path / "store") as watcher:
        target.write_text("Target, now linking [[Deep]].\n")
        (vault / ".shelf" / "Deep.md").write_text("Deep, now linking [[Target]].\n")
        (vault / ".shelf" / "Added.md").write_text("Added on the shelf; see [[Shortcut]].\n")
        watcher.settle()
        assert sum(b.notes_new for b in watcher.batches) == 1, watcher.batches
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


@needs_symlinks
def test_symlinks_made_while_watching_end_as_a_fresh_index(tmp_path):
    """A link made while watched was read as its target (the event path was resolved): Later.md never
    appeared. A second link to .shelf that sorts first (Annex) takes the folder over from Shelf."""
    vault, target = _vault_with_symlinks(tmp_path)
    with Watcher(vault, tmp_path / "store") as watcher:
        os.symlink(target, vault / "Later.md")
        os.symlink(vault / ".shelf", vault / "Annex", target_is_directory=True)
        watcher.settle()
        target.write_text("Target, edited after Later.md appeared.\n")
        (vault / ".shelf" / "Deep.md").write_text("Deep, edited while Annex holds it.\n")
        watcher.settle()
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


@needs_symlinks
def test_symlinks_removed_while_watching_end_as_a_fresh_index(tmp_path):
    """Removing Annex, the link that held .shelf, gives the folder back to Shelf, which the scan had passed
    over (each folder is walked once); later edits in .shelf reach Shelf's notes."""
    vault, _target = _vault_with_symlinks(tmp_path)
    os.symlink(vault / ".shelf", vault / "Annex", target_is_directory=True)
    with Watcher(vault, tmp_path / "store") as watcher:
        (vault / "Annex").unlink()
        (vault / "Shortcut.md").unlink()
        watcher.settle()
        (vault / ".shelf" / "Deep.md").write_text("Deep, edited once Shelf holds it again.\n")
        watcher.settle()
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


@pytest.mark.parametrize("change", ["the NFD spelling appears", "the NFD spelling, held, is removed"])
def test_a_name_spelled_twice_ends_as_a_fresh_index(tmp_path, change):
    """The scan keeps the first of two spellings of a name (NFD, in name order); the watcher kept reading the
    spelling it held (a new NFD file was never read) and dropped the note when the held file went, though the
    other spelling remained."""
    import unicodedata

    vault = tmp_path / "vault"
    vault.mkdir()
    nfc_file, nfd_file = vault / "Caf\u00e9.md", vault / unicodedata.normalize("NFD", "Caf\u00e9.md")
    nfc_file.write_text("The NFC spelling: tea.\n")
    if change.endswith("removed"):
        nfd_file.write_text("The NFD spelling: coffee.\n")
        if len(os.listdir(vault)) < 2:
            pytest.skip("this file system normalises names")
    with Watcher(vault, tmp_path / "store") as watcher:
        if change.endswith("removed"):
            nfd_file.unlink()
        else:
            nfd_file.write_text("The NFD spelling: coffee.\n")
            if len(os.listdir(vault)) < 2:
                pytest.skip("this file system normalises names")
        watcher.settle()
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


@pytest.mark.parametrize("held", ["nfd", "nfc"])
@pytest.mark.parametrize("how", ["deleted", "moved away"])
def test_a_folder_spelled_twice_loses_only_its_own_notes(tmp_path, held, how):
    """Café in NFC and in NFD are two folders whose notes share their NFC paths. Removing one made the
    watcher forget every note under the shared path, the other folder's too."""
    import shutil
    import unicodedata

    vault = tmp_path / "vault"
    vault.mkdir()
    nfc, nfd = vault / "Caf\u00e9", vault / unicodedata.normalize("NFD", "Caf\u00e9")
    for folder, word in ((nfc, "tea"), (nfd, "coffee")):
        folder.mkdir(exist_ok=True)
        (folder / "Menu.md").write_text(f"The menu: {word}. [[Other]]\n")
        (folder / f"Only {word}.md").write_text(f"Only in {word}.\n")
    if len(os.listdir(vault)) < 2:
        pytest.skip("this file system normalises names")
    (vault / "Other.md").write_text("Links [[Menu]].\n")
    with Watcher(vault, tmp_path / "store") as watcher:
        gone = nfd if held == "nfd" else nfc
        if how == "deleted":
            shutil.rmtree(gone)
        else:
            gone.rename(tmp_path / "elsewhere")
        watcher.settle()
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def test_a_batch_that_fails_while_reading_its_paths_is_retried_from_the_whole_vault(vault, tmp_path, monkeypatch):
    """A failure part-way through a batch's paths leaves the in-memory vault partly updated, and the retry's
    batch names no path: it must read the vault whole, or the paths after the failure are lost until they
    change again (the note below stayed out of the index)."""
    real_update = Vault.update_file
    failed: list[str] = []

    def update_file(self, rel, *args, **kwargs):
        if rel == "Zeta note.md" and not failed:
            failed.append(rel)
            raise OSError(5, "Input/output error")
        return real_update(self, rel, *args, **kwargs)

    monkeypatch.setattr(Vault, "update_file", update_file)
    with Watcher(vault, tmp_path / "store") as watcher:
        (vault / "Alpha note.md").write_text("Alpha links [[Alan Turing]].\n")
        (vault / "Zeta note.md").write_text("Zeta links [[Enigma]].\n")
        watcher.settle()
        assert failed and any(b.error for b in watcher.batches), watcher.batches
        after = snapshot(watcher.config)
    assert after == fresh_snapshot(vault, tmp_path / "fresh")


def test_watch_finishes_a_rebuild_killed_mid_wipe_before_it_opens_the_store(vault, tmp_path, monkeypatch):
    """It refused to start until `index` had finished the rebuild; it finishes it itself now, under its lock."""
    from tests.test_index import rebuild_killed_mid_wipe

    config = load_config(vault, store=tmp_path / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    rebuild_killed_mid_wipe(config, vault, monkeypatch)
    with Watcher(vault, tmp_path / "store") as watcher:
        pass
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")
    assert not (config.workspace_dir / "wikirag_rebuild.json").exists()


def test_excluded_files_changed_in_obsidian_end_as_a_fresh_index(vault, tmp_path):
    """Obsidian keeps its Excluded files in .obsidian/app.json, a dot-folder the watcher reads no note from:
    a change there decides which notes count, so the watcher reads the vault whole with the new rules."""
    app_json = vault / ".obsidian" / "app.json"
    with Watcher(vault, tmp_path / "store") as watcher:
        settings = json.loads(app_json.read_text()) if app_json.exists() else {}
        app_json.parent.mkdir(exist_ok=True)
        app_json.write_text(json.dumps({**settings, "userIgnoreFilters": ["daily/"]}))
        watcher.settle()
        watched = snapshot(watcher.config)
    assert not any(path.startswith("daily/") for path in ledger_doc(watcher.config.workspace_dir)["notes"])
    assert watched == fresh_snapshot(vault, tmp_path / "fresh")


def test_excluded_files_in_a_symlinked_obsidian_folder_are_followed(vault, tmp_path):
    """`.obsidian` a symlink to a folder outside the vault (settings shared between vaults, a dotfiles repo): the
    vault's recursive watch does not follow it, so an edit of its app.json went unseen and the watch kept
    indexing the notes the new Excluded files leave out. An index reads app.json through the link."""
    settings = tmp_path / "shared-obsidian"
    shutil.rmtree(vault / ".obsidian", ignore_errors=True)
    settings.mkdir()
    (settings / "app.json").write_text(json.dumps({"userIgnoreFilters": ["projects/"]}))
    (vault / ".obsidian").symlink_to(settings, target_is_directory=True)
    with Watcher(vault, tmp_path / "store") as watcher:
        notes = ledger_doc(watcher.config.workspace_dir)["notes"]
        assert any(p.startswith("daily/") for p in notes) and not any(p.startswith("projects/") for p in notes)
        (settings / "app.json").write_text(json.dumps({"userIgnoreFilters": ["daily/"]}))
        watcher.settle()  # the change comes before the fence: the fence's batch (or an earlier one) took it
        watched = snapshot(watcher.config)
    notes = ledger_doc(watcher.config.workspace_dir)["notes"]
    assert not any(p.startswith("daily/") for p in notes) and any(p.startswith("projects/") for p in notes)
    assert watched == fresh_snapshot(vault, tmp_path / "fresh")


def test_a_template_folder_set_in_obsidian_ends_as_a_fresh_index(vault, tmp_path):
    """The core Templates plugin keeps its folder in .obsidian/templates.json: setting it leaves that folder's notes
    out (vault/ignore.py), so the watcher reads the vault whole with the new rules, as for Excluded files."""
    with Watcher(vault, tmp_path / "store") as watcher:
        assert any(p.startswith("projects/") for p in ledger_doc(watcher.config.workspace_dir)["notes"])
        (vault / ".obsidian" / "templates.json").write_text(json.dumps({"folder": "projects/"}))
        watcher.settle()
        watched = snapshot(watcher.config)
    assert not any(path.startswith("projects/") for path in ledger_doc(watcher.config.workspace_dir)["notes"])
    assert watched == fresh_snapshot(vault, tmp_path / "fresh")


def test_templaters_folder_in_a_symlinked_obsidian_folder_is_followed(vault, tmp_path):
    """Templater keeps its folder in .obsidian/plugins/templater-obsidian/data.json, a subfolder the watch of a
    symlinked `.obsidian` (not recursive) did not see: the watch follows that folder too."""
    settings = tmp_path / "shared-obsidian"
    shutil.copytree(vault / ".obsidian", settings)
    shutil.rmtree(vault / ".obsidian")
    data_json = settings / "plugins" / "templater-obsidian" / "data.json"
    data_json.parent.mkdir(parents=True)
    data_json.write_text(json.dumps({"templates_folder": "projects"}))
    (vault / ".obsidian").symlink_to(settings, target_is_directory=True)
    with Watcher(vault, tmp_path / "store") as watcher:
        notes = ledger_doc(watcher.config.workspace_dir)["notes"]
        assert any(p.startswith("daily/") for p in notes) and not any(p.startswith("projects/") for p in notes)
        data_json.write_text(json.dumps({"templates_folder": "daily"}))
        watcher.settle()
        watched = snapshot(watcher.config)
    notes = ledger_doc(watcher.config.workspace_dir)["notes"]
    assert not any(p.startswith("daily/") for p in notes) and any(p.startswith("projects/") for p in notes)
    assert watched == fresh_snapshot(vault, tmp_path / "fresh")


def _reads_of_the_next_index(config, monkeypatch) -> list[str]:
    """The notes a `wikirag index` after the watch reads from disk (the others it takes from the parse cache)."""
    import wikirag.vault.model as model

    reads: list[str] = []
    real_read = model.read_note
    monkeypatch.setattr(model, "read_note", lambda abs_path, rel, *a: reads.append(rel) or real_read(abs_path, rel, *a))
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert report.notes_new == report.notes_changed == report.notes_deleted == 0
    return reads


def test_an_index_after_the_watch_does_not_read_again_what_the_watch_read(vault, tmp_path, monkeypatch):
    """The watch keeps the parse cache's stat data (path -> size, mtime) in step with the files its batches
    read: the next `wikirag index` trusts it, rather than reading and hashing every note edited under watch."""
    old = 1_600_000_000
    for path in vault.rglob("*.md"):
        os.utime(path, (old, old))  # not racy: modified long before the cache rows are written
    run_index(load_config(vault, store=tmp_path / "store"), embedding_func=HashEmbedding().func())
    edited, touched, added = (vault / "projects" / "Bombe.md", vault / "people" / "Alan Turing.md",
                              vault / "New note.md")
    with Watcher(vault, tmp_path / "store") as watcher:
        edited.write_text(edited.read_text() + "\nAlso see [[Purple cipher]].\n")  # a new size and mtime
        os.utime(edited, (old + 60, old + 60))
        os.utime(touched, (old + 60, old + 60))  # saved unchanged: a new mtime, the same bytes
        added.write_text("A note about [[Bombe]].\n")
        os.utime(added, (old + 60, old + 60))
        (vault / "Index.md").unlink()
        watcher.settle()
    assert _reads_of_the_next_index(watcher.config, monkeypatch) == []
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def test_a_note_edited_just_before_a_batch_is_trusted_once_the_watch_stops(vault, tmp_path, monkeypatch):
    """A note saved moments before its batch is "racy" (a second save in the same clock tick would keep its
    mtime), so its row is not trusted then; the watch writes it again later, at its stop at the latest."""
    old = 1_600_000_000
    for path in vault.rglob("*.md"):
        os.utime(path, (old, old))
    run_index(load_config(vault, store=tmp_path / "store"), embedding_func=HashEmbedding().func())
    edited = vault / "projects" / "Bombe.md"
    with Watcher(vault, tmp_path / "store") as watcher:
        edited.write_text(edited.read_text() + "\nAlso see [[Purple cipher]].\n")  # mtime: now
        watcher.settle()
        time.sleep(2.5)  # past the racy window (index.parsecache.RACY_NS) before the watch stops
    assert _reads_of_the_next_index(watcher.config, monkeypatch) == []


def test_a_racy_row_is_read_again_before_it_is_trusted(tmp_path):
    """A save in the clock tick of the one the watch read, of the same size, keeps the stat data: the row the
    watch writes again once the tick is old must not vouch for bytes it did not read."""
    from wikirag.index.watch_events import still_as_read

    note = tmp_path / "vault" / "a.md"
    note.parent.mkdir()
    note.write_text("hello [[b]]\n")
    vault = Vault.load(tmp_path / "vault")
    assert still_as_read(vault, "a.md")
    mtime = note.stat().st_mtime_ns
    note.write_text("jello [[b]]\n")
    os.utime(note, ns=(mtime, mtime))
    assert not still_as_read(vault, "a.md")
    note.write_text("hello [[b]]\n")
    os.utime(note, ns=(mtime, mtime))
    assert still_as_read(vault, "a.md")
    note.unlink()
    assert not still_as_read(vault, "a.md")


def test_a_change_to_excluded_files_waits_for_the_vault_to_be_quiet(tmp_path):
    """A `git checkout` that rewrites .obsidian/app.json among 500 notes is one batch, once the vault is quiet.
    The change to app.json was taken at the loop's next look (0.1 s) instead: with app.json removed and not yet
    written back, the vault was read whole without its Excluded files (their notes indexed, embedded, maybe
    extracted), then again with them (removed), then the notes' own batch."""
    from watchdog.events import FileDeletedEvent

    from wikirag.index.watch_events import EventCollector

    collector = EventCollector(tmp_path, tmp_path / ".wikirag")
    collector.dispatch(FileDeletedEvent(str(tmp_path / ".obsidian" / "app.json")))
    assert not collector.take_settings_touched(quiet_seconds=STUCK)  # the checkout goes on
    assert collector.take_settings_touched(quiet_seconds=0)
    assert not collector.take_settings_touched(quiet_seconds=0)  # taken once


def test_a_folder_that_arrives_after_one_left_makes_the_watches_again_once(tmp_path):
    """Watchdog drops the watch of a folder moved out of the vault and straight back in (same inode), and which
    folder left cannot be told once it is gone: any folder arriving in the vault after one left asks for the
    watches again, once. A folder made with none gone, or one that arrives in the store or a dot-folder, does
    not."""
    from watchdog.events import DirCreatedEvent, DirDeletedEvent

    from wikirag.index.watch_events import EventCollector

    collector = EventCollector(tmp_path, tmp_path / ".wikirag")
    collector.dispatch(DirCreatedEvent(str(tmp_path / "New")))
    assert not collector.take_rewatch()  # nothing left before it
    collector.dispatch(DirDeletedEvent(str(tmp_path / ".wikirag" / "tmp")))
    collector.dispatch(DirCreatedEvent(str(tmp_path / "Other")))
    assert not collector.take_rewatch()  # the store's own folders do not count
    collector.dispatch(DirDeletedEvent(str(tmp_path / "people")))
    collector.dispatch(DirCreatedEvent(str(tmp_path / ".trash" / "x")))
    assert not collector.take_rewatch()  # arrived where nothing is read
    collector.dispatch(DirCreatedEvent(str(tmp_path / "Back")))
    assert collector.take_rewatch()
    assert not collector.take_rewatch()  # taken once
    collector.dispatch(DirCreatedEvent(str(tmp_path / "Later")))
    assert not collector.take_rewatch()  # the departure was answered by the watches made again


def test_a_folder_back_from_outside_is_followed_where_no_second_inotify_instance_is_lent(vault, tmp_path,
                                                                                         monkeypatch):
    """Where inotify's per-user limits refuse the watch's second observer (EMFILE, ENOSPC), the vault's watch is
    made again in the observer it has, and the vault read whole for what changed in between."""
    import errno

    from wikirag.index import watch_observers

    class Refused(watch_observers.Observer):
        def start(self) -> None:
            raise OSError(errno.EMFILE, "Too many open files")

    with Watcher(vault, tmp_path / "store") as watcher:
        monkeypatch.setattr(watch_observers, "Observer", Refused)
        (vault / "people").rename(tmp_path / "trash")
        (tmp_path / "trash").rename(vault / "Back")
        watcher.settle()
        (vault / "Back" / "Alan Turing.md").write_text("Rewritten after the folder came back; see [[Bombe]].\n")
        watcher.settle()
    assert not [b for b in watcher.batches if b.error], watcher.batches
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")


def _nested(top: Path, depth: int) -> Path:
    """`depth` folders named d, each in the one before, under `top`; the deepest."""
    folder = top
    for _ in range(depth):
        folder = folder / "d"
        folder.mkdir(parents=True)
    return folder


def _remove_deep(top: Path) -> None:
    """shutil.rmtree without its call per folder (pytest's own tmp cleanup would fail on a deep tree): files
    first, then folders deepest first."""
    from wikirag.vault.on_disk import walk_folders

    for folder, _dirnames, filenames in reversed(list(walk_folders(top))):
        for name in filenames:
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)


def test_a_vault_a_thousand_folders_deep_is_watched_to_the_bottom(tmp_path):
    """Found by fuzzing: watchdog adds a recursive watch's folders with os.walk, which Python 3.11 runs a call per
    folder, so `watch` on a vault ~1,000 folders deep died at start with RecursionError. A deep folder moved in
    brings an event per folder in it, and apply_paths walked the folder again for each (more than 300 s here);
    the edit at its bottom is seen only if watchdog's walk of it, in its own thread, got through too."""
    vault, staging = tmp_path / "vault", tmp_path / "staging"
    vault.mkdir()
    (vault / "Top.md").write_text("Top.\n")
    bottom = _nested(vault, 1000)
    (bottom / "Deep.md").write_text("Deep, under a thousand folders; see [[Top]].\n")
    moved_bottom = vault / "e" / _nested(staging / "e", 999).relative_to(staging / "e")
    (staging / "e" / moved_bottom.relative_to(vault / "e") / "Moved.md").write_text("Moved in whole.\n")
    try:
        with Watcher(vault, tmp_path / "store") as watcher:
            assert "d/" * 1000 + "Deep.md" in ledger_doc(watcher.config.workspace_dir)["notes"]
            (bottom / "Deep.md").write_text("Deep, edited; see [[Top]] and [[Later]].\n")
            (bottom / "Later.md").write_text("Later, made at the bottom.\n")
            watcher.settle()
            (staging / "e").rename(vault / "e")  # one event, for the top folder: the batch reads the rest
            watcher.settle()
            (moved_bottom / "Moved.md").write_text("Moved in whole, then edited there.\n")  # watched once moved in
            watcher.settle()
        assert not [b for b in watcher.batches if b.error], watcher.batches
        notes = ledger_doc(watcher.config.workspace_dir)["notes"]
        assert {"d/" * 1000 + "Later.md", "e/" + "d/" * 999 + "Moved.md"} <= set(notes)
        assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")
    finally:
        for top in (vault, staging):
            if top.exists():
                _remove_deep(top)


def test_a_vault_folder_renamed_away_is_reported_once_and_its_return_followed(vault, tmp_path):
    """A user who renames the vault folder while `watch` runs saw nothing at all: the watch (its store inside the
    vault went with it) waits for the folder to come back, and now says so, once, and says when it is back."""
    with Watcher(vault, tmp_path / "store") as watcher:
        vault.rename(tmp_path / "renamed")
        deadline = time.monotonic() + STUCK
        while not watcher.notices and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # more polls while it is gone: still one notice
        assert len(watcher.notices) == 1 and "is gone" in watcher.notices[0], watcher.notices
        assert str(vault) in watcher.notices[0]
        (tmp_path / "renamed" / "people" / "Alan Turing.md").write_text("Edited while the vault was away.\n")
        time.sleep(QUIET * 3)  # its event names a path that is gone
        (tmp_path / "renamed").rename(vault)
        (vault / "Back.md").write_text("Saved after the vault came back; see [[Alan Turing]].\n")
        watcher.settle()
    assert len(watcher.notices) == 2 and "is back" in watcher.notices[1], watcher.notices
    assert not [b for b in watcher.batches if b.error]
    assert snapshot(watcher.config) == fresh_snapshot(vault, tmp_path / "fresh")
