"""Description summaries when an LLM is configured, as LightRAG makes them (lightrag/summaries.py).

Without an LLM a merged description is `graph.merge.bounded` (the note's own description, then the most
informative mentions within LightRAG's summary budget). With one, an entity or relation whose distinct
descriptions reach LightRAG's triggers (`force_llm_summary_on_merge` fragments or `summary_max_tokens`
tokens) gets LightRAG's summary of all of them instead.

Summaries are made once per run, after the last batch, not at every batch that touches a hub entity (a
hub linked from every batch would otherwise be summarised again for each). Each batch writes the bounded
description and adds the record to the ledger's summary to-do list (`meta["summaries_todo"]`, saved in the
same atomic write that clears the batch's `pending`); the run's last step summarises the to-do list, writes
the summaries, and clears it. A crash or a stop between batches leaves the list for the next run. What was
paid for is never lost: each answer is in LightRAG's LLM cache (journaled), keyed by the prompt, that is by
the name and the exact fragment list: an unchanged list is answered from the cache, a changed one (one more
mention) is summarised again, and records whose fragments did not change are not touched at all.

The ledger remembers the summary mode (`meta["summaries"]`: the model and LightRAG's limits, or "" without
an LLM); when it changes, every record whose description differs between the modes is re-derived, so the
store stays equal to a fresh index under the current settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from wikirag.graph.merge import (
    bounded,
    entity_descriptions,
    merge_entity,
    merge_relation,
    relation_descriptions,
    summary_due,
)
from wikirag.index.ledger import Ledger, Pending
from wikirag.index.report import IndexReport
from wikirag.lightrag.summaries import SummaryLimits, summarise, summary_limits
from wikirag.lightrag.writer import StoreWriter

TODO_KEY = "summaries_todo"
MODE_KEY = "summaries"
GROUP = 200  # summaries written (and the to-do list saved) per step: progress survives a crash


@dataclass
class Summaries:
    """Whether this run summarises, LightRAG's limits and the tokenizer they are counted with."""

    enabled: bool
    limits: SummaryLimits
    tokenizer: Any
    model: str = ""

    @classmethod
    def for_run(cls, rag: Any, tokenizer: Any, model: str) -> Summaries:
        return cls(bool(model), summary_limits(rag), tokenizer, model)

    @property
    def mode(self) -> str:
        if not self.enabled:
            return ""
        lim = self.limits
        return f"{self.model} {lim.force}/{lim.max_tokens}/{lim.context}/{lim.length}"

    def due(self, descriptions: list[str]) -> bool:
        """LightRAG would call the LLM on this list (counted with LightRAG's tokenizer)."""
        n = len(descriptions)
        if n < 2:
            return False
        if n >= self.limits.force:
            return True
        tokens = sum(len(self.tokenizer.encode(d)) for d in descriptions)
        return summary_due(n, tokens, self.limits.force, self.limits.max_tokens)


def _todo(ledger: Ledger) -> tuple[set[str], set[tuple[str, str]]]:
    data = ledger.meta.get(TODO_KEY) or {}
    return set(data.get("entities", [])), {(a, b) for a, b in data.get("relations", [])}


def _set_todo(ledger: Ledger, entities: set[str], relations: set[tuple[str, str]]) -> None:
    if entities or relations:
        ledger.meta[TODO_KEY] = {"entities": sorted(entities), "relations": [list(k) for k in sorted(relations)]}
    else:
        ledger.meta.pop(TODO_KEY, None)


def summary_work(ledger: Ledger, model: str) -> bool:
    """A run with nothing else to do still has summary work: a to-do list left (a stop, a failed summary),
    or an LLM configured, changed or removed since the ledger's summaries were made."""
    recorded = str(ledger.meta.get(MODE_KEY, "")).split(" ")[0]
    return recorded != model or bool(model and ledger.meta.get(TODO_KEY))


def note_derived(ledger: Ledger, summaries: Summaries | None, entities: Iterable[str],
                 relations: Iterable[tuple[str, str]]) -> None:
    """After re-deriving these records (bounded descriptions written, or deleted): those that now need a
    summary join the to-do list, the others leave it. The caller's next ledger save records it."""
    if summaries is None or not summaries.enabled:
        return
    todo_entities, todo_relations = _todo(ledger)
    entity_index, relation_index = ledger.entity_index(), ledger.relation_index()
    for name in entities:
        due = name in entity_index and summaries.due(entity_descriptions(name, entity_index[name]))
        (todo_entities.add if due else todo_entities.discard)(name)
    for key in relations:
        due = key in relation_index and summaries.due(relation_descriptions(relation_index[key]))
        (todo_relations.add if due else todo_relations.discard)(key)
    _set_todo(ledger, todo_entities, todo_relations)


