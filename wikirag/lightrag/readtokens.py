"""A tokenizer for retrieval without an LLM: counts instead of BPE.

Without an LLM, LightRAG uses its tokenizer at query time only to keep the context within token budgets.
Loading tiktoken's BPE table costs 0.5-2 s per process, most of a cold context-only query. This stand-in
splits text into words, single punctuation marks and single CJK characters, each with the space before it
(roughly BPE's granularity on prose: within 10% of o200k on the sample notes), and decodes exactly what it
encoded, so LightRAG's truncation still cuts at piece boundaries. Answers from an LLM keep tiktoken.
"""

from __future__ import annotations

import itertools
import re
import threading
from functools import lru_cache
from typing import Any

from wikirag.lightrag.guard import import_lightrag

_PIECE = re.compile(r"\s?(?:[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|\w+|[^\w\s])|\s+")


class _PieceEncoding:
    """encode -> ids of pieces (a process-wide table, append-only); decode joins the pieces back."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._pieces: list[str] = []
        self._lock = threading.Lock()

    def encode(self, content: str) -> list[int]:
        pieces = _PIECE.findall(content)
        try:  # every piece known (the common case once a store's texts have been seen): a C-level map
            return list(map(self._ids.__getitem__, pieces))
        except KeyError:
            return [self._id(piece) for piece in pieces]

    def _id(self, piece: str) -> int:
        token = self._ids.get(piece)
        if token is None:
            with self._lock:
                token = self._ids.setdefault(piece, len(self._pieces))
                if token == len(self._pieces):
                    self._pieces.append(piece)
        return token

    def decode(self, tokens: list[int]) -> str:
        return "".join(self._pieces[t] for t in tokens)

    def decode_with_offsets(self, tokens: list[int]) -> tuple[str, list[int]]:
        """The text and where each token starts in it, as tiktoken's method of that name gives them."""
        pieces = [self._pieces[t] for t in tokens]
        return "".join(pieces), [0, *itertools.accumulate(map(len, pieces[:-1]))] if pieces else []

    def __deepcopy__(self, memo: Any) -> _PieceEncoding:  # shared: the table only grows
        return self


_shared = _PieceEncoding()


def retrieval_tokenizer() -> Any:
    """LightRAG's Tokenizer over the piece counter (for engines that never call an LLM)."""
    return _tokenizer_class()()


@lru_cache(maxsize=1)
def _tokenizer_class() -> type:
    """A TiktokenTokenizer in all but its encoding. LightRAG's plain Tokenizer cuts a list of entities or
    relations to its token budget by a bracketed search, encoding the joined text again at each step (a third
    of a warm hybrid query at 13,000 notes); given `decode_with_offsets` it cuts at a token boundary found in
    one pass, and checks that prefix once."""
    import_lightrag()
    from lightrag.utils import TiktokenTokenizer, Tokenizer

    class PieceTokenizer(TiktokenTokenizer):
        def __init__(self) -> None:  # TiktokenTokenizer's own would load a tiktoken encoding
            Tokenizer.__init__(self, model_name="wikirag-pieces", tokenizer=_shared)

    return PieceTokenizer
