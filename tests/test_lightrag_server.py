"""LightRAG's own API server (`lightrag-server`, from `lightrag-hku[api]`) pointed at a store wikirag built:
it lists every note as a processed document (the note path as file path) and serves the graph.

Live: starts the real server on a free local port. Skipped, saying why, when the API extra is not installed.
Queries through the server need an embedding service matching the store's model, which tests do not run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.storekit import HashEmbedding, copy_vault
from wikirag.index.ledger import Ledger
from wikirag.index.run import run_index
from wikirag.lightrag.tokens import seed_tiktoken_cache
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
SERVER = Path(sys.executable).with_name("lightrag-server")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("fastapi") is None or not SERVER.exists(),
    reason="LightRAG's API server is not installed (pip install 'lightrag-hku[api]', in the test extra)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, body: dict | None = None) -> object:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture
def served_store(tmp_path):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    config = load_config(vault)
    run_index(config, embedding_func=HashEmbedding().func())
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "LLM_", "EMBEDDING_", "WIKIRAG_"))}
    env.update({
        "TIKTOKEN_CACHE_DIR": str(seed_tiktoken_cache()),  # the server's tokenizer, offline
        "EMBEDDING_DIM": "384", "EMBEDDING_MODEL": "hash-test", "LLM_MODEL": "none",
        "LLM_BINDING_API_KEY": "unused", "EMBEDDING_BINDING_API_KEY": "unused",
        "LLM_BINDING_HOST": "http://127.0.0.1:9/v1", "EMBEDDING_BINDING_HOST": "http://127.0.0.1:9/v1",
    })
    server = subprocess.Popen(
        [str(SERVER), "--host", "127.0.0.1", "--port", str(port), "--working-dir", str(config.store),
         "--workspace", config.workspace, "--llm-binding", "openai", "--embedding-binding", "openai"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if _get(f"{base}/health")["status"] == "healthy":
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"lightrag-server did not start: {server.stderr.read()[-2000:]}")
            time.sleep(0.5)
        yield config, base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def test_lightrag_server_lists_every_note_and_serves_the_graph(served_store):
    config, base = served_store
    notes = Ledger.load(config.workspace_dir).notes
    counts = _get(f"{base}/documents/status_counts")["status_counts"]
    assert counts["processed"] == len(notes) and counts["failed"] == 0
    page = _get(f"{base}/documents/paginated", {"page": 1, "page_size": 100})
    listed = {d["id"]: d for d in page["documents"]}
    assert set(listed) == {e.doc_id for e in notes.values()}
    by_id = {e.doc_id: path for path, e in notes.items()}
    assert all(Path(by_id[i]).name == d["file_path"].split("/")[-1] for i, d in listed.items())
    assert all(d["chunks_count"] == len(notes[by_id[i]].chunk_ids) for i, d in listed.items())
    labels = _get(f"{base}/graph/label/list")
    assert {"Bombe", "Alan Turing", "Gordon Welchman"} <= set(labels)
    graph = _get(f"{base}/graphs?label=Bombe&max_depth=1")
    assert "Bombe" in {n["id"] for n in graph["nodes"]} and graph["edges"]