def mode_changes(ledger: Ledger, summaries: Summaries) -> Pending | None:
    """None when the ledger's summary mode is this run's; else the records whose description differs between
    summarised and bounded (to re-derive), with the new mode recorded and an old to-do list dropped."""
    if ledger.meta.get(MODE_KEY, "") == summaries.mode:
        return None
    pending = Pending()
    for name, fragments in ledger.entity_index().items():
        if _differs(entity_descriptions(name, fragments), summaries):
            pending.entities.add(name)
    for key, fragments in ledger.relation_index().items():
        if _differs(relation_descriptions(fragments), summaries):
            pending.relations.add(key)
    ledger.meta[MODE_KEY] = summaries.mode
    ledger.meta.pop(TODO_KEY, None)
    return pending


def _differs(descriptions: list[str], summaries: Summaries) -> bool:
    return bounded(descriptions) != descriptions or summaries.due(descriptions)


async def finish_summaries(writer: StoreWriter, ledger: Ledger, summaries: Summaries, report: IndexReport,
                           progress: Callable[[str, int, int], None] | None = None) -> None:
    """Summarise the to-do list with LightRAG's summary and write the records. A record whose summary failed
    (the LLM, after its retries) keeps its bounded description and stays on the list for the next run."""
    if not summaries.enabled:
        return
    entities, relations = _todo(ledger)
    jobs: list[tuple[str, Any]] = [("Entity", n) for n in sorted(entities)]
    jobs += [("Relation", k) for k in sorted(relations)]
    done = 0
    for start in range(0, len(jobs), GROUP):
        if report.llm_unavailable:  # the LLM cannot be used this run (extracting): the list waits for the next
            break
        group = jobs[start:start + GROUP]
        results = await asyncio.gather(*(_one(writer.rag, ledger, summaries, kind, key) for kind, key in group),
                                       return_exceptions=True)
        written_entities, written_relations = [], []
        for (kind, key), result in zip(group, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    raise result  # cancelled, interrupted: the list stays as saved
                report.llm_failures += 1
                if report.stop_asking_the_llm(result, "description summaries"):  # as in extraction
                    continue
                report.issues.append(f"{_label(kind, key)}: description summary failed, kept bounded, will retry: "
                                     f"{type(result).__name__}: {result}"[:300])
                continue
            (entities if kind == "Entity" else relations).discard(key)
            if result is None:
                continue
            (written_entities if kind == "Entity" else written_relations).append(result)
        await writer.upsert_entities(written_entities)
        await writer.upsert_relations(written_relations)
        await writer.flush()
        report.descriptions_summarised += len(written_entities) + len(written_relations)
        _set_todo(ledger, entities, relations)
        ledger.save()
        done += len(group)
        if progress is not None:
            progress("summaries", done, len(jobs))


def summary_jobs(ledger: Ledger, summaries: Summaries) -> list[tuple[str, str, list[str]]]:
    """(kind, name, descriptions) of every record on the to-do list that is still due: what `--batch` records."""
    if not summaries.enabled:
        return []
    entities, relations = _todo(ledger)
    entity_index, relation_index = ledger.entity_index(), ledger.relation_index()
    jobs = []
    for name in sorted(entities):
        if name in entity_index:
            jobs.append(("Entity", name, entity_descriptions(name, entity_index[name])))
    for key in sorted(relations):
        if key in relation_index:
            jobs.append(("Relation", _label("Relation", key), relation_descriptions(relation_index[key])))
    return [job for job in jobs if summaries.due(job[2])]


def _label(kind: str, key: Any) -> str:
    return key if kind == "Entity" else f"({key[0]}, {key[1]})"


async def _one(rag: Any, ledger: Ledger, summaries: Summaries, kind: str, key: Any) -> dict[str, Any] | None:
    """The record with LightRAG's summary as its description; None when it is gone or no longer due."""
    if kind == "Entity":
        index = ledger.entity_index()
        if key not in index:
            return None
        descriptions = entity_descriptions(key, index[key])
        record = merge_entity(key, index[key])
    else:
        index = ledger.relation_index()
        if key not in index:
            return None
        descriptions = relation_descriptions(index[key])
        record = merge_relation(key, index[key])
    if not summaries.due(descriptions):
        return None
    summary = await summarise(rag, kind, _label(kind, key), descriptions)
    if not summary:
        return None
    record["description"] = summary
    return record
