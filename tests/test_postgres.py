"""Server storage, live: LightRAG's PostgreSQL stores and wikirag's ledger, lock and doctor checks against a
real PostgreSQL with pgvector started for this test session (tests/pgserver_fixture.py). Nothing is mocked.
Tests skip, saying why, only where no PostgreSQL can start; those that need pgvector skip on a server
without it."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.pgserver_fixture import APP_DATABASE, APP_PASSWORD, APP_USER, ServerUnavailable, start_private_server
from tests.storekit import HashEmbedding, copy_vault, ledger_doc, snapshot
from wikirag.errors import ConfigError, StoreLocked
from wikirag.lightrag.storages import lightrag_env_vars, lightrag_environment, lightrag_storage_kwargs
from wikirag.storage.ledger_store import FileLedgerStore, LedgerConflict, PostgresLedgerStore, drop_workspace
from wikirag.storage.locks import writer_lock
from wikirag.storage.postgres import check_storage, connect, storage_unreachable
from wikirag.storage.settings import StorageSettings, parse_dsn

pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install 'wikirag[postgres]'")

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
PG_CLASSES = {"kv_storage": "PGKVStorage", "vector_storage": "PGVectorStorage",
              "graph_storage": "PGTableGraphStorage", "doc_status_storage": "PGDocStatusStorage"}


@pytest.fixture(scope="session")
def pg():
    try:
        server = start_private_server()
    except ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL server could be started here: {exc}")
    yield server
    server.stop()


@pytest.fixture
def settings(pg) -> StorageSettings:
    return StorageSettings.from_mapping({"backend": "postgres"}, environ=pg.env())


@pytest.fixture
def vector(pg) -> None:
    if not pg.has_vector:
        pytest.skip(f"{pg.version} ({pg.source}) has no pgvector extension")


def _rows(settings: StorageSettings, sql: str, *args) -> list[tuple]:
    with connect(settings) as conn:
        return conn.execute(sql, args).fetchall()


# --- settings (no server needed) ------------------------------------------------------------------------


def test_settings_come_from_toml_env_and_dsn_and_never_hold_a_toml_secret():
    toml = {"backend": "postgres", "host": "db.example.org", "port": 6543, "user": "team", "database": "notes",
            "sslmode": "require"}
    s = StorageSettings.from_mapping(toml, environ={"POSTGRES_PASSWORD": "pw1"})
    assert (s.host, s.port, s.user, s.database, s.sslmode) == ("db.example.org", 6543, "team", "notes", "require")
    assert lightrag_storage_kwargs(s) == PG_CLASSES
    assert (s.password, s.password_source) == ("pw1", "POSTGRES_PASSWORD")
    assert "pw1" not in repr(s) and "pw1" not in str(s.describe())
    assert s.describe()["password_from"] == "POSTGRES_PASSWORD"

    env = {"WIKIRAG_POSTGRES_DSN": "postgresql://dsnuser:dsn%20pw@dsnhost:5555/dsndb?sslmode=verify-full",
           "WIKIRAG_STORAGE_DATABASE": "envdb", "PGPASSWORD": "libpq"}
    s = StorageSettings.from_mapping(toml, environ=env)
    assert (s.host, s.port, s.user, s.database, s.sslmode) == ("dsnhost", 5555, "dsnuser", "envdb", "verify-full")
    assert (s.password, s.password_source) == ("dsn pw", "WIKIRAG_POSTGRES_DSN")
    s = StorageSettings.from_mapping(toml, environ={**env, "WIKIRAG_POSTGRES_PASSWORD": "mine"},
                                     overrides={"host": "flaghost", "port": None})
    assert (s.host, s.port, s.password) == ("flaghost", 5555, "mine")

    for key in ("password", "dsn"):
        with pytest.raises(ConfigError, match="secrets never go in wikirag.toml"):
            StorageSettings.from_mapping({**toml, key: "x"}, environ={})
    with pytest.raises(ConfigError, match="unknown key"):
        StorageSettings.from_mapping({"hots": "x"}, environ={})
    with pytest.raises(ConfigError, match="backend 'sqlite'"):
        StorageSettings.from_mapping({"backend": "sqlite"}, environ={})
    with pytest.raises(ConfigError, match="graph = 'PGVectorStorage'"):
        StorageSettings.from_mapping({"backend": "custom", "graph": "PGVectorStorage"}, environ={})


@pytest.mark.parametrize(("dsn", "expected", "password"), [
    ("postgresql://u:p%40ss@h:5433/db?sslmode=require",
     {"user": "u", "host": "h", "port": 5433, "database": "db", "sslmode": "require"}, "p@ss"),
    ("postgresql://u@/db?host=/var/run/postgresql", {"user": "u", "host": "/var/run/postgresql", "database": "db"},
     None),
    ("host=h port=5 dbname=x user=y password=z", {"user": "y", "host": "h", "port": 5, "database": "x"}, "z"),
])
def test_dsn_forms_libpq_accepts(dsn, expected, password):
    assert parse_dsn(dsn) == (expected, password)


@pytest.mark.parametrize("dsn", ["postgresql://u:secret-pw@h:abc/db", "mysql://u:secret-pw@h/db"])
def test_a_bad_dsn_is_one_line_without_the_password(dsn):
    with pytest.raises(ConfigError) as caught:
        parse_dsn(dsn)
    assert "secret-pw" not in str(caught.value) and "WIKIRAG_POSTGRES_DSN" in str(caught.value)


def test_presets_and_pass_through_backends():
    assert StorageSettings.from_mapping(None, environ={}).is_file
    mixed = StorageSettings.from_mapping({"backend": "postgres", "graph": "neo4j", "vector": "qdrant"}, environ={})
    assert mixed.backend == "custom" and mixed.uses_postgres
    assert lightrag_storage_kwargs(mixed) == {**PG_CLASSES, "graph_storage": "Neo4JStorage",
                                              "vector_storage": "QdrantVectorDBStorage"}
    servers = StorageSettings.from_mapping({"backend": "custom", "kv": "redis", "vector": "milvus",
                                            "graph": "mongo", "doc_status": "MongoDocStatusStorage"}, environ={})
    assert servers.classes == {"kv": "RedisKVStorage", "vector": "MilvusVectorDBStorage",
                               "graph": "MongoGraphStorage", "doc_status": "MongoDocStatusStorage"}
    checks = dict((name, (status, detail)) for name, status, detail in check_storage(servers))
    assert checks["ledger"][0] == "warn"  # no PostgreSQL: the ledger stays a local file, said plainly
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "MONGO_", "MILVUS_"))}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "environ", env)
        checks = {name: (status, detail) for name, status, detail in check_storage(servers)}
    assert checks["RedisKVStorage"] == ("fail", "set REDIS_URI in the environment (read by LightRAG)")


def test_the_environment_blanks_workspace_overrides_and_is_restored(monkeypatch):
    monkeypatch.setenv("POSTGRES_WORKSPACE", "everyone")  # would pour every vault into one workspace
    monkeypatch.setenv("NEO4J_WORKSPACE", "everyone")
    monkeypatch.delenv("PGSSLMODE", raising=False)
    s = StorageSettings.from_mapping({"backend": "postgres", "sslmode": "require"}, environ={})
    wanted = lightrag_env_vars(s)
    assert wanted["POSTGRES_WORKSPACE"] == wanted["NEO4J_WORKSPACE"] == ""
    assert wanted["POSTGRES_SSL_MODE"] == "" and wanted["PGSSLMODE"] == "require"
    assert wanted["POSTGRES_PASSWORD"] == ""  # LightRAG's constructor insists the variable exists
    with lightrag_environment(s):
        assert os.environ["POSTGRES_WORKSPACE"] == "" and os.environ["PGSSLMODE"] == "require"
        with lightrag_environment(s):  # a second engine on the same settings shares it
            pass
        assert os.environ["POSTGRES_HOST"] == "localhost"
        with pytest.raises(ConfigError, match="other storage settings"), lightrag_environment(replace(s, host="x")):
            pass
    assert os.environ["POSTGRES_WORKSPACE"] == "everyone" and "PGSSLMODE" not in os.environ


# --- doctor ---------------------------------------------------------------------------------------------


def test_doctor_passes_a_good_database(pg, settings):
    checks = {name: (status, detail) for name, status, detail in check_storage(settings, workspace="nothing_yet")}
    assert checks["postgres"][0] == "ok" and "PostgreSQL" in checks["postgres"][1]
    assert checks["tables"][0] == "ok"
    assert checks["ledger"][0] == "warn"  # no index for this workspace yet
    assert checks["pgvector"][0] == ("ok" if pg.has_vector else "fail")


def test_doctor_says_what_is_wrong_in_plain_words(pg, settings):
    def detail(s: StorageSettings, name: str = "postgres") -> str:
        found = {n: (st, d) for n, st, d in check_storage(s)}
        assert found[name][0] == "fail", found
        return found[name][1]

    closed = replace(settings, port=_closed_port())
    assert detail(closed).endswith("refused the connection: is the server running, and are host and port right?")
    assert detail(replace(settings, password="wrong", password_source="WIKIRAG_POSTGRES_PASSWORD")) == (
        f"PostgreSQL at 127.0.0.1:{pg.port} refused user 'wikirag': the password from WIKIRAG_POSTGRES_PASSWORD "
        "was not accepted, or the user does not exist")
    assert "wants a password" in detail(replace(settings, password="", password_source=""))
    assert detail(replace(settings, database="nope")) == (
        f"PostgreSQL at 127.0.0.1:{pg.port} has no database 'nope': create it (createdb nope) or set "
        "[storage] database")
    # PostgreSQL answers an unknown user like a wrong password, on purpose; trusted connections tell
    assert "refused user 'ghost'" in detail(replace(settings, user="ghost", password="x"))
    assert "has no user 'ghost'" in detail(replace(settings, user="ghost", host=str(pg.pgdata)))
    assert "SSL problem with sslmode=require" in detail(replace(settings, sslmode="require"))
    # the app role may not create tables in a database it does not own (PostgreSQL 15+ default)
    assert "may not create tables in postgres" in detail(replace(settings, database="postgres"), "tables")
    if pg.has_vector:
        pg.psql(f"CREATE DATABASE novector OWNER {APP_USER}")
        assert "may not install it" in detail(replace(settings, database="novector"), "pgvector")
    else:
        assert "has no pgvector extension" in detail(settings, "pgvector")
    assert APP_PASSWORD not in str(check_storage(replace(settings, password=APP_PASSWORD + "x")))


def test_lightrag_connection_errors_get_the_same_plain_words(pg, settings, vector, tmp_path):
    """What `index` says when LightRAG's own pool (asyncpg) cannot connect: what doctor says."""
    cases = {
        "refused the connection": replace(settings, port=_closed_port(), connection_retries=1),
        "the password from WIKIRAG_POSTGRES_PASSWORD was not accepted": replace(settings, password="wrong"),
        "has no database 'nope'": replace(settings, database="nope"),
    }
    for expected, bad in cases.items():
        with lightrag_environment(bad), pytest.raises(Exception) as info:
            asyncio.run(_open(bad, "errors", tmp_path))
        _forget_shared_data()
        problem = storage_unreachable(bad, info.value)
        assert problem is not None and expected in str(problem), (type(info.value), info.value)
        assert "wrong" not in str(problem)
    assert storage_unreachable(settings, ValueError("a bug")) is None


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the ledger, in the database ------------------------------------------------------------------------


