"""The single seam to LightRAG: every `import lightrag` in wikirag is in this folder. It applies the
`.env` guard before LightRAG loads, sets up the engine (storages, tokenizer, embedding), writes records into
LightRAG's own storages, renders its prompts for the cost model, and wraps its query API.

May import: `wikirag.graph` (record types), `wikirag.markdown` (chunking), `wikirag.llm`, `wikirag.storage`,
`wikirag.settings`, `wikirag.models`, `wikirag.errors`.
"""

import sys


def release_threads() -> None:
    """At a command's end, once its work is done: let the worker threads this folder's code started go, so
    that `wikirag.cli.main` can exit without the interpreter's teardown (it does only when no other thread
    is alive). Waits for what they still run: a preload of the local model, a file store's last write."""
    embeddings = sys.modules.get("wikirag.lightrag.embeddings")
    if embeddings is not None:
        embeddings.release_threads()
    utils = sys.modules.get("lightrag.utils")
    # LightRAG 1.5's file stores write through one process-wide pool it never shuts down. Shut down after
    # its last write and forgotten, a later call would make a new one.
    pool = getattr(utils, "_STORAGE_IO_EXECUTOR", None)
    if pool is not None:
        pool.shutdown(wait=True)
        utils._STORAGE_IO_EXECUTOR = None
