"""The "nothing changed" manifest is keyed on where the index lives, other servers included.

An `index` run whose notes and settings match the manifest ends before the store opens. Switching NEO4J_URI,
QDRANT_URL or another server LightRAG reads from the environment (docs/storage.md) must not end it that way;
changing only a password, token or API key must, and no secret may reach the key or the manifest. No server
is needed: the key is computed from the settings, and the run is stopped where it would open the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.storekit import HashEmbedding, age_vault_files, copy_vault
from wikirag.index import run as index_run
from wikirag.index.manifest import save_manifest
from wikirag.index.run import _config_key, run_index
from wikirag.settings import load_config
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


def test_switching_the_graph_server_with_no_note_changed_goes_past_the_manifest(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """The path of test_embedded's storage switch: with NEO4J_URI on another server the manifest said
    "unchanged" and the run ended before the store opened, so the new server was never written."""
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    on_file = load_config(vault, environ={})
    first = run_index(on_file, embedding_func=HashEmbedding().func())
    age_vault_files(vault)
    assert run_index(on_file, embedding_func=HashEmbedding().func()).notes_new == 0  # records the manifest
    conn = connect_index_db(on_file.workspace_dir)
    recorded = get_doc(conn, "manifest", fast=True)
    conn.close()

    def on_neo4j(uri: str, password: str):
        return load_config(vault, environ={"WIKIRAG_STORAGE_GRAPH": "neo4j", "NEO4J_URI": uri,
                                           "NEO4J_USERNAME": "neo", "NEO4J_PASSWORD": password})

    # As after a completed run on graph-a (no Neo4j here: the manifest is what that run would have left).
    server_a = on_neo4j("neo4j://neo:hunter2-pw@graph-a:7687", "hunter2-pw")
    save_manifest(server_a.workspace_dir, _config_key(server_a), recorded["files"], recorded["report"])
    opened: list[str] = []

    async def store_opens(config, *args, **kwargs):  # where the run would open the store and write
        opened.append(dict(config.storage.servers)["NEO4J_URI"])
        raise RuntimeError("no Neo4j in this test")

    monkeypatch.setattr(index_run, "_index", store_opens)
    again = run_index(on_neo4j("neo4j://graph-a:7687", "tok-9f8e7d"), embedding_func=HashEmbedding().func())
    assert again.notes_unchanged == first.notes_new and opened == []  # same server, another password
    with pytest.raises(RuntimeError, match="no Neo4j"):
        run_index(on_neo4j("neo4j://graph-b:7687", "hunter2-pw"), embedding_func=HashEmbedding().func())
    assert opened == ["neo4j://graph-b:7687"]
    stored = b"".join(p.read_bytes() for p in on_file.workspace_dir.glob("wikirag_index.sqlite*"))
    assert stored and not any(s.encode() in stored for s in SECRETS)
