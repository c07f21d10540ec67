"""The command line: argument parsing (Typer), rendering with rich, and `doctor`. The only folder that
imports typer or rich; it calls the library and renders its result objects.

May import anything in wikirag.
"""

import atexit
import contextlib
import gc
import os
import sys
import threading

# A command's process allocates mostly objects that live until it exits (modules, a store's records):
# CPython's default first threshold (700) ran ~250 collections, two of them full, in a cold context-only
# query, ~0.1 s of CPU (bench/retrieval.py --cold). Fewer, larger rounds still collect cycles, and the older
# generations' thresholds (20 instead of 10) halve the full collections that trace every module and record;
# set at import, before the commands' own imports allocate, so it also holds in `watch` and `mcp`.
gc.set_threshold(50_000, 20, 20)

from wikirag.cli import retrieval as _retrieval  # noqa: E402, F401  (registers search and mcp)
from wikirag.cli.app import app  # noqa: E402


def main() -> None:
    """The `wikirag` command. When it ends, the process exits without the interpreter's teardown: freeing a
    13,000-note vault's objects one by one took about 1 s after the work was done. Exit handlers (the embedded
    server's leave, logging) run and the output is flushed first; with any other thread alive the usual exit
    is taken (nothing is cut short), so the idle pools of wikirag.lightrag are let go first."""
    try:
        app()
        code: object = 0
    except SystemExit as done:
        code = done.code
    status = code if isinstance(code, int) else 0 if code is None else 1
    if not isinstance(code, int | None):
        print(code, file=sys.stderr)
    if "wikirag.lightrag" in sys.modules:  # idle pools (the embedder's, LightRAG's file writes) are threads too
        sys.modules["wikirag.lightrag"].release_threads()
    if threading.active_count() > 1:
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`wikirag ... | head`): nothing to say
            stream.flush()
    os._exit(status)


__all__ = ["app", "main"]
