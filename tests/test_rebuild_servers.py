"""`index --rebuild` on the servers LightRAG's storages are passed through to (docs/storage.md, "Rebuilding on a
server").

A rebuild deleted this workspace's files and PostgreSQL rows only: what the earlier index wrote to Redis, Neo4j,
Qdrant, ... stayed there, and the rebuilt index read it as its own (a deleted note's chunk and records). Checked
without servers, two ways:
- Redis for real, in process (fakeredis): LightRAG's RedisKVStorage and RedisDocStatusStorage hold the index, and
  a rebuild must leave there exactly what a fresh index of the vault writes, beside another workspace's keys and
  this workspace's LLM cache (kept unless --drop-llm-cache), untouched.
- every other backend through LightRAG's own constructor, with a recording double as its storage class (the module
  `lightrag.kg.<name>_impl` LightRAG imports it from): each storage on the server is initialised, dropped and
  finalised for this workspace; a failure is one line naming the server, and the next `index` finishes the rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import types
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from fakeredis import FakeAsyncRedisConnection
from redis.asyncio import ConnectionPool
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, copy_vault
from wikirag.cli import app
from wikirag.cli.doctor import run_doctor
from wikirag.index import run as index_run
from wikirag.index import watch as index_watch
from wikirag.index.rebuild import REBUILD_MARKER
from wikirag.index.run import run_index
from wikirag.lightrag import storages
from wikirag.lightrag.server_drop import drop_server_storages
from wikirag.settings import load_config
from wikirag.storage.postgres import StorageUnreachable
from wikirag.storage.settings import REQUIREMENTS, storage_family

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
REDIS_URI = "redis://:hunter2-pw@cache-a:6379/0"
PAID = ("llm_response_cache:default:extract:5f1d", '{"return": "entity<|#|>Bombe<|#|>machine<|#|>paid for"}')


def _embed() -> Any:
    return HashEmbedding().func()


# --- Redis, for real ---------------------------------------------------------------------------------------------


@pytest.fixture
def redis(monkeypatch) -> fakeredis.FakeStrictRedis:
    """An in-process Redis that LightRAG's Redis storages connect to at REDIS_URI; the client reads it."""
    on_redis = load_config(SAMPLE, environ={"WIKIRAG_STORAGE_KV": "redis", "REDIS_URI": REDIS_URI})
    storages.import_storage_modules(on_redis.storage)  # LightRAG's module, imported as wikirag imports it
    redis_impl = sys.modules["lightrag.kg.redis_impl"]
    server = fakeredis.FakeServer()

    class FakePool:
        @staticmethod
        def from_url(url: str, **kwargs: Any) -> ConnectionPool:
            return ConnectionPool(connection_class=FakeAsyncRedisConnection, server=server, decode_responses=True)

    monkeypatch.setattr(redis_impl, "ConnectionPool", FakePool)
    monkeypatch.setattr(redis_impl.RedisConnectionManager, "_pools", {})  # pools are kept per URL, per process
    monkeypatch.setattr(redis_impl.RedisConnectionManager, "_pool_refs", {})
    monkeypatch.setenv("REDIS_URI", REDIS_URI)
    client = fakeredis.FakeStrictRedis(server=server, decode_responses=True)
    client.server = server
    return client


def _on_redis(vault: Path):
    return load_config(vault, environ={"WIKIRAG_STORAGE_KV": "redis", "WIKIRAG_STORAGE_DOC_STATUS": "redis",
                                       "REDIS_URI": REDIS_URI})


def _keys(redis: fakeredis.FakeStrictRedis, workspace: str) -> set[str]:
    """A workspace's keys without its prefix (LightRAG's `<workspace>_<namespace>:<id>`)."""
    return {key.removeprefix(f"{workspace}_") for key in redis.keys(f"{workspace}_*")}


def _dump(redis: fakeredis.FakeStrictRedis, workspace: str) -> dict[str, Any]:
    return {key: redis.dump(key) for key in redis.keys(f"{workspace}_*")}


@pytest.fixture
def indexed(tmp_path: Path, redis):
    """Vault `notes` indexed on Redis beside another vault's workspace `other`, with an LLM answer in its cache
    (paid for), then a note deleted: the deleted note's records are what a rebuild must not keep."""
    vault = copy_vault(SAMPLE, tmp_path / "a" / "notes")
    config = _on_redis(vault)
    run_index(config, embedding_func=_embed())
    run_index(_on_redis(copy_vault(SAMPLE, tmp_path / "b" / "other")), embedding_func=_embed())
    redis.set(f"notes_{PAID[0]}", PAID[1])
    redis.set(f"other_{PAID[0]}", PAID[1])
    assert any(key.startswith("text_chunks:") for key in _keys(redis, "notes"))
    (vault / "projects" / "Bombe.md").unlink()
    fresh = copy_vault(vault, tmp_path / "c" / "fresh")  # what the rebuilt workspace must hold
    run_index(_on_redis(fresh), embedding_func=_embed())
    return config, _keys(redis, "fresh") | {PAID[0]}


