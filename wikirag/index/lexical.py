"""The lexical side of retrieval: a BM25 index of the store's chunks, and the names rows queries read.

Both are derived files in the workspace folder, brought in step with the store after every `index`/`watch`
run (index.lexical_sync), so a crash can only leave them one run behind, never wrong for long:
- `wikirag_lexical.npz`: per chunk its id, note and heading, its token ids, per note the digest of its chunks
  as of the last sync (so a run re-reads and re-tokenizes only the notes whose chunks changed), and the BM25
  term x chunk weights (CSC, bm25s's Lucene formula recomputed from the arrays by index.bm25). Queries read
  the weights with numpy alone: scoring is a sum over the question's terms. The same file holds the anchor
  text indexes (index.anchors), in the same form.
- the names and links rows (index.search_rows, in `wikirag_index.sqlite`), with `wikirag_names.json` as
  their head: the last run, and an mtime that tells a warm engine to read them again.

Tokens (`tokenize`): NFKC + casefold; Latin-script words lose English stopwords and are Snowball-stemmed
(PyStemmer); runs of CJK characters become overlapping character bigrams, so Chinese and Japanese notes
match without a segmenter's dictionary.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from wikirag.index.bm25 import bm25_weights, splice
from wikirag.storage.fs import atomic_write_bytes

LEXICAL_FILENAME = "wikirag_lexical.npz"
NAMES_FILENAME = "wikirag_names.json"
OLD_LINKS_FILENAME = "wikirag_links.json"  # deleted by the first sync that writes search_rows
LEXICAL_VERSION = 5  # 2: per-note chunk digests (incremental sync); 3: chunks tokenized as searchable_text;
# 4: searchable_text leaves code as written and takes HTML elements only as tags; 5: anchor text (index.anchors)
BM25_K1, BM25_B = 1.5, 0.75

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_RUN = re.compile(rf"[{CJK}]+|[^\W{CJK}_]+", re.UNICODE)
IS_CJK = re.compile(rf"[{CJK}]")
EN_STOP = frozenset("""a an and are as at be but by for if in into is it no not of on or such that the their then
there these they this to was will with from have has had were been being do does did i you he she we our your its
what which who whom how when where why can could should would may might must""".split())
_MAX_TOKEN = 40  # longer "words" are hashes, URLs or base64: never what someone types


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: Snowball in C

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


def tokenize(text: str) -> list[str]:
    """Search tokens of a text: stemmed Latin words without stopwords, CJK character bigrams."""
    out: list[str] = []
    for match in _RUN.finditer(unicodedata.normalize("NFKC", text).casefold()):
        token = match.group()
        if IS_CJK.match(token):
            if len(token) == 1:
                out.append(token)
            else:
                out.extend(token[i:i + 2] for i in range(len(token) - 1))
        elif (len(token) >= 2 or token.isdigit()) and token not in EN_STOP and len(token) <= _MAX_TOKEN:
            out.append(_stem(token))
    return out


_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_CJK_LETTER = re.compile(rf"(?=[{CJK}])[^\W\d_]", re.UNICODE)  # not the CJK ranges' marks and middle dot


def cjk_letter_share(texts: Iterable[str]) -> float:
    """The share of the texts' letters that are Chinese, Japanese or Korean (0 when there are no letters):
    what BM25 reads as character bigrams and an English embedding model cannot place."""
    letters = cjk = 0
    for text in texts:
        letters += len(_LETTER.findall(text))
        cjk += len(_CJK_LETTER.findall(text))
    return cjk / letters if letters else 0.0


# --- the index file -------------------------------------------------------------------------------


def _join(items: list[str]) -> np.ndarray:
    text = "\n".join(items)
    if text.count("\n") != max(len(items) - 1, 0):  # an item holds a newline (a heading can't; be safe)
        text = "\n".join(s.replace("\n", " ") for s in items)
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _split(array: np.ndarray, count: int) -> list[str]:
    if count == 0:
        return []
    return array.tobytes().decode("utf-8").split("\n")


@dataclass
class LexicalIndex:
    """BM25 over chunks. `weights` is term-major CSC: chunks of term t are indices[indptr[t]:indptr[t+1]]."""

    chunk_ids: list[str]
    chunk_paths: list[str]
    headings: list[str]
    vocab: list[str]
    token_ids: np.ndarray  # every chunk's token ids, concatenated
    offsets: np.ndarray  # chunk i's tokens are token_ids[offsets[i]:offsets[i+1]]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    # per note its chunks' digest when last synced (index.ledger.chunks_digest): what the next sync compares
    note_keys: dict[str, str] = field(default_factory=dict)
    # anchor text (index.anchors): BM25 per linked name, what queries score; and the per-link-pair rows it is
    # regrouped from, which only a sync reads (None when loaded for queries)
    anchors: LexicalIndex | None = None
    anchor_pairs: LexicalIndex | None = None
    _vocab_index: dict[str, int] | None = None
    _note_tokens: dict[str, int] | None = None
    _cjk_pairs: dict[str, list[int]] | None = None

    @property
    def size(self) -> int:
        return len(self.chunk_ids)

    def tokens_per_note(self) -> dict[str, int]:
        """Search tokens per note over all its chunks (computed once per loaded index)."""
        if self._note_tokens is None:
            counts: dict[str, int] = {}
            for path, n in zip(self.chunk_paths, np.diff(self.offsets).tolist(), strict=True):
                counts[path] = counts.get(path, 0) + n
            self._note_tokens = counts
        return self._note_tokens

    def term_id(self, token: str) -> int | None:
        if self._vocab_index is None:
            self._vocab_index = {t: i for i, t in enumerate(self.vocab)}
        return self._vocab_index.get(token)

    def term_ids(self, token: str) -> list[int]:
        """The terms a query token matches: itself; a lone CJK character (`猫`, which `query` sends to `search`)
        also every bigram holding it, since text indexes a run of CJK as its bigrams (`我的猫很` has no `猫`)."""
        t = self.term_id(token)
        found = [] if t is None else [t]
        if len(token) == 1 and IS_CJK.match(token):
            if self._cjk_pairs is None:
                pairs: dict[str, list[int]] = {}
                for i, term in enumerate(self.vocab):
                    if len(term) == 2 and IS_CJK.match(term):
                        for char in dict.fromkeys(term):
                            pairs.setdefault(char, []).append(i)
                self._cjk_pairs = pairs
            found += self._cjk_pairs.get(token, [])
        return found

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for the query (0 where no term matches)."""
        out = np.zeros(self.size, dtype=np.float32)
        for token in tokenize(query):
            for t in self.term_ids(token):
                start, end = self.indptr[t], self.indptr[t + 1]
                np.add.at(out, self.indices[start:end], self.data[start:end])
        return out

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk index, score) of the best k chunks with a positive score, best first."""
        if not self.size:
            return []
        scores = self.scores(query)
        k = min(k, self.size)
        best = np.argpartition(-scores, k - 1)[:k]
        return [(int(i), float(scores[i])) for i in sorted(best, key=lambda i: (-scores[i], i)) if scores[i] > 0]

    def tokens_of(self, i: int) -> list[str]:
        return [self.vocab[t] for t in self.token_ids[self.offsets[i]:self.offsets[i + 1]]]


def build_index(chunks: list[tuple[str, str, str, list[str]]]) -> LexicalIndex:
    """BM25 weights (bm25s's Lucene variant, index.bm25) over (chunk id, note path, heading, tokens) rows."""
    empty = LexicalIndex([], [], [], [], np.zeros(0, np.int32), np.zeros(1, np.int64), *no_weights())
    return update_index(empty, [(c[0], c[1], c[2]) for c in chunks], [c[3] for c in chunks],
                        list(range(-1, -len(chunks) - 1, -1)))


def no_weights() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data, indices, indptr) of an index that scores nothing."""
    return np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(1, np.int64)


def update_index(old: LexicalIndex, rows: list[tuple[str, str, str]], added: list[list[str]],
                 layout: list[int], note_keys: dict[str, str] | None = None) -> LexicalIndex:
    """The index of chunks `rows` (id, note path, heading), in that order: `layout[i]` >= 0 reuses old chunk
    layout[i]'s tokens, -1-j takes `added[j]`. Only the added chunks cost Python work; the rest is numpy."""
    token_ids, offsets, vocab = splice(old.token_ids, old.offsets, old.vocab, added, layout)
    data, indices, indptr = bm25_weights(token_ids, offsets, len(vocab), BM25_K1, BM25_B)
    return LexicalIndex([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], vocab, token_ids,
                        offsets, data, indices, indptr, dict(note_keys or {}))


