"""lightrag.lazy_encoding: the small tables encode exactly as tiktoken's full encoder does."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikirag.lightrag import lazy_encoding
from wikirag.lightrag.tokens import get_encoding

ROOT = Path(__file__).resolve().parent.parent
ENCODINGS = ["o200k_base", "cl100k_base"]


@cache
def full(name: str):
    return get_encoding(name).full()


def fresh(name: str) -> lazy_encoding.LazyEncoding:
    """A LazyEncoding that has not yet built its full encoder (get_encoding's is shared by the process)."""
    shared = get_encoding(name)
    return lazy_encoding.LazyEncoding(shared.name, shared._pat_str, shared._special_tokens, shared.ranks)


def small_result(enc: lazy_encoding.LazyEncoding, text: str) -> list[int] | None:
    small = enc._small_encoder(text)
    return None if small is None else small.encode_ordinary(text)


def vault_texts() -> list[str]:
    texts = []
    for folder in (ROOT / "sample_vault", ROOT / "tests" / "fixtures" / "vaults"):
        for path in sorted(folder.rglob("*.md")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            texts.extend(t for t in text.split("\n\n") if t.strip())  # paragraphs: mostly under the budget
    return texts


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_paragraph_of_the_vaults_encodes_as_the_full_encoder_does(name):
    enc = fresh(name)
    small = 0
    for text in vault_texts():
        got = small_result(enc, text)
        enc._small_bytes = 0  # every paragraph through a small table, where its stretches allow one
        if got is not None:
            small += 1
            assert got == full(name).encode_ordinary(text), text
    assert small > 200  # the small path is the common one for prose, not a rare case
    assert enc._full is None


# text without lone surrogates, weighted to what drives the pieces: spaces after ASCII, letters of several
# scripts, marks, digits, apostrophes (contractions), newlines, punctuation runs, emoji
pieces = st.sampled_from([" ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "don't", "a", "Z", "é", "ß", "ǅ", "\u0301",
                          "日本", "한", "Ω", "١٢٣", "12345", "...", "!?", "—", "//", "<|endoftext|>", "👍🏽", "\u00a0",
                          "\u3000", "x\ny", "-", "_", "Hello", "WORLD", "camelCase"])
generated = st.lists(st.one_of(pieces, st.text(st.characters(blacklist_categories=["Cs"]), max_size=6)),
                     max_size=40).map("".join)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(text=generated)
def test_generated_text_encodes_as_the_full_encoder_does(name, text):
    enc = fresh(name)
    got = small_result(enc, text)
    if got is not None:
        assert got == full(name).encode_ordinary(text)
    assert enc.encode_ordinary(text) == full(name).encode_ordinary(text)
    assert enc.encode(text, disallowed_special=()) == full(name).encode(text, disallowed_special=())


def test_decode_before_the_full_encoder_exists_matches_tiktoken():
    enc = fresh("o200k_base")
    text = "Ünïcode café — 日本語 <|endoftext|> and 👍🏽 done."
    tokens = enc.encode(text, disallowed_special=())
    assert enc.decode(tokens) == text
    assert enc.decode(tokens[:3]) == full("o200k_base").decode(tokens[:3])
    special = full("o200k_base").encode("<|endoftext|>", allowed_special="all")
    assert enc.decode(special) == "<|endoftext|>"
    assert enc._full is None


def test_long_stretches_budget_and_special_handling_use_the_full_encoder():
    enc = fresh("o200k_base")
    assert enc._small_encoder("漢字" * 40) is None  # one stretch of 240 bytes
    assert enc._small_encoder("x" * 100) is None
    assert enc._small_encoder("a short note") is not None
    assert enc.encode_ordinary("") == []
    with pytest.raises(ValueError):  # tiktoken's refusal of special tokens is kept
        enc.encode("<|endoftext|>")
    assert enc._full is not None  # built for that call; everything after goes to it
    assert enc._small_encoder("a short note") is None
    over = fresh("o200k_base")
    over._small_bytes = lazy_encoding._SMALL_BUDGET
    assert over._small_encoder("a short note") is None


def test_stretches_cut_only_before_a_space_after_printable_ascii():
    data = "ab cd  é f\n g".encode()
    assert lazy_encoding._stretches(data) == [b"ab", b" cd", b"  \xc3\xa9 f\n g"]
    assert b"".join(lazy_encoding._stretches(data)) == data
