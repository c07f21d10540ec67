"""The index pipeline: vault -> plan -> ledger (write-ahead) -> LightRAG storages -> ledger (done).

`run_index(config)` is the sync entry point the CLI calls; `index_vault` is its async body. A run:
1. scans and parses the vault and names every note's entity (inject.note_entity_names);
2. computes each note's *signature*: a hash of its bytes, its entity name and what each of its links
   resolves to. A note whose signature differs from the ledger's is re-derived; this is how a new note
   named X turns other notes' unresolved [[X]] into real edges without touching their files;
3. processes changed notes in batches: save the ledger with `pending` (what will be rewritten), write
   chunks, re-derive every touched entity and relation from all notes' fragments, flush LightRAG's
   stores, clear `pending`. A crash anywhere leaves `pending` for the next run to redo.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikirag.errors import StoreMismatch, VaultNotFound
from wikirag.graph.contribution import note_contribution, note_type
from wikirag.graph.hygiene import EntityNames, HygieneLog
from wikirag.graph.merge import merge_entity, merge_relation
from wikirag.graph.naming import attachment_name, note_entity_names, unresolved_name
from wikirag.graph.records import NoteContribution
from wikirag.index.extract import extract_note, purge_cached_extractions
from wikirag.index.ledger import Ledger, NoteEntry, Pending
from wikirag.index.manifest import drop_manifest, load_unchanged, save_manifest
from wikirag.index.parsecache import load_parse_cache, save_parse_cache
from wikirag.lightrag.embeddings import EmbeddingCounter
from wikirag.lightrag.engine import embedding_spec, open_engine
from wikirag.lightrag.hinting import HintingLLM
from wikirag.lightrag.prompts import prompt_example_names
from wikirag.lightrag.tokens import count_tokens, get_encoding, lightrag_tokenizer
from wikirag.lightrag.writer import StoreWriter
from wikirag.models import ParsedNote
from wikirag.plan.hints import note_hint
from wikirag.plan.routing import RouteDecision, route_vault
from wikirag.settings import WikiragConfig
from wikirag.storage.fs import wipe_store_files
from wikirag.storage.ledger_store import drop_workspace, ledger_store
from wikirag.storage.locks import writer_lock
from wikirag.vault.model import Vault, scan_vault

DERIVATION_VERSION = 1  # bump when note_contribution's output changes for the same input

Progress = Callable[[str, int, int], None]


@dataclass
class IndexReport:
    vault: str
    store: str
    workspace: str
    dry_run: bool = False
    notes_total: int = 0
    notes_new: int = 0
    notes_changed: int = 0  # includes notes whose links changed meaning
    notes_unchanged: int = 0
    notes_deleted: int = 0
    notes_indexed: int = 0
    notes_injected: int = 0
    notes_failed: int = 0
    notes_pending_extraction: int = 0
    notes_extracted: int = 0
    notes_skipped: int = 0
    llm_failures: int = 0
    budget_usd: float | None = None
    estimated_usd: float = 0.0  # list-price estimate of the extraction this run did (with --budget)
    notes_over_budget: int = 0  # extract-routed notes left pending because of --budget
    entities: int = 0
    relations: int = 0
    chunks: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    entities_written: int = 0
    entities_deleted: int = 0
    relations_written: int = 0
    relations_deleted: int = 0
    embedding_calls: int = 0
    embedding_texts: int = 0
    llm_calls: int = 0
    llm_input_tokens: int = 0
    llm_output_tokens: int = 0
    recovered_pending: bool = False
    entity_merges: list[str] = field(default_factory=list)  # LLM names merged into known entities
    entities_dropped: list[str] = field(default_factory=list)  # LLM entities not grounded in the text
    seconds: float = 0.0
    issues: list[str] = field(default_factory=list)


@dataclass
class Plan:
    """What a run will do, computed from the vault and the ledger alone (no LightRAG)."""

    vault: Vault
    names: dict[str, str]
    unresolved: dict[str, str]
    signatures: dict[str, str]
    decisions: dict[str, RouteDecision] = field(default_factory=dict)
    hints: dict[str, str] = field(default_factory=dict)  # extract-routed notes only
    llm_model: str = ""  # "" when no LLM is configured: extract-routed notes wait as pending
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    deferred: set[str] = field(default_factory=set)  # extract-routed notes left pending by --budget
    body_tokens: dict[str, int] = field(default_factory=dict)

    def extracting(self, path: str) -> bool:
        return bool(self.llm_model) and self.decisions[path].route == "extract" and path not in self.deferred

    @property
    def to_process(self) -> list[str]:
        return sorted(self.new + self.changed)


def _unresolved_names(vault: Vault, names: dict[str, str]) -> dict[str, str]:
    """Canonical entity name per casefolded unresolved target: a note entity with that name if one
    exists (the same thing, written before its note was), else the smallest spelling seen."""
    by_casefold = {name.casefold(): name for name in names.values()}
    spellings: dict[str, set[str]] = {}
    for path in vault.notes:
        for link, resolution in vault.outgoing(path):
            if resolution.status == "unresolved":
                name = unresolved_name(link)
                if name:
                    spellings.setdefault(name.casefold(), set()).add(name)
    return {key: by_casefold.get(key, min(values)) for key, values in spellings.items()}


def _signature(vault: Vault, path: str, names: dict[str, str], unresolved: dict[str, str],
               config: WikiragConfig, extraction: list[str]) -> str:
    """A hash of everything the note's records derive from; `extraction` is [] for injected notes."""
    targets = []
    for link, resolution in vault.outgoing(path):
        if resolution.path and resolution.is_attachment:
            targets.append("a:" + attachment_name(resolution.path))
        elif resolution.path:
            targets.append("n:" + names[resolution.path])
        else:
            targets.append("u:" + unresolved.get(unresolved_name(link).casefold(), ""))
    payload = [
        DERIVATION_VERSION,
        vault.digests[path],
        names[path],
        config.index.chunk_token_size,
        config.index.chunk_overlap_token_size,
        config.index.encoding,
        config.index.default_note_type,
        targets,
        extraction,
    ]
    return _digest(payload)


