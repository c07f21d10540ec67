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