def test_a_rebuild_leaves_on_redis_what_a_fresh_index_writes(indexed, redis) -> None:
    """Before, Bombe's chunk, document and records stayed on Redis after the rebuild and were read as the
    rebuilt index's own."""
    config, fresh = indexed
    theirs = _dump(redis, "other")
    run_index(config, rebuild=True, embedding_func=_embed())
    assert _keys(redis, "notes") == fresh
    assert redis.get(f"notes_{PAID[0]}") == PAID[1]  # the answer paid for is kept
    assert _dump(redis, "other") == theirs  # another workspace on the same server is untouched


def test_drop_llm_cache_drops_the_workspace_s_answers_on_redis(indexed, redis) -> None:
    config, fresh = indexed
    theirs = _dump(redis, "other")
    run_index(config, rebuild=True, drop_llm_cache=True, embedding_func=_embed())
    assert _keys(redis, "notes") == fresh - {PAID[0]}
    assert _dump(redis, "other") == theirs


@pytest.mark.parametrize("drop_llm_cache", [False, True])
def test_a_rebuild_cut_short_by_the_server_is_finished_by_the_next_index(indexed, redis, drop_llm_cache) -> None:
    """Redis stops answering once wikirag's own records are gone: one line naming the server (no password), and
    the next plain `index` empties the workspace on Redis before it writes, rather than writing beside the
    earlier index's keys; it drops the LLM cache there if the rebuild was asked to."""
    config, fresh = indexed
    redis.server.connected = False
    with pytest.raises(StorageUnreachable) as failed:
        run_index(config, rebuild=True, drop_llm_cache=drop_llm_cache, embedding_func=_embed())
    message = str(failed.value)
    assert message.startswith(f"{config.workspace_dir}: --rebuild could not empty LightRAG's text_chunks "
                              "(RedisKVStorage) on redis redis://cache-a:6379/0: ")
    assert message.endswith("; the next `wikirag index` finishes the rebuild") and "\n" not in message
    assert "hunter2-pw" not in message
    assert (config.workspace_dir / REBUILD_MARKER).is_file()
    said = {c.name: c for c in run_doctor(config).checks}["store"]
    assert (said.status, "was cut short; the next `wikirag index` finishes it" in said.detail) == ("warn", True)
    redis.server.connected = True
    again = run_index(config, embedding_func=_embed())
    assert again.notes_new == again.notes_total - again.notes_skipped
    assert _keys(redis, "notes") == fresh - ({PAID[0]} if drop_llm_cache else set())
    assert not (config.workspace_dir / REBUILD_MARKER).exists()


# --- every pass-through backend, through LightRAG's constructor with a recording double -------------------------

# short name -> (LightRAG's module for it, the roles it can hold)
SERVERS = {
    "redis": ("redis_impl", ("kv", "doc_status")),
    "mongo": ("mongo_impl", ("kv", "vector", "graph", "doc_status")),
    "opensearch": ("opensearch_impl", ("kv", "vector", "graph", "doc_status")),
    "neo4j": ("neo4j_impl", ("graph",)),
    "memgraph": ("memgraph_impl", ("graph",)),
    "qdrant": ("qdrant_impl", ("vector",)),
    "milvus": ("milvus_impl", ("vector",)),
}
# LightRAG's namespaces per role, as LightRAG 1.5.7's "clear documents" drops them (the LLM cache apart)
NAMESPACES = {"kv": {"text_chunks", "full_docs", "full_entities", "full_relations", "entity_chunks",
                     "relation_chunks"},
              "vector": {"entities", "relationships", "chunks"}, "graph": {"chunk_entity_relation"},
              "doc_status": {"doc_status"}}
URIS = {"NEO4J_URI": "neo4j://neo:hunter2-pw@graph-a:7687", "MEMGRAPH_URI": "bolt://graph-a:7687",
        "QDRANT_URL": "https://vec-a:6333?api_key=hunter2-pw", "MILVUS_URI": "http://root:hunter2-pw@vec-a:19530",
        "MILVUS_DB_NAME": "notes", "MONGO_URI": "mongodb://u:hunter2-pw@db-a:27017/?authSource=admin",
        "MONGO_DATABASE": "LightRAG", "REDIS_URI": REDIS_URI, "OPENSEARCH_HOSTS": "admin:hunter2-pw@os-a:9200"}


