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

INTERRUPTED = 130  # the status a shell reports for Ctrl-C (128 + SIGINT)


def _interrupted() -> None:
    """Ctrl-C before a command took SIGINT over (index and watch do; the others never do): one line, no traceback.
    Nothing has been written that a finished or a killed run would not leave too."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write("\nwikirag: interrupted\n")
        sys.stderr.flush()


# The `wikirag` script imports this module before main() runs: Ctrl-C while the commands' modules load (typer,
# rich, ...) ends here as it would in main().
try:
    from wikirag.cli import indexing as _indexing  # noqa: E402, F401  (registers index and watch)
    from wikirag.cli import retrieval as _retrieval  # noqa: E402, F401  (registers search and mcp)
    from wikirag.cli.app import app  # noqa: E402
except KeyboardInterrupt:
    _interrupted()
    raise SystemExit(INTERRUPTED) from None


def _ended_by_ctrl_c(done: SystemExit) -> bool:
    """Whether Typer ended the command for a KeyboardInterrupt: it raises Exit(130) from it, and says nothing.
    A command's own Exit(130) (an `index` that stopped between batches) has said why already."""
    typer_exit = done.__context__
    return done.code == INTERRUPTED and typer_exit is not None and isinstance(typer_exit.__cause__, KeyboardInterrupt)


def main() -> None:
    """The `wikirag` command. When it ends, the process exits without the interpreter's teardown: freeing a
    13,000-note vault's objects one by one took about 1 s after the work was done. Exit handlers (the embedded
    server's leave, logging) run and the output is flushed first; with any other thread alive the usual exit
    is taken (nothing is cut short), so the idle pools of wikirag.lightrag are let go first. A Ctrl-C that no
    command handled is one line and status 130 (`_interrupted`)."""
    try:
        app()
        code: object = 0
    except SystemExit as done:
        code = done.code
        if _ended_by_ctrl_c(done):
            _interrupted()
    except KeyboardInterrupt:  # past Typer (a command's own finally, its teardown)
        _interrupted()
        code = INTERRUPTED
    try:
        _leave(code)
    except KeyboardInterrupt:  # while the process ends: its work is done
        _interrupted()
        sys.exit(INTERRUPTED)


def _leave(code: object) -> None:
    """End the process with the command's exit code (main's docstring says how)."""
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
