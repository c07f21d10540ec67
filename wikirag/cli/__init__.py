"""The command line: argument parsing (Typer), rendering with rich, and `doctor`. The only folder that
imports typer or rich; it calls the library and renders its result objects.

May import anything in wikirag.
"""

from wikirag.cli import retrieval as _retrieval  # noqa: F401  (registers search and mcp)
from wikirag.cli.app import app

__all__ = ["app"]