def _ledger_doc(n: int) -> dict:
    return {"version": 1, "meta": {"embedding": "hash-test/384", "workspace": "w"}, "pending": {"entities": []},
            "notes": {f"notes/Nöte {i:03}.md": {"digest": f"d{i}", "chunk_ids": [f"chunk-{i}"],
                                                "entities": [{"name": f"E{i}", "rank": 0}]} for i in range(n)}}


def test_ledger_round_trips_and_writes_only_what_changed(settings):
    store = PostgresLedgerStore(settings, "ledger_rt")
    assert store.load() is None and not store.exists()
    doc = _ledger_doc(50)
    store.save(doc)
    assert store.exists()
    assert PostgresLedgerStore(settings, "ledger_rt").load() == doc
    assert list(PostgresLedgerStore(settings, "ledger_rt").load()["notes"]) == sorted(doc["notes"])

    before = dict(_rows(settings, "SELECT path, xmin::text FROM wikirag_ledger_notes WHERE workspace = %s",
                        "ledger_rt"))
    doc["notes"]["notes/Nöte 001.md"]["digest"] = "changed"
    del doc["notes"]["notes/Nöte 002.md"]
    doc["notes"]["new.md"] = {"digest": "n"}
    doc["pending"] = {"entities": ["E1"]}
    store.save(doc)
    after = dict(_rows(settings, "SELECT path, xmin::text FROM wikirag_ledger_notes WHERE workspace = %s",
                       "ledger_rt"))
    rewritten = {p for p in after if before.get(p) != after[p]}
    assert rewritten == {"notes/Nöte 001.md", "new.md"} and "notes/Nöte 002.md" not in after
    assert PostgresLedgerStore(settings, "ledger_rt").load() == doc
    assert PostgresLedgerStore(settings, "another").load() is None  # per workspace
    again = PostgresLedgerStore(settings, "ledger_rt")
    loaded = again.load()
    loaded["notes"]["new.md"]["digest"] = "edited in place"  # what load returned is the caller's to edit
    again.save(loaded)
    assert PostgresLedgerStore(settings, "ledger_rt").load()["notes"]["new.md"]["digest"] == "edited in place"

    store.delete()
    assert PostgresLedgerStore(settings, "ledger_rt").load() is None
    assert _rows(settings, "SELECT count(*) FROM wikirag_ledger_notes WHERE workspace = %s", "ledger_rt") == [(0,)]


