"""A stray `.env` (in the vault or the working folder) never configures LightRAG behind wikirag's back.

LightRAG loads `.env` from the current folder when it is first imported. Every wikirag path that imports it
goes through lightrag/guard.py; each case below starts a fresh process whose *first* LightRAG import is a
different one, inside a folder whose `.env` sets a key, a binding and ENTITY_TYPES (which makes LightRAG's
constructor exit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOTENV = 'OPENAI_API_KEY=sk-from-dotenv-000000\nLLM_BINDING=ollama\nENTITY_TYPES=["Nonsense"]\n'

FIRST_IMPORTS = {
    "index": "from wikirag.index.run import run_index; run_index(load_config(vault))",
    "ids": "from wikirag.lightrag.ids import md5_id; md5_id('x', 'chunk-')",
    "names": "from wikirag.lightrag.ids import normalize_name; normalize_name('Ａ & “B”')",
    "prompts": "from wikirag.plan.cost_settings import prompt_sizes; prompt_sizes(use_disk_cache=False)",
    "tokenizer": "from wikirag.lightrag.tokens import lightrag_tokenizer; lightrag_tokenizer()",
    "query": "from wikirag.lightrag.query import query_param; query_param(mode='naive')",
    "writer": "from wikirag.lightrag.writer import StoreWriter",
}


@pytest.mark.parametrize("path", sorted(FIRST_IMPORTS))
def test_a_stray_dotenv_changes_nothing(tmp_path, path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("A note about [[Other]].\n")
    (vault / ".env").write_text(DOTENV)
    (tmp_path / ".env").write_text(DOTENV)
    script = (
        "import json, os, sys\n"
        "from pathlib import Path\n"
        "from wikirag.lightrag import engine\n"
        "def hashing(spec, counter, base_url=None):  # imported late: after wikirag's own first import\n"
        "    from tests.storekit import HashEmbedding\n"
        "    return HashEmbedding().func()\n"
        "engine.make_embedding_func = hashing\n"
        "assert 'lightrag' not in sys.modules, 'imported by the test setup itself'\n"
        "from wikirag.settings import load_config\n"
        f"vault = Path({str(vault)!r})\n"
        f"{FIRST_IMPORTS[path]}\n"
        "print(json.dumps({k: os.environ.get(k) for k in ('OPENAI_API_KEY', 'LLM_BINDING', 'ENTITY_TYPES')}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "LLM_BINDING", "ENTITY_TYPES"}}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    leaked = json.loads(done.stdout.strip().splitlines()[-1])
    assert leaked == {"OPENAI_API_KEY": None, "LLM_BINDING": None, "ENTITY_TYPES": None}


def test_lightrag_stays_quiet_after_the_guard():
    """LightRAG's utils module sets its logger to INFO when imported: the guard imports it first, then quiets
    it, so no later LightRAG import brings its INFO lines back into wikirag's output."""
    script = ("import logging\n"
              "from wikirag.lightrag.guard import import_lightrag\n"
              "import_lightrag()\n"
              "import lightrag.utils, lightrag.lightrag, lightrag.operate\n"
              "print(logging.getLogger('lightrag').getEffectiveLevel())\n")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.strip().splitlines()[-1]) >= 30  # WARNING
