"""A tokenizer for retrieval without an LLM: counts instead of BPE.

Without an LLM, LightRAG uses its tokenizer at query time only to keep the context within token budgets.
Loading tiktoken's BPE table costs 0.5-2 s per process, most of a cold context-only query. This stand-in
splits text into words, single punctuation marks and single CJK characters, each with the space before it
(roughly BPE's granularity on prose: within 10% of o200k on the sample notes), and decodes exactly what it
encoded, so LightRAG's truncation still cuts at piece boundaries. Answers from an LLM keep tiktoken.
"""

from __future__ import annotations

import re
import threading
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
        out = []
        ids = self._ids
        for piece in _PIECE.findall(content):
            token = ids.get(piece)
            if token is None:
                with self._lock:
                    token = ids.setdefault(piece, len(self._pieces))
                    if token == len(self._pieces):
                        self._pieces.append(piece)
            out.append(token)
        return out

    def decode(self, tokens: list[int]) -> str:
        return "".join(self._pieces[t] for t in tokens)

    def __deepcopy__(self, memo: Any) -> _PieceEncoding:  # shared: the table only grows
        return self


_shared = _PieceEncoding()


def retrieval_tokenizer() -> Any:
    """LightRAG's Tokenizer over the piece counter (for engines that never call an LLM)."""
    import_lightrag()
    from lightrag.utils import Tokenizer

    return Tokenizer(model_name="wikirag-pieces", tokenizer=_shared)
