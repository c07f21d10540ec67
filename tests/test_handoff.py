"""`wikirag index` beside a running watch: the watch runs it (index/handoff.py), with the same figures as a
run of its own would give, and refuses it in one line when it follows other settings or another wikirag."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import copy_vault, snapshot
from tests.test_watch import SAMPLE, Watcher, fresh_snapshot, wait_until
from wikirag.cli import app
from wikirag.errors import StoreLocked
from wikirag.index import handoff
from wikirag.index.handoff import HandoffFailed, HandoffServer, hand_to_watch
from wikirag.index.watch_events import changed_on_disk
from wikirag.settings import load_config
from wikirag.vault.model import Vault

runner = CliRunner()
HANDOFF = pytest.mark.skipif(handoff.address(load_config(SAMPLE, store=SAMPLE / ".s")) is None,
                             reason="no local socket for a handoff on this platform")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_vault(SAMPLE, tmp_path / "vault")


def index(vault: Path, store: Path, *args: str):
    return runner.invoke(app, ["index", str(vault), "--store", str(store), "--json", *args])


def edit(vault: Path) -> None:
    note = vault / "people" / "Alan Turing.md"
    note.write_text(note.read_text() + "\nHe kept a tame zanzibarite.\n")
    (vault / "concepts" / "Handoff.md").write_text("A note about [[Alan Turing]].\n")
    (vault / "Index.md").unlink()


COUNTS = ("notes_total", "notes_new", "notes_changed", "notes_deleted", "notes_unchanged", "chunks_written",
          "entities_written", "relations_written", "entities", "relations", "chunks")


@HANDOFF
def test_index_beside_a_watch_is_run_by_the_watch(vault, tmp_path, fast_embedding):
    alone = copy_vault(vault, tmp_path / "alone")  # the same edits, indexed by a run of its own
    assert index(alone, tmp_path / "alone-store").exit_code == 0
    edit(alone)
    expected = json.loads(index(alone, tmp_path / "alone-store").stdout)
    store = tmp_path / "store"
    with Watcher(vault, store) as watcher:
        edit(vault)
        result = index(vault, store)
        assert result.exit_code == 0, result.output
        assert "Run by the wikirag watch writing this store" in result.stderr
        report = json.loads(result.stdout)
        # One run, the figures of a run of its own: every change made before `index` was called is in it,
        # whether or not the watch's events for it had come
        assert {k: report[k] for k in COUNTS} == {k: expected[k] for k in COUNTS}
        assert (report["notes_new"], report["notes_deleted"]) == (1, 1)
        handed = snapshot(watcher.config)
        again = index(vault, store)  # nothing changed since: the watch says so, as a run of its own would
        assert again.exit_code == 0, again.output
        assert json.loads(again.stdout)["notes_changed"] == 0
    assert handed == fresh_snapshot(vault, tmp_path / "fresh")


@HANDOFF
def test_a_watch_with_other_settings_refuses_in_one_line(vault, tmp_path):
    store = tmp_path / "store"
    with Watcher(vault, store):
        result = index(vault, store, "--exclude", "daily/**")
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1 and "runs with other settings" in result.stderr
        config = load_config(vault, store=store)
        other = tmp_path / "other"
        other.mkdir()
        with pytest.raises(StoreLocked, match="follows another vault"):
            hand_to_watch(replace(config, vault=other))  # the same workspace, named for another folder


@HANDOFF
def test_a_watch_of_another_wikirag_refuses(vault, tmp_path, monkeypatch):
    store = tmp_path / "store"
    with Watcher(vault, store):
        monkeypatch.setattr(handoff, "code_stamp", lambda: "0.0.0:1:1")  # this process "upgraded" meanwhile
        result = index(vault, store)
        assert result.exit_code == 1 and "another version of wikirag" in result.stderr


@HANDOFF
def test_a_run_the_watch_could_not_finish_is_an_error(vault, tmp_path, monkeypatch):
    from wikirag.index import watch

    real = watch.index_vault
    calls = []

    async def failing_after_the_initial_run(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return await real(*args, **kwargs)

    monkeypatch.setattr(watch, "index_vault", failing_after_the_initial_run)
    store = tmp_path / "store"
    with Watcher(vault, store):
        result = index(vault, store)
        assert result.exit_code == 1
        assert "could not finish this run" in result.stderr and "No space left on device" in result.stderr


@HANDOFF
def test_no_watch_runs_the_index_here(vault, tmp_path, fast_embedding):
    result = index(vault, tmp_path / "store")
    assert result.exit_code == 0, result.output
    assert "Run by the wikirag watch" not in result.stderr and json.loads(result.stdout)["notes_new"] > 40


@HANDOFF
def test_a_watch_stopping_before_it_answers_is_an_error(vault, tmp_path):
    config = load_config(vault, store=tmp_path / "store")
    config.workspace_dir.mkdir(parents=True)
    started, asked = threading.Event(), threading.Event()

    async def serve() -> None:  # a watch that takes the request and stops without running it
        server = HandoffServer(config)
        await server.start()
        started.set()
        while not server.waiting:
            await asyncio.sleep(0.01)
        asked.set()
        await server.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert started.wait(30)
    with pytest.raises(HandoffFailed, match="stopped before it finished"):
        hand_to_watch(config)
    assert asked.is_set()
    thread.join(30)


def test_changed_on_disk_finds_what_no_event_told(vault, tmp_path):
    vault_model = Vault.load(vault, store=tmp_path / "store")
    assert changed_on_disk(vault_model, (), tmp_path / "store") == (set(), False)
    note = vault / "people" / "Alan Turing.md"
    note.write_text(note.read_text() + "\nMore.\n")
    (vault / "New note.md").write_text("new\n")
    (vault / "Index.md").unlink()
    (vault / "picture.png").write_bytes(b"\x89PNG")
    changed, whole = changed_on_disk(vault_model, (), tmp_path / "store")
    assert (changed, whole) == ({"people/Alan Turing.md", "New note.md", "Index.md", "picture.png"}, False)
    (vault / ".obsidian").mkdir(exist_ok=True)
    (vault / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": ["daily/"]}))
    assert changed_on_disk(vault_model, (), tmp_path / "store")[1] is True  # Excluded files: read it whole


def test_the_settings_digest_leaves_the_store_to_decide_an_unnamed_local_model(tmp_path):
    from wikirag.index.store_model import follow_store_embedding

    config = load_config(SAMPLE, store=tmp_path / "store")
    assert not config.embedding_model_given
    before = handoff.settings_digest(config)
    follow_store_embedding(config, "local:some-older-model:256")  # what the watch does with the store's model
    assert config.embedding.model == "local:some-older-model" and handoff.settings_digest(config) == before
    named = replace(config, embedding_model_given=True)
    assert handoff.settings_digest(named) != handoff.settings_digest(replace(named, embedding=replace(
        named.embedding, model="another-model")))


def test_a_socket_file_where_there_is_no_abstract_namespace(vault, tmp_path, monkeypatch):
    """macOS and the BSDs: a file in the workspace folder, its owner's only, removed when the watch stops;
    one a killed watch left behind is replaced."""
    from wikirag.index.report import IndexReport

    monkeypatch.setattr(handoff.sys, "platform", "darwin")
    config = load_config(vault, store=tmp_path / "s")
    config.workspace_dir.mkdir(parents=True)
    path = config.workspace_dir / handoff.SOCKET_FILENAME
    assert handoff.address(config) == str(path)
    path.write_text("left by a killed watch")
    assert hand_to_watch(config) is None  # nobody listens there: the run happens here
    started, seen = threading.Event(), {}

    async def serve() -> None:  # a watch that answers the first request with a report of its own
        server = HandoffServer(config)
        await server.start()
        seen["mode"] = path.stat().st_mode & 0o777
        started.set()
        while not server.waiting:
            await asyncio.sleep(0.01)
        server.answer(server.take(), IndexReport(str(vault), str(config.store), config.workspace, notes_changed=3))
        await asyncio.sleep(0.2)
        await server.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert started.wait(30)
    handed = hand_to_watch(config)
    thread.join(30)
    assert handed is not None and handed.report.notes_changed == 3 and seen["mode"] == 0o600
    assert not path.exists()


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="Linux's peer credentials")
def test_index_trusts_no_answer_from_another_users_socket(vault, tmp_path, monkeypatch):
    """Any user may bind the abstract name first (it is computed from the store's path): `index` must not take
    that process's "report" for a run of the watch, and runs here instead."""
    config = load_config(vault, store=tmp_path / "store")
    where = handoff.address(config)
    assert where is not None and where.startswith("\0")
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(where)
    squatter.listen()
    fake = {"pid": 1, "report": {"vault": str(vault), "store": "elsewhere", "workspace": "w", "notes_changed": 7}}

    def answer() -> None:
        with contextlib.suppress(OSError):
            peer, _ = squatter.accept()
            with peer:
                peer.recv(65536)
                peer.sendall(json.dumps(fake).encode() + b"\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    real_uid = os.getuid()
    monkeypatch.setattr(handoff.os, "getuid", lambda: real_uid + 1)  # the listener is "another user"
    try:
        assert hand_to_watch(config) is None
    finally:
        squatter.close()
        thread.join(30)


@HANDOFF
def test_a_stopping_watch_ends_every_connection(vault, tmp_path):
    """A client that has not sent its request yet is let go too: left waiting, it kept the watch from stopping
    (Python 3.12's wait_closed waits for every connection) or, where the loop lives on, waited for ever."""
    config = load_config(vault, store=tmp_path / "store")
    config.workspace_dir.mkdir(parents=True)
    started, closed, done = threading.Event(), threading.Event(), threading.Event()

    async def serve() -> None:
        server = HandoffServer(config)
        await server.start()
        started.set()
        while not server.waiting:  # the second client's request: the first one is connected by now
            await asyncio.sleep(0.01)
        await server.close()
        closed.set()
        while not done.is_set():  # the process goes on (mcp --watch serves until its client leaves)
            await asyncio.sleep(0.01)

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert started.wait(30)
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        idle.connect(handoff.address(config))
        with pytest.raises(HandoffFailed, match="stopped before it finished"):
            hand_to_watch(config)
        assert closed.wait(30), "the watch's server did not close"
        idle.settimeout(30)
        assert idle.recv(1) == b""  # the connection's end, not a wait for ever
    finally:
        idle.close()
        done.set()
        thread.join(30)


@HANDOFF
def test_a_watch_cancelled_during_the_handed_run_lets_index_go(vault, tmp_path, monkeypatch):
    """mcp --watch cancels its watch when the watch does not stop within 10 s: the request its batch had taken
    must end with the connection, not wait for an answer that never comes."""
    from tests.storekit import HashEmbedding
    from wikirag.index import watch

    real = watch.index_vault
    calls, running, done = [], threading.Event(), threading.Event()

    async def hanging_after_the_initial_run(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            running.set()
            await asyncio.Event().wait()  # a batch that goes on until cancelled
        return await real(*args, **kwargs)

    monkeypatch.setattr(watch, "index_vault", hanging_after_the_initial_run)
    config = load_config(vault, store=tmp_path / "store")
    ready = threading.Event()

    async def run_and_cancel() -> None:
        task = asyncio.create_task(watch.watch_vault(config, on_initial=lambda r: ready.set(), poll_seconds=0.05,
                                                     embedding_func=HashEmbedding().func()))
        while not running.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        while not done.is_set():  # the process goes on
            await asyncio.sleep(0.01)

    watcher = threading.Thread(target=lambda: asyncio.run(run_and_cancel()), daemon=True)
    watcher.start()
    assert ready.wait(60)
    outcome: list[BaseException | None] = []

    def ask() -> None:
        try:
            hand_to_watch(config)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001  (surfaced below)
            outcome.append(exc)

    client = threading.Thread(target=ask, daemon=True)
    client.start()
    client.join(30)
    answered = not client.is_alive()  # while the watch's process still runs
    done.set()
    watcher.join(30)
    client.join(30)
    assert answered and len(outcome) == 1
    assert isinstance(outcome[0], HandoffFailed) and "stopped before it finished" in str(outcome[0])


def _answer_once(config, report) -> threading.Thread:
    """A watch's server on a thread that answers the first request with `report`, then closes."""
    started = threading.Event()

    async def serve() -> None:
        server = HandoffServer(config)
        await server.start()
        started.set()
        while not server.waiting:
            await asyncio.sleep(0.01)
        server.answer(server.take(), report)
        await asyncio.sleep(0.2)
        await server.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert started.wait(30)
    return thread


@HANDOFF
def test_a_report_of_any_size_and_any_file_name_comes_back_whole(vault, tmp_path):
    """A report lists every issue line of the vault (a large vault with broken frontmatter everywhere: megabytes),
    and a path may be no UTF-8 (a lone surrogate): the client read 1 MiB and failed to parse it, and the watch
    could not encode the other and dropped the connection."""
    from wikirag.index.report import IndexReport

    config = load_config(vault, store=tmp_path / "store")
    config.workspace_dir.mkdir(parents=True)
    issues = [f"notes/imported note {n:05}.md: frontmatter is not valid YAML (line 2, column 7)"
              for n in range(20_000)]  # 1.6 MB
    for report in (IndexReport(str(vault), str(config.store), config.workspace, issues=issues),
                   IndexReport(str(vault) + "/caf\udce9", str(config.store), config.workspace, notes_new=1)):
        thread = _answer_once(config, report)
        handed = hand_to_watch(config)
        thread.join(30)
        assert handed is not None and replace(handed.report, vault=report.vault) == report


@HANDOFF
def test_a_watch_gone_before_it_read_the_request_is_a_one_line_error(vault, tmp_path):
    """Killed between accepting and reading (its unread request resets the connection): ConnectionResetError
    went up as a traceback."""
    config = load_config(vault, store=tmp_path / "store")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(handoff.address(config))
    listener.listen()

    def accept_and_drop() -> None:
        peer, _ = listener.accept()
        time.sleep(0.2)  # the request is in its buffer, unread
        peer.close()

    thread = threading.Thread(target=accept_and_drop, daemon=True)
    thread.start()
    try:
        with pytest.raises(HandoffFailed, match="stopped before it finished"):
            hand_to_watch(config)
    finally:
        thread.join(30)
        listener.close()


def test_the_settings_digest_is_the_same_through_a_symlink_and_for_any_password_source(tmp_path):
    """The embedded server's folder is an absolute path, not a real one: an `index ~/Notes` (a link to the
    synced folder) beside an `mcp --watch` (which resolves its vault) was refused as "other settings". The
    password (a secret) is no setting of what is written: PGPASSWORD in a shell, the DSN in a service."""
    real = copy_vault(SAMPLE, tmp_path / "sync" / "Notes")
    link = tmp_path / "Notes"
    link.symlink_to(real)
    embedded = {"WIKIRAG_STORAGE_BACKEND": "embedded"}
    assert (handoff.settings_digest(load_config(link, environ=embedded))
            == handoff.settings_digest(load_config(real, environ=embedded)))
    postgres = {"WIKIRAG_STORAGE_BACKEND": "postgres", "POSTGRES_HOST": "db.example"}
    assert (handoff.settings_digest(load_config(real, environ={**postgres, "PGPASSWORD": "s3cret-one"}))
            == handoff.settings_digest(load_config(real, environ={
                **postgres, "WIKIRAG_POSTGRES_DSN": "postgresql://postgres:s3cret-one@db.example/postgres"})))
    assert (handoff.settings_digest(load_config(real, environ=postgres))  # a setting that is one still counts
            != handoff.settings_digest(load_config(real, environ={**postgres, "POSTGRES_DATABASE": "other"})))


def test_a_socket_file_in_a_workspace_folder_not_made_yet(vault, tmp_path, monkeypatch):
    """macOS and the BSDs, on PostgreSQL: the watch listens before its engine makes the workspace folder (the
    file lock made it on the file backend), so a first watch of a store listened nowhere."""
    from wikirag.index.report import IndexReport

    monkeypatch.setattr(handoff.sys, "platform", "darwin")
    config = load_config(vault, store=tmp_path / "s")
    assert not config.workspace_dir.exists()
    thread = _answer_once(config, IndexReport(str(vault), str(config.store), config.workspace, notes_new=2))
    handed = hand_to_watch(config)
    thread.join(30)
    assert handed is not None and handed.report.notes_new == 2


@HANDOFF
def test_the_handed_report_names_the_vault_and_store_as_index_was_given_them(vault, tmp_path):
    """`index --json` prints the paths a run of its own would: not those of a watch started as `watch .`."""
    from wikirag.index.report import IndexReport

    config = load_config(vault, store=tmp_path / "store")
    config.workspace_dir.mkdir(parents=True)
    thread = _answer_once(config, IndexReport(".", ".wikirag", config.workspace, notes_changed=1))
    handed = hand_to_watch(config)
    thread.join(30)
    assert handed is not None and (handed.report.vault, handed.report.store) == (str(vault), str(config.store))


def test_a_store_path_too_long_for_a_socket_file_gets_one_in_a_private_folder(tmp_path, monkeypatch, request):
    """macOS and the BSDs: a socket file's path holds about 100 bytes, and an iCloud vault's store passes
    that; the socket goes into `wikirag-<uid>` under the temporary folder, which must be this user's alone."""
    monkeypatch.setattr(handoff.sys, "platform", "darwin")
    short = Path(tempfile.mkdtemp(prefix="wr"))  # macOS's own temporary folder is about 50 bytes; pytest's is longer
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    monkeypatch.setattr(handoff.tempfile, "gettempdir", lambda: str(short))
    deep = copy_vault(SAMPLE, tmp_path / ("Mobile Documents iCloud~md~obsidian " * 3) / "Research notes")
    config = load_config(deep, store=deep / ".wikirag")
    where = handoff.address(config)
    folder = short / f"wikirag-{os.getuid()}"
    assert where is not None and Path(where).parent == folder and len(os.fsencode(where)) < 100
    assert folder.stat().st_mode & 0o777 == 0o700
    other = load_config(SAMPLE, store=deep / ".other")  # another workspace: another socket
    assert handoff.address(other) not in (None, where)
    folder.chmod(0o755)  # one others may write in (or another user's): no socket, the lock refuses as before
    assert handoff.address(config) is None


@HANDOFF
def test_a_client_that_sends_nothing_is_let_go(vault, tmp_path, monkeypatch):
    """A client that connects and says nothing (or half a request) held its connection open for as long as the
    watch ran: the watch closes it after REQUEST_SECONDS, and still serves the next `index`."""
    monkeypatch.setattr(handoff, "REQUEST_SECONDS", 0.2)
    config = load_config(vault, store=tmp_path / "store")
    config.workspace_dir.mkdir(parents=True)
    started, done = threading.Event(), threading.Event()
    open_connections: list[int] = []

    async def serve() -> None:
        server = HandoffServer(config)
        await server.start()
        started.set()
        while not done.is_set():
            open_connections[:] = [len(server._connections)]
            await asyncio.sleep(0.01)
        await server.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert started.wait(30)
    silent, partial = (socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2))
    try:
        silent.connect(handoff.address(config))
        partial.connect(handoff.address(config))
        partial.sendall(b'{"vault": ')
        for peer in (silent, partial):
            peer.settimeout(10)
            assert peer.recv(1) == b""  # closed by the watch, not left waiting
        assert wait_until(lambda: open_connections == [0], 30)
    finally:
        silent.close()
        partial.close()
        done.set()
        thread.join(30)
