"""Phase 2 of a batch: extraction units through LightRAG's extraction, answers attributed to their notes, the
ledger updated with each note's raw records and cleaned fragments; and the cheap re-clean when only the
vault's names changed. Returns the records to re-derive (only those whose fragments changed).
"""

from __future__ import annotations

import asyncio
from typing import Any

from wikirag.graph.hygiene import EntityNames, HygieneLog
from wikirag.graph.records import EntityFragment, NoteContribution, RelationFragment
from wikirag.index.extract import Extraction, Member, attribute, clean, raw_records
from wikirag.index.ledger import Ledger, NoteEntry, Pending
from wikirag.index.planning import Plan, stable_digest
from wikirag.index.report import IndexReport
from wikirag.index.units import Unit, UnitPlan, extract_text, member_chunks, note_units, pack_unit
from wikirag.lightrag.extraction import drop_cached, extract_inputs
from wikirag.lightrag.hinting import HintingLLM, HintNotApplied
from wikirag.plan.packing import member_block
from wikirag.settings import WikiragConfig


def fragment_changes(old_entities: list[EntityFragment], old_relations: list[RelationFragment],
                     new_entities: list[EntityFragment], new_relations: list[RelationFragment]) -> Pending:
    """Entities and relations whose fragments from one note differ: only these need re-deriving (a merged
    record depends on its fragments alone, so an unchanged set of fragments means an unchanged record)."""
    def by_key(fragments: list, key: Any) -> dict[Any, list[dict]]:
        out: dict[Any, list[dict]] = {}
        for f in fragments:
            out.setdefault(key(f), []).append(vars(f))
        return out

    def changed(a: dict, b: dict) -> set:
        return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}

    def entity_key(f: EntityFragment) -> str:
        return f.name

    def relation_key(f: RelationFragment) -> tuple[str, ...]:
        return tuple(sorted((f.src, f.tgt)))

    return Pending(entities=changed(by_key(old_entities, entity_key), by_key(new_entities, entity_key)),
                   relations=changed(by_key(old_relations, relation_key), by_key(new_relations, relation_key)))


def unit_payload(units: list[Unit], file_path: str) -> dict[str, dict[str, Any]]:
    """What LightRAG's extraction reads for these units (the live run and --batch's recording pass alike)."""
    return {u.key: {"content": u.content, "tokens": u.tokens, "chunk_order_index": u.order, "full_doc_id": u.key,
                    "file_path": file_path, **({"heading": u.heading} if u.heading else {})} for u in units}


def hint_digest(plan: Plan, units: list[Unit]) -> str:
    """What a note's cached extraction answers were asked with: the model and the hints."""
    return stable_digest([plan.llm_model, [u.hint for u in units]])


def member_context(plan: Plan, path: str, packed: bool) -> tuple[str, str]:
    """(text, hint) a note's records are grounded in: in a pack, its own block and its names (another
    member's hint must not ground this note's records); alone, its text and its hint."""
    note = plan.vault.notes[path]
    text = extract_text(note, plan.decisions[path].sections)
    if packed:
        return member_block(plan.names[path], text), " ".join([plan.names[path], note.title, *note.aliases])
    return text, plan.hints[path]


def _set_extraction(entry: NoteEntry, structure: tuple[list, list], result: Extraction) -> Pending:
    old_entities, old_relations = entry.entities, entry.relations
    entry.entities = list(structure[0]) + result.entities
    entry.relations = list(structure[1]) + result.relations
    entry.raw["split"] = [len(structure[0]), len(structure[1])]
    return fragment_changes(old_entities, old_relations, entry.entities, entry.relations)


def _structure(entry: NoteEntry, contribution: NoteContribution | None) -> tuple[list, list]:
    if contribution is not None:
        return contribution.entities, contribution.relations
    ne, nr = entry.raw.get("split", [len(entry.entities), len(entry.relations)])
    return entry.entities[:ne], entry.relations[:nr]


