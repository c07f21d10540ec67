"""BM25 weights over token-id arrays, and the array surgery that updates an index for the chunks that changed.

Why not `bm25s.BM25.index`: it takes one Python list of token ids per chunk and loops over them in Python
(≈0.5 s at 13,000 chunks, plus building those lists from the saved arrays), and it has no incremental add.
BM25's weights depend on corpus-wide figures (document frequencies, average length), so a change of one
chunk changes every weight of its terms; but computed from the saved arrays with numpy (`bm25_weights`),
the whole matrix takes milliseconds, and the Python work of a run is only tokenizing the chunks that changed
(`splice`). The formula is bm25s's Lucene variant, step by step in the same float64 arithmetic (its idf via
`math.log`, stored as float32): tests/test_lexical.py checks the weights against bm25s's own.
"""

from __future__ import annotations

import math

import numpy as np


def bm25_weights(token_ids: np.ndarray, offsets: np.ndarray, n_vocab: int, k1: float,
                 b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Term-major CSC (data, indices, indptr) of BM25 weights: the chunks of term t are
    indices[indptr[t]:indptr[t+1]] (ascending), with their weights in data. Chunk i's tokens are
    token_ids[offsets[i]:offsets[i+1]]."""
    n = len(offsets) - 1
    lengths = np.diff(offsets).astype(np.int64)
    if n <= 0 or not len(token_ids) or not n_vocab:
        return np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(n_vocab + 1, np.int64)
    docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
    pairs, tf = np.unique((token_ids.astype(np.int64) << 32) | docs, return_counts=True)  # term-major, then chunk
    terms, rows = pairs >> 32, (pairs & 0xFFFFFFFF).astype(np.int32)
    df = np.bincount(terms, minlength=n_vocab)
    idf_of_df = np.zeros(int(df.max()) + 1, dtype=np.float32)
    for d in np.unique(df[df > 0]).tolist():  # bm25s: math.log per term, stored as float32
        idf_of_df[d] = math.log(1 + (n - d + 0.5) / (d + 0.5))
    avg = lengths.mean()
    norm = k1 * ((1 - b) + b * lengths / avg)  # per chunk, float64 as bm25s's scalar arithmetic
    tf64 = tf.astype(np.float32).astype(np.float64)
    tfc = tf64 / (norm[rows] + tf64)
    data = (idf_of_df[df[terms]].astype(np.float64) * tfc).astype(np.float32)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return data, rows, indptr


def gather(token_ids: np.ndarray, offsets: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The token arrays of chunks `order` (indices into offsets), in that order."""
    starts, ends = offsets[order], offsets[order + 1]
    lengths = ends - starts
    new_offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    total = int(new_offsets[-1])
    if not total:
        return np.zeros(0, np.int32), new_offsets
    positions = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    return token_ids[positions].astype(np.int32, copy=False), new_offsets


def compact(token_ids: np.ndarray, vocab: list[str]) -> tuple[np.ndarray, list[str]]:
    """Drop the terms no chunk uses any more (their ids renumbered in order), so the vocabulary does not grow
    with every edit."""
    used = np.bincount(token_ids, minlength=len(vocab)) > 0 if len(token_ids) else np.zeros(len(vocab), bool)
    if used.all():
        return token_ids, vocab
    remap = np.cumsum(used) - 1
    return remap[token_ids].astype(np.int32), [t for t, keep in zip(vocab, used.tolist(), strict=True) if keep]


def splice(token_ids: np.ndarray, offsets: np.ndarray, vocab: list[str], added: list[list[str]],
           layout: list[int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """A new chunk sequence from old chunks and new ones: `layout[i]` >= 0 takes old chunk layout[i]; -1-j
    takes added chunk j (its tokens as strings, new terms appended to the vocabulary).
    Returns the token ids, offsets and vocabulary (unused terms dropped)."""
    vocab = list(vocab)
    index = {t: i for i, t in enumerate(vocab)} if added else {}
    extra = [[index.setdefault(t, len(index)) for t in tokens] for tokens in added]
    vocab.extend(list(index)[len(vocab):])
    extra_offsets = np.zeros(len(extra) + 1, dtype=np.int64)
    np.cumsum([len(ids) for ids in extra], out=extra_offsets[1:])
    base = len(offsets) - 1
    fresh = np.fromiter((t for ids in extra for t in ids), dtype=np.int32, count=int(extra_offsets[-1]))
    pool = np.concatenate([token_ids.astype(np.int32, copy=False), fresh])
    pool_offsets = np.concatenate([offsets[:-1], offsets[-1] + extra_offsets])
    order = np.array([i if i >= 0 else base + (-1 - i) for i in layout], dtype=np.int64)
    new_ids, new_offsets = gather(pool, pool_offsets, order)
    new_ids, vocab = compact(new_ids, vocab)
    return new_ids, new_offsets, vocab
