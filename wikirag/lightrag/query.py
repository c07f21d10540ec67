"""LightRAG's query parameters, built behind the import guard."""

from __future__ import annotations

from typing import Any

from wikirag.lightrag.guard import import_lightrag


def query_param(**kwargs: Any) -> Any:
    """A `lightrag.QueryParam` with these fields."""
    import_lightrag()
    from lightrag import QueryParam

    return QueryParam(**kwargs)


def too_short_for_retrieval(question: str) -> bool:
    """Whether LightRAG refuses `question` for retrieval (under 3 characters, a CJK character counting 2): it
    raises then, from inside its query call."""
    import_lightrag()
    from lightrag.query_validation import meets_min_rag_query_weight

    return not meets_min_rag_query_weight(question)
