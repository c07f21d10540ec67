"""The lexical side of retrieval: a BM25 index of the store's chunks, and the small names table queries read.

Both are derived files in the workspace folder, rebuilt from the store after every `index`/`watch` run
(`sync_search_files`), so a crash can only leave them one run behind, never wrong for long:
- `wikirag_lexical.npz`: per chunk its id, note and heading, its token ids (so a run re-tokenizes only new
  chunks), and the BM25 term x chunk weights `bm25s` computed (CSC). Queries read the weights with numpy
  alone: scoring is a sum over the question's terms, no `bm25s` import on the query path.
- `wikirag_names.json`: per note its title, aliases, entity names, tags and status: what keyword matching,
  note resolution and `status` need, without loading the whole ledger.

Tokens (`tokenize`): NFKC + casefold; Latin-script words lose English stopwords and are Snowball-stemmed
(PyStemmer); runs of CJK characters become overlapping character bigrams, so Chinese and Japanese notes
match without a segmenter's dictionary.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from wikirag.storage.fs import atomic_write_bytes

LEXICAL_FILENAME = "wikirag_lexical.npz"
NAMES_FILENAME = "wikirag_names.json"
LINKS_FILENAME = "wikirag_links.json"
LEXICAL_VERSION = 1
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


# --- the index file -------------------------------------------------------------------------------


def _join(items: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(s.replace("\n", " ") for s in items).encode("utf-8"), dtype=np.uint8)


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
    _vocab_index: dict[str, int] | None = None

    @property
    def size(self) -> int:
        return len(self.chunk_ids)

    def term_id(self, token: str) -> int | None:
        if self._vocab_index is None:
            self._vocab_index = {t: i for i, t in enumerate(self.vocab)}
        return self._vocab_index.get(token)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for the query (0 where no term matches)."""
        out = np.zeros(self.size, dtype=np.float32)
        for token in tokenize(query):
            t = self.term_id(token)
            if t is not None:
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
    """BM25 weights (`bm25s`, Lucene variant) over (chunk id, note path, heading, tokens) rows."""
    import logging

    import bm25s  # only the index run pays for this import

    logging.getLogger("bm25s").setLevel(logging.WARNING)

    vocab_index: dict[str, int] = {}
    ids_per_chunk = [[vocab_index.setdefault(t, len(vocab_index)) for t in tokens] for *_, tokens in chunks]
    offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(ids) for ids in ids_per_chunk])
    token_ids = np.fromiter((t for ids in ids_per_chunk for t in ids), dtype=np.int32, count=int(offsets[-1]))
    vocab = list(vocab_index)
    if chunks and vocab:
        retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        retriever.index(bm25s.tokenization.Tokenized(ids=ids_per_chunk, vocab=vocab_index), show_progress=False)
        scores = retriever.scores
        data = np.asarray(scores["data"], dtype=np.float32)
        indices = np.asarray(scores["indices"], dtype=np.int32)
        indptr = np.asarray(scores["indptr"], dtype=np.int64)
    else:
        data, indices, indptr = np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(len(vocab) + 1, np.int64)
    return LexicalIndex([c[0] for c in chunks], [c[1] for c in chunks], [c[2] for c in chunks], vocab,
                        token_ids, offsets, data, indices, indptr)


def save_index(index: LexicalIndex, workspace_dir: Path) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(json.dumps({"version": LEXICAL_VERSION, "chunks": index.size,
                                                    "vocab": len(index.vocab)}).encode(), dtype=np.uint8),
             chunk_ids=_join(index.chunk_ids), chunk_paths=_join(index.chunk_paths), headings=_join(index.headings),
             vocab=_join(index.vocab), token_ids=index.token_ids, offsets=index.offsets, data=index.data,
             indices=index.indices, indptr=index.indptr)
    atomic_write_bytes(workspace_dir / LEXICAL_FILENAME, buffer.getvalue())


def load_index(workspace_dir: Path) -> LexicalIndex | None:
    """The saved index, or None when there is none (or it is from another version: the next run rebuilds)."""
    path = workspace_dir / LEXICAL_FILENAME
    if not path.is_file():
        return None
    try:
        with np.load(path) as npz:
            meta = json.loads(npz["meta"].tobytes())
            if meta.get("version") != LEXICAL_VERSION:
                return None
            n, v = meta["chunks"], meta["vocab"]
            return LexicalIndex(_split(npz["chunk_ids"], n), _split(npz["chunk_paths"], n),
                                _split(npz["headings"], n), _split(npz["vocab"], v), npz["token_ids"],
                                npz["offsets"], npz["data"], npz["indices"], npz["indptr"])
    except (OSError, ValueError, KeyError):
        return None


