"""Where the index lives, other servers included: the "nothing changed" manifest's key, and the ledger's record.

An `index` run whose notes and settings match the manifest ends before the store opens. Switching NEO4J_URI,
QDRANT_URL or another server LightRAG reads from the environment (docs/storage.md) must not end it that way;
changing only a password, token or API key must, and no secret may reach the key or the manifest. The ledger
(a local file while these servers hold the data) records the servers it was written to: a writer pointed at
others is refused in one line before it writes, as its notes are not there. No server is needed: the key and
the refusal come from the settings and the ledger, and where a run goes on to write, LightRAG's storages are
opened on files instead (`_files_for_servers`) while wikirag records the servers the settings name, and a rebuild's
drop on the server is recorded (tests/test_rebuild_servers.py tests the drop itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, age_vault_files, copy_vault
from wikirag.cli import app
from wikirag.errors import StoreMismatch
from wikirag.index import rebuild as index_rebuild
from wikirag.index import run as index_run
from wikirag.index import watch as index_watch
from wikirag.index.ledger import Ledger
from wikirag.index.manifest import save_manifest
from wikirag.index.run import _config_key, open_ledger_store, run_index
from wikirag.index.store_model import targets_mismatch
from wikirag.settings import load_config
from wikirag.storage.ledger_store import recorded_meta
from wikirag.storage.settings import StorageSettings
from wikirag.storage.sqlite_store import connect_index_db, get_doc

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
SECRETS = ("hunter2-pw", "tok-9f8e7d", "qk-5a4b3c")

# Per backend docs/storage.md lists: the [storage] role, its target variables at two servers, and its secrets.
BACKENDS = {
    "neo4j": ("graph", {"NEO4J_URI": ("neo4j://neo:hunter2-pw@graph-a:7687", "neo4j://graph-b:7687"),
                        "NEO4J_DATABASE": ("notes", "other")},
              {"NEO4J_USERNAME": "neo", "NEO4J_PASSWORD": "hunter2-pw"}),
    "memgraph": ("graph", {"MEMGRAPH_URI": ("bolt://graph-a:7687", "bolt://graph-b:7687"),
                           "MEMGRAPH_DATABASE": ("memgraph", "other")},
                 {"MEMGRAPH_USERNAME": "mg", "MEMGRAPH_PASSWORD": "hunter2-pw"}),
    "qdrant": ("vector", {"QDRANT_URL": ("https://vec-a:6333?api_key=qk-5a4b3c", "https://vec-b:6333")},
               {"QDRANT_API_KEY": "qk-5a4b3c"}),
    "milvus": ("vector", {"MILVUS_URI": ("http://vec-a:19530", "http://vec-b:19530"),
                          "MILVUS_DB_NAME": ("notes", "other")},
               {"MILVUS_USER": "root", "MILVUS_PASSWORD": "hunter2-pw", "MILVUS_TOKEN": "tok-9f8e7d"}),
    "mongo": ("kv", {"MONGO_URI": ("mongodb://u:hunter2-pw@db-a:27017,db-c:27017/?authSource=admin",
                                   "mongodb://db-b:27017/"),
                     "MONGO_DATABASE": ("LightRAG", "other")}, {}),
    "redis": ("kv", {"REDIS_URI": ("redis://:hunter2-pw@cache-a:6379/0", "redis://cache-a:6379/1")}, {}),
    "opensearch": ("kv", {"OPENSEARCH_HOSTS": ("admin:hunter2-pw@os-a:9200,os-c:9200", "os-b:9200")},
                   {"OPENSEARCH_USER": "admin", "OPENSEARCH_PASSWORD": "hunter2-pw"}),
}


def _config(vault: Path, role: str, backend: str, env: dict[str, str]):
    return load_config(vault, environ={f"WIKIRAG_STORAGE_{role.upper()}": backend, **env})


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_each_server_target_is_in_the_key_and_no_secret_is(tmp_path: Path, backend: str) -> None:
    role, targets, secrets = BACKENDS[backend]
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    first = {var: values[0] for var, values in targets.items()}
    key = _config_key(_config(vault, role, backend, {**first, **secrets}))
    # A secret changed alone (a rotated password, or none given) keeps the key.
    assert _config_key(_config(vault, role, backend, first)) == key
    rotated = {var: value.replace("hunter2-pw", "new-pw") for var, value in {**first, **secrets}.items()}
    assert _config_key(_config(vault, role, backend, rotated)) == key
    for var, (_, other) in targets.items():  # each target variable on its own moves the key
        assert _config_key(_config(vault, role, backend, {**first, **secrets, var: other})) != key, var
    # Unset, a variable is left out (LightRAG's default server), which is another key again.
    assert _config_key(_config(vault, role, backend, secrets)) != key
    settings = _config(vault, role, backend, {**first, **secrets}).storage
    assert settings.servers and not any(s in json.dumps(settings.servers) for s in SECRETS)


def test_targets_cut_every_credential_out_of_a_uri() -> None:
    settings = StorageSettings.from_mapping(
        {"kv": "redis", "vector": "qdrant", "graph": "neo4j"},
        {"REDIS_URI": "redis://:p/a,s?s#x@cache:6379/2", "QDRANT_URL": "https://vec:6333/?api_key=k#f",
         "NEO4J_URI": "neo4j+s://neo:pw@graph.example:7687", "MONGO_URI": "mongodb://unused:27017"})
    assert dict(settings.servers) == {"REDIS_URI": "redis://cache:6379/2", "QDRANT_URL": "https://vec:6333",
                                      "NEO4J_URI": "neo4j+s://graph.example:7687"}  # Mongo: not in use
    # A list without a scheme whose password holds "://": no part of it is taken for one.
    hosts = StorageSettings.from_mapping({"kv": "opensearch"}, {"OPENSEARCH_HOSTS": "admin:p://w@os-a:9200"})
    assert dict(hosts.servers) == {"OPENSEARCH_HOSTS": "os-a:9200"}


@pytest.mark.parametrize(("var", "spellings"), [
    ("QDRANT_URL", ("https://vec:6333", "https://vec:6333/", " HTTPS://Vec:6333/ ", "https://k@vec:6333/?x=1")),
    ("MONGO_URI", ("mongodb://db-a:27017,db-c:27017", "mongodb://u:p@db-a:27017,db-c:27017/?authSource=admin",
                   "mongodb://DB-A:27017, db-c:27017/")),
    ("OPENSEARCH_HOSTS", ("os-a:9200,os-c:9200", "os-a:9200, os-c:9200,", "admin:pw@os-a:9200,os-c:9200")),
    ("MILVUS_URI", ("/data/Milvus.db", "/data/Milvus.db/")),
])
def test_one_server_spelled_another_way_is_one_target(var: str, spellings: tuple[str, ...]) -> None:
    """The ledger compares the recorded target with the current one: a trailing slash, a scheme or host in
    capitals or a space after a comma is the same server, not a new one to refuse."""
    role = {"QDRANT_URL": "vector", "MONGO_URI": "kv", "OPENSEARCH_HOSTS": "kv", "MILVUS_URI": "vector"}[var]
    backend = {"QDRANT_URL": "qdrant", "MONGO_URI": "mongo", "OPENSEARCH_HOSTS": "opensearch",
               "MILVUS_URI": "milvus"}[var]
    forms = {dict(StorageSettings.from_mapping({role: backend}, {var: spelling}).servers)[var]
             for spelling in spellings}
    assert forms == {spellings[0]}
    # A file path's case is kept: on most file systems it names another file.
    if var == "MILVUS_URI":
        other = StorageSettings.from_mapping({role: backend}, {var: "/data/milvus.db"}).servers
        assert dict(other)[var] != spellings[0]


def test_a_store_on_files_keeps_its_key_whatever_the_servers(tmp_path: Path) -> None:
    """The variables of servers no storage uses change nothing (nor the key of stores built before)."""
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    plain = load_config(vault, environ={})
    assert plain.storage.servers == ()
    assert _config_key(load_config(vault, environ={"NEO4J_URI": "neo4j://x:7687", "QDRANT_URL": "http://q"})) \
        == _config_key(plain)


def _on_neo4j(vault: Path, uri: str, password: str = "hunter2-pw"):
    return load_config(vault, environ=_neo4j_env(uri, password))


def _neo4j_env(uri: str, password: str = "hunter2-pw") -> dict[str, str]:
    return {"WIKIRAG_STORAGE_GRAPH": "neo4j", "NEO4J_URI": uri, "NEO4J_USERNAME": "neo", "NEO4J_PASSWORD": password}


def _recorded_servers(config) -> dict[str, str] | None:
    return (recorded_meta(config.storage, config.workspace_dir, config.workspace) or {}).get("servers")


def _store_bytes(config) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(config.workspace_dir.glob("wikirag_index.sqlite*")))


def _store_rows(config) -> tuple[list[str], dict[str, bytes]]:
    """The index database's rows (its bytes move when a reader's close checkpoints the write-ahead log), and
    every other file of the workspace (LightRAG's, the search files, the vector cache)."""
    conn = sqlite3.connect(config.workspace_dir / "wikirag_index.sqlite")
    try:
        rows = list(conn.iterdump())
    finally:
        conn.close()
    return rows, {p.name: p.read_bytes() for p in config.workspace_dir.iterdir()
                  if p.is_file() and not p.name.startswith(("wikirag_index.sqlite", "wikirag_vectors.sqlite"))}


@pytest.fixture
def on_graph_a(tmp_path: Path, monkeypatch):
    """A store as a completed run on Neo4j graph-a leaves it: its notes in the ledger, which records graph-a, and
    a manifest for that server. LightRAG's storages, wherever a run opens them, are file storages here."""
    for var, value in _neo4j_env("neo4j://graph-a:7687").items():  # what LightRAG requires is in the environment
        if var.startswith("NEO4J_"):  # (storage.server_env); the settings are read from each test's own mapping
            monkeypatch.setenv(var, value)
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    on_file = load_config(vault, environ={})
    report = run_index(on_file, embedding_func=HashEmbedding().func())
    age_vault_files(vault)
    assert run_index(on_file, embedding_func=HashEmbedding().func()).notes_new == 0  # records the manifest
    conn = connect_index_db(on_file.workspace_dir)
    recorded = get_doc(conn, "manifest", fast=True)
    conn.close()
    server_a = _on_neo4j(vault, "neo4j://neo:hunter2-pw@graph-a:7687")
    save_manifest(server_a.workspace_dir, _config_key(server_a), recorded["files"], recorded["report"])
    ledger = Ledger.load(open_ledger_store(server_a))
    assert ledger.meta["servers"] == {}  # the file store's run recorded that it used no server
    ledger.meta["servers"] = dict(server_a.storage.servers)
    ledger.save()
    opened: list[str] = []
    real_open = index_run.open_store_engine

    @contextlib.asynccontextmanager
    async def files_for_servers(config, **kwargs):  # where a run opens LightRAG's storages to write
        opened.append(dict(config.storage.servers).get("NEO4J_URI", ""))
        async with real_open(on_file, **kwargs) as rag:
            yield rag

    async def drop_on_the_server(config, **kwargs):  # `--rebuild` empties the workspace there first
        opened.append("drop " + dict(config.storage.servers).get("NEO4J_URI", ""))
        return []

    monkeypatch.setattr(index_run, "open_store_engine", files_for_servers)
    monkeypatch.setattr(index_watch, "open_store_engine", files_for_servers)
    monkeypatch.setattr(index_rebuild, "drop_server_storages", drop_on_the_server)
    return vault, report, opened


def _edit_a_note(vault: Path) -> None:
    note = vault / "projects" / "Bombe.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nHe also liked long-distance running.\n", encoding="utf-8")


