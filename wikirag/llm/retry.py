"""Which LLM errors are worth another attempt (429 except permanent quota stops, 5xx, 408/409, timeouts,
connection errors; never auth or validation errors), the backoff between attempts, and the redacted
error wikirag raises in the end.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

from wikirag.errors import WikiragError
from wikirag.settings import RETRY_MAX_WAIT_S


class LLMCallError(WikiragError):
    """An LLM call failed (after retries, or at once for a non-retryable error); the message is redacted."""

    def __init__(self, message: str, *, status_code: int | None = None, retryable: bool = False,
                 attempts: int = 1, every_call: bool = False) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = retryable
        self.attempts = attempts
        self.every_call = every_call  # affects_every_call: the run's other calls would fail the same way


def llm_call_error(exc: BaseException | None) -> LLMCallError | None:
    """The LLMCallError wikirag's client raised behind `exc`. LightRAG re-raises a failed call as a new
    exception of the same type under its chunk's name (`from` the original), which keeps the message only:
    the innermost one holds the attributes."""
    found, seen = None, 0
    while exc is not None and seen < 10:
        if isinstance(exc, LLMCallError):
            found = exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return found


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: about initial_s, 2x, 4x ... capped at max_s, plus up to
    initial_s of random jitter; a server's Retry-After wins (capped at max_s)."""

    initial_s: float = 1.0
    max_s: float = RETRY_MAX_WAIT_S


_RETRY_STATUS = frozenset({408, 409, 429})


def status_code_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and status > 0 else None


def is_retryable(exc: BaseException) -> bool:
    """429 (except permanent quota stops), 5xx, 408/409, timeouts, connection errors, and the OpenAI
    binding's empty-response error. Never 400/401/403/404/422."""
    status = status_code_of(exc)
    if status is not None:
        if status == 429:
            from wikirag.lightrag.bindings import is_permanent_rate_limit

            return not is_permanent_rate_limit(exc)
        return status in _RETRY_STATUS or status >= 500
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
        return True
    # ollama uses httpx; current openai/anthropic SDKs use its fork httpx2 (and wrap its errors).
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, module.TransportError):
            return not isinstance(exc, module.UnsupportedProtocol)
    names = {cls.__name__ for cls in type(exc).__mro__}
    # SDK connection/timeout classes (openai, anthropic) and the OpenAI binding's retryable wrappers.
    if names & {"APIConnectionError", "APITimeoutError", "TransientBadRequestError"}:
        return True
    return type(exc).__name__ == "InvalidResponseError" and type(exc).__module__ == "lightrag.llm.openai"


def affects_every_call(exc: BaseException) -> bool:
    """Whether every other call would fail the same way, so a run should stop asking: the server cannot be
    reached (after the retries), the key is refused, the model is unknown, the account's quota is spent. A
    timeout or a 400 may be the one prompt's doing (a long pack, a filtered text): the run goes on."""
    status = status_code_of(exc)
    if status is not None:
        return status in (401, 403, 404) or (status == 429 and not is_retryable(exc))
    if isinstance(exc, ConnectionError):  # the builtin, which the ollama client raises
        return True
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, module.ConnectError):
            return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "APIConnectionError" in names and "APITimeoutError" not in names  # openai's, anthropic's


def is_provider_error(exc: BaseException) -> bool:
    """Errors from the wire or the provider SDKs (wrapped and redacted), as opposed to bugs (re-raised)."""
    if status_code_of(exc) is not None or is_retryable(exc):
        return True
    module = type(exc).__module__.split(".")[0]
    return module in {"openai", "anthropic", "ollama", "httpx", "httpx2", "lightrag"}


def error_text(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) and not str(exc):
        return f"no answer within {timeout_s:g} s (timeout_s)"
    return f"{type(exc).__name__}: {exc}"


def retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after") is not None:
            return float(headers["retry-after"])
    except (TypeError, ValueError):  # an HTTP date: fall back to our own backoff
        return None
    return None

