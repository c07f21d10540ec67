"""What indexing a vault will cost in LLM calls, tokens and dollars, computed from the vault alone.

Three scenarios, per note and in total:

- **vanilla**: stock LightRAG on every note file (its default chunking, 1200/100 tokens, its default gleaning).
- **wikirag**: the routed plan as the pipeline runs it. Injected notes cost no LLM tokens; extract-routed
  notes pay LightRAG's extraction step on wikirag's chunks (heading-aware, under the note title) plus the
  hint header in every chunk's prompt, only their uncovered sections under policy "prose", and short ones
  share one call per pack (plan/packing.py); gleaning as configured (off by default); wikirag merges the
  fragments itself and summarises each record whose descriptions reach LightRAG's triggers once per run
  (plan/summaries.py).
- **structure_only**: every note injected from its links; no LLM at all.

Input sizes come from rendering LightRAG's installed prompt templates (`prompt_sizes`) with the arguments
its `extract_entities` passes, so the estimate follows LightRAG when its prompts change. Calls follow
LightRAG 1.5: one extraction call per chunk, one gleaning call when gleaning is on and fits
`MAX_EXTRACT_INPUT_TOKENS`, identical prompts answered from LightRAG's LLM cache; for vanilla also
duplicate documents dropped and description-summary calls replayed merge by merge (`MergeModel`).
Output tokens and the entities an LLM will name are model-dependent: they come from documented,
configurable assumptions.
docs/cost-model.md has the formulas and where every default comes from.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from wikirag.lightrag.prompts import lightrag_content
from wikirag.lightrag.tokens import get_encoding
from wikirag.markdown.payloads import counted_body, mask_payloads
from wikirag.models import ParsedNote
from wikirag.plan.chunk_plans import ChunkPlanner, PlannedChunk
from wikirag.plan.cost_settings import CostSettings, prompt_sizes, stock_lightrag_price
from wikirag.plan.hints import hint_text_parts, hint_tokens
from wikirag.plan.memo import EstimateMemo
from wikirag.plan.mentions import sentence_names
from wikirag.plan.pack_costs import pack_costs as run_pack_costs
from wikirag.plan.packing import PackItem, extract_text
from wikirag.plan.prices import PriceTable
from wikirag.plan.results import Alternative, CostEstimate, FolderCost, NoteCost, ScenarioCost
from wikirag.plan.routing import Outgoing, RouteDecision, note_features
from wikirag.plan.scenarios import Scenario, price_cost, toggled_gleaning
from wikirag.plan.summaries import SummaryModel
from wikirag.vault.read import read_note_files

SCENARIOS = ("vanilla", "wikirag", "structure_only")


HintSource = Mapping[str, int] | Callable[[ParsedNote, Outgoing], int] | None


def estimate_vault(
    vault: Any,
    decisions: Mapping[str, RouteDecision],
    settings: CostSettings | None = None,
    *,
    texts: Mapping[str, str] | None = None,
    hints: HintSource = None,
    price_table: PriceTable | None = None,
    vanilla: bool = True,
    memo: EstimateMemo | None = None,
    member_shares: bool = True,
    gleaning_terms: ScenarioCost | None = None,
) -> CostEstimate:
    """Estimate all three scenarios for a vault (anything with `.notes` and `.outgoing(path)`).

    `decisions` come from `routing.route_vault`. `texts` are the raw note files for the vanilla scenario
    (default: read from the vault folder). `hints` gives each extract-routed note's hint-header tokens
    (a dict or a callable); default `hint_tokens`. Notes go in path order, as the pipeline inserts them.
    `memo` shares per-note chunk plans, sentence names and default hint counts between estimates of one vault.
    `member_shares=False` leaves packed notes' rows without their share of the pack (only the totals are read).
    `gleaning_terms` receives what gleaning adds to the wikirag scenario's totals (or would add: toggled_gleaning).
    """
    s = (settings or CostSettings()).resolved()
    table = price_table or PriceTable.load(s.prices_file)
    price = s.price(table)
    sizes = prompt_sizes(s)
    planner = ChunkPlanner(s, sizes)
    enc = planner.enc
    paths = sorted(vault.notes)
    raw = dict(texts) if texts is not None else (read_note_files(vault, paths) if vanilla else {})
    summary_model = SummaryModel(vault, s, sizes, enc, memo)
    counts = memo.token_counts(enc) if memo is not None else None
    runs = {
        "vanilla": Scenario(s, sizes, s.vanilla_gleaning, stock_lightrag_price(price), enc, lightrag_merges=True,
                            counts=counts),
        "wikirag": Scenario(s, sizes, s.gleaning, price, enc, lightrag_merges=False, summaries=summary_model,
                            counts=counts),
    }
    summary_model.notes([p for p in paths if p in decisions and decisions[p].route != "skip"])
    if memo is not None:  # the same in every pass
        titles, folder_of = memo.shared(("titles, folders", tuple(paths)), lambda: _titles_folders(vault, paths))
    else:
        titles, folder_of = _titles_folders(vault, paths)
    no_vanilla = ScenarioCost()  # every row's, when vanilla is not priced (read only)
    packable: dict[str, PackItem] = {}  # extract-routed notes (or sections) small enough to share a call
    routes = {"inject": 0, "extract": 0, "skip": 0}
    folders: dict[str, FolderCost] = {}
    rows: list[NoteCost] = []
    for path in paths:
        note = vault.notes[path]
        decision = decisions.get(path)
        if decision is None:
            raise ValueError(f"{path}: no routing decision")
        routes[decision.route] = routes.get(decision.route, 0) + 1
        body = lightrag_content(note.body)
        shown = mask_payloads(body)  # what wikirag chunks; vanilla reads `body`, a pasted image's base64 and all
        pasted = shown != body
        body_tokens = decision.features.body_tokens  # routing counted the stripped body, payloads cut
        if (body_tokens == 0 and body) or "&" in body:  # not counted, or HTML entities were unescaped
            body_tokens = len(enc.encode_ordinary(shown))
        plan = (memo.plan(planner, path, note.body, body_tokens, note.title) if memo is not None
                else planner.wikirag(note.body, body_tokens, note.title))
        body_names = ((memo.names(path, body) if memo is not None else sentence_names(body))
                      if len(plan) == 1 and not pasted else None)  # the names of the body both scenarios read
        if body_names is not None:
            plan[0].names = body_names

        vanilla_cost, duplicate = (_vanilla_cost(runs["vanilla"], planner, path, note, raw,
                                                 None if pasted else body_tokens, body_names)
                                   if vanilla else (no_vanilla, None))

        hint = 0
        pending_pack = False
        if decision.route == "extract":
            if s.hint and memo is not None and hints is None:
                hint = memo.hint(path, (s.default_note_type, s.encoding), lambda n=note, p=path: counts.concat(
                    hint_text_parts(n, vault.outgoing(p), vault.notes, s.default_note_type, titles)))
            elif s.hint:
                hint = _hint_for(hints, note, vault.outgoing(path), vault.notes, titles, s)
            text = extract_text(note.body, decision.sections)
            tokens = body_tokens if not decision.sections else len(enc.encode_ordinary(text))
            if 0 < tokens <= s.pack_max_tokens and text:
                packable[path] = PackItem(path, titles[path], text, tokens)
                pending_pack = True
                wikirag = ScenarioCost()
            elif decision.sections:
                wikirag = _sections_cost(runs["wikirag"], planner, note, decision.sections, hint, path)
            else:
                wikirag, _ = runs["wikirag"].document(path, body, plan, hint)
        else:
            wikirag = ScenarioCost(chunks=len(plan))
            if decision.route == "inject":
                wikirag.embedding_tokens = _inject_embedding(plan, decision, s)
        row = NoteCost(
            path=path, folder=folder_of[path], tokens=body_tokens, chunks=len(plan),
            route=decision.route, reason=decision.reason, hint_tokens=hint, llm_calls=wikirag.llm_calls,
            input_tokens=wikirag.input_tokens, output_tokens=wikirag.output_tokens, usd=wikirag.usd,
            wikirag=wikirag, vanilla=vanilla_cost, duplicate_of=duplicate,
        )
        rows.append(row)
        if pending_pack:
            row.wikirag.chunks = len(plan)
        f = folders.get(row.folder)
        if f is None:
            f = folders[row.folder] = FolderCost(row.folder)
        f.notes += 1
        f.tokens += body_tokens
        setattr(f, decision.route, getattr(f, decision.route) + 1)
        f.vanilla_usd += vanilla_cost.usd
        f.vanilla_input_tokens += vanilla_cost.input_tokens
    by_path = {row.path: row for row in rows}
    pack_costs = run_pack_costs(runs["wikirag"], packable, vault, titles, by_path, planner, s, memo, member_shares)
    for row in rows:
        f = folders[row.folder]
        f.wikirag_usd += row.wikirag.usd
        f.wikirag_input_tokens += row.wikirag.input_tokens

    totals = {name: ScenarioCost() for name in SCENARIOS}
    structure = totals["structure_only"]
    for cost in pack_costs:
        totals["wikirag"].add(cost)
    summaries = summary_model.cost()
    totals["wikirag"].add(summaries)  # once per record at the end of a run, not per note
    for row in rows:
        if row.vanilla.notes:
            totals["vanilla"].add(row.vanilla)
        if row.pack:  # its LLM cost is in its pack's
            totals["wikirag"].chunks += row.wikirag.chunks
        elif row.wikirag.notes:
            totals["wikirag"].add(row.wikirag)
        else:  # injected or skipped: only chunks and embeddings
            totals["wikirag"].chunks += row.wikirag.chunks
            totals["wikirag"].embedding_tokens += row.wikirag.embedding_tokens
        structure.chunks += row.chunks
        if row.route == "inject":
            structure.embedding_tokens += row.wikirag.embedding_tokens
        elif row.route == "extract":  # injected instead: its chunks (about its body) and link records
            structure.embedding_tokens += row.tokens + round(_inject_records(decisions[row.path])
                                                             * s.embed_record_tokens)
    for name, total in (*totals.items(), ("summaries", summaries)):
        price_cost(total, runs[name].price if name in runs else price)
    if gleaning_terms is not None:
        gleaning_terms.add(runs["wikirag"].gleaning_terms)
    assumptions = {k: getattr(s, k) for k in (
        "output_ratio", "record_tokens", "gleaning_output_ratio", "description_tokens", "embed_record_tokens",
        "chunk_token_size", "chunk_overlap_token_size", "vanilla_chunk_token_size",
        "vanilla_chunk_overlap_token_size", "gleaning", "vanilla_gleaning", "force_llm_summary_on_merge",
        "summary_max_tokens", "summary_context_size", "summary_length_recommended", "max_extract_input_tokens",
        "max_total_records", "max_entity_records", "language", "section_context", "hint", "pack_max_tokens")}
    return CostEstimate(
        vault=str(getattr(vault, "root", "")),
        model=s.model,
        price=price,
        prices_as_of=table.as_of,
        encoding=s.encoding,
        lightrag_version=sizes.lightrag_version,
        note_count=len(rows),
        scenarios=totals,
        routes=routes,
        notes=rows,
        folders=sorted(folders.values(), key=lambda f: f.folder),
        prompt_sizes=sizes,
        assumptions=assumptions,
        summaries=summaries,
    )


def _titles_folders(vault: Any, paths: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Each note's title (its name when it has none) and folder."""
    return ({p: n.title.strip() or n.name for p, n in vault.notes.items()},
            {path: posixpath.dirname(path) or "." for path in paths})


