"""Paid LLM answers survive a crash: every answer LightRAG caches is also appended to a journal file.

LightRAG's file KV store (`kv_store_llm_response_cache.json`) reaches the disk only when it is flushed,
and rewriting the whole file after every answer would cost O(answers²) bytes. So each cache write is also
appended, with an fsync, to `wikirag_llm_journal.jsonl` in the workspace folder. Opening the engine replays
a journal left by a crash into the cache; flushing the cache empties the journal. A `kill -9` or an OOM
mid-extraction then loses no answer the provider was paid for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

JOURNAL_FILENAME = "wikirag_llm_journal.jsonl"

_JOURNAL_ATTRIBUTE = "wikirag_journal"  # set on the cache storage object (LightRAG's storages are unhashable)


async def keep_answers(rag: Any, workspace_dir: Path) -> int:
    """Replay a journal a crashed run left, then journal every new cache write. Returns answers replayed."""
    cache = rag.llm_response_cache
    path = Path(workspace_dir) / JOURNAL_FILENAME
    replayed = await _replay(cache, path)
    if replayed:
        await flush_answers(rag, path)
    original = cache.upsert

    async def upsert(data: dict[str, dict[str, Any]]) -> None:
        await original(data)
        _append(path, data)

    cache.upsert = upsert  # instance attribute: only this engine's cache is journaled
    setattr(cache, _JOURNAL_ATTRIBUTE, path)
    return replayed


async def flush_answers(rag: Any, path: Path | None = None) -> None:
    """Persist LightRAG's LLM cache, then empty the journal (its answers are in the cache file now)."""
    cache = rag.llm_response_cache
    await cache.index_done_callback()
    journal = path or getattr(cache, _JOURNAL_ATTRIBUTE, None)
    if journal is not None and journal.exists():
        journal.unlink()


def _append(path: Path, data: dict[str, dict[str, Any]]) -> None:
    line = json.dumps(data, ensure_ascii=False, default=str) + "\n"
    with open(path, "a", encoding="utf-8") as out:
        out.write(line)
        out.flush()
        os.fsync(out.fileno())


async def _replay(cache: Any, path: Path) -> int:
    if not path.exists():
        return 0
    entries: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entries.update(json.loads(line))
            except ValueError:
                continue  # the last line of a crash may be half written: the answer is lost, not the rest
    if entries:
        await cache.upsert(entries)
    return len(entries)


def forget_answers(rag: Any) -> None:
    """After LightRAG's `finalize_storages` persisted the cache: the journal's answers are all on disk."""
    journal = getattr(rag.llm_response_cache, _JOURNAL_ATTRIBUTE, None)
    if journal is not None and journal.exists():
        journal.unlink()