def _arrays(index: LexicalIndex, prefix: str) -> dict[str, np.ndarray]:
    keys = sorted(index.note_keys.items())
    meta = {"chunks": index.size, "vocab": len(index.vocab), "notes": len(keys)}
    return {f"{prefix}{name}": value for name, value in (
        ("meta", np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)),
        ("chunk_ids", _join(index.chunk_ids)), ("chunk_paths", _join(index.chunk_paths)),
        ("headings", _join(index.headings)), ("vocab", _join(index.vocab)), ("token_ids", index.token_ids),
        ("offsets", index.offsets), ("data", index.data), ("indices", index.indices), ("indptr", index.indptr),
        ("note_paths", _join([p for p, _ in keys])), ("note_keys", _join([k for _, k in keys])))}


def _from_arrays(npz: Any, prefix: str) -> LexicalIndex:
    meta = json.loads(npz[f"{prefix}meta"].tobytes())
    n, v, k = meta["chunks"], meta["vocab"], meta["notes"]

    def member(name: str) -> Any:
        return npz[f"{prefix}{name}"]

    keys = dict(zip(_split(member("note_paths"), k), _split(member("note_keys"), k), strict=True))
    return LexicalIndex(_split(member("chunk_ids"), n), _split(member("chunk_paths"), n),
                        _split(member("headings"), n), _split(member("vocab"), v), member("token_ids"),
                        member("offsets"), member("data"), member("indices"), member("indptr"), keys)


