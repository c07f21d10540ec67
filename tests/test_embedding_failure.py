"""An embedding model that fails in the middle of a run: one line, no hang, and the next run completes.

Before: an API server answering 500 ended `wikirag index` after 48 s with a tenacity RetryError traceback
(LightRAG flushes each vector storage again when finalising, and each flush ran the binding's retries
again), and a local model failing while other embedding calls were in flight hung the process in
asyncio.run's last cancellation (LightRAG's queue workers swallow it).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakeapi import FakeAPI
from tests.storekit import copy_vault, snapshot
from wikirag.cli import app
from wikirag.settings import load_config

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_vault"
runner = CliRunner()


@pytest.fixture
def no_retry_waits(monkeypatch):
    """LightRAG's OpenAI binding retries 3 times, waiting 4 s and more between attempts: no waits here."""
    import tenacity
    from lightrag.llm.openai import openai_embed

    monkeypatch.setattr(openai_embed.func.retry, "wait", tenacity.wait_none())


def test_an_api_embedder_failing_mid_run_is_one_line_and_the_next_run_completes(tmp_path, no_retry_waits):
    model = "openai:text-embedding-3-small"
    with FakeAPI() as api:
        env = {"WIKIRAG_EMBEDDING": model, "WIKIRAG_EMBEDDING_BASE_URL": api.openai_base_url,
               "OPENAI_API_KEY": "sk-test-0123456789abcdef"}
        vault = copy_vault(SAMPLE, tmp_path / "vault")
        store, fresh = tmp_path / "store", tmp_path / "fresh"

        api.embeddings_fail_from = 4  # the width probe and two more succeed, then the server fails
        failed = runner.invoke(app, ["index", str(vault), "--store", str(store)], env=env)
        assert failed.exit_code == 1
        lines = [line for line in failed.output.splitlines() if line.strip()]
        assert lines == [f"Error: embedding with {model} failed after 3 attempts: InternalServerError: "
                         "Error code: 500 - upstream embedding backend unavailable"], failed.output
        # After the first failure the run's other calls (the storages' flushes when they are finalised)
        # fail without asking the server: before, each asked three times more.
        failing_requests = api.embedding_requests - 3
        assert failing_requests <= 3 * 4, failing_requests

        api.embeddings_fail_from = None
        assert runner.invoke(app, ["index", str(vault), "--store", str(store)], env=env).exit_code == 0
        assert runner.invoke(app, ["index", str(vault), "--store", str(fresh)], env=env).exit_code == 0
    assert snapshot(load_config(vault, store=store, environ=env)) == \
        snapshot(load_config(vault, store=fresh, environ=env))


# A run in its own process, so that a hang is a timeout instead of a stuck test session. Its embedder is
# the hashing one, slowed so that calls are in flight together, and failing from its `fail_from`th call.
_RUN = r"""
import asyncio, json, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from lightrag.utils import EmbeddingFunc
from tests.storekit import HashEmbedding
from wikirag.lightrag.embedding_guard import guarded
from wikirag.errors import WikiragError
from wikirag.index.run import run_index
from wikirag.settings import load_config

inner, calls = HashEmbedding(), 0

async def embed(texts):
    global calls
    calls += 1
    if {fail_from} and calls >= {fail_from}:
        raise MemoryError("onnxruntime could not allocate")
    await asyncio.sleep(0.05)
    return await inner(texts)

func = EmbeddingFunc(embedding_dim=384, func=guarded("local:test-model", embed), model_name="hash-test")
try:
    run_index(load_config(Path({vault!r}), store=Path({store!r})), embedding_func=func)
    print(json.dumps({{"ok": True}}))
except WikiragError as exc:
    print(json.dumps({{"ok": False, "error": str(exc)}}))
"""


def _run_in_process(vault: Path, store: Path, fail_from: int) -> dict:
    code = _RUN.format(root=str(ROOT), vault=str(vault), store=str(store), fail_from=fail_from)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_model_failing_with_calls_in_flight_ends_the_run_and_the_next_run_completes(tmp_path):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    store, fresh = tmp_path / "store", tmp_path / "fresh"
    outcome = _run_in_process(vault, store, fail_from=3)  # before the fix: killed by the timeout
    assert outcome == {"ok": False, "error": "embedding with local:test-model failed: MemoryError: "
                                             "onnxruntime could not allocate"}
    assert _run_in_process(vault, store, fail_from=0) == {"ok": True}
    assert _run_in_process(vault, fresh, fail_from=0) == {"ok": True}
    assert snapshot(load_config(vault, store=store)) == snapshot(load_config(vault, store=fresh))


def test_a_failure_holds_then_lets_calls_through_again(monkeypatch):
    from wikirag.lightrag import embedding_guard

    clock = [100.0]
    monkeypatch.setattr(embedding_guard.time, "monotonic", lambda: clock[0])
    calls: list[list[str]] = []
    healthy = [False]

    async def embed(texts):
        calls.append(texts)
        if not healthy[0]:
            raise ConnectionError("connection refused")
        return [[1.0]]

    call = embedding_guard.guarded("ollama:nomic-embed-text", embed)
    message = "embedding with ollama:nomic-embed-text failed: ConnectionError: connection refused"
    with pytest.raises(embedding_guard.EmbeddingFailed, match=message):
        asyncio.run(call(["a"]))
    healthy[0] = True
    clock[0] += embedding_guard.HOLD_S - 1
    with pytest.raises(embedding_guard.EmbeddingFailed, match=message):
        asyncio.run(call(["b"]))  # within the hold: the model is not asked
    assert calls == [["a"]]
    clock[0] += 2
    assert asyncio.run(call(["c"])) == [[1.0]]  # past it (watch retries a failed batch after 30 s)
    assert calls == [["a"], ["c"]]


def test_a_key_the_server_echoes_never_reaches_the_message(monkeypatch):
    from wikirag.lightrag.embedding_guard import embedding_failed

    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdefghijklmnop")
    error = embedding_failed("openai:m", RuntimeError("401: bad key sk-live-abcdefghijklmnop\nsent"))
    assert str(error) == "embedding with openai:m failed: RuntimeError: 401: bad key [redacted] sent"