def test_the_same_graph_server_with_another_password_is_answered_by_the_manifest(on_graph_a) -> None:
    vault, first, opened = on_graph_a
    again = run_index(_on_neo4j(vault, "neo4j://graph-a:7687", "tok-9f8e7d"), embedding_func=HashEmbedding().func())
    assert again.notes_unchanged == first.notes_new and opened == []


def test_another_graph_server_is_refused_in_one_line_before_anything_is_written(on_graph_a) -> None:
    """The ledger's notes are on graph-a: a run against graph-b found every note written and wrote nothing
    there, leaving the ledger describing one server while searches read another."""
    vault, _, opened = on_graph_a
    server_b = _on_neo4j(vault, "neo4j://neo:hunter2-pw@graph-b:7687")
    _edit_a_note(vault)  # a run with work to do: it too must write nothing
    before = _store_rows(server_b)
    with pytest.raises(StoreMismatch) as refused:
        run_index(server_b, embedding_func=HashEmbedding().func())
    message = str(refused.value)
    assert message == (f"{server_b.workspace_dir}: the index's graph was written to neo4j neo4j://graph-a:7687; "
                       "NEO4J_URI now names neo4j://graph-b:7687: run `wikirag index --rebuild` to fill the new "
                       "server, or point NEO4J_URI back")
    assert opened == [] and _store_rows(server_b) == before
    assert _recorded_servers(server_b) == {"NEO4J_URI": "neo4j://graph-a:7687"}
    # Through the CLI: one line, exit 1, no secret.
    result = CliRunner().invoke(app, ["index", str(vault)], env=_neo4j_env("neo4j://neo:hunter2-pw@graph-b:7687"))
    assert result.exit_code == 1 and "NEO4J_URI now names neo4j://graph-b:7687" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not any(secret in result.output + message for secret in SECRETS)
    assert opened == [] and _store_rows(server_b) == before


