"""Applying a plan to the store, batch by batch, write-ahead: save the ledger with `pending` (every record
the batch will rewrite), write chunks, re-derive each touched entity and relation from all notes'
fragments, flush LightRAG's stores, clear `pending`. A crash anywhere leaves `pending` for the next run
to redo. Extract-routed notes then go through LightRAG's extraction with their hint (index/extracting.py).

A record that a later batch of the run touches again (a note's entity that notes of an earlier batch link to,
a link target without a note, a hub; a record a deleted note held) has its graph node or edge written at every
step that touches it but its vector only at the last (`later_touches` reads the batches' links before they
run): embedding is the costly write, and each earlier text would be replaced. Until then its vector stays
owed in `pending` (on disk with the records to re-derive), and a stop between batches writes what is owed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from wikirag.graph.contribution import link_targets, note_contribution
from wikirag.graph.merge import merge_entity, merge_relation, relation_key
from wikirag.graph.records import NoteContribution
from wikirag.index.batching import run_batches, run_summary_batches
from wikirag.index.extracting import extract_batch, fragment_changes, reclean, stale_packs
from wikirag.index.ledger import Ledger, NoteEntry, Pending, chunks_digest
from wikirag.index.live import LiveRun
from wikirag.index.manifest import drop_manifest
from wikirag.index.planning import Plan, entity_names_table
from wikirag.index.report import IndexReport, Progress
from wikirag.index.summaries import Summaries, finish_summaries, mode_changes, note_derived
from wikirag.index.units import plan_units
from wikirag.lightrag.hinting import HintingLLM
from wikirag.lightrag.tokens import get_encoding, lightrag_tokenizer
from wikirag.lightrag.writer import StoreWriter
from wikirag.llm.batch import BatchAPI
from wikirag.settings import WikiragConfig

Key = str | tuple[str, str]  # an entity name or a relation key


async def run_plan(writer: StoreWriter, ledger: Ledger, plan: Plan, config: WikiragConfig,
                    report: IndexReport, progress: Progress, hinting: HintingLLM | None,
                    live: LiveRun | None = None, batch: BatchAPI | None = None,
                    should_stop: Callable[[], bool] | None = None) -> None:
    """Apply the plan; with `batch`, every extraction request is first answered through the provider's
    batch API (index/batching.py) and the extraction below finds the answers in LightRAG's cache."""
    ticker = asyncio.ensure_future(_tick(live, progress)) if live is not None and live.total else None
    try:
        await _run_plan(writer, ledger, plan, config, report, progress, hinting, live, batch, should_stop)
    finally:
        if ticker is not None:
            ticker.cancel()


async def _tick(live: LiveRun, progress: Progress) -> None:
    """Refresh the live line every second while extraction runs (requests in flight, tokens, ETA)."""
    while True:
        await asyncio.sleep(1.0)
        if live.done or live.usage is not None and live.usage.calls:
            progress(live.line(), live.done, live.total)