def _hint_for(hints: HintSource, note: ParsedNote, outgoing: Outgoing, notes: Mapping[str, ParsedNote],
              titles: Mapping[str, str], s: CostSettings) -> int:
    if hints is None:
        return hint_tokens(note, outgoing, notes, default_type=s.default_note_type, encoding=s.encoding,
                           titles=titles)
    if callable(hints):
        return int(hints(note, outgoing))
    return int(hints.get(note.path, 0))


def _vanilla_cost(run: Scenario, planner: ChunkPlanner, path: str, note: ParsedNote, raw: Mapping[str, str],
                  body_tokens: int | None, body_names: list[list[str]] | None) -> tuple[ScenarioCost, str | None]:
    """Stock LightRAG on the whole file. The body is counted already (None: not as LightRAG reads it, its
    payloads cut): count the frontmatter alone."""
    enc = planner.enc
    text = raw.get(path, note.body)
    content = lightrag_content(text)
    head = text[: len(text) - len(note.body)] if note.body and text.endswith(note.body) else None
    approx = (body_tokens + len(enc.encode_ordinary(head))) if head is not None and body_tokens is not None else (
        len(enc.encode_ordinary(content)))
    vanilla_plan = planner.vanilla(content, approx)
    if len(vanilla_plan) == 1 and head is not None and body_names is not None:
        vanilla_plan[0].names = sentence_names(head) + body_names
    return run.document(path, content, vanilla_plan, 0)