def test_watch_on_another_graph_server_is_refused_before_the_store_opens(on_graph_a) -> None:
    vault, _, opened = on_graph_a
    stop = threading.Event()
    stop.set()  # were it not refused: the first index, then no following
    with pytest.raises(StoreMismatch, match="NEO4J_URI now names neo4j://graph-b:7687"):
        asyncio.run(index_watch.watch_vault(_on_neo4j(vault, "neo4j://graph-b:7687"), stop=stop,
                                            embedding_func=HashEmbedding().func()))
    assert opened == []
    result = CliRunner().invoke(app, ["mcp", str(vault), "--watch"], env=_neo4j_env("neo4j://graph-b:7687"))
    assert result.exit_code == 1 and "NEO4J_URI now names neo4j://graph-b:7687" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and opened == []


def test_the_same_graph_server_with_a_rotated_password_writes(on_graph_a) -> None:
    vault, _, opened = on_graph_a
    _edit_a_note(vault)
    config = _on_neo4j(vault, "neo4j://neo:new-secret-pw@graph-a:7687/", "new-secret-pw")  # and a trailing /
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert report.notes_changed == 1 and opened == ["neo4j://graph-a:7687"]
    assert _recorded_servers(config) == {"NEO4J_URI": "neo4j://graph-a:7687"}
    assert b"new-secret-pw" not in _store_bytes(config)


