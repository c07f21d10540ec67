"""The deterministic merge of fragments into LightRAG records: every entity and relation is derived from
the fragments all current notes contribute, so an edit, a rename or a delete re-derives exactly the
records it touches and the store always equals a fresh index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from wikirag.graph.records import UNRESOLVED_TYPE, EntityFragment, RelationFragment
from wikirag.lightrag.ids import SEP


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
    return list(seen)


_TYPE_PRIORITY = {0: 0, 2: 1, 1: 2}  # fragment rank -> whose type wins

# LightRAG summarises a description past `summary_max_tokens` (1,200 in 1.5.x) with an LLM. Without one,
# a description is kept within that budget instead: an entity linked from hundreds of daily notes would
# otherwise carry hundreds of sentences into every prompt that retrieves it. The ledger keeps every fragment.
# With an LLM, index/summaries.py replaces the bounded text by LightRAG's summary of every fragment.
DESCRIPTION_BUDGET_TOKENS = 1200
_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, one per four other characters."""
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def bounded(descriptions: list[str], budget: int = DESCRIPTION_BUDGET_TOKENS) -> list[str]:
    """The first description (the note's own, or the first mention), then the most informative of the rest
    (most words not said yet; near-repeats skipped) while they fit the token budget. Independent of order."""
    if sum(approx_tokens(d) for d in descriptions) <= budget:
        return descriptions
    first, rest = descriptions[0], descriptions[1:]
    said = {w.casefold() for w in _WORD.findall(first)}
    scored = sorted(rest, key=lambda d: (-len({w.casefold() for w in _WORD.findall(d)} - said), d))
    kept, used = [first], approx_tokens(first)
    for text in scored:
        words = {w.casefold() for w in _WORD.findall(text)}
        new = words - said
        if not new or len(new) < 0.2 * len(words):
            continue  # says (almost) nothing the kept ones do not
        cost = approx_tokens(text)
        if used + cost > budget:
            continue
        kept.append(text)
        used += cost
        said |= words
    return kept


def summary_due(fragments: int, tokens: int, force: int, max_tokens: int) -> bool:
    """LightRAG's rule (`_handle_entity_relation_summary`): a description list goes to the LLM when it has
    `force_llm_summary_on_merge` fragments or `summary_max_tokens` tokens; one fragment never does."""
    return fragments >= 2 and (fragments >= force or tokens >= max_tokens)


def _unresolved_lead(name: str, descriptions: list[str]) -> list[str]:
    if not descriptions:
        return descriptions
    return [f"{name} has no note in the vault yet; it is mentioned in: " + descriptions[0], *descriptions[1:]]


def _entity_parts(fragments: list[EntityFragment]) -> tuple[list[EntityFragment], str, list[str]]:
    ordered = sorted(fragments, key=lambda f: (f.rank, f.file_path))
    # Type priority: the note's own frontmatter/folder type, then an LLM's reading of the text, then
    # what a link alone can say (unresolved, attachment).
    typed = sorted((f for f in ordered if f.type), key=lambda f: (_TYPE_PRIORITY.get(f.rank, 3), f.file_path))
    entity_type = typed[0].type if typed else "unknown"
    return ordered, entity_type, _unique(f.description for f in ordered)


def entity_descriptions(name: str, fragments: list[EntityFragment]) -> list[str]:
    """Every distinct description of `name`, in merge order: what an LLM summary reads (the ledger keeps
    them all; `merge_entity` joins a bounded selection)."""
    _ordered, entity_type, descriptions = _entity_parts(fragments)
    return _unresolved_lead(name, descriptions) if entity_type == UNRESOLVED_TYPE else descriptions


def relation_descriptions(fragments: list[RelationFragment]) -> list[str]:
    """Every distinct description of a relation, in merge order (see `entity_descriptions`)."""
    ordered = sorted(fragments, key=lambda f: (f.file_path, f.src))
    return _unique(d for f in ordered for d in f.description.split("\n"))


def merge_entity(name: str, fragments: list[EntityFragment]) -> dict[str, Any]:
    """The graph node for `name` from every fragment that mentions it, independent of input order."""
    ordered, entity_type, descriptions = _entity_parts(fragments)
    descriptions = bounded(descriptions)
    if entity_type == UNRESOLVED_TYPE:
        descriptions = _unresolved_lead(name, descriptions)
    return {
        "entity_id": name,
        "entity_type": entity_type,
        "description": "\n".join(descriptions) or name,
        "source_id": SEP.join(sorted({c for f in ordered for c in f.chunk_ids})),
        "file_path": SEP.join(sorted({f.file_path for f in ordered})),
    }


def relation_key(src: str, tgt: str) -> tuple[str, str]:
    a, b = sorted((src, tgt))
    return a, b


def merge_relation(key: tuple[str, str], fragments: list[RelationFragment]) -> dict[str, Any]:
    ordered = sorted(fragments, key=lambda f: (f.file_path, f.src))
    chunk_ids = sorted({c for f in ordered for c in f.chunk_ids})
    return {
        "src_id": key[0],
        "tgt_id": key[1],
        "description": "\n".join(bounded(relation_descriptions(fragments))),
        "keywords": ", ".join(_unique(k for f in ordered for k in f.keywords)) or "link",
        "source_id": SEP.join(chunk_ids),
        # LightRAG requires weight >= distinct source chunks; each link occurrence counts once.
        "weight": float(max(len(chunk_ids), sum(f.occurrences for f in ordered), 1)),
        "file_path": SEP.join(sorted({f.file_path for f in ordered})),
    }

