"""The content-hash vector cache: each distinct text is embedded once per store and model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from tests.storekit import HashEmbedding, copy_vault
from wikirag.index.run import run_index
from wikirag.lightrag.vector_cache import VECTOR_CACHE_FILENAME, VectorCache, cached_embedding_func
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


def test_each_distinct_text_is_embedded_once(tmp_path: Path):
    inner = HashEmbedding()
    func, cache = cached_embedding_func(inner.func(), tmp_path, "given:hash-test")
    first = asyncio.run(func(["alpha beta", "gamma", "alpha beta"]))
    assert inner.texts == 2 and first.shape == (3, 384) and np.array_equal(first[0], first[2])
    again = asyncio.run(func(["gamma", "delta"]))
    assert inner.texts == 3 and np.array_equal(again[0], first[1])
    cache.close()
    other = VectorCache(tmp_path / VECTOR_CACHE_FILENAME, "given:another-model", 384)
    assert other.get_many([VectorCache.key("gamma")]) == {}  # another model never reads these vectors
    other.close()


def test_a_rebuild_embeds_nothing_it_has_seen_and_equals_a_fresh_index(tmp_path: Path):
    from tests.storekit import snapshot

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    config = load_config(vault, store=tmp_path / "store")
    embedder = HashEmbedding()
    run_index(config, embedding_func=embedder.func())
    assert embedder.texts > 50
    again = HashEmbedding()
    run_index(config, rebuild=True, embedding_func=again.func())
    assert again.texts == 0 and (config.workspace_dir / VECTOR_CACHE_FILENAME).exists()
    fresh = load_config(vault, store=tmp_path / "fresh")
    run_index(fresh, embedding_func=HashEmbedding().func())
    assert snapshot(config) == snapshot(fresh)
