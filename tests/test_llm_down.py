"""`wikirag query` when the LLM fails (unreachable, key refused, 5xx, a stream cut part way): the retrieved
context and its sources still come back, the reason is said (never the key), and the exit status is 3.
Driven through the CLI against the fake OpenAI server (tests.fakeapi) or a closed port."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakeapi import FakeAPI
from tests.storekit import HashEmbedding, copy_vault
from wikirag.cli import app
from wikirag.index.run import run_index
from wikirag.llm import client
from wikirag.llm.retry import Backoff
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
FAKE_KEY = "sk-fake-llmdown-0123456789abcdef"
QUESTION = "Who designed the Bombe?"
ANSWER_FAILED = 3  # README, `wikirag query`: the context without its answer
runner = CliRunner()


@pytest.fixture(scope="module")
def vault(tmp_path_factory) -> Path:
    vault = copy_vault(SAMPLE, tmp_path_factory.mktemp("down") / "vault")
    run_index(load_config(vault), embedding_func=HashEmbedding().func())
    return vault


@pytest.fixture
def llm_env(monkeypatch, fast_embedding):
    """An OpenAI LLM with a fake key at `base_url`, and query's retries made fast (their count kept)."""
    monkeypatch.setattr(client, "QUERY_BACKOFF", Backoff(initial_s=0.01, max_s=0.05))
    for var in list(__import__("os").environ):
        if var.startswith("WIKIRAG_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("WIKIRAG_LLM", "openai:gpt-4o-mini")

    def point_at(base_url: str) -> None:
        monkeypatch.setenv("WIKIRAG_LLM_BASE_URL", base_url)

    return point_at


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    return f"http://127.0.0.1:{port}/v1"


def query(vault: Path, *args: str):
    result = runner.invoke(app, ["query", QUESTION, "--vault", str(vault), *args])
    shown = result.stdout + result.stderr
    assert FAKE_KEY not in shown and FAKE_KEY[:16] not in shown, shown
    assert "Traceback" not in shown, shown
    return result


def assert_context_with_reason(result, error_class: str) -> dict:
    assert result.exit_code == ANSWER_FAILED, result.output
    data = json.loads(result.stdout)
    assert data["answer"] is None and data["answer_failed"] is True
    reason = data["no_answer_reason"]
    assert "\n" not in reason and "openai:gpt-4o-mini" in reason and error_class in reason, reason
    assert data["chunks"] and any(s["path"] == "projects/Bombe.md" for s in data["sources"])
    assert result.stderr.strip() == f"Warning: {reason}"
    return data


def test_an_unreachable_llm_gives_the_context_and_exit_3(vault, llm_env):
    llm_env(closed_port_url())
    data = assert_context_with_reason(query(vault, "--json"), "APIConnectionError")
    assert data["keywords"]["low_level"]  # the vault's own names, as without an LLM


@pytest.mark.parametrize("status, error_class, calls", [
    (401, "AuthenticationError", 1),  # never retried; the server echoed the key, which is redacted
    (500, "InternalServerError", 1 + client.QUERY_MAX_RETRIES),  # query's own, shorter retry policy
])
def test_a_refused_key_or_a_server_error_gives_the_context(vault, llm_env, status, error_class, calls):
    with FakeAPI() as api:
        api.fail_status = status
        llm_env(api.openai_base_url)
        data = assert_context_with_reason(query(vault, "--json", "-m", "hybrid"), error_class)
        assert api.calls == calls
    if status == 401:
        assert "[redacted]" in data["no_answer_reason"]


def test_an_answer_that_fails_after_the_keywords_gives_the_context(vault, llm_env):
    with FakeAPI() as api:
        api.fail_status, api.fail_kinds = 503, ("answer",)
        llm_env(api.openai_base_url)
        assert_context_with_reason(query(vault, "--json"), "InternalServerError")
        kinds = [api.llm.kind_of(str(b["messages"][-1]["content"]),
                                 next((m["content"] for m in b["messages"] if m["role"] == "system"), None))
                 for b in api.bodies("/v1/chat/completions")]
        assert kinds[0] == "keywords" and set(kinds[1:]) == {"answer"}


def test_human_output_and_stream_before_any_token(vault, llm_env):
    llm_env(closed_port_url())
    for args in ((), ("--stream",)):
        result = query(vault, *args)
        assert result.exit_code == ANSWER_FAILED, result.output
        assert "No answer generated: the LLM failed (openai:gpt-4o-mini: APIConnectionError" in result.stdout
        assert "Sources" in result.stdout and "projects/Bombe.md" in result.stdout
        assert result.stderr.startswith("Warning: the LLM failed") and result.stderr.count("\n") == 1


def test_on_a_terminal_the_reason_is_said_once(vault, llm_env, monkeypatch):
    """stdout's "No answer generated: …" already says it on a terminal: the stderr warning is for scripts."""
    import importlib
    import types

    cli_app = importlib.import_module("wikirag.cli.app")  # the module (wikirag.cli's `app` is the Typer app)
    llm_env(closed_port_url())
    monkeypatch.setattr(cli_app, "sys", types.SimpleNamespace(stdout=types.SimpleNamespace(isatty=lambda: True)))
    result = query(vault)
    assert result.exit_code == ANSWER_FAILED and "No answer generated: the LLM failed" in result.stdout
    assert result.stderr == ""


def test_a_stream_cut_part_way_keeps_the_text_and_says_so(vault, llm_env):
    with FakeAPI(stream_chunk=4) as api:
        api.stream_cut_after = 3
        llm_env(api.openai_base_url)
        result = query(vault, "--stream")
    assert result.exit_code == ANSWER_FAILED, result.output
    assert result.stdout.startswith("A fake answer"[:12])  # three 4-character deltas came through
    assert "Sources" in result.stdout
    assert result.stderr.startswith("Warning: the answer stopped part way, the LLM failed (openai:gpt-4o-mini:")


def test_bypass_has_no_context_to_fall_back_to(vault, llm_env):
    llm_env(closed_port_url())
    result = query(vault, "-m", "bypass")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: mode 'bypass'")
    assert "openai:gpt-4o-mini: APIConnectionError" in result.stderr


def test_a_bug_in_the_llm_function_is_still_an_error(vault):
    """Only the LLM's own failures (LLMCallError) fall back: a RuntimeError stays a one-line error."""
    from tests.fakes import FakeLLM
    from wikirag.errors import QueryFailed
    from wikirag.query.retrieve import query_store

    with pytest.raises(QueryFailed):
        asyncio.run(query_store(load_config(vault), QUESTION, embedding_func=HashEmbedding().func(),
                                llm_func=FakeLLM(mode="fail", fail_kinds=("answer",))))


def test_a_warm_engine_falls_back_too(vault, monkeypatch):
    """The MCP server's path: an engine kept open, its LightRAG asking the configured LLM."""
    from wikirag.query.engine import WarmEngine
    from wikirag.settings import LLMSettings

    monkeypatch.setattr(client, "QUERY_BACKOFF", Backoff(initial_s=0.01, max_s=0.05))
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    llm = client.make_answer_llm_func(LLMSettings(model="openai:gpt-4o-mini", base_url=closed_port_url()))

    async def ask() -> list:
        async with WarmEngine(load_config(vault), llm_func=llm, embedding_func=HashEmbedding().func()) as engine:
            return [await engine.query(QUESTION, llm_func=llm) for _ in range(2)]

    for result in asyncio.run(ask()):  # the second query meets a new failure, not the first one's
        assert result.answer is None and result.answer_failed and result.chunks and result.sources
        assert "APIConnectionError" in result.no_answer_reason and FAKE_KEY not in result.no_answer_reason