async def extract_batch(rag: Any, hinting: HintingLLM, plan: Plan, paths: list[str], units_plan: UnitPlan,
                        contributions: dict[str, NoteContribution], ledger: Ledger, table: EntityNames,
                        report: IndexReport, tokenizer: Any, config: WikiragConfig,
                        contribution_for: Any, done: Any = None) -> Pending:
    """Extract the units holding `paths`, all groups concurrently (a pack brings its other members along:
    their share is re-attributed from the pack's answer, which LightRAG's cache gives back when the pack did
    not change). `done(n)` is called as each group's notes finish (the progress line)."""
    pending = Pending()
    groups: dict[Any, None] = {}
    for path in paths:
        groups.setdefault(("pack", units_plan.pack_of[path]) if path in units_plan.pack_of else ("note", path))
    todo = set(paths)
    jobs = []
    for kind, ref in groups:
        if kind == "pack":
            pack = units_plan.packs[ref]
            units = [pack_unit(plan, pack, tokenizer, config.index.default_note_type)]
            members, packed = pack.paths, True
        else:
            contribution = contributions.get(ref) or contribution_for(ref)
            units, members, packed = note_units(plan, ref, contribution, tokenizer, config), [ref], False
        members = [m for m in members
                   if m in ledger.notes and (m in todo or ledger.notes.summary(m).status == "indexed")]
        jobs.append((units, members, packed))
    # Every group at once: the LLM client's semaphore holds the requests in flight to `[llm] concurrency`.
    # Each answer reaches LightRAG's cache (and wikirag's journal) as it arrives; the ledger is saved by
    # the caller after the whole batch, as before, so a crash mid-batch redoes the batch from the cache.
    def start(job: tuple[list[Unit], list[str], bool]) -> Any:
        units, members, packed = job
        return _extract_group(rag, hinting, plan, units, members, packed, contributions, ledger, table, report,
                              todo, contribution_for, done)

    # The first group alone: a run-stopping error (HintNotApplied: every prompt would lose its hint) surfaces
    # once, before the whole batch is in flight.
    results = [await start(jobs[0])] if jobs else []
    tasks = [asyncio.ensure_future(start(job)) for job in jobs[1:]]
    if tasks:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = next((t for t in tasks if t.done() and not t.cancelled() and t.exception()), None)
        if failed is not None:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            failed.result()
    for result in results:
        pending.merge(result)
    for task in tasks:
        pending.merge(task.result())
    return pending


async def _extract_group(rag: Any, hinting: HintingLLM, plan: Plan, units: list[Unit], members: list[str],
                         packed: bool, contributions: dict[str, NoteContribution], ledger: Ledger,
                         table: EntityNames, report: IndexReport, todo: set[str], contribution_for: Any,
                         done: Any = None) -> Pending:
    try:
        return await _extract_one(rag, hinting, plan, units, members, packed, contributions, ledger, table,
                                  report, todo, contribution_for)
    finally:
        if done is not None:
            done(sum(1 for m in members if m in todo))


