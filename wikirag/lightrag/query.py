"""LightRAG's query parameters, built behind the import guard, and its error log lines during a query."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
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


@contextlib.contextmanager
def errors_held() -> Iterator[None]:
    """Hold back the ERROR lines LightRAG logs inside the block. A query that fails in LightRAG logs the failure
    (once per layer: "keyword LLM func: …", "Query failed: …") and returns it; wikirag raises it as one line
    naming the same cause, so when the block raises, the held lines are dropped. When it does not, LightRAG went
    on past the error, and the lines are logged after all."""
    logger = logging.getLogger("lightrag")
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            held.append(record)
            return False
        return True

    logger.addFilter(hold)
    try:
        yield
    except BaseException:
        logger.removeFilter(hold)
        raise
    logger.removeFilter(hold)
    for record in held:
        logger.handle(record)


def failure_message(message: object) -> str:
    """LightRAG's failure text without the "Query failed: " it puts in front (wikirag says that itself)."""
    text = str(message)
    return text[len("Query failed: "):] if text.startswith("Query failed: ") else text
