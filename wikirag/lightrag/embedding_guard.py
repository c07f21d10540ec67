"""An embedding call that fails is said once, in one line, and the run's later calls fail at once.

LightRAG embeds a vector storage's pending upserts when the run flushes it and again when the storages are
finalised. After the model failed (an API server down or answering 500, the local model out of memory),
each of those re-tries ran the provider binding's retries again (three attempts, 12 s, per storage: 48 s
before the run ended), and what reached the user was a tenacity `RetryError` traceback. Now the first
failure becomes an EmbeddingFailed naming the model and the cause, and the calls of the next HOLD_S seconds
raise it without calling the model; `watch` retries a failed batch after 30 s, past the hold.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from wikirag.errors import EmbeddingFailed, WikiragError
from wikirag.redaction import redact

HOLD_S = 20.0
_MESSAGE_CHARS = 300

# The messages of recent failures, which guard.py's log filter recognises in LightRAG's own ERROR lines
# about them (wikirag reports the failure itself).
_recent: list[str] = []
_last_failure_at = -HOLD_S


def embedding_failed(model: str, exc: BaseException) -> WikiragError:
    """The one-line error for `exc` raised by `model`'s embedding call: tenacity's RetryError is unwrapped to
    its last attempt's error, and the text is redacted (a server may echo a key)."""
    if isinstance(exc, WikiragError):
        return exc
    attempts = ""
    last_attempt = getattr(exc, "last_attempt", None)  # tenacity.RetryError
    if last_attempt is not None and last_attempt.exception() is not None:
        attempts = f" after {last_attempt.attempt_number} attempts"
        exc = last_attempt.exception()
    detail = " ".join(str(exc).split()) or "no message"
    reason = redact(f"{type(exc).__name__}: {detail}")[:_MESSAGE_CHARS]
    return EmbeddingFailed(f"embedding with {model} failed{attempts}: {reason}")


def is_reported(message: str) -> bool:
    """Whether a log line is LightRAG's report of a failure wikirag raises itself (see _recent), or its
    count of the storages that failed to finalise just after one."""
    if message.startswith("Failed to finalize ") and time.monotonic() - _last_failure_at < HOLD_S:
        return True
    return any(failure in message for failure in _recent)


def guarded(model: str, embed: Callable[[list[str]], Awaitable[Any]]) -> Callable[[list[str]], Awaitable[Any]]:
    """`embed` whose failure is one line, and which fails at once for HOLD_S seconds after a failure."""
    failure: WikiragError | None = None
    failed_at = 0.0

    async def call(texts: list[str]) -> Any:
        nonlocal failure, failed_at
        global _last_failure_at
        if failure is not None and time.monotonic() - failed_at < HOLD_S:
            raise type(failure)(str(failure))  # a new one: raising one object again grows its traceback
        try:
            return await embed(texts)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure, failed_at = embedding_failed(model, exc), time.monotonic()
            _recent[:] = [*_recent[-7:], str(failure)]
            _last_failure_at = failed_at
            if failure is exc:
                raise
            raise failure from exc

    return call