async def _extract_one(rag: Any, hinting: HintingLLM, plan: Plan, units: list[Unit], members: list[str],
                       packed: bool, contributions: dict[str, NoteContribution], ledger: Ledger,
                       table: EntityNames, report: IndexReport, todo: set[str], contribution_for: Any) -> Pending:
    if not units or not members:
        for path in members:
            if path in todo:
                entry = ledger.notes[path]
                entry.status = "indexed"
                ledger.notes[path] = entry  # set again: saved as a row
        return Pending()
    if report.llm_unavailable:  # an earlier call found the LLM unusable: these notes wait without asking it
        _wait_for_llm(ledger, members, todo, report.llm_unavailable)
        return Pending()
    digest = hint_digest(plan, units)
    ledger.notes.load(members)  # one read for the pack's members, not one each
    stale = [k for m in members if ledger.notes[m].hint_digest and ledger.notes[m].hint_digest != digest
             for k in ledger.notes[m].cache_keys]
    # LightRAG keys its cache on the prompt before the hint is inserted: a changed hint must not be
    # answered from the cache of the old one.
    await drop_cached(rag, stale)
    payload = unit_payload(units, members[0])
    for u in units:
        hinting.hold(u.content, u.hint)
    try:
        results, keys = await extract_inputs(rag, payload)
    except HintNotApplied:
        raise  # not these notes' problem: every extraction would go out without its hint
    except Exception as exc:  # the LLM failed after its retries: the notes wait, the run goes on
        report.llm_failures += 1
        if report.stop_asking_the_llm(exc, "extraction"):  # every other call would fail alike: said once
            _wait_for_llm(ledger, members, todo, report.llm_unavailable)
            return Pending()
        error = f"{type(exc).__name__}: {exc}"[:300]
        for path in _wait_for_llm(ledger, members, todo, error):
            report.issues.append(f"{path}: extraction failed, will retry: {error}")
        return Pending()
    finally:
        for u in units:
            hinting.release(u.content)
    nodes, edges = raw_records(results)
    unit_keys = {u.key for u in units}
    cache_keys = sorted({k for u in units for k in keys.get(u.key, [])})
    pending = Pending()
    attributed: set[str] = set()
    for path in members:
        entry = ledger.notes[path]
        contribution = contributions.get(path) or contribution_for(path)
        text, hint = member_context(plan, path, packed)
        chunks = member_chunks(contribution, plan.decisions[path].sections)
        raw = attribute(nodes, edges, Member(path, text, hint, chunks), unit_keys, table, shared=packed)
        raw["packed"] = packed
        raw["pack"] = list(members) if packed else []  # who shared the call: a change re-extracts the pack
        attributed |= {r[0] for r in raw["entities"]}
        structure = (contribution.entities, contribution.relations)
        entry.raw = raw
        log = HygieneLog()
        pending.merge(_set_extraction(entry, structure, clean(raw, text, hint, table, path, log)))
        entry.status, entry.error = "indexed", None
        entry.hint_digest, entry.cache_keys = digest, cache_keys
        ledger.notes[path] = entry  # set again: saved as a row and its new fragments indexed
        if path in todo:
            report.notes_extracted += 1
            report.entity_merges += log.merges
            report.entities_dropped += log.dropped
    if packed:  # what no member of the pack grounds is dropped: say so once, for the pack
        where = f"{members[0]} (+{len(members) - 1} packed)"
        for name in sorted({r["name"] for r in nodes} - attributed):
            why = "LightRAG prompt example" if table.is_example(name) else "not found in the text"
            report.entities_dropped.append(f"{where}: {name!r} ({why})")
    return pending


def _wait_for_llm(ledger: Ledger, members: list[str], todo: set[str], error: str) -> list[str]:
    """This run's notes among `members` stay pending extraction, with the error that stopped it; returns them."""
    waiting = [path for path in members if path in todo]
    for path in waiting:
        entry = ledger.notes[path]
        entry.status, entry.error = "pending_extraction", error
        ledger.notes[path] = entry  # set again: saved as a row
    return waiting


def stale_packs(plan: Plan, ledger: Ledger, units_plan: UnitPlan) -> list[str]:
    """Indexed notes whose pack is not the one they were extracted in (a member was deleted, or left or
    joined it without being re-extracted): extracting them again keeps the store equal to a fresh index."""
    out = []
    for path in sorted(units_plan.items):
        entry = ledger.notes.get(path)
        if entry is None or entry.route != "extract" or entry.status != "indexed" or not entry.raw:
            continue
        now = units_plan.packs[units_plan.pack_of[path]].paths if path in units_plan.pack_of else []
        if entry.raw.get("pack", []) != now:
            out.append(path)
    return out


def reclean(plan: Plan, ledger: Ledger, table: EntityNames, paths: list[str]) -> Pending:
    """The vault's names changed: re-apply hygiene to these notes' kept raw records (no LLM call), and
    return the records whose fragments changed."""
    pending = Pending()
    ledger.notes.load(p for p in paths if (row := ledger.notes.summary(p)) is not None and row.status == "indexed")
    for path in paths:
        entry = ledger.notes.get(path)
        if entry is None or entry.route != "extract" or entry.status != "indexed" or not entry.raw:
            continue
        text, hint = member_context(plan, path, bool(entry.raw.get("packed")))
        structure = _structure(entry, None)
        pending.merge(_set_extraction(entry, structure, clean(entry.raw, text, hint, table, path, HygieneLog())))
        ledger.notes[path] = entry  # set again: saved as a row and re-indexed
    return pending