def test_ledger_summaries_come_from_columns_an_older_table_gains_on_its_next_write(settings):
    """load_summaries reads signature, status, chunk digest and chunk count from columns the server fills
    (extracting them from every JSONB entry was most of a big ledger's read); a table made before them reads
    the entries until a write adds them, and both give the same summaries."""
    store = PostgresLedgerStore(settings, "ledger_summ")
    doc = _ledger_doc(3)
    doc["notes"]["notes/Nöte 001.md"].update(signature="s1", status="pending_extraction", chunk_digest="c1")
    doc["notes"]["notes/Nöte 002.md"]["chunk_ids"] = None  # not a list: no count, and no failed write
    store.save(doc)
    with connect(settings) as conn:
        conn.execute("ALTER TABLE wikirag_ledger_notes DROP COLUMN summary_signature, DROP COLUMN summary_status, "
                     "DROP COLUMN summary_chunk_digest, DROP COLUMN summary_chunks")
        conn.commit()
    old = PostgresLedgerStore(settings, "ledger_summ").load_summaries()
    assert old[1]["notes/Nöte 001.md"][1:] == ("s1", "pending_extraction", "c1", 1)
    assert old[1]["notes/Nöte 002.md"][1:] == ("", "indexed", "", 0)
    store.load_summaries()
    store.save_rows(old[0], {})  # any write adds the columns
    columns = _rows(settings, "SELECT count(*) FROM information_schema.columns WHERE table_name = "
                    "'wikirag_ledger_notes' AND column_name LIKE 'summary%%'")
    assert columns == [(4,)]
    assert PostgresLedgerStore(settings, "ledger_summ").load_summaries() == old
    store.delete()


def test_ledger_holders_come_from_gin_indexes_an_older_table_gains_on_its_next_write(settings):
    """`holders` (the notes holding an entity or relation fragment of the touched names: what every edit asks)
    is answered from GIN indexes on the fragment lists, not by reading every row's fragments; it finds a
    relation written either way round, and a table made before the indexes answers the same and gains them on
    its next write."""
    store = PostgresLedgerStore(settings, "ledger_holders")
    doc = _ledger_doc(3000)
    for i, entry in enumerate(doc["notes"].values()):
        entry["entities"].append({"name": "Shared", "rank": 1} if i % 1000 == 0 else {"name": f"F{i}", "rank": 1})
        entry["relations"] = [{"src": f"E{i}", "tgt": f"E{i + 1}"}]
    store.save(doc)
    paths = list(doc["notes"])  # in the order of i
    expected = {paths[0], paths[1000], paths[2000], paths[5], paths[7]}
    question = ({"Shared", "E5"}, [("E8", "E7")])  # the relation E7 -> E8, asked the other way round
    with connect(settings) as conn:
        conn.execute("ANALYZE wikirag_ledger_notes")
        conn.commit()

    def index_scans() -> int:
        with connect(settings) as conn:
            return conn.execute("SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname "
                                "IN ('wikirag_ledger_notes_entities', 'wikirag_ledger_notes_relations')").fetchone()[0]

    before = index_scans()
    assert store.holders(*question) == expected
    assert index_scans() > before
    assert store.holders(set(), []) == set()

    with connect(settings) as conn:
        conn.execute("DROP INDEX wikirag_ledger_notes_entities, wikirag_ledger_notes_relations")
        conn.commit()
    assert PostgresLedgerStore(settings, "ledger_holders").holders(*question) == expected
    store.load_summaries()
    store.save_rows(store.head(), {})  # any write adds the indexes
    assert _rows(settings, "SELECT count(*) FROM pg_indexes WHERE indexname IN "
                 "('wikirag_ledger_notes_entities', 'wikirag_ledger_notes_relations')") == [(2,)]
    assert store.holders(*question) == expected
    store.delete()


