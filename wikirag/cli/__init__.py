"""The command line: argument parsing (Typer), rendering with rich, and `doctor`. The only folder that
imports typer or rich; it calls the library and renders its result objects.

May import anything in wikirag.
"""

import gc

# A command's process allocates mostly objects that live until it exits (modules, a store's records):
# CPython's default first threshold (700) ran ~250 collections, two of them full, in a cold context-only
# query, ~0.1 s of CPU (bench/retrieval.py --cold). Fewer, larger rounds still collect cycles, and the older
# generations' thresholds (20 instead of 10) halve the full collections that trace every module and record;
# set at import, before the commands' own imports allocate, so it also holds in `watch` and `mcp`.
gc.set_threshold(50_000, 20, 20)

from wikirag.cli import retrieval as _retrieval  # noqa: E402, F401  (registers search and mcp)
from wikirag.cli.app import app  # noqa: E402

__all__ = ["app"]
