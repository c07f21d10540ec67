"""The embedded backend, live: `backend = "embedded"` starts a private PostgreSQL (pgserver's binaries) in the
workspace folder, on a Unix socket only, shared by every wikirag process on that store and stopped by the
last one. Real servers, real files, the CLI where a user would type a command. Skips (saying why) only where
pgserver is not installed; CI turns such a skip into a failure (tests/conftest.py REQUIRED_LIVE)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, age_vault_files, copy_vault, snapshot
from wikirag.errors import ConfigError
from wikirag.settings import load_config
from wikirag.storage import embedded
from wikirag.storage.fs import PGDATA_DIRNAME
from wikirag.storage.postgres import connect
from wikirag.storage.settings import StorageSettings
from wikirag.storage.workspace import record_vault

pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install 'wikirag[embedded]'")
pytest.importorskip("pgserver", reason="pgserver is not installed: pip install 'wikirag[embedded]'")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_vault"
EMBEDDED_TOML = '[storage]\nbackend = "embedded"\n'
FILE_ENV = {"WIKIRAG_STORAGE_BACKEND": "file"}  # the same vault on the file store, for comparison


@pytest.fixture
def work():
    """A folder the server's user can reach: as root PostgreSQL runs as `postgres`, and pytest's tmp_path
    sits in a 0700 folder of root's."""
    folder = Path(tempfile.mkdtemp(prefix="wikirag-emb-"))
    folder.chmod(0o755)
    yield folder
    embedded.leave_all()
    shutil.rmtree(folder, ignore_errors=True)


def _embedded_vault(work: Path) -> Path:
    vault = copy_vault(SAMPLE, work / "vault")
    (vault / "wikirag.toml").write_text(EMBEDDED_TOML)
    return vault


def _rows(settings: StorageSettings, sql: str, *args) -> list[tuple]:
    with connect(settings) as conn:
        return conn.execute(sql, args).fetchall()


def _server_pid(settings: StorageSettings) -> int | None:
    return embedded._Server(settings).running_pid()


# --- settings ---------------------------------------------------------------------------------------------


def test_settings_place_the_server_in_the_workspace_folder_with_no_password_or_tcp(tmp_path):
    vault = tmp_path / "Notes"
    vault.mkdir()
    for name in ("embedded", "embedded-postgres", "pgserver"):
        env = {"WIKIRAG_STORAGE_BACKEND": name, "PGPASSWORD": "not-for-us", "POSTGRES_HOST": "db.example.org"}
        config = load_config(vault, environ=env)
        s = config.storage
        assert s.backend == "embedded" and s.uses_postgres and s.embedded
        assert Path(s.data_dir) == (config.workspace_dir / PGDATA_DIRNAME).resolve()
        assert Path(s.data_dir).is_relative_to((vault / ".wikirag").resolve())  # hidden store, never the notes
        assert s.host == s.data_dir or Path(s.host).name.startswith("wikirag-pg-")  # a long path: see below
        assert s.password == "" and s.sslmode == "disable"
        assert s.target == f"embedded PostgreSQL in {s.data_dir}"
    # a store outside the vault keeps the server out of the vault too
    outside = load_config(vault, store=tmp_path / "elsewhere", environ={"WIKIRAG_STORAGE_BACKEND": "embedded"})
    assert not Path(outside.storage.data_dir).is_relative_to(vault.resolve())
    # a data folder too deep for a socket path gets a private socket folder of its own
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    s = load_config(deep, environ={"WIKIRAG_STORAGE_BACKEND": "embedded"}).storage
    assert s.host != s.data_dir and Path(s.host).name.startswith("wikirag-pg-")
    with pytest.raises(ConfigError, match="keeps all four storages"):
        StorageSettings.from_mapping({"backend": "embedded", "graph": "neo4j"}, environ={})


# --- the CLI end to end -------------------------------------------------------------------------------------


