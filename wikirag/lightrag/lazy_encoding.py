"""A tiktoken Encoding that counts a few short texts without building the whole BPE table.

Building tiktoken's encoder for o200k (200,000 ranks handed to Rust) costs about 0.13 s of CPU on 2 cores,
in every process that counts a token: most of what a `wikirag index` run that re-indexes one edited note
spends on tokens. BPE only ever looks up byte strings *inside one regex piece* of the text, so an encoder
given just the ranks of the substrings of those pieces encodes that text exactly as the full one does.

We never split the text with our own copy of the regex (another regex engine, or another Unicode version,
could place a boundary elsewhere). We cut only where no piece can run across: before a space that follows a
printable ASCII character. In o200k's and cl100k's patterns a piece holds a space after its first character
only when it is whitespace throughout, so no piece holds a non-space byte followed by a space. Each stretch
between such cuts is short in prose, and the ranks of all its substrings form a small table (a few hundred
entries for a note) that tiktoken's own constructor builds in a few milliseconds.

Texts with a long stretch (CJK without spaces, URLs, base64), special-token handling, and all text once a
process has counted more than a few small tables go to the full encoder, built on first need.
tests/test_lazy_encoding.py compares both on the vaults' paragraphs and on generated text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_MAX_STRETCH = 64  # bytes between cuts; a longer stretch's substrings cost more to look up than they save
_SMALL_BUDGET = 24_000  # bytes encoded through small tables before the full encoder is cheaper to build
_TABLE_BYTES = 500  # what building one small table costs (~3.5 ms), in budget bytes: 5,000 one-line
# paragraphs built a table each (12 s); now at most 48 tables come before the full encoder (~0.1 s)
_PRINTABLE = frozenset(range(0x21, 0x7F))


class LazyEncoding:
    """`encode_ordinary`, `encode` and `decode` of the tiktoken Encoding that tiktoken's constructor makes of
    these arguments, with the same results; `load_ranks()` returns the merge ranks when first needed.
    Anything else (`n_vocab`, `eot_token`, ...) is read from the full encoder."""

    def __init__(self, name: str, pat_str: str, special_tokens: dict[str, int],
                 load_ranks: Callable[[], dict[bytes, int]]) -> None:
        self.name = name
        self._pat_str = pat_str
        self._special_tokens = special_tokens
        self._load_ranks = load_ranks
        self._ranks: dict[bytes, int] | None = None
        self._full: Any = None
        self._inverse: dict[int, bytes] | None = None
        self._small_bytes = 0
        self._lock = threading.RLock()  # full() reads ranks() under it

    # --- encoding -----------------------------------------------------------------------------------

    def encode_ordinary(self, text: str) -> list[int]:
        if not text:
            return []
        small = self._small_encoder(text)
        return small.encode_ordinary(text) if small is not None else self.full().encode_ordinary(text)

    def encode(self, text: str, *, allowed_special: Any = frozenset(), disallowed_special: Any = "all") -> list[int]:
        """With nothing special allowed and nothing refused (how wikirag calls it), special-token strings are
        plain text: the ordinary encoding. Any other use is the full encoder's."""
        if not allowed_special and disallowed_special == ():
            return self.encode_ordinary(text)
        return self.full().encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)

    def decode(self, tokens: list[int]) -> str:
        if self._full is not None:
            return self._full.decode(tokens)
        return b"".join(map(self._id_bytes().__getitem__, tokens)).decode("utf-8", errors="replace")

    # --- the two encoders -----------------------------------------------------------------------------

    def full(self) -> Any:
        """tiktoken's Encoding over all ranks (built once)."""
        if self._full is None:
            with self._lock:
                if self._full is None:
                    self._full = self._make(self.ranks())
        return self._full

    def ranks(self) -> dict[bytes, int]:
        if self._ranks is None:
            with self._lock:
                if self._ranks is None:
                    self._ranks = self._load_ranks()
        return self._ranks

    def _small_encoder(self, text: str) -> Any:
        """An Encoding over the ranks of the substrings of `text`'s stretches, or None when the full encoder
        should do it (already built, a long stretch, over budget, or text that is not valid UTF-8)."""
        if self._full is not None or self._small_bytes + len(text) + _TABLE_BYTES > _SMALL_BUDGET:
            return None
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: tiktoken's own repair applies
            return None
        stretches = set(_stretches(data))
        if any(len(s) > _MAX_STRETCH for s in stretches):
            return None
        self._small_bytes += len(data) + _TABLE_BYTES
        get = self.ranks().get
        table: dict[bytes, int] = {}
        for stretch in stretches:
            size = len(stretch)
            for start in range(size):
                for end in range(start + 1, size + 1):
                    part = stretch[start:end]
                    rank = get(part)
                    if rank is not None:
                        table[part] = rank
        return self._make(table) if table else None

    def _make(self, ranks: dict[bytes, int]) -> Any:
        import tiktoken

        return tiktoken.Encoding(self.name, pat_str=self._pat_str, mergeable_ranks=ranks,
                                 special_tokens=self._special_tokens)

    def _id_bytes(self) -> dict[int, bytes]:
        """Token id -> bytes, for decoding before (or without) the full encoder."""
        if self._inverse is None:
            inverse = {rank: token for token, rank in self.ranks().items()}
            inverse.update((rank, token.encode("utf-8")) for token, rank in self._special_tokens.items())
            self._inverse = inverse
        return self._inverse

    def __getattr__(self, name: str) -> Any:  # n_vocab, eot_token, ...: the full encoder's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full(), name)

    def __deepcopy__(self, memo: Any) -> LazyEncoding:  # shared process-wide, as an Encoding is
        return self


def _stretches(data: bytes) -> list[bytes]:
    """`data` cut before every space that follows a printable ASCII byte (no regex piece runs across)."""
    out: list[bytes] = []
    start = 0
    position = data.find(b" ", 1)
    while position != -1:
        if data[position - 1] in _PRINTABLE:
            out.append(data[start:position])
            start = position
        position = data.find(b" ", position + 1)
    out.append(data[start:])
    return out