async def _run_plan(writer: StoreWriter, ledger: Ledger, plan: Plan, config: WikiragConfig,
                    report: IndexReport, progress: Progress, hinting: HintingLLM | None,
                    live: LiveRun | None, batch_api: BatchAPI | None,
                    should_stop: Callable[[], bool] | None) -> None:
    tokenizer = lightrag_tokenizer(config.index.encoding)
    drop_manifest(config.workspace_dir)  # the store is about to change (watch runs come here too)
    # With an LLM, hub descriptions get LightRAG's summary at the end of the run (index/summaries.py).
    summaries = Summaries.for_run(writer.rag, tokenizer, plan.llm_model if hinting else "")
    ledger.notes.load([*plan.deleted, *plan.to_process])  # the entries this run replaces, in one read
    batch_size = max(1, config.index.batch_size)
    todo = plan.to_process
    last_touch = later_touches(plan, ledger, todo, batch_size)
    before_batches = _touched_after(last_touch, -1)  # the steps before the batches leave these vectors to them
    # Finish what a crashed run promised before anything new.
    if not ledger.pending.empty():
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, summaries=summaries,
                            later=before_batches)
    switched = mode_changes(ledger, summaries)  # an LLM configured or removed since the last run
    if switched is not None:
        ledger.pending.merge(switched)
        ledger.save()
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, summaries=summaries,
                            later=before_batches)
    for path in plan.deleted:
        ledger.pending.merge(pending_for(ledger.notes.pop(path), None))
    if plan.deleted:
        ledger.save()
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, summaries=summaries,
                            later=before_batches)
    table = entity_names_table(plan.vault, plan.names, config.index.default_note_type) if hinting else None
    units_plan = None
    if hinting and table is not None:
        extracting = [p for p in plan.signatures if plan.extracting(p)]
        units_plan = plan_units(plan, extracting, get_encoding(config.index.encoding),
                                config.index.chunk_token_size, config.index.pack_max_tokens)
        if ledger.meta.get("names_digest") != plan.names_digest:
            # The vault's names changed (a note added, renamed, an alias edited): re-apply name hygiene to the
            # unchanged notes' kept extraction output; notes about to be processed get it below.
            ledger.pending.merge(reclean(plan, ledger, table, plan.unchanged))
            ledger.meta["names_digest"] = plan.names_digest
            ledger.save()
            await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, summaries=summaries,
                                later=before_batches)
    if batch_api is not None and units_plan is not None:
        await run_batches(writer.rag, batch_api, plan, ledger, units_plan, config, report, progress, live, tokenizer,
                          lambda p: contribution_for(plan, p, tokenizer, config))
        if live is not None:
            live.begin()  # the live extraction that follows counts from here (cache hits)
    done = 0
    for start in range(0, len(todo), batch_size):
        if should_stop is not None and should_stop():
            report.interrupted = True  # between batches the store and ledger agree: the rest waits
            break
        batch = todo[start : start + batch_size]
        later = _touched_after(last_touch, start // batch_size)
        # Phase 1: structure (chunks, note entity, link relations) for every note of the batch.
        pending = Pending()
        contributions: dict[str, NoteContribution] = {}
        for path in batch:
            contribution = contribution_for(plan, path, tokenizer, config)
            contributions[path] = contribution
            old = ledger.notes.get(path)
            pending.merge(pending_for(old, contribution))
            route = plan.decisions[path].route
            status = "indexed"
            if route == "extract":
                status = "extracting" if plan.extracting(path) and hinting else "pending_extraction"
            note = plan.vault.notes[path]
            entry = NoteEntry.from_contribution(
                plan.vault.digests[path], plan.signatures[path], contribution, route=route, status=status,
                title=note.title, aliases=list(note.aliases), tags=list(note.tags),
            )
            if old is not None:
                entry.hint_digest, entry.cache_keys = old.hint_digest, old.cache_keys
            ledger.notes[path] = entry
        ledger.pending.merge(pending)
        ledger.save()  # write-ahead: the promise comes first
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, contributions,
                            summaries=summaries, later=later)
        # Phase 2: LLM extraction for extract-routed notes (their units: chunks, sections or packs).
        extract = [p for p in batch if ledger.notes[p].status == "extracting"]
        if extract and hinting and table is not None and units_plan is not None:
            if live is not None and not live.done:
                live.begin()

            def extracted(notes: int) -> None:
                if live is not None:
                    live.done += notes
                    progress(live.line(), live.done, live.total)

            pending = await extract_batch(writer.rag, hinting, plan, extract, units_plan, contributions, ledger,
                                          table, report, tokenizer, config,
                                          lambda p: contribution_for(plan, p, tokenizer, config), extracted)
            ledger.pending.merge(pending)
            ledger.save()
            await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, summaries=summaries,
                                later=later)
        if live is None or not live.total:
            progress("index", min(start + batch_size, len(todo)), len(todo))
        done += len(batch)
    if not ledger.pending.empty():  # vectors owed to batches a stop left out (or no batch touched after all)
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, summaries=summaries)
    if hinting and table is not None and units_plan is not None and not report.interrupted:
        stale = stale_packs(plan, ledger, units_plan)  # e.g. a packed note was deleted
        if stale:
            pending = await extract_batch(writer.rag, hinting, plan, stale, units_plan, {}, ledger, table, report,
                                          tokenizer, config, lambda p: contribution_for(plan, p, tokenizer, config))
            ledger.pending.merge(pending)
            ledger.save()
            await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, summaries=summaries)
    if not report.interrupted:
        if batch_api is not None:
            await run_summary_batches(writer.rag, batch_api, plan, ledger, summaries, config, report, progress, live)
        await finish_summaries(writer, ledger, summaries, report, progress)
    report.notes_indexed = done
    report.notes_injected = sum(1 for p in todo if plan.decisions[p].route == "inject")


def contribution_for(plan: Plan, path: str, tokenizer: Any, config: WikiragConfig) -> NoteContribution:
    return note_contribution(
        plan.vault.notes[path],
        plan.vault.outgoing(path),
        plan.names,
        plan.unresolved,
        tokenizer,
        chunk_size=config.index.chunk_token_size,
        chunk_overlap=config.index.chunk_overlap_token_size,
        default_type=config.index.default_note_type,
    )


def later_touches(plan: Plan, ledger: Ledger, todo: list[str], batch_size: int) -> dict[Key, int]:
    """Entity names and relation keys -> the last batch (its number, from 0) that may touch them: a note's own
    entity, its links' targets and relations, and the fragments the ledger holds of it (a change removes them).
    Read from the links alone, without chunking. What extraction will find is unknown before it runs: such a
    record is embedded in each batch that touches it, as it was before."""
    last: dict[Key, int] = {}
    for start in range(0, len(todo), batch_size):
        number = start // batch_size
        for path in todo[start : start + batch_size]:
            me = plan.names[path]
            last[me] = number
            for _link, target, _type in link_targets(plan.vault.notes[path], plan.vault.outgoing(path), plan.names,
                                                     plan.unresolved):
                last[target] = last[relation_key(me, target)] = number
            old = ledger.notes.get(path)
            if old is not None:
                last.update(dict.fromkeys((f.name for f in old.entities), number))
                last.update(dict.fromkeys((relation_key(r.src, r.tgt) for r in old.relations), number))
    return last