def _sections_cost(run: Scenario, planner: ChunkPlanner, note: ParsedNote, spans: list[tuple[int, int]],
                   hint: int, path: str) -> ScenarioCost:
    """Policy "prose": only the uncovered sections go to the LLM, chunked together as the pipeline does."""
    text = extract_text(note.body, spans)
    chunks = planner.wikirag(text, len(planner.enc.encode_ordinary(text)), note.title)
    cost, _ = run.document(path, text, chunks, hint)
    return cost


def _inject_records(decision: RouteDecision) -> int:
    """Vectors an injected note writes: its entity, one per distinct link target, one per relation."""
    f = decision.features
    return 1 + 2 * (f.distinct_targets + f.unresolved_links)


def _inject_embedding(plan: list[PlannedChunk], decision: RouteDecision, s: CostSettings) -> int:
    return sum(c.tokens for c in plan) + round(_inject_records(decision) * s.embed_record_tokens)


def estimate_note(
    note: ParsedNote,
    outgoing: Outgoing,
    decision: RouteDecision | None = None,
    settings: CostSettings | None = None,
    *,
    raw_text: str | None = None,
    hint: int | None = None,
) -> NoteCost:
    """One note on its own (summary calls only from merges within the note itself)."""
    from wikirag.plan.routing import route_note

    s = (settings or CostSettings()).resolved()
    if decision is None:
        enc = get_encoding(s.encoding)
        features = note_features(note, outgoing, len(enc.encode_ordinary(counted_body(note.body))))
        decision = route_note(note, outgoing, features=features)
    vault = _OneNote(note, outgoing)
    hints = None if hint is None else {note.path: hint}
    texts = {note.path: raw_text if raw_text is not None else note.body}
    return estimate_vault(vault, {note.path: decision}, s, texts=texts, hints=hints).notes[0]


