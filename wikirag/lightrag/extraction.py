"""LightRAG's own extraction step on inputs wikirag chooses: a note's stored chunks, a section of it, or a
pack of small notes that is never stored.

`operate.extract_entities` is called as `LightRAG._process_extract_entities` calls it (the instance's global
config, its role LLM functions, so ours with the hint, and its LLM cache), with one difference: the chunk
store it is handed only collects the cache keys each input used. LightRAG would otherwise record them on a
stored chunk (`llm_cache_list`), which a pack does not have; wikirag keeps them in its ledger instead.
"""

from __future__ import annotations

from typing import Any

from wikirag.lightrag.guard import import_lightrag


class _CacheKeys:
    """Stands in for the chunk store at the one place extraction touches it (`update_chunk_cache_list`)."""

    def __init__(self) -> None:
        self.keys: dict[str, list[str]] = {}

    async def get_by_id(self, chunk_id: str) -> dict[str, Any]:
        return {"llm_cache_list": list(self.keys.get(chunk_id, []))}

    async def upsert(self, data: dict[str, dict[str, Any]]) -> None:
        for chunk_id, record in data.items():
            self.keys[chunk_id] = list(record.get("llm_cache_list", []))


async def extract_inputs(rag: Any, inputs: dict[str, dict[str, Any]]) -> tuple[list[tuple[dict, dict]],
                                                                            dict[str, list[str]]]:
    """Run extraction on `inputs` (id -> LightRAG chunk dict: content, tokens, chunk_order_index,
    full_doc_id, file_path, optional heading). Returns LightRAG's per-input (nodes, edges), in input order,
    and the LLM cache keys each input used. Raises when the LLM fails after its retries."""
    import_lightrag()
    from lightrag.operate import extract_entities

    collector = _CacheKeys()
    results = await extract_entities(inputs, global_config=rag._build_global_config(),
                                     llm_response_cache=rag.llm_response_cache, text_chunks_storage=collector)
    return results, collector.keys


async def drop_cached(rag: Any, keys: list[str]) -> None:
    """Forget these LLM cache entries (their hint changed: LightRAG keys the prompt before the hint)."""
    if keys:
        await rag.llm_response_cache.delete(sorted(set(keys)))


BATCH_TOKEN = "wikirag-batch-answer-"  # a recording pass's stand-in answer (never cached, never sent)


class _Recorder:
    """The LLM function of a recording pass: keeps each request as sent (hint applied) and answers a token."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}

    async def __call__(self, prompt: str, system_prompt: str | None = None,
                       history_messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> str:
        token = f"{BATCH_TOKEN}{len(self.calls)}"
        self.calls[token] = {"prompt": prompt, "system_prompt": system_prompt,
                             "history": list(history_messages or []), "max_tokens": kwargs.get("max_tokens"),
                             "response_format": kwargs.get("response_format")}
        return token


class _ReadOnlyCache:
    """LightRAG's LLM cache for a recording pass: hits are read as usual; a write (the stand-in answer) is
    not stored, only its key noted: the key LightRAG will look the real answer up by."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache
        self.global_config = cache.global_config
        self.keys: dict[str, tuple[str, dict[str, Any]]] = {}  # token -> (cache key, entry without answer)

    async def get_by_id(self, key: str) -> Any:
        return await self._cache.get_by_id(key)

    async def upsert(self, data: dict[str, dict[str, Any]]) -> None:
        for key, entry in data.items():
            self.keys[str(entry.get("return"))] = (key, entry)


async def record_prompts(rag: Any, inputs: dict[str, dict[str, Any]], hints: dict[str, str]) -> list[dict[str, Any]]:
    """Run LightRAG's extraction on `inputs` without an LLM: every request it would send now (the hint put
    in by `HintingLLM`, the cache answering what it already holds) is returned with the cache key its answer
    must be stored under: [{key, entry, prompt, system_prompt, history, max_tokens, response_format}].
    Gleaning requests replay a first answer; they are recorded only once that answer is cached (a second
    round), never on a stand-in."""
    import_lightrag()
    from lightrag.operate import extract_entities

    from wikirag.lightrag.hinting import HintingLLM

    recorder = _Recorder()
    hinting = HintingLLM(recorder)
    hinting.hints = hints
    config = rag._build_global_config()
    config["role_llm_funcs"] = {**config["role_llm_funcs"], "extract": hinting}
    cache = _ReadOnlyCache(rag.llm_response_cache)
    await extract_entities(inputs, global_config=config, llm_response_cache=cache, text_chunks_storage=_CacheKeys())
    out = []
    for token, call in recorder.calls.items():
        if token not in cache.keys or any(BATCH_TOKEN in str(m.get("content", "")) for m in call["history"]):
            continue  # not cacheable (truncated), or a gleaning call on a stand-in answer
        key, entry = cache.keys[token]
        out.append({"key": key, "entry": {k: v for k, v in entry.items() if k != "return"}, **call})
    return out


async def store_answers(rag: Any, answers: dict[str, dict[str, Any]]) -> None:
    """Write answers into LightRAG's LLM cache under its own keys (journaled: llm answers survive a crash)."""
    if answers:
        await rag.llm_response_cache.upsert(answers)
