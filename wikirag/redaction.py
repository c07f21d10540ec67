"""API keys never reach a message: patterns for key-like strings and the values of secret environment
variables. A base module (like errors.py), so that every folder that words an error can use it; the logging
filter that applies it to LightRAG's and the HTTP clients' log lines is llm/redact.py.
"""

from __future__ import annotations

import os
import re

_KEY_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),  # OpenAI sk-/sk-proj-, Anthropic sk-ant-
    re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=:/+]{8,}"),
    # HTTP Basic credentials (a base URL's user:password, which the client sends and a server may echo)
    re.compile(r"\b(Basic\s+)(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}"),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://)[^\s/@]+(?=@)"),  # userinfo in a URL
    re.compile(r"(?i)((?:x-api-key|api[_-]?key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}&]{8,}"),
    re.compile(r"(?i)([?&](?:api[_-]?)?key=)[^&\s\"']+"),
]


_SECRET_ENV = re.compile(r"(?:API_KEY|_TOKEN|_SECRET|_SECRET_KEY|_ACCESS_KEY|_PASSWORD)$")


def _secret_values() -> list[str]:
    values = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= 8}
    return sorted(values, key=len, reverse=True)  # longest first, so one key inside another goes whole


def redact(text: str) -> str:
    """`text` with API keys replaced by `[redacted]`: anything shaped like a key, and the literal values
    of secret-looking environment variables (OPENAI_API_KEY, ANTHROPIC_API_KEY, *_TOKEN, ...)."""
    text = str(text)
    for value in _secret_values():
        text = text.replace(value, "[redacted]")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.re.groups else "") + "[redacted]", text)
    return text
