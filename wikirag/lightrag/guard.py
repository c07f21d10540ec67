"""The one way wikirag imports LightRAG: with its `.env` loading switched off.

More than a dozen LightRAG modules call `load_dotenv(".env")` when they are imported (`lightrag.base`,
`lightrag.lightrag`, the storage modules, the OpenAI binding, ...), some of them lazily, long after the first
import. A `.env` in the vault or wherever wikirag runs could then set API keys, bindings or `ENTITY_TYPES`
(which makes LightRAG's constructor exit). Before anything imports LightRAG, `import_lightrag()` wraps
python-dotenv's `load_dotenv` so that calls made from LightRAG's own modules do nothing; every module in this
folder calls it before its first `from lightrag ...`. Other callers of `load_dotenv` are unaffected.
"""

from __future__ import annotations

import functools
import logging
import sys
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


@cache
def import_lightrag() -> ModuleType:
    """Import LightRAG without letting it read a stray `.env`."""
    _skip_lightrags_dotenv()
    import lightrag
    import lightrag.base  # noqa: F401  (imports lightrag.utils, which sets its logger to INFO on import)

    # LightRAG and its vector DB log every storage step at INFO; wikirag reports its own summary. The SDKs'
    # HTTP client (httpx2, which LightRAG's own httpx setting misses) logs every request at INFO.
    for name in ("lightrag", "nano-vectordb", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return lightrag
