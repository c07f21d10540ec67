"""Paid LLM answers survive a crash: `kill -9` during extraction, and the next run asks nothing twice."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakeapi import FakeAPI
from wikirag.lightrag.answers import JOURNAL_FILENAME
from wikirag.settings import load_config

CACHE_FILE = "kv_store_llm_response_cache.json"


def prose_vault(root: Path, notes: int = 16) -> Path:
    """Notes with prose and few links: every one is routed to extraction."""
    root.mkdir()
    for i in range(notes):
        sentences = " ".join(f"Researcher Ada Example{i} studied Topic{i}x{k} at Institute{k} in {1900 + i}."
                             for k in range(3))
        (root / f"Essay {i}.md").write_text(f"# Essay {i}\n\n{sentences}\n\nSee [[Essay {(i + 1) % notes}]].\n")
    return root


def index_command(vault: Path, store: Path) -> list[str]:
    return [sys.executable, "-m", "wikirag.cli", "index", str(vault), "--store", str(store), "--json",
            "--route", "extract", "--llm", "openai:fake-model"]


def answers_kept(workspace_dir: Path) -> set[str]:
    """Cache keys on disk after a crash: in LightRAG's cache file or in wikirag's journal."""
    keys: set[str] = set()
    cache = workspace_dir / CACHE_FILE
    if cache.exists():
        keys |= set(json.loads(cache.read_text(encoding="utf-8")))
    journal = workspace_dir / JOURNAL_FILENAME
    if journal.exists():
        for line in journal.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):  # a line cut by the kill
                keys |= set(json.loads(line))
    return {k for k in keys if ":extract:" in k}


@pytest.mark.slow
def test_kill_9_during_extraction_loses_no_paid_answer(tmp_path):
    vault = prose_vault(tmp_path / "vault")
    with FakeAPI(latency=0.05) as api:
        env = {**os.environ, "WIKIRAG_LLM_BASE_URL": api.openai_base_url, "OPENAI_API_KEY": "sk-test-not-real",
               "WIKIRAG_EMBEDDING": "local:all-MiniLM-L6-v2-onnx-int8", "WIKIRAG_LLM_CONCURRENCY": "1",
               "WIKIRAG_INDEX_PACK_MAX_TOKENS": "0"}  # one call per note: many calls to kill in the middle of
        # A fresh run on another store: how many calls the whole vault takes.
        fresh = subprocess.run(index_command(vault, tmp_path / "fresh"), env=env, capture_output=True, text=True,
                               timeout=600)
        assert fresh.returncode == 0, fresh.stderr
        total = json.loads(fresh.stdout)["llm_calls"]
        assert total >= 16

        api.reset()
        store = tmp_path / "store"
        proc = subprocess.Popen(index_command(vault, store), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while api.calls < total // 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert api.calls < total, "the kill came after the run ended"
        kept = answers_kept(load_config(vault, store=store).workspace_dir)
        assert len(kept) >= total // 2 - 2  # all answered calls but those in flight at the kill

        api.reset()
        again = subprocess.run(index_command(vault, store), env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr
        # Every answer kept on disk is reused: only the rest of the vault is asked.
        assert api.calls == total - len(kept)
