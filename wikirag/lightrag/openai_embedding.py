"""OpenAI's embedding call (and compatible servers'), asking for vectors of a configured width."""

from __future__ import annotations

from typing import Any

import numpy as np

from wikirag.lightrag.guard import import_lightrag


def openai_embedder(model: str, base_url: str | None, dim: int | None) -> Any:
    """LightRAG's OpenAI embedding call, asking for `dim`-wide vectors when `dim` is given (LightRAG sends
    `dimensions` only for an `embedding_dim`). A model that cannot shorten its vectors refuses the parameter
    even at its own width (OpenAI's text-embedding-ada-002, vLLM without Matryoshka): it is asked again without
    it, from then on, and the width probe (engine.check_vector_width) judges the width it returns."""
    import_lightrag()
    from lightrag.llm.openai import openai_embed

    asking = dim  # None once the server has refused the parameter

    async def vectors(texts: list[str]) -> np.ndarray:
        nonlocal asking
        if asking is not None:
            try:
                return await openai_embed.func(texts, model=model, base_url=base_url, embedding_dim=asking)
            except Exception as exc:
                if not _refuses_dimensions(exc):
                    raise
                asking = None
        return await openai_embed.func(texts, model=model, base_url=base_url)

    return vectors


def _refuses_dimensions(exc: BaseException) -> bool:
    """An OpenAI SDK error that says the request's `dimensions` was not accepted (400, or 422 from a server
    that validates its fields)."""
    import openai

    refused = isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError))
    return refused and "dimension" in str(exc).lower()