class _OneNote:
    def __init__(self, note: ParsedNote, outgoing: Outgoing) -> None:
        self.notes = {note.path: note}
        self._outgoing = outgoing

    def outgoing(self, path: str) -> Outgoing:
        return list(self._outgoing)


def estimate_for_config(config: Any, values: Mapping[str, Any] | None = None, *, vault: Any = None,
                        body_tokens: Mapping[str, int] | None = None, figures: dict | None = None,
                        texts: Mapping[str, str] | None = None) -> CostEstimate:
    """Scan, route and estimate a configured vault: what `wikirag cost-estimate` runs. Reads only the
    vault; needs no store and no LLM. `values` are command-line overrides of [cost] keys. A caller that
    has the vault loaded (and its body token counts, routing's character figures) passes them (index.reads
    does, from the parse cache, with the raw files as read: `texts`)."""
    from wikirag.plan.routing import route_vault
    from wikirag.vault.model import Vault

    vault = vault or Vault.load(config.vault, exclude=config.exclude, store=config.store,
                                 templates=config.index.templates)
    figures = dict(figures or {})  # routing's per-note character figures: measured once for both policies
    memo = EstimateMemo()
    decisions = route_vault(vault, config.route, config.route_overrides, encoding=config.index.encoding,
                            body_tokens=body_tokens, figures=figures, features=memo.shared("route features", dict))
    settings = CostSettings.from_config(config, values)
    if body_tokens is not None and settings.encoding == config.index.encoding:  # packs sum their members' counts
        memo.token_counts(get_encoding(settings.encoding)).update(
            (counted_body(vault.notes[p].body), n) for p, n in body_tokens.items() if p in vault.notes)  # its text
    terms = ScenarioCost()
    estimate = estimate_vault(vault, decisions, settings, memo=memo, texts=texts, gleaning_terms=terms)
    estimate.alternatives = alternatives(vault, config, settings, decisions, body_tokens, figures, memo,
                                         (estimate, terms))
    estimate.files_skipped = [f"{i.path}: {i.message}" for i in getattr(vault, "issues", []) if i.skipped]
    return estimate


def alternatives(vault: Any, config: Any, settings: CostSettings, decisions: Mapping[str, RouteDecision],
                 body_tokens: Mapping[str, int] | None = None, figures: dict | None = None,
                 memo: EstimateMemo | None = None,
                 planned: tuple[CostEstimate, ScenarioCost] | None = None) -> list[Alternative]:
    """What the routed plan would cost one setting away: the other routing policy, and gleaning on or off.
    `planned` (the estimate of `decisions` under `settings` and its gleaning terms, from estimate_vault)
    spares pricing the vault again for gleaning."""
    from wikirag.plan.routing import POLICIES, route_vault

    out = []
    other = next(p for p in POLICIES if p != config.route.policy)
    routed = route_vault(vault, replace(config.route, policy=other), config.route_overrides,
                         encoding=config.index.encoding, body_tokens=body_tokens, figures=figures,
                         features=memo.shared("route features", dict) if memo is not None else None)
    est = estimate_vault(vault, routed, settings, vanilla=False, memo=memo, member_shares=False)
    out.append(Alternative(f'[route] policy = "{other}"', est.routes, est.scenarios["wikirag"]))
    gleaning = 0 if (settings.gleaning or 0) > 0 else 1
    if planned is not None:
        plan, terms = planned
        toggled = toggled_gleaning(plan.scenarios["wikirag"], terms, gleaning > 0, plan.price)
        out.append(Alternative(f"[index] gleaning = {gleaning}", dict(plan.routes), toggled))
    else:
        est = estimate_vault(vault, decisions, replace(settings, gleaning=gleaning), vanilla=False, memo=memo,
                             member_shares=False)
        out.append(Alternative(f"[index] gleaning = {gleaning}", est.routes, est.scenarios["wikirag"]))
    if settings.pack_max_tokens > 0:
        est = estimate_vault(vault, decisions, replace(settings, pack_max_tokens=0), vanilla=False, memo=memo,
                             member_shares=False)
        out.append(Alternative("[index] pack_max_tokens = 0", est.routes, est.scenarios["wikirag"]))
    return out
