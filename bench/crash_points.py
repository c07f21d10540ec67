"""Write points for bench/crash_sweep.py: every step at which a wikirag process changes what is on disk, counted,
so that a sweep can stop a run exactly before the N-th one instead of at a moment in time.

Installed in the CLI's process (crash_sweep's launcher) when `WIKIRAG_CRASH_TRACE` names a file: each write point
appends "N name" to it. With `WIKIRAG_CRASH_AT=N` the process signals itself at the N-th point, before the step
runs: `WIKIRAG_CRASH_SIGNAL=KILL` (default; the process dies there) or `INT` (a Ctrl-C; the step goes on and the
run stops where a Ctrl-C stops it).

The write points: the file system's renames and deletions (every atomic write of wikirag and LightRAG ends in a
rename; `--rebuild` deletes), the ledger's saves, each StoreWriter operation (on PostgreSQL each is a write of
its own), and wikirag's own rows beside the ledger (stat manifest, parse cache, derived rows, search rows,
LightRAG's document rows).
"""

from __future__ import annotations

import functools
import inspect
import os
import signal
import sys
from typing import Any

_count = 0
_trace: Any = None
_at = 0
_signal = signal.SIGKILL


def _point(name: str) -> None:
    global _count
    _count += 1
    _trace.write(f"{_count} {name}\n")
    _trace.flush()
    if _count == _at:
        os.kill(os.getpid(), _signal)


def _hooked(name: str, func: Any) -> Any:
    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def hooked_async(*args: Any, **kwargs: Any) -> Any:
            _point(name)
            return await func(*args, **kwargs)

        return hooked_async

    @functools.wraps(func)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        _point(name)
        return func(*args, **kwargs)

    return hooked


def _replace_everywhere(func: Any, name: str) -> None:
    """Replace a module-level function in every loaded module that holds it (`from x import f` copies)."""
    hooked = _hooked(name, func)
    for module in list(sys.modules.values()):
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is func:
                setattr(module, attr, hooked)


def install() -> None:
    global _trace, _at, _signal
    path = os.environ.get("WIKIRAG_CRASH_TRACE")
    if not path:
        return
    _trace = open(path, "a", encoding="utf-8")  # noqa: SIM115  (lives as long as the process)
    _at = int(os.environ.get("WIKIRAG_CRASH_AT", "0"))
    _signal = signal.SIGINT if os.environ.get("WIKIRAG_CRASH_SIGNAL") == "INT" else signal.SIGKILL

    import wikirag.index.derived as derived
    import wikirag.index.manifest as manifest
    import wikirag.index.parsecache as parsecache
    import wikirag.index.run  # noqa: F401  (loads the modules whose imported names are replaced below)
    import wikirag.index.search_rows as search_rows
    import wikirag.index.watch  # noqa: F401
    import wikirag.lightrag.documents as documents
    import wikirag.storage.ledger_store as ledger_store
    from wikirag.index.ledger import Ledger
    from wikirag.lightrag.writer import StoreWriter

    for name in ("replace", "rename", "unlink"):
        setattr(os, name, _hooked(f"os.{name}", getattr(os, name)))
    Ledger.save = _hooked("Ledger.save", Ledger.save)
    for name, method in list(vars(StoreWriter).items()):
        if not name.startswith("_") and inspect.iscoroutinefunction(method):
            setattr(StoreWriter, name, _hooked(f"StoreWriter.{name}", method))
    for func in (manifest.save_manifest, manifest.drop_manifest, parsecache.save_parse_cache, derived.save_derived,
                 search_rows.sync_rows, documents.sync_document_rows, ledger_store.drop_workspace):
        _replace_everywhere(func, func.__name__)
