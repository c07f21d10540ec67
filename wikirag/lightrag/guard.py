"""The one way wikirag imports LightRAG: away from a stray `.env`.

LightRAG loads `.env` from the current folder when `lightrag.base` is first imported, which would let a file
in the vault (or wherever wikirag runs) set API keys, bindings or `ENTITY_TYPES`. Every module in this folder
calls `import_lightrag()` before its first `from lightrag ...`, so the first import happens in an empty
temporary folder.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from functools import cache
from types import ModuleType


@cache
def import_lightrag() -> ModuleType:
    """Import LightRAG without letting it read a stray `.env` from the current folder."""
    if "lightrag" not in sys.modules:
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as neutral:
            os.chdir(neutral)
            try:
                import lightrag  # noqa: F401
                import lightrag.base  # noqa: F401  (the module that loads .env)
            finally:
                os.chdir(here)
    # LightRAG and its vector DB log every storage step at INFO; wikirag reports its own summary.
    for name in ("lightrag", "nano-vectordb"):
        logging.getLogger(name).setLevel(logging.WARNING)
    import lightrag

    return lightrag
