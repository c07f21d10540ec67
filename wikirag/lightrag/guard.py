"""The one way wikirag imports LightRAG: with its `.env` loading switched off.

More than a dozen LightRAG modules call `load_dotenv(".env")` when they are imported (`lightrag.base`,
`lightrag.lightrag`, the storage modules, the OpenAI binding, ...), some of them lazily, long after the first
import. A `.env` in the vault or wherever wikirag runs could then set API keys, bindings or `ENTITY_TYPES`
(which makes LightRAG's constructor exit). Before anything imports LightRAG, `import_lightrag()` wraps
python-dotenv's `load_dotenv` so that calls made from LightRAG's own modules do nothing; every module in this
folder calls it before its first `from lightrag ...`. Other callers of `load_dotenv` are unaffected.

It also defers what LightRAG imports at load time but a query never uses (`_DEFERRED`, ~0.3 s of a 1.4 s cold
query): such a module is registered unexecuted and runs on the first read of a name it lacks, so code that uses
it behaves as before, only later. The standard library's `importlib.util.LazyLoader` cannot do this on
Python 3.11: the `import X` statement itself reads `X.__spec__`, which makes its module load at once.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import sys
import threading
from functools import cache
from types import ModuleType
from typing import Any


def _skip_lightrags_dotenv() -> None:
    import dotenv

    original = dotenv.load_dotenv
    if getattr(original, "wikirag_guard", False):
        return

    @functools.wraps(original)
    def load_dotenv(*args: Any, **kwargs: Any) -> bool:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller == "lightrag" or caller.startswith("lightrag."):
            return False
        return original(*args, **kwargs)

    load_dotenv.wikirag_guard = True  # type: ignore[attr-defined]
    dotenv.load_dotenv = load_dotenv


# Module -> names it must already hold when LightRAG's own modules import it; each is taken from the light module
# that defines it, and reading any other name runs the whole module.
# - pypinyin (~0.3 s: its phrase dictionaries): lightrag.utils does `import pypinyin` for get_pinyin_sort_key,
#   which sorts Chinese file names (the API server's document list, the JSON and Redis doc-status listings).
# - lightrag.chunker (~0.2 s: its recursive-character and semantic chunkers import langchain_text_splitters and
#   langchain_core): lightrag.lightrag only needs `chunking_by_token_size` (the default chunking_func) to load;
#   the pipeline imports the other chunkers from the package when a document asks for one.
# - httpx (~0.1 s): lightrag.exceptions and lightrag.lightrag import it for annotations (postponed there) and
#   their HTTP bindings; a store with the local embedder and no LLM never sends a request. An LLM or embedding
#   client (ollama's uses httpx) runs it on its first use of it.
_DEFERRED: dict[str, dict[str, str]] = {
    "pypinyin": {},
    "httpx": {},
    "lightrag.chunker": {"chunking_by_token_size": "lightrag.chunker.token_size"},
}
_BINDINGS_DIR = ""  # LightRAG's llm/ folder (its LLM bindings), set by import_lightrag
_locks: dict[str, threading.RLock] = {}  # one per deferred module: a second thread waits for the first's run
_running: set[str] = set()


class _DeferredModule(ModuleType):
    """A module whose code has not run yet: reading a name it lacks runs it (once), then reads the name. Names
    it already has (`__spec__`, `__path__`, `__name__`, ...) are read without running it."""

    def __getattr__(self, name: str) -> Any:
        with _locks[self.__name__]:
            if type(self) is _DeferredModule and self.__name__ not in _running:
                _running.add(self.__name__)  # a read from inside its own run sees a half-run module, as usual
                unrun = dict(vars(self))
                try:
                    self.__spec__.loader.exec_module(self)
                except BaseException:
                    # Back to unrun, still deferred: every holder of this object (`lightrag.utils.pypinyin`)
                    # gets the import error again on its next read, never a half-run module.
                    vars(self).clear()
                    vars(self).update(unrun)
                    raise
                else:
                    self.__class__ = ModuleType
                finally:
                    _running.discard(self.__name__)
        return ModuleType.__getattribute__(self, name)


def _defer(name: str, provides: dict[str, str]) -> None:
    """Put `name` in sys.modules unexecuted, holding only `provides`, so `import name` (or `from name import`
    one of those) does not run it. If anything is not where expected, `name` is left to import as usual."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return  # not installed (LightRAG's own ImportError fallback applies) or not a plain module
    module = importlib.util.module_from_spec(spec)
    _locks.setdefault(name, threading.RLock())
    module.__class__ = _DeferredModule
    sys.modules[name] = module
    try:
        for attr, source in provides.items():
            setattr(module, attr, getattr(importlib.import_module(source), attr))
    except (ImportError, AttributeError):
        del sys.modules[name]


@cache
def import_lightrag() -> ModuleType:
    """Import LightRAG without letting it read a stray `.env`, and without modules a query never uses."""
    _skip_lightrags_dotenv()
    import lightrag

    for name, provides in _DEFERRED.items():
        _defer(name, provides)
    import lightrag.base  # noqa: F401  (imports lightrag.utils, which sets its logger to INFO on import)

    # LightRAG and its vector DB log every storage step at INFO; wikirag reports its own summary. The SDKs'
    # HTTP client (httpx2, which LightRAG's own httpx setting misses) logs every request at INFO.
    for name in ("lightrag", "nano-vectordb", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)
    global _BINDINGS_DIR
    _BINDINGS_DIR = os.path.join(os.path.dirname(lightrag.__file__ or ""), "llm", "")
    if _drop_reraised_errors not in logging.getLogger("lightrag").filters:
        logging.getLogger("lightrag").addFilter(_drop_reraised_errors)
    return lightrag


def _drop_reraised_errors(record: logging.LogRecord) -> bool:
    """Drop the ERROR lines LightRAG logs about a failure it then raises to wikirag, which reports it once (a
    failed note, "LLM unavailable", a query error), redacted: its call queues log every failure of the function
    they call ("extract LLM func: Error in decorated function for task …"), and its LLM bindings each failed
    request ("OpenAI API Connection Error: …"), which wikirag's client retries and reports. One unreachable
    server printed a line per chunk beside the run's report."""
    if record.levelno != logging.ERROR:
        return True
    if ": Error in decorated function for task " in str(record.msg):
        return False
    from wikirag.lightrag.embedding_guard import is_reported

    if is_reported(record.getMessage()):  # "Error embedding pending vector ops", "Failed to finalize X"
        return False
    return not (_BINDINGS_DIR and record.pathname.startswith(_BINDINGS_DIR))
