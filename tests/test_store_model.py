"""A store keeps the local embedding model it was built with unless a setting names another.

The default local model changed (MiniLM in float arithmetic, then on int8 kernels). A store built before
must go on taking edits and answering queries with its own model: not stop every run with a mismatch, and
never embed a question with a model other than its vectors'.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakeapi import FakeAPI
from tests.storekit import HashEmbedding, copy_vault
from wikirag.cli import app
from wikirag.lightrag import engine
from wikirag.settings import EmbeddingSettings, load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
OLD = "local:all-MiniLM-L6-v2-onnx-int8"
DEFAULT = EmbeddingSettings().model
runner = CliRunner()


@pytest.fixture
def asked(monkeypatch) -> list[str]:
    """The models the engine is asked to embed with (hashing vectors stand in for ONNX)."""
    models: list[str] = []

    def make(spec, counter, base_url=None):
        models.append(f"{spec.provider}:{spec.model}")
        return HashEmbedding().func()

    monkeypatch.setattr(engine, "make_embedding_func", make)
    return models


def _run(*args: str):
    result = runner.invoke(app, list(args))
    return result


def test_an_old_store_keeps_its_model_for_edits_and_queries(tmp_path: Path, asked: list[str]) -> None:
    assert OLD != DEFAULT
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    toml = vault / "wikirag.toml"
    toml.write_text(f'[embedding]\nmodel = "{OLD}"\n', encoding="utf-8")
    assert _run("index", str(vault)).exit_code == 0
    toml.unlink()  # as a store built when OLD was the default, with no setting
    asked.clear()

    note = next(vault.rglob("*.md"))
    text = note.read_text(encoding="utf-8")
    note.write_text(text + "\n\nA new closing line about cipher wheels.\n", encoding="utf-8")
    result = _run("index", str(vault), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["notes_indexed"] == 1
    result = _run("query", "cipher wheels", "--vault", str(vault), "--context-only", "-m", "naive")
    assert result.exit_code == 0, result.output
    assert asked and set(asked) == {OLD}


def test_a_named_model_is_never_overridden(tmp_path: Path, asked: list[str]) -> None:
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    toml = vault / "wikirag.toml"
    toml.write_text(f'[embedding]\nmodel = "{OLD}"\n', encoding="utf-8")
    assert _run("index", str(vault)).exit_code == 0

    toml.write_text(f'[embedding]\nmodel = "{DEFAULT}"\n', encoding="utf-8")
    result = _run("index", str(vault))
    assert result.exit_code != 0
    assert "built with embedding" in result.output and OLD in result.output

    toml.unlink()  # --rebuild with no setting starts over on today's default
    asked.clear()
    assert _run("index", str(vault), "--rebuild").exit_code == 0
    assert set(asked) == {DEFAULT}


def test_which_settings_name_the_model(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    assert not load_config(vault, environ={}).embedding_model_given
    assert load_config(vault, environ={"WIKIRAG_EMBEDDING": OLD}).embedding_model_given
    assert load_config(vault, environ={}, overrides={"embedding": {"model": OLD}}).embedding_model_given
    assert not load_config(vault, environ={}, overrides={"embedding": {"model": None}}).embedding_model_given
    (vault / "wikirag.toml").write_text(f'[embedding]\nmodel = "{OLD}"\n', encoding="utf-8")
    assert load_config(vault, environ={}).embedding_model_given


def test_doctor_checks_the_model_the_store_was_built_with(tmp_path: Path, asked: list[str], monkeypatch) -> None:
    import numpy as np

    from wikirag.lightrag import embeddings

    checked: list[str] = []

    class Model:
        def __init__(self, model: str) -> None:
            checked.append(model)

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 384), dtype=np.float32)

    monkeypatch.setattr(embeddings, "shared_minilm", Model)
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    toml = vault / "wikirag.toml"
    toml.write_text(f'[embedding]\nmodel = "{OLD}"\n', encoding="utf-8")
    assert _run("index", str(vault)).exit_code == 0
    toml.unlink()  # a store built when OLD was the default, with no setting

    result = _run("doctor", str(vault))
    assert checked == [OLD.split(":", 1)[1]], result.output
    assert "built with" not in result.output


# --- [embedding] dim: the width of the model's vectors ------------------------------------------------------
# A wrong dim used to fail deep in LightRAG's vector stores (errors, then a run that hung or a traceback) after
# the store had recorded the wrong identity, so a corrected run was refused with a hint about the model.

def _one_line(result) -> str:
    output = result.output.strip()
    assert result.exit_code == 1, output
    assert output.count("\n") == 0 and "Traceback" not in output, output
    return output


def test_a_local_model_refuses_another_dim_before_the_store_is_made(tmp_path: Path, asked: list[str]) -> None:
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    toml = vault / "wikirag.toml"
    toml.write_text("[embedding]\ndim = 512\n", encoding="utf-8")
    line = _one_line(_run("index", str(vault)))
    assert f"[embedding] dim = 512 but {DEFAULT} returns 384-dimensional vectors; set dim = 384" in line
    assert not (vault / ".wikirag").exists() and not asked
    toml.unlink()
    assert "dim = 256" in _one_line(runner.invoke(app, ["index", str(vault)], env={"WIKIRAG_EMBEDDING_DIM": "256"}))
    assert not (vault / ".wikirag").exists()

    assert _run("index", str(vault)).exit_code == 0  # the corrected run
    toml.write_text("[embedding]\ndim = 512\n", encoding="utf-8")
    for command in (("search", "Bombe"), ("query", "Who designed the Bombe?", "--context-only")):
        assert "set dim = 384" in _one_line(_run(*command, "--vault", str(vault)))
    assert "set dim = 384" in _one_line(_run("mcp", str(vault)))
    result = _run("doctor", str(vault))
    assert "set dim = 384" in result.output and "Traceback" not in result.output


def test_a_store_that_recorded_a_wrong_dim_says_so_not_the_model(tmp_path: Path, asked: list[str]) -> None:
    """A store the old code left with a local model at 512 dimensions: the fix is a rebuild, said as such."""
    from wikirag.index.ledger import Ledger
    from wikirag.index.run import open_ledger_store

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    assert _run("index", str(vault)).exit_code == 0
    store = open_ledger_store(load_config(vault))
    ledger = Ledger.load(store)
    ledger.meta["embedding"] = f"{DEFAULT}:512"
    ledger.save(store)
    (vault / "people" / "Alan Turing.md").write_text("Edited.\n", encoding="utf-8")  # past the nothing-changed exit
    for command in (("index", str(vault)), ("search", "Bombe", "--vault", str(vault))):
        line = _one_line(_run(*command))
        assert f"{DEFAULT} has 384 dimensions: run `wikirag index --rebuild`" in line
        assert "[embedding] model =" not in line
    assert _run("index", str(vault), "--rebuild").exit_code == 0
    assert _run("search", "Bombe", "--vault", str(vault)).exit_code == 0


def test_an_api_model_s_width_is_checked_before_anything_is_recorded(tmp_path: Path) -> None:
    """A server that ignores the `dimensions` wikirag asks for and returns 384-dimensional vectors."""
    from wikirag.storage.ledger_store import recorded_embedding

    with FakeAPI() as api:
        api.embedding_dimensions = "ignore"
        vault = copy_vault(SAMPLE, tmp_path / "vault")
        model = "openai:text-embedding-3-small"
        env = {"WIKIRAG_EMBEDDING": model, "WIKIRAG_EMBEDDING_BASE_URL": api.openai_base_url,
               "OPENAI_API_KEY": "sk-test"}

        def recorded() -> str | None:
            config = load_config(vault, environ=env)
            return recorded_embedding(config.storage, config.workspace_dir, config.workspace)

        def run(*args: str, dim: int):
            return runner.invoke(app, list(args), env={**env, "WIKIRAG_EMBEDDING_DIM": str(dim)})

        line = _one_line(run("index", str(vault), dim=512))
        assert f"[embedding] dim = 512 but {model} returns 384-dimensional vectors; set dim = 384" in line
        assert recorded() is None
        assert run("index", str(vault), dim=384).exit_code == 0  # the corrected run proceeds
        assert recorded() == f"{model}:384"

        line = _one_line(run("index", str(vault), "--rebuild", dim=512))  # refused before the wipe
        assert "set dim = 384" in line and recorded() == f"{model}:384"
        for command in (("search", "Bombe"), ("query", "Who designed the Bombe?", "--context-only")):
            line = _one_line(run(*command, "--vault", str(vault), dim=512))
            assert f"built with embedding {model}:384, this run uses {model}:512" in line
            assert "set [embedding] dim = 384" in line and "[embedding] model =" not in line
        assert "set [embedding] dim = 384" in _one_line(run("mcp", str(vault), dim=512))
        assert run("search", "Bombe", "--vault", str(vault), dim=384).exit_code == 0


def _vector_widths(vault: Path) -> set[int]:
    """The width of every vector file in a vault's file store (NanoVectorDB records it)."""
    files = list((vault / ".wikirag").rglob("vdb_*.json"))
    assert files
    return {json.loads(f.read_text(encoding="utf-8"))["embedding_dim"] for f in files}


