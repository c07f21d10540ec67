"""`index --batch` against the fake OpenAI Batch API and Anthropic Message Batches (tests/fakeapi.py, over HTTP):
no live call for what the batch answered, gleaning as a second round, a kill -9 mid-batch resumed without a
second submission, and a one-line error for a provider without a batch API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakeapi import FakeAPI
from tests.storekit import HashEmbedding
from tests.test_throughput import prose_vault
from wikirag.cli.app import app
from wikirag.index.run import run_index
from wikirag.settings import load_config

LIVE = ("/v1/chat/completions", "/v1/messages")
SUBMIT = ("/v1/batches", "/v1/messages/batches")


def submissions(api: FakeAPI) -> int:
    return sum(1 for r in api.requests if r.method == "POST" and r.path in SUBMIT)


def live_calls(api: FakeAPI) -> int:
    return sum(1 for r in api.requests if r.path in LIVE)


def batch_index(vault: Path, store: Path, api: FakeAPI, monkeypatch, provider: str, **index: object):
    monkeypatch.setenv("ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY", "sk-test-not-real")
    url = api.anthropic_base_url if provider == "anthropic" else api.openai_base_url
    config = load_config(vault, store=store, overrides={
        "llm": {"model": f"{provider}:fake-model", "base_url": url, "batch_poll_s": 0.02}, "index": index})
    return run_index(config, batch=True, embedding_func=HashEmbedding().func())


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_answers_every_extraction_request(tmp_path, monkeypatch, provider):
    vault = prose_vault(tmp_path / "vault", 8)
    with FakeAPI(batch_polls=3) as api:
        report = batch_index(vault, tmp_path / "store", api, monkeypatch, provider)
        # one batch of extraction requests, then one of the description summaries they call for
        assert submissions(api) == 2 and live_calls(api) == 0
        extraction, summary = (len(job["lines"]) for job in api.batches.values())
    assert report.notes_extracted == 8 and report.notes_pending_extraction == 0
    assert report.llm_batch_requests == extraction + summary == report.llm_calls and extraction > 0 < summary
    assert report.descriptions_summarised == summary
    assert report.llm_input_tokens > 0 and report.entities > 8
    # the next run finds everything done
    with FakeAPI() as api:
        again = batch_index(vault, tmp_path / "store", api, monkeypatch, provider)
        assert submissions(api) == 0 and live_calls(api) == 0
    assert again.notes_extracted == 0


def test_batch_requests_are_what_a_live_run_sends(tmp_path, monkeypatch):
    """The batch carries the exact live prompts (hint included): a live run on another store, with the
    batch's answers in the same places, would have sent the same bodies."""
    vault = prose_vault(tmp_path / "vault", 4)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    with FakeAPI() as api:
        config = load_config(vault, store=tmp_path / "live", overrides={
            "llm": {"model": "openai:fake-model", "base_url": api.openai_base_url, "concurrency": 1}})
        run_index(config, embedding_func=HashEmbedding().func())
        live = sorted(json.dumps(b["messages"]) for b in api.bodies("/v1/chat/completions"))
        api.reset()
        batch_index(vault, tmp_path / "batch", api, monkeypatch, "openai")
        lines = next(iter(api.batches.values()))["lines"]
    assert sorted(json.dumps(line["body"]["messages"]) for line in lines) == live


def test_gleaning_is_a_second_batch_round(tmp_path, monkeypatch):
    vault = prose_vault(tmp_path / "vault", 4)
    with FakeAPI(batch_polls=1) as api:
        report = batch_index(vault, tmp_path / "store", api, monkeypatch, "anthropic", gleaning=1)
        rounds = [job["lines"] for job in api.batches.values()]
    assert len(rounds) == 2 and live_calls(api) == 0
    first, second = rounds
    assert len(first) == len(second)  # one gleaning request per extraction request
    for item in second:  # the gleaning call replays the first turn, marked for the prompt cache
        messages = item["params"]["messages"]
        assert len(messages) == 3 and messages[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert report.llm_batch_requests == len(first) + len(second)


def test_batch_with_a_provider_without_one_is_a_one_line_error(tmp_path):
    vault = prose_vault(tmp_path / "vault", 2)
    result = CliRunner().invoke(app, ["index", str(vault), "--store", str(tmp_path / "store"), "--batch",
                                      "--llm", "ollama:qwen2.5:7b"])
    assert result.exit_code != 0
    assert "has no batch API" in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("kv_store_*"))


@pytest.mark.slow
def test_kill_9_while_the_batch_runs_then_resume_submits_nothing_twice(tmp_path):
    vault = prose_vault(tmp_path / "vault", 8)
    store = tmp_path / "store"
    command = [sys.executable, "-m", "wikirag.cli", "index", str(vault), "--store", str(store), "--json",
               "--batch", "--llm", "openai:fake-model"]
    with FakeAPI(batch_polls=10**9) as api:  # the batch never ends in the first run
        env = {**os.environ, "WIKIRAG_LLM_BASE_URL": api.openai_base_url, "OPENAI_API_KEY": "sk-test-not-real",
               "WIKIRAG_EMBEDDING": "local:all-MiniLM-L6-v2-onnx-int8", "WIKIRAG_LLM_BATCH_POLL_S": "0.05"}
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and not any(
                r.method == "GET" and r.path.startswith("/v1/batches/") for r in api.requests):
            time.sleep(0.02)
        time.sleep(0.2)  # a few polls
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert submissions(api) == 1
        batch_id = next(iter(api.batches))

        api.batch_polls = 0  # the provider finishes the batch now
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr
        report = json.loads(again.stdout)
        # the same extraction batch, polled (nothing asked twice); then the batch of description summaries
        assert submissions(api) == 2 and live_calls(api) == 0
        assert list(api.batches)[0] == batch_id
        assert any(r.path == f"/v1/batches/{batch_id}" for r in api.requests)
    assert report["notes_extracted"] == 8 and report["llm_batch_requests"] > 0