def _pending_pages(settings) -> list[int]:
    """What a GIN index's pending list holds, per holder index: gin_clean_pending_list merges it and says how
    many pages it held (0 when nothing waited)."""
    with connect(settings) as conn:
        pages = [conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (name,)).fetchone()[0]
                 for name in ("wikirag_ledger_notes_entities", "wikirag_ledger_notes_relations")]
        conn.commit()
    return pages


def test_ledger_holder_indexes_keep_no_pending_list_and_an_older_table_loses_its_own(settings):
    """GIN's default files new entries in a pending list that every scan reads in full until a VACUUM, which an
    embedded server rarely lives to run: a first index of 13,000 notes left all of them there and `holders`
    became a 60 ms sequential scan. The indexes are made without one, and indexes made with one lose it (and
    what waited there) on the table's next write."""
    from psycopg.types.json import Jsonb
    store = PostgresLedgerStore(settings, "ledger_pending")
    doc = _ledger_doc(400)
    store.save(doc)
    assert _pending_pages(settings) == [0, 0]

    def insert(start: int) -> None:  # rows written beside indexes that keep a pending list
        with connect(settings) as conn, conn.cursor() as cur:
            cur.executemany("INSERT INTO wikirag_ledger_notes (workspace, path, digest, entry) VALUES (%s, %s, %s, %s)",
                            [("ledger_pending", f"later/{i}.md", f"x{i}", Jsonb(
                                {"entities": [{"name": f"L{i}"}], "relations": [{"src": f"L{i}", "tgt": "E1"}]}))
                             for i in range(start, start + 800)])

    with connect(settings) as conn:  # indexes as an older wikirag made them
        conn.execute("ALTER INDEX wikirag_ledger_notes_entities SET (fastupdate = on)")
        conn.execute("ALTER INDEX wikirag_ledger_notes_relations SET (fastupdate = on)")
    insert(0)
    assert min(_pending_pages(settings)) > 0  # such rows do wait there (this merges them: wait again below)
    insert(800)
    store.load_summaries()
    store.save_rows(store.head(), {})  # the next write puts the indexes right and merges what waited
    assert _rows(settings, "SELECT count(*) FROM pg_class WHERE relname IN ('wikirag_ledger_notes_entities', "
                 "'wikirag_ledger_notes_relations') AND reloptions @> '{fastupdate=off}'") == [(2,)]
    assert _pending_pages(settings) == [0, 0]
    assert store.holders({next(iter(doc["notes"].values()))["entities"][0]["name"]}, []) >= {next(iter(doc["notes"]))}
    assert store.holders({"L7"}, [("E1", "L9")]) == {"later/7.md", "later/9.md"}
    store.delete()



def test_another_role_writes_beside_holder_indexes_it_does_not_own(pg, settings):
    """On a server shared by several roles, one that may write the ledger but does not own its tables leaves
    the owner's indexes as they are (only an owner may alter them) instead of failing its write."""
    store = PostgresLedgerStore(settings, "ledger_shared_owner")
    store.save(_ledger_doc(5))  # the app role owns the tables and their indexes
    pg.psql("DROP ROLE IF EXISTS wikirag_other; CREATE ROLE wikirag_other LOGIN PASSWORD 'other-secret'",
            database=APP_DATABASE)
    pg.psql("GRANT SELECT, INSERT, UPDATE, DELETE ON wikirag_ledger, wikirag_ledger_notes TO wikirag_other; "
            "ALTER INDEX wikirag_ledger_notes_entities SET (fastupdate = on)", database=APP_DATABASE)
    other = replace(settings, user="wikirag_other", password="other-secret")
    try:
        PostgresLedgerStore(other, "ledger_shared_other").save(_ledger_doc(3))
        assert PostgresLedgerStore(other, "ledger_shared_other").load() == _ledger_doc(3)
        assert _rows(settings, "SELECT reloptions FROM pg_class WHERE relname = 'wikirag_ledger_notes_entities'") \
            == [(["fastupdate=on"],)]
        store.save_rows(store.head(), {})  # the owner's next write puts its index right
        assert _rows(settings, "SELECT reloptions FROM pg_class WHERE relname = 'wikirag_ledger_notes_entities'") \
            == [(["fastupdate=off"],)]
    finally:
        PostgresLedgerStore(settings, "ledger_shared_other").delete()
        store.delete()
        pg.psql("REVOKE ALL ON wikirag_ledger, wikirag_ledger_notes FROM wikirag_other; DROP ROLE wikirag_other",
                database=APP_DATABASE)

def test_ledger_save_is_all_or_nothing(settings, tmp_path, monkeypatch):
    store = PostgresLedgerStore(settings, "ledger_atomic")
    doc = _ledger_doc(5)
    store.save(doc)
    broken = _ledger_doc(5)
    broken["meta"]["embedding"] = "other"
    broken["notes"]["notes/Nöte 000.md"]["digest"] = "changed"
    broken["notes"]["zz.md"] = {"digest": "bad \u0000 byte"}  # jsonb refuses NUL: the last write fails
    with pytest.raises(Exception, match="(?i)unicode|0000"):
        store.save(broken)
    assert PostgresLedgerStore(settings, "ledger_atomic").load() == doc  # not a single row of the new version

    files = FileLedgerStore(tmp_path / "ws")
    assert files.load() is None
    files.save(doc)
    assert files.load() == doc

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        files.save(broken)
    assert files.load() == doc and [p.name for p in (tmp_path / "ws").iterdir()] == ["wikirag_ledger.json"]