def _touched_after(last_touch: dict[Key, int], number: int) -> Callable[[Key], bool]:
    """Whether a batch after batch `number` (-1: the steps before the first) touches a record again."""
    return lambda key: last_touch.get(key, -1) > number


def pending_for(old: NoteEntry | None, new: NoteContribution | None) -> Pending:
    """The writes that replacing `old` by `new` needs: new chunks, gone chunks, and every entity and relation
    whose fragments from this note differ (an unchanged record is not rewritten, nor re-embedded)."""
    old_chunks = set(old.chunk_ids) if old else set()
    new_chunks = {c.id for c in new.chunks} if new else set()
    pending = fragment_changes(old.entities if old else [], old.relations if old else [],
                               new.entities if new else [], new.relations if new else [])
    # chunk ids hash the text alone: a new title changes the headings stored with the same ids
    pending.chunk_notes = {new.path} if new and (new_chunks - old_chunks or old is None
                                                 or old.chunk_digest != chunks_digest(new)) else set()
    pending.delete_chunks = old_chunks - new_chunks
    return pending


async def apply_pending(writer: StoreWriter, ledger: Ledger, pending: Pending, plan: Plan, tokenizer: Any,
                 config: WikiragConfig, report: IndexReport,
                 computed: dict[str, NoteContribution] | None = None, *, summaries: Summaries | None = None,
                 later: Callable[[Key], bool] | None = None) -> None:
    """Make the store match the ledger for everything `pending` names, flush, then clear it.
    `computed` holds contributions this run already derived (recovery re-derives the rest). Records that
    now need an LLM summary join the to-do list the run's last step works through. `later` says which
    records a later batch of the run touches again: their vectors wait, owed in `pending`; the vectors owed
    from earlier batches that no later batch touches are written here (all of them without `later`)."""
    for path in sorted(pending.chunk_notes):
        if path not in plan.vault.notes or path not in ledger.notes:
            continue
        contribution = (computed or {}).get(path) or contribution_for(plan, path, tokenizer, config)
        await writer.upsert_chunks(path, contribution.doc_id, contribution.chunks)
        report.chunks_written += len(contribution.chunks)
    await writer.delete_chunks(sorted(pending.delete_chunks))
    report.chunks_deleted += len(pending.delete_chunks)

    def waits(key: Key) -> bool:
        return later is not None and later(key)

    # owed vectors of records no batch touched since: their graph is current, their vector is due now
    due_entities = sorted(n for n in pending.entity_vectors - pending.entities if not waits(n))
    due_relations = sorted(k for k in pending.relation_vectors - pending.relations if not waits(k))
    entity_index, relation_index = ledger.fragments_of(pending.entities | set(due_entities),
                                                       pending.relations | set(due_relations))
    relations, entities = sorted(pending.relations), sorted(pending.entities)
    gone_relations = [k for k in relations + due_relations if k not in relation_index]
    await writer.delete_relations(gone_relations)
    gone_entities = [n for n in entities + due_entities if n not in entity_index]
    await writer.delete_entities(gone_entities)
    live_entities = [merge_entity(n, entity_index[n]) for n in entities if n in entity_index]
    wait_entities = {r["entity_id"] for r in live_entities if waits(r["entity_id"])}
    await writer.upsert_entities(live_entities, defer_vectors=wait_entities)
    live_relations = [merge_relation(k, relation_index[k]) for k in relations if k in relation_index]
    wait_relations = {(r["src_id"], r["tgt_id"]) for r in live_relations if waits((r["src_id"], r["tgt_id"]))}
    await writer.upsert_relations(live_relations, defer_vectors=wait_relations)
    if due := [merge_entity(n, entity_index[n]) for n in due_entities if n in entity_index]:
        await writer.upsert_entity_vectors(due)
    if due := [merge_relation(k, relation_index[k]) for k in due_relations if k in relation_index]:
        await writer.upsert_relation_vectors(due)
    await writer.flush()
    report.entities_written += len(live_entities)
    report.entities_deleted += len(gone_entities)
    report.relations_written += len(live_relations)
    report.relations_deleted += len(gone_relations)
    note_derived(ledger, summaries, entities, relations)
    ledger.pending = Pending(  # cleared, but for the vectors still owed
        entity_vectors=pending.entity_vectors - pending.entities - set(due_entities) | wait_entities,
        relation_vectors=pending.relation_vectors - pending.relations - set(due_relations) | wait_relations)
    ledger.save()