def test_a_run_stopped_while_submitting_finds_its_openai_batch(tmp_path, monkeypatch):
    """Stopped after the provider took the batch but before its id was saved: the next run finds the batch
    by the tag it carries as metadata, and pays for nothing twice."""
    from wikirag.llm.batch import BatchAPI

    vault = prose_vault(tmp_path / "vault", 4)
    original = BatchAPI.submit

    async def submit_then_stop(self, requests, tag=""):
        await original(self, requests, tag)
        raise KeyboardInterrupt  # Ctrl-C right after the provider answered

    with FakeAPI(batch_polls=1) as api:
        monkeypatch.setattr(BatchAPI, "submit", submit_then_stop)
        with pytest.raises(KeyboardInterrupt):
            batch_index(vault, tmp_path / "store", api, monkeypatch, "openai")
        monkeypatch.setattr(BatchAPI, "submit", original)
        report = batch_index(vault, tmp_path / "store", api, monkeypatch, "openai")
        assert submissions(api) == 1 and live_calls(api) == 0
        assert any(r.method == "GET" and r.path == "/v1/batches" for r in api.requests)
    assert report.notes_extracted == 4 and report.llm_batch_requests > 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_rebuild_collects_the_batch_an_interrupted_run_submitted(tmp_path, monkeypatch, provider):
    """`--rebuild` keeps the LLM cache, so it keeps the batch a stopped run paid for too: the rebuild polls
    that batch and submits nothing again."""
    from wikirag.llm.batch import BatchAPI

    vault = prose_vault(tmp_path / "vault", 4)
    original = BatchAPI.poll

    async def stop(self, batch_id):
        raise KeyboardInterrupt  # Ctrl-C while waiting for the provider

    with FakeAPI(batch_polls=1) as api:
        monkeypatch.setattr(BatchAPI, "poll", stop)
        with pytest.raises(KeyboardInterrupt):
            batch_index(vault, tmp_path / "store", api, monkeypatch, provider)
        assert submissions(api) == 1
        monkeypatch.setattr(BatchAPI, "poll", original)
        config = load_config(vault, store=tmp_path / "store", overrides={
            "llm": {"model": f"{provider}:fake-model", "base_url": api.anthropic_base_url if provider == "anthropic"
                    else api.openai_base_url, "batch_poll_s": 0.02}})
        report = run_index(config, batch=True, rebuild=True, embedding_func=HashEmbedding().func())
        assert submissions(api) == 1 and live_calls(api) == 0
    assert report.notes_extracted == 4 and report.llm_batch_requests > 0


def test_a_rebuild_killed_once_its_marker_is_gone_keeps_the_batch(tmp_path, monkeypatch):
    """The rebuild carried a submitted batch to the new ledger only at the run's first save, after the wipe's
    marker (which names it too) was gone: a kill in between lost the batch id, and the next run submitted
    (paid for) its notes' extraction again. The wipe now writes it to the new ledger's head first. (The marker
    now stays until the notes are written again, saying the wipe is done: the kill is right after it says so.)"""
    from wikirag.index import rebuild
    from wikirag.index.rebuild import REBUILD_MARKER
    from wikirag.llm.batch import BatchAPI

    vault = prose_vault(tmp_path / "vault", 4)
    real_write = rebuild.atomic_write_text

    async def stop(self, batch_id):
        raise KeyboardInterrupt  # Ctrl-C while waiting for the provider

    def written_then_killed(path, text, *args, **kwargs):
        real_write(path, text, *args, **kwargs)
        if path.name == REBUILD_MARKER and json.loads(text).get("wiped") is True:
            raise KeyboardInterrupt("killed right after the wipe's marker said it was done")

    with FakeAPI(batch_polls=1) as api:
        with monkeypatch.context() as patched:
            patched.setattr(BatchAPI, "poll", stop)
            with pytest.raises(KeyboardInterrupt):
                batch_index(vault, tmp_path / "store", api, monkeypatch, "openai")
        config = load_config(vault, store=tmp_path / "store", overrides={
            "llm": {"model": "openai:fake-model", "base_url": api.openai_base_url, "batch_poll_s": 0.02}})
        with monkeypatch.context() as patched:
            patched.setattr(rebuild, "atomic_write_text", written_then_killed)
            with pytest.raises(KeyboardInterrupt, match="marker"):
                run_index(config, batch=True, rebuild=True, embedding_func=HashEmbedding().func())
        assert json.loads((config.workspace_dir / REBUILD_MARKER).read_text())["wiped"] is True
        report = batch_index(vault, tmp_path / "store", api, monkeypatch, "openai")
        assert submissions(api) == 1 and live_calls(api) == 0
        assert not (config.workspace_dir / REBUILD_MARKER).exists()  # the run wrote every note: finished
    assert report.notes_extracted == 4 and report.llm_batch_requests > 0