def test_cli_index_query_edit_watch_rebuild_on_the_embedded_backend(work, fast_embedding):
    from wikirag.cli import app
    from wikirag.index.watch import watch_vault

    runner = CliRunner()
    vault = _embedded_vault(work)
    config = load_config(vault)
    settings = config.storage

    result = runner.invoke(app, ["query", "Alan Turing", "--vault", str(vault), "--json", "--context-only"])
    assert result.exit_code != 0 and not Path(settings.data_dir).exists()  # no index: nothing created

    result = runner.invoke(app, ["index", str(vault), "--json"])
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout)
    assert first["notes_indexed"] > 40 and (Path(settings.data_dir) / "PG_VERSION").exists()
    assert not list(config.workspace_dir.glob("kv_store_*.json"))  # the records are in PostgreSQL
    nodes = _rows(settings, "SELECT count(*) FROM lightrag_graph_nodes WHERE workspace = %s", config.workspace)
    assert nodes == [(first["entities"],)]
    # nothing listens on TCP: the server's only address is the socket in its data folder
    assert _rows(settings, "SHOW listen_addresses") == [("",)]
    assert (Path(settings.host) / ".s.PGSQL.5432").is_socket()

    result = runner.invoke(app, ["query", "Who worked with Alan Turing?", "--vault", str(vault), "--json",
                                 "--context-only"])
    assert result.exit_code == 0, result.output
    assert "Alan Turing.md" in result.stdout
    for command in (["stats", str(vault), "--json"],
                    ["export", "--vault", str(vault), "--output", str(work / "g.graphml")],
                    ["search", "Bletchley", "--vault", str(vault), "--json"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, (command, result.output)

    turing = vault / "people" / "Alan Turing.md"
    turing.write_text(turing.read_text() + "\nHe also met [[Claude Shannon]] in 1943.\n")
    result = runner.invoke(app, ["index", str(vault), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["notes_changed"] == 1

    batches: list = []
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(watch_vault(
        config, quiet_seconds=0.3, stop=stop, on_initial=lambda r: ready.set(), on_batch=batches.append,
        poll_seconds=0.05, embedding_func=HashEmbedding().func())), daemon=True)
    thread.start()
    try:
        assert ready.wait(300)
        (vault / "concepts" / "Watched.md").write_text("# Watched\n\nSaved while [[Alan Turing]] was watched.\n")
        deadline = time.monotonic() + 300  # the batch's report is the signal; this only ends a stuck watcher's wait
        while not any("concepts/Watched.md" in b.paths for b in batches) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert batches and batches[0].notes_new == 1 and not batches[-1].error, batches
    finally:
        stop.set()
        thread.join(300)
    assert _rows(settings, "SELECT count(*) FROM lightrag_doc_chunks WHERE workspace = %s AND file_path LIKE %s",
                 config.workspace, "%Watched.md%")[0][0] >= 1

    result = runner.invoke(app, ["doctor", str(vault), "--json"])
    doctor = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert doctor["embedded"]["status"] == "ok" and settings.data_dir in doctor["embedded"]["detail"]
    assert "PostgreSQL 16" in doctor["embedded"]["detail"] and "MB" in doctor["embedded"]["detail"]

    result = runner.invoke(app, ["index", str(vault), "--rebuild", "--json"])
    assert result.exit_code == 0, result.output
    rebuilt = json.loads(result.stdout)
    assert rebuilt["notes_indexed"] == first["notes_indexed"] + 1
    nodes = _rows(settings, "SELECT count(*) FROM lightrag_graph_nodes WHERE workspace = %s", config.workspace)
    assert nodes == [(rebuilt["entities"],)]  # the workspace's old rows went; the data folder stayed
    assert embedded.leave(settings) is True and _server_pid(settings) is None  # the last client stops it


# --- one server, several processes ----------------------------------------------------------------------


_JOIN = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from wikirag.settings import load_config
from wikirag.storage.postgres import connect
settings = load_config(Path({vault!r})).storage
with connect(settings) as conn:
    print(conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()[0], flush=True)
time.sleep({linger})
"""


def _join_in_subprocess(vault: Path, linger: float = 0.0) -> subprocess.Popen:
    script = _JOIN.format(root=str(ROOT), vault=str(vault), linger=linger)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_share_one_server_and_the_last_one_stops_it(work):
    vault = _embedded_vault(work)
    settings = load_config(vault).storage
    other = _join_in_subprocess(vault, linger=30)
    started = other.stdout.readline().strip()
    assert started, other.stderr.read()
    pid = _server_pid(settings)
    # this process joins the running server rather than starting a second one
    assert _rows(settings, "SELECT pg_postmaster_start_time()::text") == [(started,)]
    assert _server_pid(settings) == pid and len(embedded._Server(settings).read_clients()) == 2
    other.kill()  # kill -9: it cannot leave; the list forgets it when next read
    other.wait(10)
    assert len(embedded._Server(settings).read_clients()) == 1
    assert embedded.leave(settings) is True and _server_pid(settings) is None

    # a client that exits normally leaves, and being the last one, stops the server
    done = _join_in_subprocess(vault)
    assert done.wait(60) == 0, done.stderr.read()
    assert _server_pid(settings) is None and embedded._Server(settings).read_clients() == []


def test_a_vault_renamed_while_its_server_runs_names_its_clients_then_starts_it_anew(work):
    """The vault folder renamed while a server started at the old path runs (`wikirag mcp` serving, or a client
    killed with -9 left it): with its socket in the temp folder (a long path) under the old path's name, the
    renamed vault, which keeps its workspace, had every connection refused, for as long as that server ran."""
    deep = work / ("d" * 90)
    deep.mkdir()
    deep.chmod(0o755)
    vault = _embedded_vault(deep)
    assert load_config(vault).storage.host != load_config(vault).storage.data_dir  # the socket: in the temp folder
    holder = _join_in_subprocess(vault, linger=60)
    assert holder.stdout.readline().strip(), holder.stderr.read()
    record_vault(load_config(vault).workspace_dir, vault)  # as an index run there writes it
    moved = load_config(vault.rename(deep / "Renamed"))
    assert moved.workspace == "vault"
    try:
        with pytest.raises(embedded.EmbeddedServerError, match=f"processes {holder.pid} "):
            embedded.ensure_server(moved.storage)
        holder.kill()  # kill -9: the old server runs on, no client left
        holder.wait(10)
        embedded.ensure_server(moved.storage)  # stopped, and started again where its folder is now
        assert _rows(moved.storage, "SELECT 1") == [(1,)]
        assert embedded.leave(moved.storage) is True and _server_pid(moved.storage) is None
    finally:  # no server left running on a folder the fixture deletes
        holder.kill()
        if (pid := _server_pid(moved.storage)) is not None:
            os.kill(pid, signal.SIGINT)


def test_the_command_line_still_leaves_the_server_when_it_skips_the_interpreters_teardown(work):
    """`wikirag` ends with os._exit after the exit handlers (wikirag.cli.main): the server a command started
    is stopped when it ends, and its output arrives whole."""
    from wikirag.index.run import run_index

    vault = _embedded_vault(work)
    config = load_config(vault)
    run_index(config, embedding_func=HashEmbedding().func())
    assert embedded.leave(config.storage) is True and _server_pid(config.storage) is None
    done = subprocess.run([sys.executable, "-m", "wikirag.cli", "stats", str(vault), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["notes"] >= 40  # the whole document
    assert _server_pid(config.storage) is None and embedded._Server(config.storage).read_clients() == []


def test_a_server_that_cannot_start_is_a_one_line_error_naming_its_log(work):
    vault = _embedded_vault(work)
    settings = load_config(vault).storage
    embedded.ensure_server(settings)  # a real cluster, then stopped
    assert embedded.leave(settings) is True
    with (Path(settings.data_dir) / "postgresql.conf").open("a") as conf:
        conf.write("shared_buffers = 'lots'\n")  # postgres refuses this at start
    with pytest.raises(embedded.EmbeddedServerError) as caught:
        embedded.ensure_server(settings)
    message = str(caught.value)
    assert "did not start" in message and "shared_buffers" in message and "server.log" in message
    assert "\n" not in message and _server_pid(settings) is None


def test_a_first_connect_starts_the_server_while_psycopg_loads_and_reports_its_failure(work):
    """In a process that has not loaded psycopg, `connect` starts the server in a thread meanwhile: the
    connection works, and a server that cannot start is still the one-line error, raised in the caller."""
    vault = _embedded_vault(work)
    settings = load_config(vault).storage
    script = ("import sys; from pathlib import Path; from wikirag.settings import load_config\n"
              "from wikirag.storage.postgres import connect\n"
              "assert 'psycopg' not in sys.modules\n"
              "try:\n"
              f"    print(connect(load_config(Path({str(vault)!r})).storage).execute('SELECT 41 + 1').fetchone()[0])\n"
              "except Exception as exc:\n"
              "    print(type(exc).__name__, exc)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "42", run.stderr
    assert _server_pid(settings) is None  # the process left, and stopped it
    with (Path(settings.data_dir) / "postgresql.conf").open("a") as conf:
        conf.write("shared_buffers = 'lots'\n")  # postgres refuses this at start
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.stdout.startswith("EmbeddedServerError ") and "did not start" in run.stdout, run.stderr
    assert "shared_buffers" in run.stdout and run.stdout.count("\n") == 1


def test_the_server_runs_in_a_session_of_its_own_and_stops_when_asked(work):
    """Ctrl-C in the terminal signals the command's process group: the server it started must not be in it
    (another process may still be using it), and the last client's stop waits until it is gone."""
    import psutil

    vault = _embedded_vault(work)
    settings = load_config(vault).storage
    embedded.ensure_server(settings)
    pid = _server_pid(settings)
    assert pid is not None and os.getsid(pid) == pid != os.getsid(0)
    assert _rows(settings, "SELECT 1") == [(1,)]
    run_as = embedded._run_as()
    log_owner = (Path(settings.data_dir) / "server.log").stat().st_uid
    assert log_owner == (run_as.uid if run_as.user else os.getuid())  # the server's file, as pg_ctl left it
    assert embedded.leave(settings) is True
    assert not (Path(settings.data_dir) / "postmaster.pid").exists() and _server_pid(settings) is None
    assert not psutil.pid_exists(pid)  # its starter reaped it: no zombie left for the life of the process


def test_a_linked_server_log_is_refused_and_its_target_left_alone(work):
    """As root the data folder is the server user's: a link planted there must not make wikirag open (or
    chown) another file."""
    vault = _embedded_vault(work)
    settings = load_config(vault).storage
    embedded.ensure_server(settings)
    assert embedded.leave(settings) is True
    target = work / "not-a-log"
    target.write_text("precious\n")
    before = target.stat()
    log = Path(settings.data_dir) / "server.log"
    log.unlink()
    log.symlink_to(target)
    with pytest.raises(embedded.EmbeddedServerError, match="server.log: cannot open"):
        embedded.ensure_server(settings)
    after = target.stat()
    assert target.read_text() == "precious\n" and (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)
    assert _server_pid(settings) is None


def test_a_pid_file_left_by_a_killed_server_is_not_taken_for_the_new_one(work):
    """postmaster.pid of a server killed with -9 still says "ready"; if its pid comes round again, only its
    start time tells it from the new server's (as pg_ctl checks)."""
    server = embedded._Server(load_config(_embedded_vault(work)).storage)
    server.data.mkdir(parents=True)
    now = time.time()
    lines = ["4242", str(server.data), str(int(now) - 3600), "5432", str(server.data), "", "1 2", "ready   "]
    (server.data / "postmaster.pid").write_text("\n".join(lines) + "\n")
    assert not server._ready(4242, launched=now)  # an hour old
    lines[2] = str(int(now))
    (server.data / "postmaster.pid").write_text("\n".join(lines) + "\n")
    assert server._ready(4242, launched=now) and not server._ready(4243, launched=now)
    lines[7] = "starting"
    (server.data / "postmaster.pid").write_text("\n".join(lines) + "\n")
    assert not server._ready(4242, launched=now)


# --- crashes --------------------------------------------------------------------------------------------


_INDEX = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.storekit import HashEmbedding
from wikirag.index.run import run_index
from wikirag.settings import load_config
run_index(load_config(Path({vault!r})), embedding_func=HashEmbedding().func())
"""


def test_kill_9_of_an_index_run_leaves_a_store_the_next_run_completes(work):
    from bench.zettel import generate
    from tests.test_postgres import _as_pg
    from wikirag.index.run import run_index

    vault = work / "vault"
    generate(400, vault)
    (vault / "wikirag.toml").write_text(EMBEDDED_TOML)
    config = load_config(vault)
    settings = config.storage
    env = {**os.environ, "WIKIRAG_INDEX_BATCH_SIZE": "20"}  # many write-ahead batches to land in the middle of
    proc = subprocess.Popen([sys.executable, "-c", _INDEX.format(root=str(ROOT), vault=str(vault))], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if (Path(settings.data_dir) / "PG_VERSION").exists() and _chunks(settings, config.workspace) > 0:
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL, "the run ended before the kill"
    assert _server_pid(settings) is not None  # the killed run could not stop the server: it runs on

    report = run_index(config, embedding_func=HashEmbedding().func())  # joins it and completes the run
    assert report.notes_indexed > 0
    fresh = load_config(vault, store=work / "file-store", environ=FILE_ENV)
    run_index(fresh, embedding_func=HashEmbedding().func())
    assert _embedded_snapshot(config) == _as_pg(snapshot(fresh))


def _embedded_snapshot(config) -> dict:
    """test_postgres's record-for-record snapshot of a PostgreSQL index, with the ledger read from the database
    (there it reads a file-store ledger: its tests index PostgreSQL data beside a local ledger)."""
    import tests.test_postgres as pg_tests
    from wikirag.storage.ledger_store import PostgresLedgerStore

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pg_tests, "ledger_doc", lambda _: PostgresLedgerStore(config.storage, config.workspace).load())
        return pg_tests._pg_snapshot(config.storage, config)


def _chunks(settings: StorageSettings, workspace: str) -> int:
    try:
        return _rows(settings, "SELECT count(*) FROM lightrag_doc_chunks WHERE workspace = %s", workspace)[0][0]
    except Exception:  # the table does not exist yet
        return 0


# --- the same index as on files -------------------------------------------------------------------------


def test_an_index_on_embedded_equals_one_on_files_record_for_record(work):
    from tests.test_postgres import _as_pg, _edit
    from wikirag.index.run import run_index

    vault = _embedded_vault(work)
    on_pg = load_config(vault)
    run_index(on_pg, embedding_func=HashEmbedding().func())
    on_file = load_config(vault, store=work / "file", environ=FILE_ENV)
    run_index(on_file, embedding_func=HashEmbedding().func())
    assert _embedded_snapshot(on_pg) == _as_pg(snapshot(on_file))

    _edit(vault)
    run_index(on_pg, embedding_func=HashEmbedding().func())
    fresh = load_config(vault, store=work / "fresh", environ=FILE_ENV)
    run_index(fresh, embedding_func=HashEmbedding().func())
    assert _embedded_snapshot(on_pg) == _as_pg(snapshot(fresh))


def test_switching_a_store_to_embedded_with_no_note_changed_fills_the_new_backend(work):
    """The manifest's "nothing changed" answer was keyed on the notes and the index settings only: the switched
    run said "unchanged" and the embedded store stayed empty."""
    from wikirag.index.run import run_index

    vault = _embedded_vault(work)
    on_file = load_config(vault, environ=FILE_ENV)  # the same store folder, file classes
    first = run_index(on_file, embedding_func=HashEmbedding().func())
    age_vault_files(vault)  # stat data old enough for the manifest to vouch for the files
    assert run_index(on_file, embedding_func=HashEmbedding().func()).notes_new == 0

    on_pg = load_config(vault)
    switched = run_index(on_pg, embedding_func=HashEmbedding().func())
    assert switched.notes_new == first.notes_new > 40
    held = _rows(on_pg.storage, "SELECT count(*) FROM lightrag_doc_chunks WHERE workspace = %s", on_pg.workspace)
    assert held[0][0] == first.chunks


def test_an_index_run_leaves_planner_statistics_on_the_tables_it_filled(work):
    """The server may stop before autovacuum's first round: the run itself analyzes what it changed much."""
    from wikirag.index.run import run_index

    vault = _embedded_vault(work)
    config = load_config(vault)
    run_index(config, embedding_func=HashEmbedding().func())
    analyzed = "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s"
    first = _rows(config.storage, analyzed, "lightrag_graph_edges")[0][0]
    assert first is not None
    stale = _rows(config.storage, "SELECT relname FROM pg_stat_user_tables WHERE relname LIKE 'lightrag%%' "
                                  "AND n_mod_since_analyze > 50 + 0.1 * n_live_tup")
    assert stale == []

    _touch_one_note(vault)  # a small change: below the threshold, nothing is analyzed again
    run_index(config, embedding_func=HashEmbedding().func())
    assert _rows(config.storage, analyzed, "lightrag_graph_edges")[0][0] == first



def test_tend_changed_tables_vacuums_what_autovacuum_would_and_only_that(work):
    """A table with many rows inserted since its last vacuum is vacuumed (its pages marked all-visible, so the row
    counts LightRAG takes when it opens its storages can be index-only scans) and analyzed; a table with a few
    rows inserted is left alone."""
    from wikirag.storage.postgres import tend_changed_tables

    settings = load_config(_embedded_vault(work)).storage
    with connect(settings, autocommit=True) as conn:
        for name, rows in (("lightrag_tend_big", 3000), ("lightrag_tend_small", 20)):
            conn.execute(f"CREATE TABLE {name} (workspace text, id text, body text, PRIMARY KEY (workspace, id)) "
                         "WITH (autovacuum_enabled = off)")  # autovacuum must not get there first
            conn.execute(f"INSERT INTO {name} SELECT 'w', g::text, repeat('v', 1500) FROM generate_series(1, {rows}) g")
        conn.execute("SELECT pg_stat_force_next_flush()")  # what the next backend's statistics must already see
    tended = tend_changed_tables(settings)
    assert "lightrag_tend_big" in tended and "lightrag_tend_small" not in tended
    stats = {row[0]: row[1:] for row in _rows(
        settings, "SELECT relname, last_vacuum IS NOT NULL, last_analyze IS NOT NULL FROM pg_stat_user_tables "
        "WHERE relname LIKE 'lightrag_tend_%%'")}
    assert stats == {"lightrag_tend_big": (True, True), "lightrag_tend_small": (False, False)}
    visible = dict(_rows(settings, "SELECT relname, relallvisible = relpages AND relpages > 0 FROM pg_class "
                                   "WHERE relname IN ('lightrag_tend_big', 'lightrag_tend_small')"))
    assert visible == {"lightrag_tend_big": True, "lightrag_tend_small": False}
    plan = "\n".join(row[0] for row in _rows(
        settings, "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM lightrag_tend_big WHERE workspace = 'w'"))
    assert "Index Only Scan" in plan and "Heap Fetches: 0" in plan


def _vector_scan(settings: StorageSettings, table: str) -> tuple[list[str], int, int]:
    """The five nearest rows to the table's first vector, as LightRAG's exact scan orders them, the buffers that
    scan read and the table's own pages."""
    with connect(settings) as conn:  # one connection, the plan read second: catalog reads are not counted
        first = conn.execute(f"SELECT content_vector::text FROM {table} ORDER BY id LIMIT 1").fetchone()[0]
        nearest = f"SELECT id FROM {table} ORDER BY content_vector <=> %s::vector, id LIMIT 5"
        ids = [row[0] for row in conn.execute(nearest, (first,))]
        plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {nearest}", (first,)).fetchone()[0][0]["Plan"]
        pages = conn.execute("SELECT pg_relation_size(%s::regclass) / 8192", (table,)).fetchone()[0]
    return ids, plan["Shared Hit Blocks"] + plan["Shared Read Blocks"], pages


def test_an_index_run_keeps_vectors_inside_their_rows_and_rewrites_an_older_stores_rows(work):
    """pgvector stores a vector out of line (TOAST) once its row passes 2 KB, and each row of LightRAG's exact
    vector scans then fetched its vector from there. An index run sets the vector columns' storage to MAIN; on
    the embedded server it also rewrites the rows an older store wrote out of line, once."""
    from wikirag.index.run import run_index
    from wikirag.storage.postgres import keep_vectors_inline

    config = load_config(_embedded_vault(work))
    run_index(config, embedding_func=HashEmbedding().func())
    tables = [row[0] for row in _rows(config.storage, "SELECT relname FROM pg_class WHERE relkind = 'r' "
                                                      "AND relname LIKE 'lightrag\\_vdb\\_%%' ORDER BY relname")]
    storage = "SELECT attstorage FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'content_vector'"
    assert len(tables) == 3 and all(_rows(config.storage, storage, table) == [("m",)] for table in tables)
    with connect(config.storage, autocommit=True) as conn:  # a store from before: pgvector's default, out of line
        for table in tables:
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN content_vector SET STORAGE EXTERNAL")
            conn.execute(f"ALTER TABLE {table} SET (toast_tuple_target = 128)")  # rows this small go out of line too
            conn.execute(f"UPDATE {table} SET content_vector = content_vector::real[]::vector")
            conn.execute(f"VACUUM (FULL, ANALYZE) {table}")
    before = {table: _vector_scan(config.storage, table) for table in tables}
    assert all(buffers > 2 * pages for _, buffers, pages in before.values())  # the TOAST table is read too

    assert keep_vectors_inline(config.storage) == tables
    assert keep_vectors_inline(config.storage) == []  # once
    for table in tables:
        ids, buffers, pages = _vector_scan(config.storage, table)
        assert ids == before[table][0]  # the same vectors
        assert buffers <= pages, table  # the table's own pages only


def test_an_untouched_vault_is_answered_without_starting_the_server(work):
    """`wikirag index` asks the manifest whether anything changed before it opens the store: when nothing did,
    the embedded server is not started (0.3 s of a new process at 13,000 notes) and nothing is connected to."""
    from wikirag.index.run import run_index

    vault = _embedded_vault(work)
    config = load_config(vault)
    first = run_index(config, embedding_func=HashEmbedding().func())
    age_vault_files(vault)
    run_index(config, embedding_func=HashEmbedding().func())  # records the manifest for these stat data
    embedded.leave_all()  # this process was the server's last client: it stops
    assert _server_pid(config.storage) is None
    again = run_index(config, embedding_func=HashEmbedding().func())
    assert again.notes_indexed == 0 and again.notes_unchanged == first.notes_total - first.notes_skipped
    assert (again.entities, again.relations, again.chunks) == (first.entities, first.relations, first.chunks)
    assert _server_pid(config.storage) is None
    _touch_one_note(vault)  # a real edit opens the store as before
    assert run_index(config, embedding_func=HashEmbedding().func()).notes_changed == 1
    assert _server_pid(config.storage) is not None

def test_overlong_titles_link_targets_and_paths_index_on_the_embedded_backend(work):
    """LightRAG's PostgreSQL tables hold names in VARCHAR(512) and a document's path in VARCHAR(1024): a 600-
    character title, a link to a 3,000-character name, a 250-character attachment beside a 250-character title
    (a relation key "a<SEP>b" over 512), a note 1,300 characters deep, and a NUL written as a YAML escape or a
    `%00` in a link (text and jsonb hold no NUL) each failed the whole run with a traceback. Names are bounded
    (graph.naming.fit), the document row keeps the path's end, and such a NUL is read as U+FFFD."""
    from wikirag.index.run import run_index

    vault = work / "vault"
    deep = vault.joinpath(*["folder " + "d" * 200] * 6)
    deep.mkdir(parents=True)
    (vault / "wikirag.toml").write_text(EMBEDDED_TOML)
    (deep / "Deep.md").write_text("a deep note [[Long]]\n")
    (vault / "Long.md").write_text(f"---\ntitle: {'T' * 600}\n---\nsee [[{'y' * 3000}]] and ![[{'z' * 250}.png]]\n")
    (vault / ("z" * 250 + ".png")).write_bytes(b"png")
    (vault / ("n" * 250 + ".md")).write_text("![[" + "z" * 250 + ".png]]\n")
    (vault / "Nul.md").write_text('---\ntitle: "a\\0b"\naliases: ["c\\x00d"]\n---\n[x](e%00f.md)\n')
    config = load_config(vault)
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert report.notes_indexed == 4
    names = [name for (name,) in _rows(config.storage, "SELECT id FROM lightrag_graph_nodes WHERE workspace = %s",
                                       config.workspace)]
    assert len(names) == 7 and max(map(len, names)) <= 250 and {"a\ufffdb", "e\ufffdf"} <= set(names)
    paths = _rows(config.storage, "SELECT doc_name FROM lightrag_doc_full WHERE workspace = %s", config.workspace)
    assert any(path.startswith("…") and path.endswith("/Deep.md") for (path,) in paths)


def _touch_one_note(vault: Path) -> None:
    note = vault / "people" / "Alan Turing.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")


def test_index_and_doctor_recommend_the_embedded_backend_for_a_large_vault_on_files(tmp_path, fast_embedding,
                                                                                       monkeypatch):
    from wikirag.cli import app
    from wikirag.storage import settings as storage_settings

    monkeypatch.setattr(storage_settings, "RECOMMEND_EMBEDDED_ABOVE", 40)  # the sample vault's 46 notes are "large"
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    runner = CliRunner()
    result = runner.invoke(app, ["index", str(vault), "--json"])
    assert result.exit_code == 0, result.output
    notes = json.loads(result.stdout)["notes_total"]  # the advice goes to stderr: --json stays one object
    assert 'backend = "embedded"' in result.stderr and f"{notes} notes on the file store" in result.stderr
    doctor = {c["name"]: c for c in json.loads(runner.invoke(app, ["doctor", str(vault), "--json"]).stdout)["checks"]}
    assert doctor["vault"]["status"] == "warn" and 'backend = "embedded"' in doctor["vault"]["detail"]
    monkeypatch.setattr(storage_settings, "RECOMMEND_EMBEDDED_ABOVE", notes)
    assert 'backend = "embedded"' not in runner.invoke(app, ["index", str(vault)]).output