def test_rebuild_fills_the_new_server_and_records_it(on_graph_a) -> None:
    vault, first, opened = on_graph_a
    server_b = _on_neo4j(vault, "neo4j://graph-b:7687")
    rebuilt = run_index(server_b, rebuild=True, embedding_func=HashEmbedding().func())
    assert rebuilt.notes_new == first.notes_new and opened == ["drop neo4j://graph-b:7687", "neo4j://graph-b:7687"]
    assert _recorded_servers(server_b) == {"NEO4J_URI": "neo4j://graph-b:7687"}
    _edit_a_note(vault)
    assert run_index(server_b, embedding_func=HashEmbedding().func()).notes_changed == 1  # graph-b is its server
    with pytest.raises(StoreMismatch, match="written to neo4j neo4j://graph-b:7687; NEO4J_URI now names "
                                            "neo4j://graph-a:7687"):
        run_index(_on_neo4j(vault, "neo4j://graph-a:7687"), embedding_func=HashEmbedding().func())


def test_a_ledger_from_before_servers_were_recorded_adopts_the_current_ones(on_graph_a) -> None:
    """An older wikirag recorded no servers: nothing to compare, so the run goes on and records its own."""
    vault, first, opened = on_graph_a
    server_b = _on_neo4j(vault, "neo4j://neo:hunter2-pw@graph-b:7687")
    ledger = Ledger.load(open_ledger_store(server_b))
    del ledger.meta["servers"]
    ledger.save()
    report = run_index(server_b, embedding_func=HashEmbedding().func())  # no note changed: nothing to write
    assert report.notes_unchanged == first.notes_new and opened == []
    assert _recorded_servers(server_b) == {"NEO4J_URI": "neo4j://graph-b:7687"}  # adopted all the same
    with pytest.raises(StoreMismatch, match="NEO4J_URI now names neo4j://graph-c:7687"):
        run_index(_on_neo4j(vault, "neo4j://graph-c:7687"), embedding_func=HashEmbedding().func())
    assert not any(secret.encode() in _store_bytes(server_b) for secret in SECRETS)


