"""A server storage whose connection LightRAG cannot take from the environment is refused in one line before a
store is opened (storage/server_env.py): a required variable unset (LightRAG's constructor raised a ValueError,
a traceback under `index`, `search` and `query`), or a MILVUS_URI naming a local Milvus Lite file (refused before
pymilvus is imported). `doctor` fails its check with the same line. No server is needed: the refusal comes from
the settings and the environment."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, copy_vault
from wikirag.cli import app
from wikirag.errors import ConfigError
from wikirag.index.watch import watch_vault
from wikirag.settings import load_config
from wikirag.storage.server_env import is_local_file, require_server_env
from wikirag.storage.settings import StorageSettings

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
REDIS_UNSET = "RedisKVStorage: set REDIS_URI in the environment (read by LightRAG)"
SERVER_VARS = ("REDIS_", "MILVUS_", "NEO4J_", "MONGO_", "QDRANT_", "MEMGRAPH_", "OPENSEARCH_")


@pytest.fixture(autouse=True)
def no_server_env(monkeypatch):
    for var in [v for v in os.environ if v.startswith(SERVER_VARS)]:
        monkeypatch.delenv(var)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_vault(SAMPLE, tmp_path / "vault")


def _one_line(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "ValueError" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_index_with_a_server_variable_unset_is_one_line_before_the_store_is_touched(vault, tmp_path):
    store = tmp_path / "store"
    result = CliRunner().invoke(app, ["index", str(vault), "--store", str(store)],
                                env={"WIKIRAG_STORAGE_KV": "redis", "WIKIRAG_STORAGE_DOC_STATUS": "redis"})
    assert _one_line(result) == f"Error: RedisDocStatusStorage, {REDIS_UNSET}"
    assert not store.exists()


@pytest.mark.parametrize("command", [["search", "Bombe"], ["search", "Bombe", "--mode", "naive"],
                                     ["query", "Who built the Bombe?", "--context-only"]])
def test_readers_with_a_server_variable_unset_are_one_line(vault, tmp_path, fast_embedding, command):
    """A store indexed on files, read with the kv storage moved to Redis and no REDIS_URI: the engine opens
    through the shared path, which refuses before LightRAG's constructor raises."""
    assert CliRunner().invoke(app, ["index", str(vault)]).exit_code == 0
    result = CliRunner().invoke(app, [*command, "--vault", str(vault)], env={"WIKIRAG_STORAGE_KV": "redis"})
    assert _one_line(result) == f"Error: {REDIS_UNSET}"


def test_watch_with_a_server_variable_unset_is_refused_before_the_store_opens(vault, tmp_path):
    config = load_config(vault, store=tmp_path / "store", environ={"WIKIRAG_STORAGE_KV": "redis"})
    with pytest.raises(ConfigError, match=re.escape(REDIS_UNSET)):
        asyncio.run(watch_vault(config, embedding_func=HashEmbedding().func()))
    assert not (tmp_path / "store").exists()


def test_every_storage_missing_something_is_named_in_the_one_line():
    settings = StorageSettings.from_mapping({"backend": "custom", "kv": "redis", "graph": "neo4j"}, environ={})
    with pytest.raises(ConfigError) as caught:
        require_server_env(settings, {"NEO4J_URI": "neo4j://graph:7687"})
    assert str(caught.value) == ("Neo4JStorage: set NEO4J_USERNAME, NEO4J_PASSWORD in the environment (read by "
                                 f"LightRAG); {REDIS_UNSET}")
    # set empty is set, as LightRAG has it
    require_server_env(settings, {"REDIS_URI": "redis://cache:6379/0", "NEO4J_URI": "neo4j://graph:7687",
                                  "NEO4J_USERNAME": "neo4j", "NEO4J_PASSWORD": ""})


MILVUS_LITE = ("MilvusVectorDBStorage: MILVUS_URI './milvus.db' is a local file (Milvus Lite), which wikirag does "
               "not use: set it to a Milvus server's URI (http://host:19530)")


def test_a_milvus_lite_file_is_refused_before_pymilvus_is_imported(vault, tmp_path):
    env = {"WIKIRAG_STORAGE_VECTOR": "milvus", "MILVUS_URI": "./milvus.db", "MILVUS_DB_NAME": "notes"}
    store = tmp_path / "store"
    result = CliRunner().invoke(app, ["index", str(vault), "--store", str(store)], env=env)
    assert _one_line(result) == f"Error: {MILVUS_LITE}"  # not "needs pymilvus: pip install pymilvus"
    assert "pymilvus" not in sys.modules and not store.exists()
    doctor = CliRunner().invoke(app, ["doctor", str(vault), "--store", str(store)], env=env)
    assert doctor.exit_code == 1
    name, detail = MILVUS_LITE.split(": ", 1)
    assert f"{name} FAIL {detail}" in " ".join(doctor.output.split()), doctor.output  # its row, as wrapped


@pytest.mark.parametrize(("uri", "local"), [
    ("./milvus.db", True), ("milvus.db", True), ("/var/lib/milvus/lite.db", True), ("~/m.db", True),
    ("file:///tmp/m.db", True), ("data/milvus", True),
    ("http://vec-a:19530", False), ("https://in01-x.zillizcloud.com", False), ("tcp://vec:19530", False),
])
def test_which_milvus_uri_is_a_local_file(uri, local):
    assert is_local_file(uri) is local
