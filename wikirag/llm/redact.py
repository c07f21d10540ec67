"""API keys never reach a log line: a logging filter on the loggers that print provider error bodies,
applying wikirag.redaction (which words every message).
"""

from __future__ import annotations

import logging

from wikirag.redaction import redact


class _RedactingFilter(logging.Filter):
    """Redacts LightRAG's own log lines (its bindings log provider error bodies verbatim) and httpx's
    request lines (a URL may carry a key). Logger filters see only their own logger's records."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = _RedactingFilter()


def install_log_redaction() -> None:
    for name in ("lightrag", "httpx", "httpx2"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)