def test_a_stale_ledger_writer_is_refused(settings):
    one, two = PostgresLedgerStore(settings, "ledger_stale"), PostgresLedgerStore(settings, "ledger_stale")
    one.load(), two.load()
    one.save(_ledger_doc(2))
    with pytest.raises(LedgerConflict, match="changed since this run read it"):
        two.save(_ledger_doc(3))
    assert len(two.load()["notes"]) == 2
    two.save(_ledger_doc(3))
    assert len(one.load()["notes"]) == 3


# --- one writer per workspace, across machines -----------------------------------------------------------


def test_advisory_lock_excludes_a_second_writer(settings, tmp_path):
    with writer_lock(settings, tmp_path, "lock_a"):
        with pytest.raises(StoreLocked) as info, writer_lock(settings, tmp_path, "lock_a"):
            pass
        assert str(info.value) == (f"{APP_USER}@127.0.0.1:{settings.port}/{APP_DATABASE}: another wikirag process "
                                   "(index or watch) is writing workspace 'lock_a'")
        with writer_lock(settings, tmp_path, "lock_b"):  # other workspaces are free
            pass
    with writer_lock(settings, tmp_path, "lock_a"):  # released on exit
        pass
    # a writer that dies (its connection drops) leaves no stale lock
    holder = writer_lock(settings, tmp_path, "lock_c").__enter__()
    pid = holder._conn.info.backend_pid
    with connect(settings, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with writer_lock(settings, tmp_path, "lock_c"):
        pass
    holder.__exit__(None, None, None)


# --- LightRAG's four PostgreSQL storages ------------------------------------------------------------------


def _forget_shared_data() -> None:
    """LightRAG keeps per-workspace data in process-wide dicts that only finalize_share_data() clears
    (engine.open_engine does it; a LightRAG built by hand must do it too, or later tests see stale data)."""
    from lightrag.kg.shared_storage import finalize_share_data

    finalize_share_data()


async def _open(settings: StorageSettings, workspace: str, tmp: Path):
    from wikirag.lightrag.guard import import_lightrag

    import_lightrag()
    from lightrag import LightRAG

    from wikirag.lightrag.tokens import lightrag_tokenizer

    async def no_llm(*args, **kwargs):
        raise AssertionError("no LLM call expected")

    rag = LightRAG(working_dir=str(tmp), workspace=workspace, embedding_func=HashEmbedding().func(),
                   llm_model_func=no_llm, tokenizer=lightrag_tokenizer("o200k_base"),
                   **lightrag_storage_kwargs(settings))
    await rag.initialize_storages()
    return rag


async def _write(rag, tag: str) -> None:
    """The same ids in every workspace, with the workspace's own text: a leak would show."""
    from wikirag.graph.records import ChunkRecord
    from wikirag.lightrag.writer import StoreWriter

    writer = StoreWriter(rag)
    chunks = [ChunkRecord("chunk-1", f"{tag}: Alice met Bob at Bletchley", 8, 0,
                          {"level": 1, "heading": "Meeting", "parent_headings": []}, 1, 2),
              ChunkRecord("chunk-2", f"{tag}: Bob wrote to Carol", 6, 1, None, 3, 3)]
    await writer.upsert_chunks("people/Alice.md", "note-alice", chunks)
    await writer.upsert_entities([
        {"entity_id": name, "entity_type": "person", "description": f"{tag} {name}",
         "source_id": "chunk-1<SEP>chunk-2", "file_path": "people/Alice.md"} for name in ("Alice", "Bob", "Carol")
    ] + [{"entity_id": f"Only {tag}", "entity_type": "note", "description": tag, "source_id": "chunk-1",
          "file_path": "x.md"}])
    await writer.upsert_relations([
        {"src_id": "Alice", "tgt_id": "Bob", "weight": 1.0, "description": f"{tag} met", "keywords": "meeting",
         "source_id": "chunk-1", "file_path": "people/Alice.md"},
        {"src_id": "Carol", "tgt_id": "Bob", "weight": 2.0, "description": f"{tag} wrote", "keywords": "letter",
         "source_id": "chunk-2", "file_path": "people/Alice.md"},
    ])
    await writer.flush()


def test_lightrag_pg_storages_take_wikiraqs_writes_per_workspace(settings, vector, tmp_path):
    """Initialise, upsert, read, query and delete through exactly the calls StoreWriter and export make;
    two workspaces in one database, open at once, never see each other's chunks, vectors or graph."""
    from lightrag import QueryParam

    from wikirag.lightrag.writer import StoreWriter

    async def run() -> None:
        one = await _open(settings, "ws_one", tmp_path)
        two = await _open(settings, "ws_two", tmp_path)
        try:
            await _write(one, "ONE")
            await _write(two, "TWO")
            for rag, tag in ((one, "ONE"), (two, "TWO")):
                graph = rag.chunk_entity_relation_graph
                nodes = {n["id"]: n for n in await graph.get_all_nodes()}
                assert set(nodes) == {"Alice", "Bob", "Carol", f"Only {tag}"}
                assert nodes["Alice"]["description"] == f"{tag} Alice"
                edges = {(e["source"], e["target"]): e for e in await graph.get_all_edges()}
                assert set(edges) == {("Alice", "Bob"), ("Bob", "Carol")}
                assert edges[("Bob", "Carol")]["description"] == f"{tag} wrote"
                chunks = await rag.text_chunks.get_by_ids(["chunk-1", "chunk-2"])
                assert [c["content"].split(":")[0] for c in chunks] == [tag, tag]
                assert chunks[0]["heading"]["heading"] == "Meeting" and chunks[0]["full_doc_id"] == "note-alice"
                assert (await rag.entity_chunks.get_by_ids(["Alice"]))[0]["chunk_ids"] == ["chunk-1", "chunk-2"]
                data = await rag.aquery_data("Who did Alice meet?", QueryParam(
                    mode="hybrid", hl_keywords=["meeting"], ll_keywords=["Alice"], enable_rerank=False))
                assert data["status"] == "success"
                found = data["data"]
                assert {e["entity_name"] for e in found["entities"]} <= set(nodes)
                assert found["chunks"] and all(c["content"].startswith(tag) for c in found["chunks"])
                naive = await rag.aquery_data("Bob Carol letter", QueryParam(mode="naive", enable_rerank=False))
                assert naive["data"]["chunks"] and all(c["content"].startswith(tag)
                                                       for c in naive["data"]["chunks"])

            writer = StoreWriter(one)
            await writer.delete_relations([("Bob", "Carol")])
            await writer.delete_entities(["Carol"])
            await writer.delete_chunks(["chunk-2"])
            await writer.flush()
            assert {n["id"] for n in await one.chunk_entity_relation_graph.get_all_nodes()} == {
                "Alice", "Bob", "Only ONE"}
            assert await one.text_chunks.get_by_ids(["chunk-2"]) == [None]
            assert await one.chunks_vdb.get_by_ids(["chunk-2"]) == [None]
            assert len(await two.chunk_entity_relation_graph.get_all_edges()) == 2  # untouched
            assert (await two.text_chunks.get_by_ids(["chunk-2"]))[0]["content"].startswith("TWO")
        finally:
            await one.finalize_storages()
            await two.finalize_storages()

    with lightrag_environment(settings):
        asyncio.run(run())
    _forget_shared_data()

    tables = {r[0] for r in _rows(settings, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    # vector tables are named for the embedding model and dimension (EmbeddingFunc.model_name)
    assert {"lightrag_vdb_chunks_hash_test_384d", "lightrag_graph_nodes", "lightrag_doc_chunks"} <= tables
    counts = dict(_rows(settings, "SELECT workspace, count(*) FROM lightrag_vdb_entity_hash_test_384d "
                                  "WHERE workspace IN ('ws_one', 'ws_two') GROUP BY workspace"))
    assert counts == {"ws_one": 3, "ws_two": 4}
    assert drop_workspace(settings, "ws_one") > 0
    left = dict(_rows(settings, "SELECT workspace, count(*) FROM lightrag_graph_nodes "
                                "WHERE workspace IN ('ws_one', 'ws_two') GROUP BY workspace"))
    assert left == {"ws_two": 4}


# --- wikirag end to end on PostgreSQL ------------------------------------------------------------------------


def _pg_snapshot(settings: StorageSettings, config) -> dict:
    """What storekit.snapshot reads from the file store, read from the database instead."""
    from wikirag.query.export import read_graph

    ws = config.workspace
    with lightrag_environment(settings):
        graph = asyncio.run(read_graph(config, storages=lightrag_storage_kwargs(settings),
                                       embedding_func=HashEmbedding().func()))

    def sources(value) -> list[str]:
        return sorted(v for v in value if v) if isinstance(value, list) else sorted(
            v for v in str(value).split("<SEP>") if v)

    def ids(table: str) -> list[str]:
        return sorted(r[0] for r in _rows(settings, f"SELECT id FROM {table} WHERE workspace = %s", ws))

    def trackers(table: str) -> dict:
        return {i: sorted(c) for i, c in _rows(settings, f"SELECT id, chunk_ids FROM {table} WHERE workspace = %s",
                                                ws)}

    ledger = ledger_doc(config.workspace_dir)
    return {
        "nodes": {n["id"]: {"type": n.get("entity_type"), "description": n.get("description"),
                            "source_id": sources(n.get("source_id", "")), "file_path": sources(n.get("file_path", ""))}
                  for n in graph.nodes},
        "edges": {(e["source"], e["target"]): {"description": e.get("description"), "keywords": e.get("keywords"),
                                               "weight": float(e.get("weight", 0)),
                                               "source_id": sources(e.get("source_id", "")),
                                               "file_path": sources(e.get("file_path", ""))} for e in graph.edges},
        "chunks": {i: (c, p) for i, c, p in _rows(settings, "SELECT id, content, file_path FROM lightrag_doc_chunks "
                                                            "WHERE workspace = %s", ws)},
        "vdb_chunks": ids("lightrag_vdb_chunks_hash_test_384d"),
        "vdb_entities": ids("lightrag_vdb_entity_hash_test_384d"),
        "vdb_relationships": ids("lightrag_vdb_relation_hash_test_384d"),
        "entity_chunks": trackers("lightrag_entity_chunks"),
        "relation_chunks": trackers("lightrag_relation_chunks"),
        "ledger_notes": {p: {k: e[k] for k in ("digest", "signature", "chunk_ids", "entities", "relations")}
                         for p, e in ledger["notes"].items()},
        "pending": ledger["pending"],
    }


def _as_pg(snap: dict) -> dict:
    """The file store's snapshot reduced to the fields _pg_snapshot reads from the database."""
    return {
        "nodes": {n: {"type": d.get("entity_type"), "description": d.get("description"),
                      "source_id": d.get("source_id", []), "file_path": d.get("file_path", [])}
                  for n, d in snap["nodes"].items()},
        "edges": {k: {"description": d.get("description"), "keywords": d.get("keywords"), "weight": d["weight"],
                      "source_id": d.get("source_id", []), "file_path": d.get("file_path", [])}
                  for k, d in snap["edges"].items()},
        "chunks": {i: (c["content"], "<SEP>".join(c["file_path"])) for i, c in snap["chunks"].items()},
        **{name: sorted(snap[name]) for name in ("vdb_chunks", "vdb_entities", "vdb_relationships")},
        **{name: {i: r["chunk_ids"] for i, r in snap[name].items()} for name in ("entity_chunks", "relation_chunks")},
        "ledger_notes": snap["ledger_notes"],
        "pending": snap["pending"],
    }


def _edit(vault: Path) -> None:
    turing = vault / "people" / "Alan Turing.md"
    turing.write_text(turing.read_text().replace("Bletchley", "Bletchley Park, Buckinghamshire,"))
    (vault / "projects" / "Venona.md").unlink()
    (vault / "people" / "Tommy Flowers.md").rename(vault / "people" / "Thomas Flowers.md")
    (vault / "concepts" / "Purple cipher.md").write_text(
        "---\ntype: cipher\n---\nPurple was broken by [[William Friedman]]'s team in 1940.\n")
    shutil.rmtree(vault / "summaries")


def test_index_on_postgres_equals_the_file_store_fresh_and_incremental(settings, vector, tmp_path):
    from wikirag.index.run import run_index
    from wikirag.query.retrieve import ask
    from wikirag.settings import load_config

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    storages = lightrag_storage_kwargs(settings)
    on_pg = load_config(vault, store=tmp_path / "pg-local")
    drop_workspace(settings, on_pg.workspace)
    with lightrag_environment(settings):
        first = run_index(on_pg, storages=storages, embedding_func=HashEmbedding().func())
        again = run_index(on_pg, storages=storages, embedding_func=HashEmbedding().func())
    assert first.notes_indexed > 40 and again.notes_indexed == 0
    on_file = load_config(vault, store=tmp_path / "file")
    run_index(on_file, embedding_func=HashEmbedding().func())
    assert _pg_snapshot(settings, on_pg) == _as_pg(snapshot(on_file))

    with lightrag_environment(settings):
        question = "Who worked with Alan Turing at Bletchley Park?"
        pg_answer = ask(on_pg, question, mode="hybrid", storages=storages, embedding_func=HashEmbedding().func())
    file_answer = ask(on_file, question, mode="hybrid", embedding_func=HashEmbedding().func())
    assert {e["entity_name"] for e in pg_answer.entities} == {e["entity_name"] for e in file_answer.entities}
    assert pg_answer.sources == file_answer.sources

    _edit(vault)
    with lightrag_environment(settings):
        report = run_index(on_pg, storages=storages, embedding_func=HashEmbedding().func())
    assert report.notes_deleted >= 3 and report.notes_new == 2
    fresh = load_config(vault, store=tmp_path / "fresh")
    run_index(fresh, embedding_func=HashEmbedding().func())
    assert _pg_snapshot(settings, on_pg) == _as_pg(snapshot(fresh))


# --- after integration: the config alone selects PostgreSQL ---------------------------------------------


def test_config_selects_postgres_and_the_ledger_and_lock_live_there(pg, settings, vector, tmp_path):
    """index, re-index with --rebuild, export, query, lock and doctor, chosen by wikirag.toml alone."""
    from wikirag.cli.doctor import run_doctor
    from wikirag.index.run import StoreLock, run_index, store_exists
    from wikirag.query.export import read_graph
    from wikirag.query.retrieve import ask
    from wikirag.settings import load_config

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    (vault / "wikirag.toml").write_text('workspace = "integrated"\n[storage]\nbackend = "postgres"\n')
    env = {**os.environ, **pg.env()}
    config = load_config(vault, store=tmp_path / "local", environ=env)
    assert config.storage.uses_postgres and config.storage.password_source == "WIKIRAG_POSTGRES_PASSWORD"
    drop_workspace(config.storage, "integrated")
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert report.notes_indexed > 40 and store_exists(config)
    assert not (config.workspace_dir / "wikirag_ledger.json").exists()  # the ledger is in the database
    assert ledger_doc(config.workspace_dir) == {}  # the local SQLite file holds only the parse cache
    heads = _rows(settings, "SELECT count(*) FROM wikirag_ledger_notes WHERE workspace = 'integrated'")
    assert heads == [(report.notes_indexed,)]
    graph = asyncio.run(read_graph(config, embedding_func=HashEmbedding().func()))
    assert len(graph.nodes) == report.entities and len(graph.edges) == report.relations
    assert ask(config, "Alan Turing", mode="hybrid", embedding_func=HashEmbedding().func()).entities
    note = vault / "people" / "Alan Turing.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")  # work to do
    with StoreLock(config), pytest.raises(StoreLocked, match="workspace 'integrated'"):
        run_index(config, embedding_func=HashEmbedding().func())
    checks = {c.name: c.status for c in run_doctor(config).checks}
    assert checks["postgres"] == checks["tables"] == checks["store"] == "ok"

    rebuilt = run_index(config, rebuild=True, embedding_func=HashEmbedding().func())
    assert rebuilt.notes_indexed == report.notes_indexed
    assert _pg_snapshot_counts(settings, "integrated") == {"nodes": report.entities, "edges": report.relations}


def test_a_rebuild_keeps_the_workspaces_llm_answers_unless_told(pg, settings, vector, tmp_path):
    """On PostgreSQL too `--rebuild` keeps LightRAG's LLM cache rows: re-extraction asks the LLM nothing."""
    from tests.fakes import FakeLLM
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    (vault / "wikirag.toml").write_text('workspace = "answers"\n[storage]\nbackend = "postgres"\n')
    config = load_config(vault, store=tmp_path / "local", environ={**os.environ, **pg.env()},
                         overrides={"llm": {"model": "fake:one"}})
    drop_workspace(config.storage, "answers")
    first = FakeLLM()
    run_index(config, llm_func=first, embedding_func=HashEmbedding().func())
    extracted = [c.kind for c in first.calls].count("extract")
    assert extracted > 0
    again = FakeLLM()
    run_index(config, rebuild=True, llm_func=again, embedding_func=HashEmbedding().func())
    assert again.calls == []
    anew = FakeLLM()
    run_index(config, rebuild=True, drop_llm_cache=True, llm_func=anew, embedding_func=HashEmbedding().func())
    assert [c.kind for c in anew.calls].count("extract") == extracted
    drop_workspace(config.storage, "answers")


def _pg_snapshot_counts(settings, workspace: str) -> dict:
    nodes = _rows(settings, "SELECT count(*) FROM lightrag_graph_nodes WHERE workspace = %s", workspace)[0][0]
    edges = _rows(settings, "SELECT count(*) FROM lightrag_graph_edges WHERE workspace = %s", workspace)[0][0]
    return {"nodes": nodes, "edges": edges}


def test_doctor_warns_when_a_shared_server_gets_the_folder_name_as_workspace(pg, settings, tmp_path):
    from wikirag.cli.doctor import run_doctor
    from wikirag.settings import WikiragConfig

    vault = tmp_path / "Notes"
    vault.mkdir()
    config = WikiragConfig(vault=vault, store=tmp_path / "store", workspace="Notes", storage=settings)
    warned = [c for c in run_doctor(config).checks if c.name == "workspace"]
    assert warned and warned[0].status == "warn" and "unique name" in warned[0].detail
    named = WikiragConfig(vault=vault, store=tmp_path / "store", workspace="team-notes", storage=settings)
    assert not [c for c in run_doctor(named).checks if c.name == "workspace"]


def test_a_loaded_ledger_decodes_only_the_notes_asked_for(settings):
    from tests.test_ledger_store import check_lazy_reads

    check_lazy_reads(lambda: PostgresLedgerStore(settings, "ledger_lazy"))


def test_tend_changed_tables_only_analyzes_on_a_server_of_your_own(settings):
    """A server the user runs keeps autovacuum (with its per-table settings): a run refreshes planner statistics
    early there, and leaves vacuuming to it. (The embedded server's vacuum: tests/test_embedded.py.)"""
    from wikirag.storage.postgres import tend_changed_tables

    with connect(settings, autocommit=True) as conn:
        if conn.info.server_version < 150000:
            pytest.skip("needs pg_stat_force_next_flush (PostgreSQL 15)")
        conn.execute("DROP TABLE IF EXISTS lightrag_tend_own")
        conn.execute("CREATE TABLE lightrag_tend_own (workspace text, id text, PRIMARY KEY (workspace, id)) "
                     "WITH (autovacuum_enabled = off)")
        conn.execute("INSERT INTO lightrag_tend_own SELECT 'w', g::text FROM generate_series(1, 3000) g")
        conn.execute("SELECT pg_stat_force_next_flush()")
    try:
        assert "lightrag_tend_own" in tend_changed_tables(settings)
        assert _rows(settings, "SELECT last_vacuum IS NULL, last_analyze IS NOT NULL FROM pg_stat_user_tables "
                               "WHERE relname = 'lightrag_tend_own'") == [(True, True)]
    finally:
        with connect(settings, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS lightrag_tend_own")


def test_readers_on_another_machine_are_refused_a_rebuild_not_finished(pg, settings, vector, tmp_path, monkeypatch):
    """With the ledger on PostgreSQL, a rebuild's local marker is not seen by a reader on another machine (another
    store folder, the same workspace), which answered from the few notes written so far. The new ledger's head
    says a rebuild is under way until a run has written every note again."""
    from typer.testing import CliRunner

    from tests.test_rebuild_readers import _failing_after
    from wikirag.cli import app
    from wikirag.cli.doctor import run_doctor
    from wikirag.errors import EmbeddingFailed
    from wikirag.index.rebuild import REBUILDING
    from wikirag.index.run import run_index
    from wikirag.settings import load_config
    from wikirag.storage.ledger_store import recorded_meta

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    (vault / "wikirag.toml").write_text('workspace = "elsewhere"\n[storage]\nbackend = "postgres"\n')
    for name, value in pg.env().items():
        monkeypatch.setenv(name, value)
    here, there = tmp_path / "here", tmp_path / "there"
    config = load_config(vault, store=here)
    drop_workspace(config.storage, "elsewhere")
    run_index(config, embedding_func=HashEmbedding().func())
    other = load_config(vault, store=there)
    run_index(other, embedding_func=HashEmbedding().func())  # there too: its manifest says nothing changed since
    for cached in here.rglob("wikirag_vectors.sqlite"):
        cached.unlink()  # each vector embedded again: the embedding API goes away after the wipe
    with pytest.raises(EmbeddingFailed):
        run_index(config, rebuild=True, embedding_func=_failing_after(3))

    def search(store):
        return CliRunner().invoke(app, ["search", "Bombe", "--vault", str(vault), "--store", str(store)])

    refused = search(there)
    assert refused.exit_code == 1 and refused.output.count("\n") == 1, refused.output
    assert "a `wikirag index --rebuild` on " in refused.output and "has not written every note again" in \
        refused.output, refused.output
    assert {c.name: c.status for c in run_doctor(other).checks}["store"] == "warn"
    assert REBUILDING in recorded_meta(other.storage, other.workspace_dir, "elsewhere")
    # the other machine finishes it, although its own files are as its manifest recorded them ("nothing changed")
    run_index(other, embedding_func=HashEmbedding().func())
    assert REBUILDING not in recorded_meta(other.storage, other.workspace_dir, "elsewhere")
    found = search(there)
    assert found.exit_code == 0 and "Bombe" in found.output, found.output
    assert "was cut short" in search(here).output  # here, the local marker stays until a run here ends it
    run_index(config, embedding_func=HashEmbedding().func())
    assert search(here).exit_code == 0
    drop_workspace(config.storage, "elsewhere")