class Recording:
    """A LightRAG storage that records what is asked of it; `failing` makes its drop fail as LightRAG's do."""

    calls: list[tuple[str, str, str, str]] = []
    failing: dict[str, Any] = {}
    models: dict[str, str] = {}  # namespace -> the embedding model a dropped storage was built with

    def __init__(self, namespace: str, global_config: dict, embedding_func: Any, workspace: str | None = None,
                 **kwargs: Any) -> None:
        self.namespace, self.workspace = namespace, workspace or ""
        self.model = getattr(embedding_func, "model_name", None)

    async def initialize(self) -> None:
        self.calls.append(("initialize", type(self).__name__, self.namespace, self.workspace))

    async def drop(self) -> dict[str, str]:
        self.calls.append(("drop", type(self).__name__, self.namespace, self.workspace))
        self.models[self.namespace] = self.model
        failure = self.failing.get(self.namespace)
        if isinstance(failure, Exception):
            raise failure
        return failure or {"status": "success", "message": "data dropped"}

    async def finalize(self) -> None:
        self.calls.append(("finalize", type(self).__name__, self.namespace, self.workspace))


@pytest.fixture
def recording(monkeypatch):
    """Every pass-through backend's LightRAG module replaced by recording doubles, its variables set."""
    monkeypatch.setattr(Recording, "calls", [])
    monkeypatch.setattr(Recording, "failing", {})
    monkeypatch.setattr(Recording, "models", {})
    monkeypatch.setattr(storages, "missing_packages", lambda settings: [])  # their drivers are not installed
    for short, (module, roles) in SERVERS.items():
        fake = types.ModuleType(f"lightrag.kg.{module}")
        for role in roles:
            name = load_config(SAMPLE, environ={f"WIKIRAG_STORAGE_{role.upper()}": short}).storage.classes[role]
            setattr(fake, name, type(name, (Recording,), {}))
        monkeypatch.setitem(sys.modules, fake.__name__, fake)
    for family in {storage_family(name) for name in REQUIREMENTS} | set(REQUIREMENTS):
        for var in REQUIREMENTS[family][2]:
            monkeypatch.setenv(var, URIS.get(var, "env-secret-pw" if "PASSWORD" in var else "neo"))
    return Recording


def _on(vault: Path, short: str, roles: tuple[str, ...] | None = None):
    roles = SERVERS[short][1] if roles is None else roles
    return load_config(vault, environ={**URIS, **{f"WIKIRAG_STORAGE_{role.upper()}": short for role in roles}})


@pytest.mark.parametrize("short", sorted(SERVERS))
@pytest.mark.parametrize("keep_llm_cache", [True, False])
def test_each_storage_on_a_server_is_dropped_for_this_workspace(tmp_path, recording, short, keep_llm_cache) -> None:
    config = _on(copy_vault(SAMPLE, tmp_path / "notes"), short)
    asyncio.run(drop_server_storages(config, keep_llm_cache=keep_llm_cache))
    wanted = set().union(*(NAMESPACES[role] for role in SERVERS[short][1]))
    if "kv" in SERVERS[short][1] and not keep_llm_cache:
        wanted.add("llm_response_cache")
    dropped = [(namespace, workspace) for step, _, namespace, workspace in recording.calls if step == "drop"]
    assert sorted(dropped) == sorted((namespace, "notes") for namespace in wanted)
    for namespace in wanted:  # each opened for its drop only, and closed again
        assert [step for step, _, ns, _ in recording.calls if ns == namespace] == ["initialize", "drop", "finalize"]


# where each server is, as a failure names it: the ledger's form of its variables, credentials cut
TARGETS = {"redis": "redis redis://cache-a:6379/0", "mongo": "mongo mongodb://db-a:27017, database LightRAG",
           "opensearch": "opensearch os-a:9200", "neo4j": "neo4j neo4j://graph-a:7687",
           "memgraph": "memgraph bolt://graph-a:7687", "qdrant": "qdrant https://vec-a:6333",
           "milvus": "milvus http://vec-a:19530, database notes"}


@pytest.mark.parametrize("short", sorted(SERVERS))
def test_a_failure_names_the_server_and_no_credential(tmp_path, recording, short) -> None:
    """A driver's error may quote the server's variable whole, or a user:password@host of it."""
    config = _on(copy_vault(SAMPLE, tmp_path / "notes"), short)
    first = SERVERS[short][1][0]
    namespace = sorted(NAMESPACES[first])[0]
    quoted = " ".join(URIS[var] for var in sorted(URIS) if var.split("_")[0].lower() == short)
    recording.failing[namespace] = RuntimeError(f"login refused for {quoted} (admin:hunter2-pw@os-a:9200)\ntrace")
    with pytest.raises(StorageUnreachable) as failed:
        asyncio.run(drop_server_storages(config, keep_llm_cache=True))
    message = str(failed.value)
    assert f") on {TARGETS[short]}: RuntimeError: login refused for " in message, message
    assert "hunter2-pw" not in message and "trace" not in message and "\n" not in message