# --- keeping both files in step with the store ------------------------------------------------------


def names_table(ledger: Any) -> dict[str, dict[str, Any]]:
    """Per note what queries need to name it: title, aliases, entity names, tags, status, doc id."""
    table = {}
    for path, entry in sorted(ledger.notes.items()):
        table[path] = {"title": entry.title, "entity": entry.entity, "aliases": list(entry.aliases),
                       "entities": sorted({f.name for f in entry.entities} - {entry.entity}),
                       "tags": list(entry.tags), "status": entry.status, "doc_id": entry.doc_id,
                       "chunks": len(entry.chunk_ids)}
    return table


def links_table(ledger: Any) -> dict[str, list[list[str]]]:
    """Per note its relations as [source, target, description, origin]; origin is "link" for a relation its
    own wikilinks/frontmatter gave (the note's entity to a name it links), "llm" for one LightRAG extracted."""
    table = {}
    for path, entry in sorted(ledger.notes.items()):
        linked = {f.name for f in entry.entities if f.rank == 1}
        table[path] = [[f.src, f.tgt, f.description[:300],
                        "link" if f.src == entry.entity and f.tgt in linked else "llm"] for f in entry.relations]
    return table


def search_files_ready(workspace_dir: Path) -> bool:
    return (workspace_dir / LEXICAL_FILENAME).is_file() and (workspace_dir / NAMES_FILENAME).is_file()


def _heading_text(heading: Any) -> str:
    if isinstance(heading, dict):
        parts = [*heading.get("parent_headings", []), heading.get("heading", "")]
        return " > ".join(str(p) for p in parts if p)
    return str(heading or "")


async def sync_search_files(rag: Any, ledger: Any, workspace_dir: Path, last_run: dict[str, Any] | None = None) -> None:
    """Bring the lexical index and the names table in step with the ledger's chunks.

    Chunks already indexed keep their tokens; new ones are read from LightRAG's chunk store (any backend)
    and tokenized. BM25 has no incremental add, so the weights are recomputed (about a second at 10k chunks).
    """
    from wikirag.storage.fs import atomic_write_text

    old = load_index(workspace_dir)
    known = {cid: i for i, cid in enumerate(old.chunk_ids)} if old else {}
    wanted = [(cid, path) for path, entry in sorted(ledger.notes.items()) for cid in entry.chunk_ids]
    missing = [cid for cid, _ in wanted if cid not in known]
    fetched: dict[str, dict[str, Any]] = {}
    for start in range(0, len(missing), 1000):
        ids = missing[start:start + 1000]
        for cid, record in zip(ids, await rag.text_chunks.get_by_ids(ids), strict=True):
            if record:
                fetched[cid] = record
    rows = []
    for cid, path in wanted:
        if cid in known:
            i = known[cid]
            rows.append((cid, path, old.headings[i], old.tokens_of(i)))
        elif cid in fetched:
            record = fetched[cid]
            heading = _heading_text(record.get("heading"))
            rows.append((cid, path, heading, tokenize(f"{heading}\n{record.get('content', '')}")))
    save_index(build_index(rows), workspace_dir)
    table = {"version": LEXICAL_VERSION, "last_run": last_run or {}, "notes": names_table(ledger)}
    atomic_write_text(workspace_dir / LINKS_FILENAME, json.dumps(links_table(ledger), ensure_ascii=False))
    atomic_write_text(workspace_dir / NAMES_FILENAME, json.dumps(table, ensure_ascii=False))


async def sync_after_run(rag: Any, ledger: Any, workspace_dir: Path, changed: set[str],
                         summary: dict[str, Any]) -> None:
    """The hook `index_vault` calls once the store is flushed: LightRAG's document rows, then the search files."""
    from wikirag.lightrag.documents import sync_document_rows

    await sync_document_rows(rag, {p: (e.doc_id, list(e.chunk_ids)) for p, e in ledger.notes.items()}, changed)
    await sync_search_files(rag, ledger, workspace_dir, summary)