def _digest(payload: Any) -> str:
    return hashlib.sha1(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def entity_names_table(vault: Vault, names: dict[str, str], default_type: str) -> EntityNames:
    """Every note entity with its type and aliases: what LLM-extracted names are matched against."""
    table = EntityNames(examples=prompt_example_names())
    for path in sorted(vault.notes):
        note = vault.notes[path]
        table.add(names[path], note_type(note, default_type), [note.title, *note.aliases])
    return table


def plan_index(config: WikiragConfig, ledger: Ledger, vault: Vault | None = None,
               cache: dict[str, tuple[str, ParsedNote, int]] | None = None) -> Plan:
    """What a run will do. `cache` (parsecache) spares re-parsing and re-counting unchanged notes."""
    cache = cache or {}
    vault = vault or Vault.load(config.vault, exclude=config.exclude,
                                parsed={p: (d, n) for p, (d, n, _) in cache.items()})
    encoder = get_encoding(config.index.encoding)
    body_tokens = {  # counted as routing counts them
        p: cached[2] if (cached := cache.get(p)) and cached[0] == vault.digests[p]
        else len(encoder.encode_ordinary(note.body.strip()))
        for p, note in vault.notes.items()
    }
    names = note_entity_names(vault.notes)
    unresolved = _unresolved_names(vault, names)
    decisions = route_vault(vault, config.route, config.route_overrides, encoding=config.index.encoding,
                            body_tokens=body_tokens)
    plan = Plan(vault, names, unresolved, {}, decisions, llm_model=config.llm.model, body_tokens=body_tokens)
    default_type = config.index.default_note_type
    table_digest = ""
    for path in sorted(vault.notes):
        decision = decisions[path]
        if decision.route == "skip":
            plan.skipped.append(path)
            continue
        extraction: list[str] = []
        if decision.route == "extract":
            if plan.llm_model:  # the hint matters (and costs time to build) only when an LLM will read it
                note = vault.notes[path]
                plan.hints[path] = note_hint(note, vault.outgoing(path), names, vault.notes,
                                             note_type(note, default_type))
                if not table_digest:  # hygiene depends on every note's names and types
                    table_digest = _digest(sorted(
                        (names[p], note_type(n, default_type), sorted(n.aliases)) for p, n in vault.notes.items()))
                extraction = [plan.llm_model, config.index.gleaning, _digest(plan.hints[path]), table_digest]
            else:
                extraction = ["pending"]
        plan.signatures[path] = _signature(vault, path, names, unresolved, config, extraction)
    for path, signature in sorted(plan.signatures.items()):
        entry = ledger.notes.get(path)
        if entry is None:
            plan.new.append(path)
        elif entry.signature != signature or entry.status == "extracting" or (
            entry.status == "pending_extraction" and plan.extracting(path)
        ):
            plan.changed.append(path)
        else:
            plan.unchanged.append(path)
    plan.deleted = sorted(set(ledger.notes) - set(plan.signatures))
    return plan


def _store_meta(config: WikiragConfig) -> dict[str, Any]:
    return {"embedding": embedding_spec(config).identity, "workspace": config.workspace}


def _check_store(ledger: Ledger, config: WikiragConfig) -> None:
    recorded = ledger.meta.get("embedding")
    current = embedding_spec(config).identity
    if recorded and recorded != current:
        raise StoreMismatch(
            f"{config.workspace_dir}: built with embedding {recorded}, this run uses {current}; "
            "run `wikirag index --rebuild` to re-embed, or use another --store"
        )


def StoreLock(config: WikiragConfig):  # noqa: N802  (was a class; callers use it as one)
    """One writer per store workspace: a second `index` (or `watch`) gets a clear message. A file lock in
    the workspace folder, or a PostgreSQL advisory lock when the index lives there (storage.writer_lock)."""
    return writer_lock(config.storage, config.workspace_dir, config.workspace)


def open_ledger_store(config: WikiragConfig):
    """Where this workspace's ledger lives: beside the data (storage.ledger_store)."""
    return ledger_store(config.storage, config.workspace_dir, config.workspace)


def run_index(config: WikiragConfig, *, dry_run: bool = False, rebuild: bool = False,
              progress: Progress | None = None, **kwargs: Any) -> IndexReport:
    """Index the vault into its store (sync wrapper for the CLI; keywords as `index_vault`)."""
    return asyncio.run(index_vault(config, dry_run=dry_run, rebuild=rebuild, progress=progress, **kwargs))


async def index_vault(config: WikiragConfig, *, dry_run: bool = False, rebuild: bool = False,
                      progress: Progress | None = None, vault: Vault | None = None, rag: Any = None,
                      hinting: HintingLLM | None = None, llm_func: Callable[..., Any] | None = None,
                      budget_usd: float | None = None, locked: bool = False,
                      **engine_kwargs: Any) -> IndexReport:
    """Bring the store in step with the vault.

    `watch` passes its in-memory `vault` (kept current file by file), an open `rag` with its `hinting`
    LLM wrapper and `locked=True` (it holds the writer lock for its whole session); `wikirag index`
    passes none of them. `llm_func` replaces the configured provider (tests pass a fake LLM).
    """
    started = time.perf_counter()
    if not config.vault.is_dir():
        raise VaultNotFound(f"{config.vault}: no such vault folder")
    report = IndexReport(str(config.vault), str(config.store), config.workspace, dry_run=dry_run)
    progress = progress or (lambda stage, done, total: None)

    if dry_run:
        ledger = Ledger.load(open_ledger_store(config)) if not rebuild else Ledger()
        _fill_plan_counts(report, plan_index(config, ledger, vault), ledger)
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    _check_settings(config, llm_func or hinting)
    async with contextlib.AsyncExitStack() as stack:
        if not locked:
            stack.enter_context(StoreLock(config))
        if rebuild:
            _wipe_workspace(config)
        progress("scan", 0, 1)
        scan = None
        if vault is None:  # `wikirag index`: first ask whether anything can have changed at all
            scan = scan_vault(config.vault, config.exclude)
            unchanged = load_unchanged(config.workspace_dir, _config_key(config), scan)
            if unchanged is not None:
                for name, value in unchanged.items():
                    setattr(report, name, value)
                report.notes_unchanged = report.notes_total - report.notes_skipped
                report.seconds = round(time.perf_counter() - started, 3)
                return report
            drop_manifest(config.workspace_dir)
        ledger = Ledger.load(open_ledger_store(config))
        _check_store(ledger, config)
        cache = load_parse_cache(config.workspace_dir, config.index.encoding) if vault is None else {}
        plan = plan_index(config, ledger, vault, cache)
        if vault is None and {p: c[0] for p, c in cache.items()} != plan.vault.digests:
            save_parse_cache(config.workspace_dir, config.index.encoding, plan.vault.notes, plan.vault.digests,
                             plan.body_tokens)
        progress("scan", 1, 1)
        _fill_plan_counts(report, plan, ledger)
        if budget_usd is not None and plan.llm_model:
            _apply_budget(plan, config, budget_usd, report)
        report.recovered_pending = not ledger.pending.empty()
        if not plan.to_process and not plan.deleted and ledger.pending.empty():
            _fill_totals(report, ledger)
            _remember_clean_run(config, scan, plan, report)
            report.seconds = round(time.perf_counter() - started, 3)
            return report

        ledger.meta = _store_meta(config)
        counter = engine_kwargs.pop("embedding_counter", None) or EmbeddingCounter()
        calls_before, texts_before = counter.calls, counter.texts
        if rag is None:
            hinting = hinting_llm(config, llm_func)
            rag = await stack.enter_async_context(open_engine(
                config, embedding_counter=counter, llm_func=hinting, **engine_kwargs))
        usage_before = _usage(hinting)
        await _run_plan(StoreWriter(rag), ledger, plan, config, report, progress, hinting)
        usage_after = _usage(hinting)
        report.llm_calls, report.llm_input_tokens, report.llm_output_tokens = (
            a - b for a, b in zip(usage_after, usage_before, strict=True))
        report.embedding_calls = counter.calls - calls_before
        report.embedding_texts = counter.texts - texts_before
        _fill_totals(report, ledger)
        if ledger.pending.empty():
            _remember_clean_run(config, scan, plan, report)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


_MANIFEST_FIELDS = ("notes_total", "notes_skipped", "notes_failed", "notes_pending_extraction", "entities",
                    "relations", "chunks", "issues")


def _config_key(config: WikiragConfig) -> str:
    """Everything besides the files that decides what an index holds."""
    return _digest([DERIVATION_VERSION, vars(config.index), vars(config.route), config.route_overrides,
                    config.llm.model, embedding_spec(config).identity, config.exclude])


def _remember_clean_run(config: WikiragConfig, scan: Any, plan: Plan, report: IndexReport) -> None:
    """Record the files' stat data after a run that left nothing to do (not when an LLM is configured
    and notes still wait for extraction: the next run has work)."""
    if scan is None or (plan.llm_model and report.notes_pending_extraction):
        return
    save_manifest(config.workspace_dir, _config_key(config), scan,
                  {name: getattr(report, name) for name in _MANIFEST_FIELDS})


def _apply_budget(plan: Plan, config: WikiragConfig, budget_usd: float, report: IndexReport) -> None:
    """Extract notes in path order while their estimated cost fits the budget; the rest stay pending
    (indexed from their links) for a later run. Estimates are at list price, ignoring cache hits."""
    from wikirag.plan.cost import CostSettings, estimate_vault

    candidates = [p for p in plan.to_process if plan.extracting(p)]
    if not candidates:
        return
    subset = _Subset(plan.vault, candidates)
    estimate = estimate_vault(subset, {p: plan.decisions[p] for p in candidates}, CostSettings.from_config(config),
                              hints={p: count_tokens(plan.hints[p], config.index.encoding) for p in candidates})
    spent = 0.0
    for cost in sorted(estimate.notes, key=lambda c: c.path):
        if spent + cost.usd > budget_usd:
            plan.deferred.add(cost.path)
        else:
            spent += cost.usd
    report.budget_usd, report.estimated_usd = budget_usd, round(spent, 6)
    report.notes_over_budget = len(plan.deferred)


class _Subset:
    """The part of a vault the budget prices: these notes, with the whole vault's link resolution."""

    def __init__(self, vault: Vault, paths: list[str]) -> None:
        self.root = vault.root
        self.notes = {p: vault.notes[p] for p in paths}
        self._vault = vault

    def outgoing(self, path: str) -> list:
        return self._vault.outgoing(path)

    def abs_path(self, path: str) -> Path:
        return self._vault.abs_path(path)


def hinting_llm(config: WikiragConfig, llm_func: Callable[..., Any] | None = None) -> HintingLLM | None:
    """The LLM LightRAG extracts with, wrapped to show each chunk its note's hint; None without one.
    Token usage is what the provider reports (llm.LLMUsage), kept on the wrapper as `usage`."""
    if llm_func is None and config.llm.model:
        from wikirag.llm.client import make_llm_func
        from wikirag.llm.usage import LLMUsage

        usage = LLMUsage()
        hinting = HintingLLM(make_llm_func(config.llm, usage))
        hinting.usage = usage
        return hinting
    return HintingLLM(llm_func) if llm_func is not None else None


def _usage(hinting: HintingLLM | None) -> tuple[int, int, int]:
    if hinting is None:
        return 0, 0, 0
    usage = hinting.usage
    if usage is None:  # a caller-supplied function without usage accounting: count calls only
        return hinting.calls, 0, 0
    return usage.calls, usage.input_tokens, usage.output_tokens


def _check_settings(config: WikiragConfig, llm_func: Callable[..., Any] | None) -> None:
    """Fail on a bad embedding or LLM setting before anything is written or deleted."""
    embedding_spec(config)
    if config.llm.model and llm_func is None:
        from wikirag.llm.spec import parse_llm_spec

        parse_llm_spec(config.llm.model)


def _wipe_workspace(config: WikiragConfig) -> None:
    """`--rebuild`: drop this workspace's rows (servers) and wikirag's and LightRAG's files, by name only."""
    if config.storage.uses_postgres:
        drop_workspace(config.storage, config.workspace)  # every LightRAG and ledger row of this workspace
    wipe_store_files(config.workspace_dir)


async def _run_plan(writer: StoreWriter, ledger: Ledger, plan: Plan, config: WikiragConfig,
                    report: IndexReport, progress: Progress, hinting: HintingLLM | None) -> None:
    tokenizer = lightrag_tokenizer(config.index.encoding)
    drop_manifest(config.workspace_dir)  # the store is about to change (watch runs come here too)
    # Finish what a crashed run promised before anything new.
    if not ledger.pending.empty():
        await _apply(writer, ledger, ledger.pending, plan, tokenizer, config, report)
    for path in plan.deleted:
        ledger.pending.merge(_pending_for(ledger.notes.pop(path), None))
    if plan.deleted:
        ledger.save()
        await _apply(writer, ledger, ledger.pending, plan, tokenizer, config, report)
    table = entity_names_table(plan.vault, plan.names, config.index.default_note_type) if hinting else None
    batch_size = max(1, config.index.batch_size)
    todo = plan.to_process
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        # Phase 1: structure (chunks, note entity, link relations) for every note of the batch.
        pending = Pending()
        contributions: dict[str, NoteContribution] = {}
        for path in batch:
            contribution = _contribution(plan, path, tokenizer, config)
            contributions[path] = contribution
            old = ledger.notes.get(path)
            pending.merge(_pending_for(old, contribution))
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
        await _apply(writer, ledger, ledger.pending, plan, tokenizer, config, report, contributions)
        # Phase 2: LLM extraction for extract-routed notes, on chunks now in the store.
        extract = [p for p in batch if ledger.notes[p].status == "extracting"]
        if extract and hinting and table is not None:
            pending = Pending()
            for path in extract:
                pending.merge(await _extract(writer.rag, hinting, plan, path, contributions[path], ledger,
                                             table, report))
            ledger.pending.merge(pending)
            ledger.save()
            await _apply(writer, ledger, ledger.pending, plan, tokenizer, config, report)
        progress("index", min(start + batch_size, len(todo)), len(todo))
    report.notes_indexed = len(todo)
    report.notes_injected = sum(1 for p in todo if plan.decisions[p].route == "inject")


async def _extract(rag: Any, hinting: HintingLLM, plan: Plan, path: str, contribution: NoteContribution,
                   ledger: Ledger, table: EntityNames, report: IndexReport) -> Pending:
    """Extract one note; on LLM failure it keeps its structure and waits as pending_extraction."""
    entry = ledger.notes[path]
    hint = plan.hints[path]
    hint_digest = _digest([plan.llm_model, hint])
    if entry.hint_digest and entry.hint_digest != hint_digest:
        # LightRAG keys its cache on the prompt before our hint is inserted: a changed hint must not
        # be answered from the cache of the old one.
        await purge_cached_extractions(rag, entry.chunk_ids)
    log = HygieneLog()
    try:
        result = await extract_note(rag, hinting, path, contribution.doc_id, contribution.chunks, hint, table, log)
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


def _contribution(plan: Plan, path: str, tokenizer: Any, config: WikiragConfig) -> NoteContribution:
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


def _pending_for(old: NoteEntry | None, new: NoteContribution | None) -> Pending:
    """The writes that replacing `old` by `new` needs: every record either side touches."""
    old_chunks = set(old.chunk_ids) if old else set()
    new_chunks = {c.id for c in new.chunks} if new else set()
    entities = {f.name for f in (old.entities if old else [])} | {f.name for f in (new.entities if new else [])}
    relations = {tuple(sorted((f.src, f.tgt))) for f in (old.relations if old else [])}
    relations |= {tuple(sorted((f.src, f.tgt))) for f in (new.relations if new else [])}
    return Pending(
        chunk_notes={new.path} if new and (new_chunks - old_chunks) else set(),
        delete_chunks=old_chunks - new_chunks,
        entities=entities,
        relations=relations,
    )


async def _apply(writer: StoreWriter, ledger: Ledger, pending: Pending, plan: Plan, tokenizer: Any,
                 config: WikiragConfig, report: IndexReport,
                 computed: dict[str, NoteContribution] | None = None) -> None:
    """Make the store match the ledger for everything `pending` names, flush, then clear it.
    `computed` holds contributions this run already derived (recovery re-derives the rest)."""
    for path in sorted(pending.chunk_notes):
        if path not in plan.vault.notes or path not in ledger.notes:
            continue
        contribution = (computed or {}).get(path) or _contribution(plan, path, tokenizer, config)
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


def _fill_plan_counts(report: IndexReport, plan: Plan, ledger: Ledger) -> None:
    report.notes_total = len(plan.vault.notes)
    report.notes_new = len(plan.new)
    report.notes_changed = len(plan.changed)
    report.notes_unchanged = len(plan.unchanged)
    report.notes_deleted = len(plan.deleted)
    report.issues = [f"{i.path}: {i.message}" for i in plan.vault.issues] + [
        f"{path}: {note.frontmatter_error}" for path, note in sorted(plan.vault.notes.items())
        if note.frontmatter_error
    ]
    report.notes_failed = sum(1 for i in plan.vault.issues if i.skipped and i.path.lower().endswith(".md"))
    report.notes_skipped = len(plan.skipped)


def _fill_totals(report: IndexReport, ledger: Ledger) -> None:
    report.notes_pending_extraction = sum(1 for e in ledger.notes.values() if e.status == "pending_extraction")
    report.entities = len(ledger.entity_index())
    report.relations = len(ledger.relation_index())
    report.chunks = sum(len(e.chunk_ids) for e in ledger.notes.values())


def store_exists(config: WikiragConfig) -> bool:
    return open_ledger_store(config).exists()

