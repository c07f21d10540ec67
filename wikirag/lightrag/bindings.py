"""What wikirag's LLM providers borrow from LightRAG: its OpenAI and Ollama binding functions (with their
own retry loops switched off, so wikirag's is the only one), the opening lines of its prompts (to tell call
kinds apart), and its rule for a permanent rate limit."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from wikirag.lightrag.guard import import_lightrag


@cache
def binding(provider: str) -> Callable[..., Any]:
    """LightRAG's completion function for the `openai` or `ollama` wire, tried once per call."""
    from tenacity import stop_after_attempt

    import_lightrag()
    if provider == "openai":
        import_lightrag()
        from lightrag.llm.openai import openai_complete_if_cache as function
    else:
        import_lightrag()
        from lightrag.llm.ollama import _ollama_model_if_cache as function
    return function.retry_with(stop=stop_after_attempt(1), reraise=True)


@cache
def prompt_openings() -> dict[str, str]:
    """The fixed opening lines of LightRAG's prompts, by call kind."""
    import_lightrag()
    from lightrag.prompt import PROMPTS

    def head(name: str) -> str:
        return re.split(r"(?<!\{)\{(?!\{)", PROMPTS[name], maxsplit=1)[0][:80]

    return {
        "extract": head("entity_extraction_user_prompt"),
        "glean": head("entity_continue_extraction_user_prompt"),
        "summary": head("summarize_entity_descriptions"),
        "keywords": head("keywords_extraction"),
    }


def is_permanent_rate_limit(exc: BaseException) -> bool:
    """A 429 that says the quota is spent (no retry helps), by LightRAG's own reading of the error."""
    import_lightrag()
    from lightrag.llm._error_utils import is_permanent_rate_limit_error

    return is_permanent_rate_limit_error(exc)