def test_a_configured_dim_is_asked_of_an_openai_model(tmp_path: Path) -> None:
    """`[embedding] dim` is sent as OpenAI's `dimensions` (text-embedding-3 shortens its vectors): with 512 the
    store holds 512-wide vectors where the check used to refuse; a width nobody set is not sent."""
    from wikirag.storage.ledger_store import recorded_embedding

    model = "openai:text-embedding-3-small"
    with FakeAPI() as api:  # it honours `dimensions`, 384 wide without it
        env = {"WIKIRAG_EMBEDDING": model, "WIKIRAG_EMBEDDING_BASE_URL": api.openai_base_url,
               "OPENAI_API_KEY": "sk-test"}
        vault = copy_vault(SAMPLE, tmp_path / "asked")
        (vault / "wikirag.toml").write_text("[embedding]\ndim = 512\n", encoding="utf-8")
        result = runner.invoke(app, ["index", str(vault)], env=env)
        assert result.exit_code == 0, result.output
        config = load_config(vault, environ=env)
        assert recorded_embedding(config.storage, config.workspace_dir, config.workspace) == f"{model}:512"
        assert _vector_widths(vault) == {512}
        bodies = api.bodies("/v1/embeddings")
        assert bodies and all(b.get("dimensions") == 512 for b in bodies)
        api.reset()
        result = runner.invoke(app, ["search", "Bombe", "--vault", str(vault)], env=env)
        assert result.exit_code == 0, result.output
        bodies = api.bodies("/v1/embeddings")
        assert bodies and all(b.get("dimensions") == 512 for b in bodies)

        api.reset()
        vault = copy_vault(SAMPLE, tmp_path / "unset")  # no dim set: the model's own width, as before
        result = runner.invoke(app, ["index", str(vault)], env=env)
        assert result.exit_code == 0, result.output
        assert _vector_widths(vault) == {384}
        bodies = api.bodies("/v1/embeddings")
        assert bodies and not any("dimensions" in b for b in bodies)


