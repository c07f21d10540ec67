"""LightRAG's query parameters, built behind the import guard."""

from __future__ import annotations

from typing import Any

from wikirag.lightrag.guard import import_lightrag


def query_param(**kwargs: Any) -> Any:
    """A `lightrag.QueryParam` with these fields."""
    import_lightrag()
    from lightrag import QueryParam

    return QueryParam(**kwargs)