def save_index(index: LexicalIndex, workspace_dir: Path) -> None:
    """The chunk index and, when it has them, its anchor text indexes, in one file written atomically."""
    arrays = _arrays(index, "")
    for prefix, part in (("anchor_", index.anchors), ("anchor_pairs_", index.anchor_pairs)):
        if part is not None:
            arrays.update(_arrays(part, prefix))
    arrays["version"] = np.array([LEXICAL_VERSION])
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(workspace_dir / LEXICAL_FILENAME, buffer.getvalue())


_DAMAGED = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)  # what np.load raises on a broken file


def load_index(workspace_dir: Path, *, pairs: bool = False) -> LexicalIndex | None:
    """The saved index (with its anchor text; `pairs`: also the rows a sync regroups), or None when there is
    none, it is damaged, or it is from another version (the next run rebuilds it in all three cases)."""
    path = workspace_dir / LEXICAL_FILENAME
    if not path.is_file():
        return None
    try:
        with np.load(path) as npz:
            if _version(npz) != LEXICAL_VERSION:
                return None
            index = _from_arrays(npz, "")
            if "anchor_meta" in npz.files:
                index.anchors = _from_arrays(npz, "anchor_")
            if pairs and "anchor_pairs_meta" in npz.files:
                index.anchor_pairs = _from_arrays(npz, "anchor_pairs_")
            return index
    except _DAMAGED:
        return None


def _version(npz: Any) -> int | None:
    return int(npz["version"][0]) if "version" in npz.files else None


def index_file_current(workspace_dir: Path) -> bool:
    """The index file is there, readable and of this version (reads its small version member only)."""
    try:
        with np.load(workspace_dir / LEXICAL_FILENAME) as npz:
            return _version(npz) == LEXICAL_VERSION
    except _DAMAGED:
        return False
