"""The int8 re-quantised MiniLM: derived once from the installed weights, cached, checked, and never mixed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.storekit import HashEmbedding, copy_vault
from wikirag.errors import ConfigError, StoreMismatch
from wikirag.index.run import run_index
from wikirag.lightrag import minilm_int8
from wikirag.lightrag.embeddings import (
    MINILM_INT8_NAME,
    EmbeddingCounter,
    EmbeddingSpec,
    MiniLMEmbedder,
    make_embedding_func,
    minilm_files,
)
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One real derivation for the module (≈2 s)."""
    folder = tmp_path_factory.mktemp("model-cache")
    minilm_int8.derived_minilm(minilm_files()[0], folder)
    return folder


def _counting_quantize(monkeypatch) -> list[Path]:
    calls: list[Path] = []
    real = minilm_int8.quantize

    def counted(source: Path) -> bytes:
        calls.append(source)
        return real(source)

    monkeypatch.setattr(minilm_int8, "quantize", counted)
    return calls


def test_the_derived_file_is_reused(cache, monkeypatch):
    calls = _counting_quantize(monkeypatch)
    path = minilm_int8.derived_minilm(minilm_files()[0], cache)
    assert calls == []
    recorded = json.loads(path.with_suffix(".json").read_text())
    assert recorded["sha256"] == minilm_int8._sha256(path)


def test_reusing_the_derived_file_does_not_import_onnx(cache):
    """Only a derivation needs onnx (~0.1 s to import); a process that reuses the file reads its version from
    the installed metadata, which must be the version a derivation records."""
    import os
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from wikirag.lightrag import minilm_int8\n"
        "from wikirag.lightrag.embeddings import minilm_files\n"
        f"print(minilm_int8.derived_minilm(minilm_files()[0], Path({str(cache)!r})), 'onnx' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(root)},
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == [str(next(cache.glob("*.onnx"))), "False"]
    import onnx

    assert json.loads(next(cache.glob("*.json")).read_text())["onnx"] == onnx.__version__


def _copy_of(cache: Path, folder: Path) -> Path:
    """A private copy of the shared derived-model folder, for a test that damages it."""
    folder.mkdir()
    for item in cache.iterdir():
        (folder / item.name).write_bytes(item.read_bytes())
    return folder


def test_a_damaged_file_is_derived_again(cache, monkeypatch, tmp_path):
    folder = _copy_of(cache, tmp_path / "cache")
    path = next(folder.glob("*.onnx"))
    good = path.read_bytes()
    path.write_bytes(good[:1000] + b"\0" * 16 + good[1016:])  # same size, damaged
    calls = _counting_quantize(monkeypatch)
    assert minilm_int8.derived_minilm(minilm_files()[0], folder) == path
    assert len(calls) == 1
    assert path.read_bytes() == good  # deterministic: the same bytes as the first derivation


def test_a_file_from_another_onnxruntime_is_derived_again(cache, monkeypatch, tmp_path):
    folder = _copy_of(cache, tmp_path / "cache")
    sidecar = next(folder.glob("*.json"))
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()), "onnxruntime": "0.0.1"}))
    calls = _counting_quantize(monkeypatch)
    minilm_int8.derived_minilm(minilm_files()[0], folder)
    assert len(calls) == 1
    assert json.loads(sidecar.read_text())["onnxruntime"] != "0.0.1"


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(minilm_int8.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert minilm_int8.model_cache_dir() == tmp_path / "elsewhere"


TEXTS = [
    "Alan Turing worked at Bletchley Park.",
    "Apache Airflow schedules DAGs of tasks; each task is an operator instance.",
    "Kafka\nA distributed log: producers append records to partitioned topics that consumers read in order.",
    "Data lake" + " raw files in object storage, schema on read," * 40,  # two windows
]


def test_int8_vectors_stay_close_to_minilm(cache, monkeypatch):
    monkeypatch.setenv(minilm_int8.CACHE_ENV, str(cache))
    fast = MiniLMEmbedder(threads=1, model=MINILM_INT8_NAME).embed(TEXTS)
    exact = MiniLMEmbedder(threads=1).embed(TEXTS)
    cosine = (fast * exact).sum(axis=1)
    # measured: min 0.9885, mean 0.9947 over 250 texts of a docs vault
    assert cosine.min() >= 0.98, cosine
    assert not np.allclose(fast, exact, atol=1e-4)  # really the other model, not the float path again
    # the nearest neighbours stay the same
    assert (np.argsort(-(fast @ fast.T), axis=1)[:, 1] == np.argsort(-(exact @ exact.T), axis=1)[:, 1]).all()


def test_an_unknown_local_model_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown local embedding model"):
        make_embedding_func(EmbeddingSpec("local", "all-MiniLM-L12", 384), EmbeddingCounter())


def test_a_store_refuses_the_other_local_model(tmp_path, monkeypatch):
    vault = copy_vault(SAMPLE, tmp_path / "vault")

    def index() -> None:  # the recorded identity follows the configured model; the vectors here are hashed
        run_index(load_config(vault, store=tmp_path / "store"), embedding_func=HashEmbedding().func())

    monkeypatch.setenv("WIKIRAG_EMBEDDING", "local:all-MiniLM-L6-v2-onnx-int8")
    index()
    monkeypatch.setenv("WIKIRAG_EMBEDDING", f"local:{MINILM_INT8_NAME}")
    with pytest.raises(StoreMismatch) as caught:
        index()
    message = str(caught.value)
    assert "\n" not in message
    assert "all-MiniLM-L6-v2-onnx-int8" in message and MINILM_INT8_NAME in message and "--rebuild" in message


def test_an_int8_vector_does_not_depend_on_its_batch(cache, monkeypatch):
    """Activations are quantised with one scale per model input: a batch would leak neighbours into a vector."""
    monkeypatch.setenv(minilm_int8.CACHE_ENV, str(cache))
    embedder = MiniLMEmbedder(threads=1, model=MINILM_INT8_NAME)
    alone = np.stack([embedder.embed([text])[0] for text in TEXTS])
    together = embedder.embed([*TEXTS, "word " * 200, "short"])[: len(TEXTS)]
    assert np.array_equal(alone, together)
