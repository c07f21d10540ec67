"""What LightRAG imports but a query never uses is deferred (lightrag/guard.py), and still works when used.

A cold `wikirag query --context-only` is mostly imports: pypinyin (LightRAG's Chinese name sorting) and the
langchain behind LightRAG's recursive/semantic chunkers were ~0.5 s of ~1.5 s, and httpx (LightRAG's HTTP
bindings) ~0.1 s more. These tests check behaviour, not time: a context-only query or index process never
runs them, and code that does use them gets the real thing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.storekit import HashEmbedding
from wikirag.index.run import run_index
from wikirag.lightrag import guard
from wikirag.settings import load_config

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pypinyin.core", "langchain_core", "langchain_text_splitters", "lightrag.chunker.recursive_character",
         "httpx._client")  # httpx itself is in sys.modules, deferred: its submodules load when it runs


def _fresh(script: str, cwd: Path) -> dict:
    """Run `script` in a new interpreter (nothing imported yet); it prints one JSON line last."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_context_only_query_never_imports_pypinyin_or_langchain(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Bombe.md").write_text("The Bombe was designed by [[Alan Turing]] at [[Bletchley Park]].\n")
    (vault / "Alan Turing.md").write_text("Alan Turing worked at [[Bletchley Park]] on the [[Bombe]].\n")
    (vault / "Bletchley Park.md").write_text("Codebreaking site; home of the [[Bombe]].\n")
    run_index(load_config(vault), embedding_func=HashEmbedding().func())
    script = (
        "import asyncio, json, sys\n"
        "from pathlib import Path\n"
        "from wikirag.lightrag.guard import import_lightrag\n"
        "import_lightrag()  # as wikirag's own modules do; tests.storekit imports lightrag.utils directly\n"
        "from tests.storekit import HashEmbedding\n"
        "from wikirag.query.retrieve import query_store\n"
        "from wikirag.settings import load_config\n"
        f"config = load_config(Path({str(vault)!r}))\n"
        "result = asyncio.run(query_store(config, 'Who designed the Bombe?', mode='hybrid', context_only=True,\n"
        "                                 embedding_func=HashEmbedding().func()))\n"
        f"print(json.dumps({{'sources': [s.path for s in result.sources], 'lightrag': 'lightrag.lightrag' in\n"
        f"    sys.modules, 'imported': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    seen = _fresh(script, tmp_path)
    assert "Bombe.md" in seen["sources"]  # the query really ran through LightRAG's retrieval
    assert seen["lightrag"]
    assert seen["imported"] == []


def test_an_index_run_never_imports_pypinyin_or_langchain(tmp_path):
    """wikirag writes its chunks itself: the writer's LightRAG never needs the recursive chunker either."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Bombe.md").write_text("The Bombe was designed by [[Alan Turing]] at [[Bletchley Park]].\n")
    (vault / "Alan Turing.md").write_text("Alan Turing worked at [[Bletchley Park]] on the [[Bombe]].\n")
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from wikirag.lightrag.guard import import_lightrag\n"
        "import_lightrag()  # as wikirag's own modules do; tests.storekit imports lightrag.utils directly\n"
        "from tests.storekit import HashEmbedding\n"
        "from wikirag.index.run import run_index\n"
        "from wikirag.settings import load_config\n"
        f"report = run_index(load_config(Path({str(vault)!r})), embedding_func=HashEmbedding().func())\n"
        f"print(json.dumps({{'indexed': report.notes_indexed, 'lightrag': 'lightrag.lightrag' in sys.modules,\n"
        f"    'imported': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    seen = _fresh(script, tmp_path)
    assert seen["indexed"] == 2 and seen["lightrag"]
    assert seen["imported"] == []


def test_the_deferred_modules_work_when_used(tmp_path):
    """Chinese names still sort by pinyin, the default chunker is LightRAG's own object, and the chunkers
    behind the deferred package (langchain's recursive splitter) still split text."""
    script = (
        "import json, sys\n"
        "from wikirag.lightrag.guard import import_lightrag\n"
        "from wikirag.lightrag.readtokens import retrieval_tokenizer\n"
        "import_lightrag()\n"
        "import lightrag.lightrag\n"
        "out = {'loaded_early': [m for m in ('pypinyin.core', 'langchain_text_splitters', 'httpx._client')\n"
        "                       if m in sys.modules]}\n"
        "from lightrag.utils import get_pinyin_sort_key\n"
        "out['pinyin'] = get_pinyin_sort_key('张三')\n"
        "out['sorted'] = sorted(['张三', '李四', '阿明'], key=get_pinyin_sort_key)\n"
        "from lightrag.chunker import chunking_by_recursive_character, chunking_by_token_size\n"
        "from lightrag.chunker.token_size import chunking_by_token_size as defined\n"
        "from dataclasses import fields\n"
        "default = next(f for f in fields(lightrag.lightrag.LightRAG) if f.name == 'chunking_func').default_factory()\n"
        "out['same_default'] = default is defined is chunking_by_token_size  # the pipeline compares identity\n"
        "text = ' '.join(f'Sentence number {i} about the Bombe.' for i in range(200))\n"
        "chunks = chunking_by_recursive_character(retrieval_tokenizer(), text, 60, chunk_overlap_token_size=0)\n"
        "out['chunks'] = len(chunks)\n"
        "out['rejoined'] = ' '.join(c['content'] for c in chunks) == text\n"
        "import httpx, ollama  # an HTTP client (ollama's is httpx) gets the real httpx on first use\n"
        "out['url'] = str(httpx.Request('GET', 'http://127.0.0.1:9/api/embed').url)\n"
        "out['client'] = type(ollama.AsyncClient(host='http://127.0.0.1:9')._client).__name__\n"
        "print(json.dumps(out, ensure_ascii=False))\n"
    )
    seen = _fresh(script, tmp_path)
    assert seen["loaded_early"] == []
    assert seen["pinyin"] == "zhangsan"  # pypinyin's answer, not the plain-string fallback
    assert seen["sorted"] == ["阿明", "李四", "张三"]  # a, li, zhang
    assert seen["same_default"]
    assert seen["chunks"] > 5 and seen["rejoined"]
    assert seen["url"] == "http://127.0.0.1:9/api/embed" and seen["client"] == "AsyncClient"


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package `dfr_pkg` whose own code counts its runs, with a light submodule `light` defining `a`."""
    root = tmp_path / "dfr_pkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "import builtins, time\n"
        "builtins.dfr_runs = getattr(builtins, 'dfr_runs', 0) + 1\n"
        "time.sleep(0.2)  # long enough for a second thread to ask meanwhile\n"
        "from dfr_pkg.light import a\n"
        "b = 'b'\n"
    )
    (root / "light.py").write_text("a = object()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    monkeypatch.setattr(builtins, "dfr_runs", 0, raising=False)
    yield "dfr_pkg"
    for name in [m for m in sys.modules if m == "dfr_pkg" or m.startswith("dfr_pkg.")]:
        del sys.modules[name]


def test_a_deferred_module_runs_once_on_the_first_name_it_lacks(package):
    import builtins

    guard._defer(package, {"a": "dfr_pkg.light"})
    import dfr_pkg
    from dfr_pkg import a  # provided: nothing runs

    assert builtins.dfr_runs == 0
    assert a is sys.modules["dfr_pkg.light"].a
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(dfr_pkg.b)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["b", "b"]  # the second thread waited for the first one's run instead of failing
    assert builtins.dfr_runs == 1
    assert dfr_pkg.a is a
    assert not hasattr(dfr_pkg, "missing")


def test_a_provided_name_that_is_not_there_leaves_the_module_to_import_as_usual(package):
    import builtins

    guard._defer(package, {"moved": "dfr_pkg.light"})
    assert package not in sys.modules
    import dfr_pkg

    assert builtins.dfr_runs == 1 and dfr_pkg.b == "b"


def test_a_deferred_module_that_fails_to_run_fails_again_on_every_read(tmp_path, monkeypatch):
    """Not a half-run module for whoever holds it: each read retries the run and raises its error."""
    root = tmp_path / "dfr_broken"
    root.mkdir()
    (root / "__init__.py").write_text("import builtins\nbuiltins.dfr_broken_runs += 1\nearly = 1\n"
                                      "raise ImportError('a dependency is missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    monkeypatch.setattr(builtins, "dfr_broken_runs", 0, raising=False)
    try:
        guard._defer("dfr_broken", {})
        import dfr_broken

        for runs in (1, 2):
            with pytest.raises(ImportError, match="a dependency is missing"):
                dfr_broken.early  # noqa: B018
            assert builtins.dfr_broken_runs == runs
        assert "early" not in vars(dfr_broken)
    finally:
        sys.modules.pop("dfr_broken", None)
