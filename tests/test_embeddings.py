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