def test_storages_on_files_or_postgresql_are_not_dropped_through_lightrag(tmp_path, recording) -> None:
    """Those are wikirag's to delete (by file name, by workspace row); a Faiss index is a file too."""
    vault = copy_vault(SAMPLE, tmp_path / "notes")
    for environ in ({}, {"WIKIRAG_STORAGE_BACKEND": "postgres"}, {"WIKIRAG_STORAGE_VECTOR": "faiss", **URIS}):
        assert asyncio.run(drop_server_storages(load_config(vault, environ=environ), keep_llm_cache=False)) == []
    assert recording.calls == []


def _written_on(tmp_path: Path, monkeypatch, short: str):
    """A vault indexed with `short` (the double) holding its roles; where a run writes, LightRAG's storages are
    files."""
    vault = copy_vault(SAMPLE, tmp_path / "notes")
    on_file = load_config(vault, environ={})
    real_open = index_run.open_store_engine

    @contextlib.asynccontextmanager
    async def files_for_servers(config, **kwargs):
        async with real_open(on_file, **kwargs) as rag:
            yield rag

    monkeypatch.setattr(index_run, "open_store_engine", files_for_servers)
    monkeypatch.setattr(index_watch, "open_store_engine", files_for_servers)
    monkeypatch.setattr(index_run, "preload_embedder", lambda config: None)
    config = _on(vault, short)
    first = run_index(config, embedding_func=_embed())
    assert Recording.calls == []  # an incremental run drops nothing
    return vault, config, first


@pytest.fixture
def on_neo4j(tmp_path: Path, recording, monkeypatch, fast_embedding):
    return _written_on(tmp_path, monkeypatch, "neo4j")


@pytest.mark.parametrize("short", ["qdrant", "milvus"])
def test_a_rebuild_drops_the_vectors_of_the_model_it_writes_with(tmp_path, recording, monkeypatch, short) -> None:
    """Qdrant and Milvus name a vector collection for its embedding model. A rebuild given its own embedding (a
    library caller, bench's hashing one) dropped the configured model's collections and left the vectors it had
    written (found with Milvus Lite: the deleted note's chunk vector stayed)."""
    _, config, _ = _written_on(tmp_path, monkeypatch, short)
    embed = _embed()
    run_index(config, rebuild=True, embedding_func=embed)
    assert recording.models == dict.fromkeys(("entities", "relationships", "chunks"), embed.model_name)


def _graph_drops(recording) -> list[tuple[str, str]]:
    return [(cls, workspace) for step, cls, _, workspace in recording.calls if step == "drop"]


def test_a_failed_drop_is_one_line_and_the_next_index_finishes_the_rebuild(on_neo4j, recording) -> None:
    vault, config, first = on_neo4j
    recording.failing["chunk_entity_relation"] = {
        "status": "error", "message": "Neo.ClientError.Security.Unauthorized: neo4j://neo:hunter2-pw@graph-a:7687\n"
                                      "  at line 2 of a server trace"}
    result = CliRunner().invoke(app, ["index", str(vault), "--rebuild"], env={**URIS, "WIKIRAG_STORAGE_GRAPH": "neo4j"})
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"Error: {config.workspace_dir}: --rebuild could not empty LightRAG's chunk_entity_relation_graph "
        "(Neo4JStorage) on neo4j neo4j://graph-a:7687: Neo.ClientError.Security.Unauthorized: "
        "neo4j://graph-a:7687; the next `wikirag index` finishes the rebuild"], result.output
    assert "hunter2-pw" not in result.output and (config.workspace_dir / REBUILD_MARKER).is_file()
    with pytest.raises(StorageUnreachable, match="; the next `wikirag index` finishes the rebuild$"):
        asyncio.run(index_watch.watch_vault(config, embedding_func=_embed()))  # it finishes it first, and cannot yet
    recording.failing.clear()
    recording.calls.clear()
    again = run_index(config, embedding_func=_embed())  # no --rebuild: the marker says one is under way
    assert _graph_drops(recording) == [("Neo4JStorage", "notes")]
    assert again.notes_new == first.notes_new and not (config.workspace_dir / REBUILD_MARKER).exists()
    recording.calls.clear()
    assert run_index(config, embedding_func=_embed()).notes_new == 0 and recording.calls == []


def test_a_driver_error_is_one_line_too(on_neo4j, recording) -> None:
    """Some drops raise rather than return an error (and initialize() does): the same line."""
    _, config, _ = on_neo4j
    recording.failing["chunk_entity_relation"] = ConnectionRefusedError(111, "Connection refused")
    with pytest.raises(StorageUnreachable, match=r"on neo4j neo4j://graph-a:7687: ConnectionRefusedError: "
                                                 r"\[Errno 111\] Connection refused; the next"):
        run_index(config, rebuild=True, embedding_func=_embed())
