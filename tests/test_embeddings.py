"""The offline MiniLM embedder: windowing, batching and call-coalescing must not change the vectors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from wikirag.lightrag.embeddings import MINILM_DIM, MINILM_WINDOW, MiniLMEmbedder


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(threads=1)


def _reference(embedder: MiniLMEmbedder, text: str) -> np.ndarray:
    """One text on its own, one window per model run, no padding: the length-weighted mean of window means."""
    total, count = np.zeros(MINILM_DIM), 0
    for window in embedder.windows(text):
        ids = np.array([window], dtype=np.int64)
        hidden = embedder._session.run(
            None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        )[0][0]
        total += hidden.mean(axis=0) * len(window)
        count += len(window)
    vector = total / count
    return vector / np.linalg.norm(vector)


TEXTS = [
    "Alan Turing worked at Bletchley Park.",
    "",
    "x",
    "Enigma " * 700,  # several windows
    "A relation between [[Turing]] and [[Bletchley Park]]: he broke Enigma there.",
    "Alan Turing worked at Bletchley Park.",  # a repeat
    "word " * 253,  # exactly one full window with [CLS]/[SEP]
]


def test_windows_cover_every_word_piece_within_the_model_limit(embedder):
    windows = embedder.windows("Enigma " * 700)
    assert len(windows) > 1 and all(len(w) <= MINILM_WINDOW for w in windows)
    assert all(w[0] == 101 and w[-1] == 102 for w in windows)
    assert embedder.windows("") == [[101, 102]]


def test_batched_vectors_equal_one_text_at_a_time(embedder):
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), MINILM_DIM) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for text, vector in zip(TEXTS, vectors, strict=True):
        assert float(vector @ _reference(embedder, text)) > 0.9999
    np.testing.assert_array_equal(vectors[0], vectors[5])


def test_a_call_does_not_depend_on_what_it_is_batched_with(embedder):
    alone = embedder.embed([TEXTS[4]])
    together = embedder.embed(TEXTS)[4]
    assert float(alone[0] @ together) > 0.9999
    assert embedder.embed([]).shape == (0, MINILM_DIM)


def test_concurrent_calls_each_get_their_own_rows(embedder):
    calls = [[f"note {i} about topic {j}" for j in range(i % 4 + 1)] + ["Enigma " * 300] for i in range(12)]
    expected = [embedder.embed(call) for call in calls]
    results: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        results[i] = embedder.embed(calls[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, call in enumerate(calls):
        assert results[i].shape == (len(call), MINILM_DIM)
        np.testing.assert_allclose(results[i], expected[i], atol=1e-5)


def test_an_error_reaches_every_caller_and_the_embedder_recovers(embedder, monkeypatch):
    def fail(texts):
        raise RuntimeError("model exploded")

    monkeypatch.setattr(embedder, "_embed_all", fail)
    with pytest.raises(RuntimeError, match="exploded"):
        embedder.embed(["a"])
    monkeypatch.undo()
    assert embedder.embed(["a"]).shape == (1, MINILM_DIM)


@pytest.mark.parametrize("model", ["all-MiniLM-L6-v2-onnx-int8", "all-MiniLM-L6-v2-int8-dynamic"])
def test_runs_spread_over_threads_give_the_same_vectors_bit_for_bit(model):
    texts = TEXTS + [f"note {i}: " + "cipher " * (i * 37 % 300) for i in range(40)]
    alone = MiniLMEmbedder(threads=1, model=model)
    spread = MiniLMEmbedder(threads=3, model=model)
    assert spread.threads == 3 and spread._pool is not None
    assert np.array_equal(alone.embed(texts), spread.embed(texts))
    assert spread.model_runs == alone.model_runs > 1


def test_a_preload_that_fails_is_silent_and_the_first_embedding_reports_it(monkeypatch):
    from wikirag.errors import ConfigError
    from wikirag.lightrag import embeddings

    uncaught = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    thread = embeddings.preload_local_model("no-such-model")
    assert thread is not None
    thread.join(60)
    assert uncaught == [] and "no-such-model" not in embeddings._shared
    assert embeddings.preload_local_model("no-such-model") is None  # tried once per process
    with pytest.raises(ConfigError, match="no-such-model"):
        embeddings.shared_minilm("no-such-model")


def test_an_index_run_starts_loading_the_local_model_before_it_plans(tmp_path, monkeypatch):
    """Only when something changed, and only for the configured local model (not an embedding_func)."""
    from tests.storekit import HashEmbedding, age_vault_files
    from wikirag.index import run
    from wikirag.settings import load_config

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nLinks to [[b]] about ciphers.\n")
    (vault / "b.md").write_text("# B\n\nA short note.\n")
    age_vault_files(vault)
    config = load_config(vault)
    events: list[str] = []
    real_plan = run.plan_index
    monkeypatch.setattr(run, "preload_embedder", lambda cfg: events.append(f"preload {cfg.embedding.model}"))
    monkeypatch.setattr(run, "plan_index", lambda *a, **k: (events.append("plan"), real_plan(*a, **k))[1])
    run.run_index(config)
    assert events == [f"preload {config.embedding.model}", "plan"]
    events.clear()
    run.run_index(config)  # nothing changed: answered from the manifest, no model
    assert events == []
    (vault / "b.md").write_text("# B\n\nA short note, edited.\n")
    run.run_index(config, embedding_func=HashEmbedding().func())  # the given function is used, not the model
    assert events == ["plan"]
