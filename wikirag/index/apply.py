"""Applying a plan to the store, batch by batch, write-ahead: save the ledger with `pending` (every record
the batch will rewrite), write chunks, re-derive each touched entity and relation from all notes'
fragments, flush LightRAG's stores, clear `pending`. A crash anywhere leaves `pending` for the next run
to redo. Extract-routed notes then go through LightRAG's extraction with their hint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wikirag.graph.contribution import note_contribution
from wikirag.graph.hygiene import EntityNames, HygieneLog
from wikirag.graph.merge import merge_entity, merge_relation
from wikirag.graph.records import NoteContribution
from wikirag.index.extract import extract_note, purge_cached_extractions
from wikirag.index.ledger import Ledger, NoteEntry, Pending, chunks_digest
from wikirag.index.manifest import drop_manifest
from wikirag.index.planning import Plan, entity_names_table, stable_digest
from wikirag.index.report import IndexReport, Progress
from wikirag.lightrag.hinting import HintingLLM, HintNotApplied
from wikirag.lightrag.tokens import lightrag_tokenizer
from wikirag.lightrag.writer import StoreWriter
from wikirag.settings import WikiragConfig


async def run_plan(writer: StoreWriter, ledger: Ledger, plan: Plan, config: WikiragConfig,
                    report: IndexReport, progress: Progress, hinting: HintingLLM | None,
                   should_stop: Callable[[], bool] | None = None) -> None:
    tokenizer = lightrag_tokenizer(config.index.encoding)
    drop_manifest(config.workspace_dir)  # the store is about to change (watch runs come here too)
    # Finish what a crashed run promised before anything new.
    if not ledger.pending.empty():
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report)
    for path in plan.deleted:
        ledger.pending.merge(pending_for(ledger.notes.pop(path), None))
    if plan.deleted:
        ledger.save()
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report)
    table = entity_names_table(plan.vault, plan.names, config.index.default_note_type) if hinting else None
    batch_size = max(1, config.index.batch_size)
    todo = plan.to_process
    done = 0
    for start in range(0, len(todo), batch_size):
        if should_stop is not None and should_stop():
            report.interrupted = True  # between batches the store and ledger agree: the rest waits
            break
        batch = todo[start : start + batch_size]
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
        await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report, contributions)
        # Phase 2: LLM extraction for extract-routed notes, on chunks now in the store.
        extract = [p for p in batch if ledger.notes[p].status == "extracting"]
        if extract and hinting and table is not None:
            pending = Pending()
            for path in extract:
                pending.merge(await extract_one(writer.rag, hinting, plan, path, contributions[path], ledger,
                                             table, report))
            ledger.pending.merge(pending)
            ledger.save()
            await apply_pending(writer, ledger, ledger.pending, plan, tokenizer, config, report)
        progress("index", min(start + batch_size, len(todo)), len(todo))
        done += len(batch)
    report.notes_indexed = done
    report.notes_injected = sum(1 for p in todo if plan.decisions[p].route == "inject")


async def extract_one(rag: Any, hinting: HintingLLM, plan: Plan, path: str, contribution: NoteContribution,
                   ledger: Ledger, table: EntityNames, report: IndexReport) -> Pending:
    """Extract one note; on LLM failure it keeps its structure and waits as pending_extraction."""
    entry = ledger.notes[path]
    hint = plan.hints[path]
    hint_digest = stable_digest([plan.llm_model, hint])
    if entry.hint_digest and entry.hint_digest != hint_digest:
        # LightRAG keys its cache on the prompt before our hint is inserted: a changed hint must not
        # be answered from the cache of the old one.
        await purge_cached_extractions(rag, entry.chunk_ids)
    log = HygieneLog()
    try:
        result = await extract_note(rag, hinting, path, contribution.doc_id, contribution.chunks, hint, table, log)
    except HintNotApplied:
        raise  # not this note's problem: every extraction would go out without its hint
    except Exception as exc:  # the LLM failed after its retries: the note waits, the run goes on
        entry.status, entry.error = "pending_extraction", f"{type(exc).__name__}: {exc}"[:300]
        report.issues.append(f"{path}: extraction failed, will retry: {entry.error}")
        report.llm_failures += 1
        return Pending()
    entry.entities = entry.entities + result.entities
    entry.relations = entry.relations + result.relations
    entry.status, entry.error = "indexed", None
    entry.hint_digest, entry.cache_keys = hint_digest, result.cache_keys
    report.notes_extracted += 1
    report.entity_merges += log.merges
    report.entities_dropped += log.dropped
    return Pending(
        entities={f.name for f in result.entities},
        relations={tuple(sorted((f.src, f.tgt))) for f in result.relations},
    )


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


def pending_for(old: NoteEntry | None, new: NoteContribution | None) -> Pending:
    """The writes that replacing `old` by `new` needs: every record either side touches."""
    old_chunks = set(old.chunk_ids) if old else set()
    new_chunks = {c.id for c in new.chunks} if new else set()
    entities = {f.name for f in (old.entities if old else [])} | {f.name for f in (new.entities if new else [])}
    relations = {tuple(sorted((f.src, f.tgt))) for f in (old.relations if old else [])}
    relations |= {tuple(sorted((f.src, f.tgt))) for f in (new.relations if new else [])}
    return Pending(
        # chunk ids hash the text alone: a new title changes the headings stored with the same ids
        chunk_notes={new.path} if new and (new_chunks - old_chunks or old is None
                                           or old.chunk_digest != chunks_digest(new)) else set(),
        delete_chunks=old_chunks - new_chunks,
        entities=entities,
        relations=relations,
    )


async def apply_pending(writer: StoreWriter, ledger: Ledger, pending: Pending, plan: Plan, tokenizer: Any,
                 config: WikiragConfig, report: IndexReport,
                 computed: dict[str, NoteContribution] | None = None) -> None:
    """Make the store match the ledger for everything `pending` names, flush, then clear it.
    `computed` holds contributions this run already derived (recovery re-derives the rest)."""
    for path in sorted(pending.chunk_notes):
        if path not in plan.vault.notes or path not in ledger.notes:
            continue
        contribution = (computed or {}).get(path) or contribution_for(plan, path, tokenizer, config)
        await writer.upsert_chunks(path, contribution.doc_id, contribution.chunks)
        report.chunks_written += len(contribution.chunks)
    await writer.delete_chunks(sorted(pending.delete_chunks))
    report.chunks_deleted += len(pending.delete_chunks)

    entity_index = ledger.entity_index()
    relation_index = ledger.relation_index()
    relations, entities = sorted(pending.relations), sorted(pending.entities)
    gone_relations = [k for k in relations if k not in relation_index]
    await writer.delete_relations(gone_relations)
    gone_entities = [n for n in entities if n not in entity_index]
    await writer.delete_entities(gone_entities)
    live_entities = [merge_entity(n, entity_index[n]) for n in entities if n in entity_index]
    await writer.upsert_entities(live_entities)
    live_relations = [merge_relation(k, relation_index[k]) for k in relations if k in relation_index]
    await writer.upsert_relations(live_relations)
    await writer.flush()
    report.entities_written += len(live_entities)
    report.entities_deleted += len(gone_entities)
    report.relations_written += len(live_relations)
    report.relations_deleted += len(gone_relations)
    ledger.pending = Pending()
    ledger.save()