def test_a_server_that_refuses_dimensions_is_asked_without(tmp_path: Path) -> None:
    """A model that cannot shorten its vectors answers 400 to any `dimensions` (OpenAI's ada-002, vLLM without
    Matryoshka): wikirag asks again without it, and its own width still has to be the configured one."""
    model = "openai:text-embedding-ada-002"
    with FakeAPI() as api:
        api.embedding_dimensions = "refuse"
        env = {"WIKIRAG_EMBEDDING": model, "WIKIRAG_EMBEDDING_BASE_URL": api.openai_base_url,
               "OPENAI_API_KEY": "sk-test"}
        vault = copy_vault(SAMPLE, tmp_path / "vault")
        result = runner.invoke(app, ["index", str(vault)], env={**env, "WIKIRAG_EMBEDDING_DIM": "512"})
        assert f"[embedding] dim = 512 but {model} returns 384-dimensional vectors" in _one_line(result)
        api.reset()
        result = runner.invoke(app, ["index", str(vault)], env={**env, "WIKIRAG_EMBEDDING_DIM": "384"})
        assert result.exit_code == 0, result.output
        assert _vector_widths(vault) == {384}
        bodies = api.bodies("/v1/embeddings")
        asked = [b for b in bodies if "dimensions" in b]
        # The probe asks once, the engine with the calls it has in flight (LightRAG's 8 at most), then neither
        # asks again.
        assert 2 <= len(asked) <= 1 + 8 and "dimensions" not in bodies[-1]
        assert len(bodies) - len(asked) > len(asked)


def test_watch_embeds_with_the_store_s_model(tmp_path: Path, asked: list[str]) -> None:
    """`watch` opened its engine with today's default before its first run followed the store's model."""
    import asyncio
    import threading

    from wikirag.index.watch import watch_vault

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    toml = vault / "wikirag.toml"
    toml.write_text(f'[embedding]\nmodel = "{OLD}"\n', encoding="utf-8")
    assert _run("index", str(vault)).exit_code == 0
    toml.unlink()  # a store built when OLD was the default, with no setting
    asked.clear()
    note = vault / "people" / "Alan Turing.md"
    note.write_text(note.read_text(encoding="utf-8") + "\n\nA new closing line.\n", encoding="utf-8")
    stop = threading.Event()
    reports: list = []

    def initial(report) -> None:  # the initial run, then stop
        reports.append(report)
        stop.set()

    asyncio.run(watch_vault(load_config(vault), stop=stop, on_initial=initial, poll_seconds=0.01))
    assert reports and reports[0].notes_indexed == 1
    assert set(asked) == {OLD}
