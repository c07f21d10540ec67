"""Starts `wikirag mcp` for the stdio tests with the hashing embedding (the ONNX model is the slow boundary)."""

from __future__ import annotations

import sys

from tests.storekit import HashEmbedding
from wikirag.lightrag import engine

engine.make_embedding_func = lambda spec, counter, base_url=None: HashEmbedding().func()

if __name__ == "__main__":
    from wikirag.cli import app

    app(["mcp", *sys.argv[1:]])