def test_doctor_says_the_store_was_written_to_another_server(on_graph_a) -> None:
    from wikirag.cli.doctor import _store

    vault, _, _ = on_graph_a
    check = _store(_on_neo4j(vault, "neo4j://neo:hunter2-pw@graph-b:7687"))
    assert check.status == "fail" and "NEO4J_URI now names neo4j://graph-b:7687" in check.detail, check
    assert "hunter2-pw" not in check.detail
    assert _store(_on_neo4j(vault, "neo4j://graph-a:7687", "rotated")).status == "ok"


def test_readers_are_not_refused(on_graph_a) -> None:
    """search and query read what the servers hold; only writers are stopped."""
    vault, _, _ = on_graph_a
    result = CliRunner().invoke(app, ["search", "Bombe", "--vault", str(vault), "--mode", "lexical"],
                                env=_neo4j_env("neo4j://graph-b:7687"))
    assert result.exit_code == 0, result.output


def _settings(roles: dict[str, str], env: dict[str, str]) -> StorageSettings:
    return StorageSettings.from_mapping(roles, env)


@pytest.mark.parametrize(("recorded", "roles", "env", "says"), [
    ({"NEO4J_URI": "neo4j://a:7687", "NEO4J_DATABASE": "notes"}, {"graph": "neo4j"},
     {"NEO4J_URI": "neo4j://a:7687", "NEO4J_DATABASE": "other"},
     "the index's graph was written to neo4j database notes; NEO4J_DATABASE now names other: run `wikirag index "
     "--rebuild` to fill the new database, or point NEO4J_DATABASE back"),
    ({"REDIS_URI": "redis://a:6379/0"}, {"kv": "redis", "doc_status": "redis"}, {"REDIS_URI": "redis://b:6379/0"},
     "the index's kv and doc_status were written to redis redis://a:6379/0; REDIS_URI now names redis://b:6379/0"),
    ({"QDRANT_URL": "http://a:6333"}, {"vector": "qdrant"}, {},
     "the index's vector was written to qdrant http://a:6333; QDRANT_URL is now unset (LightRAG's default): "
     "run `wikirag index --rebuild` to fill that, or set QDRANT_URL back"),
    ({"QDRANT_URL": "http://a:6333"}, {"vector": "nano"}, {"QDRANT_URL": "http://a:6333"},
     "the index was written to qdrant http://a:6333 (QDRANT_URL); no storage uses qdrant now: run `wikirag index "
     "--rebuild` to fill the storages in use, or go back to the earlier [storage]"),
    ({}, {"graph": "neo4j"}, {"NEO4J_URI": "neo4j://b:7687"},
     "the index was written without NEO4J_URI; its graph now goes to neo4j neo4j://b:7687: run `wikirag index "
     "--rebuild` to fill the server, or go back to the earlier settings"),
])
def test_each_kind_of_move_is_named(recorded: dict[str, str], roles: dict[str, str], env: dict[str, str],
                                    says: str) -> None:
    assert targets_mismatch(recorded, _settings(roles, env)).startswith(says)


def test_what_is_no_move_is_not_refused() -> None:
    """A store on files records no server; one whose ledger says nothing (an older wikirag) is not compared; a
    recorded target in another spelling of the same server, or with credentials, is the same target."""
    assert targets_mismatch({}, _settings({}, {"NEO4J_URI": "neo4j://unused:7687"})) is None
    assert targets_mismatch(None, _settings({"graph": "neo4j"}, {"NEO4J_URI": "neo4j://b:7687"})) is None
    assert targets_mismatch({"NEO4J_URI": "NEO4J://u:pw@Graph-A:7687/"},
                            _settings({"graph": "neo4j"}, {"NEO4J_URI": "neo4j://graph-a:7687"})) is None
