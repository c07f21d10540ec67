"""What indexing a vault will cost in LLM calls, tokens and dollars, computed from the vault alone.

Three scenarios, per note and in total:

- **vanilla**: stock LightRAG on every note file (its default chunking, 1200/100 tokens, its default gleaning).
- **wikirag**: the routed plan as pipeline.py runs it. Injected notes cost no LLM tokens; extract-routed
  notes pay LightRAG's extraction step on wikirag's chunks (600/60, heading-aware, under the note title)
  plus the hint header in every chunk's prompt; wikirag merges the fragments itself (no summary calls).
- **structure_only**: every note injected from its links; no LLM at all.

Input sizes come from rendering LightRAG's installed prompt templates (`prompt_sizes`) with the arguments
its `extract_entities` passes, so the estimate follows LightRAG when its prompts change. Calls follow
LightRAG 1.5: one extraction call per chunk, one gleaning call when gleaning is on and fits
`MAX_EXTRACT_INPUT_TOKENS`, identical prompts answered from LightRAG's LLM cache; for vanilla also
duplicate documents dropped and description-summary calls replayed merge by merge (`_MergeModel`).
Output tokens and the entities an LLM will name are model-dependent: they come from documented,
configurable assumptions.
docs/cost-model.md has the formulas and where every default comes from.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wikirag.errors import ConfigError
from wikirag.graph.contribution import note_type
from wikirag.lightrag.prompts import (
    PromptSizes,
    _first_heading,
    breadcrumb,
    lightrag_content,
    lightrag_defaults,
    render_prompts,
)
from wikirag.lightrag.prompts import prompt_sizes as lightrag_prompt_sizes
from wikirag.lightrag.tokens import DEFAULT_ENCODING, get_encoding
from wikirag.markdown.chunking import chunk_text, heading_path
from wikirag.models import ParsedNote
from wikirag.plan.hints import note_hint
from wikirag.plan.mentions import cap_mentions, sentence_names
from wikirag.plan.merges import _MergeModel
from wikirag.plan.prices import ModelPrice, PriceTable
from wikirag.plan.results import CostEstimate, FolderCost, NoteCost, ScenarioCost
from wikirag.plan.routing import Outgoing, RouteDecision, note_features
from wikirag.settings import IndexSettings, settings_from_mapping
from wikirag.vault.model import read_note_files

SCENARIOS = ("vanilla", "wikirag", "structure_only")


@dataclass
class CostSettings:
    # The model to price, as in the price table or "provider:model"; LightRAG's own default is gpt-4o-mini.
    model: str = "gpt-4o-mini"
    prices_file: str | None = None  # a user price table merged over the shipped one
    price_in: float | None = None  # USD per 1M input tokens, overriding the table
    price_out: float | None = None
    price_cached_in: float | None = None
    # The tokenizer LightRAG chunks and counts with (wikirag passes IndexSettings.encoding).
    encoding: str = DEFAULT_ENCODING
    # wikirag's chunking (IndexSettings) and whether chunks carry LightRAG's `---Section Context---` block.
    chunk_token_size: int = IndexSettings.chunk_token_size
    chunk_overlap_token_size: int = IndexSettings.chunk_overlap_token_size
    section_context: bool = True
    default_note_type: str = "note"  # IndexSettings.default_note_type: the hint names the note's type
    # What a vanilla LightRAG user runs: LightRAG's default fixed-token chunking.
    vanilla_chunk_token_size: int = 1200
    vanilla_chunk_overlap_token_size: int = 100
    # LightRAG's extraction knobs; None means "LightRAG's installed default" (lightrag.constants).
    gleaning: int | None = None
    vanilla_gleaning: int | None = None
    force_llm_summary_on_merge: int | None = None
    summary_max_tokens: int | None = None
    summary_context_size: int | None = None
    summary_length_recommended: int | None = None
    max_extract_input_tokens: int | None = None
    max_total_records: int | None = None
    max_entity_records: int | None = None
    max_source_ids_per_entity: int | None = None
    max_source_ids_per_relation: int | None = None
    language: str | None = None
    # Output assumptions (docs/cost-model.md says where each comes from).
    output_ratio: float = 2.38  # extraction output tokens per chunk token: LightRAG's worked examples
    record_tokens: float = 44.0  # tokens per output record (entity or relation line), same source
    gleaning_output_ratio: float = 0.25  # gleaning output as a share of the first answer: assumption
    description_tokens: float = 19.0  # tokens per extracted description, LightRAG's worked examples
    embed_record_tokens: float = 30.0  # tokens embedded per entity/relation vector (name + description)
    hint: bool = True  # extract-routed notes carry the hint header in every chunk

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> CostSettings:
        """Settings from the `[cost]` table of wikirag.toml; unknown keys are a ConfigError."""
        return settings_from_mapping(cls, values or {}, "cost")

    @classmethod
    def from_config(cls, config: Any, values: Mapping[str, Any] | None = None) -> CostSettings:
        """Chunking, tokenizer and note type from the config's [index], the model from [llm], then the
        config's [cost] table, then `values` (command-line flags). A relative `prices_file` is taken from
        the vault folder."""
        merged = {**(getattr(config, "sections", {}) or {}).get("cost", {}), **(values or {})}
        base = cls.from_mapping(merged)
        changes: dict[str, Any] = {
            "chunk_token_size": config.index.chunk_token_size,
            "chunk_overlap_token_size": config.index.chunk_overlap_token_size,
            "encoding": config.index.encoding,
            "default_note_type": config.index.default_note_type,
        }
        if "gleaning" not in merged:  # the pipeline's own setting, unless [cost] asks "what if"
            changes["gleaning"] = config.index.gleaning
        if config.llm.model and "model" not in merged:
            changes["model"] = config.llm.model
        if base.prices_file and not Path(base.prices_file).is_absolute():
            changes["prices_file"] = str(Path(config.vault) / base.prices_file)
        return replace(base, **changes)

    def resolved(self) -> CostSettings:
        """A copy with every None filled from LightRAG's installed defaults."""
        defaults = lightrag_defaults()
        changes = {k: v for k, v in defaults.items() if getattr(self, k) is None}
        if self.vanilla_gleaning is None:
            changes["vanilla_gleaning"] = defaults["gleaning"]
        return replace(self, **changes)

    def price(self, table: PriceTable | None = None) -> ModelPrice:
        """The model's price, with --price-in/--price-out applied (enough on their own for any model)."""
        if self.price_in is not None and self.price_out is not None:
            try:
                base = (table or PriceTable.load(self.prices_file)).get(self.model)
            except ConfigError:
                base = ModelPrice(self.model, cached_input=None)
        else:
            base = (table or PriceTable.load(self.prices_file)).get(self.model)
        changes: dict[str, Any] = {}
        if self.price_in is not None:
            changes["input"] = self.price_in
        if self.price_out is not None:
            changes["output"] = self.price_out
        if self.price_cached_in is not None:
            changes["cached_input"] = self.price_cached_in
        if changes:
            changes["source"] = "command line"
        return replace(base, **changes)


def hint_text(note: ParsedNote, outgoing: Outgoing, notes: Mapping[str, ParsedNote] | None = None,
              default_type: str = "note", titles: Mapping[str, str] | None = None) -> str:
    """The hint header the pipeline shows the LLM with every chunk of an extract-routed note
    (`hints.note_hint`). Entity names are the notes' titles: the pipeline's `note_entity_names` also
    qualifies colliding titles by folder, a few tokens the estimate does without (it costs ~0.1 ms a
    note, against a second for a large vault)."""
    notes = notes if notes is not None else {note.path: note}
    outgoing = [(link, r) for link, r in outgoing if not r.path or r.is_attachment or r.path in notes]
    names: dict[str, str] = {}
    for path in [note.path, *(r.path for _, r in outgoing if r.path and not r.is_attachment)]:
        if path not in names:
            known = titles.get(path) if titles is not None else None
            names[path] = known or notes[path].title.strip() or notes[path].name
    return note_hint(note, outgoing, names, notes, note_type(note, default_type))  # type: ignore[arg-type]


def hint_tokens(note: ParsedNote, outgoing: Outgoing, notes: Mapping[str, ParsedNote] | None = None, *,
                default_type: str = "note", encoding: str = DEFAULT_ENCODING,
                titles: Mapping[str, str] | None = None) -> int:
    """Tokens of the hint header for one note (`hint_text`)."""
    return len(get_encoding(encoding).encode_ordinary(hint_text(note, outgoing, notes, default_type, titles)))


HintSource = Mapping[str, int] | Callable[[ParsedNote, Outgoing], int] | None


@dataclass
class _Chunk:
    text: str
    tokens: int
    breadcrumb: str = ""  # LightRAG's section path for the chunk ("" when it has no heading)
    names: list[list[str]] | None = None  # sentence_names(text), when already known


class _Encoder:
    """encode/decode as wikirag's LightRAG tokenizer does (special-token text encoded as plain text), without
    importing lightrag.utils (half a second) just to wrap tiktoken."""

    def __init__(self, enc: Any) -> None:
        self.encode, self.decode = enc.encode_ordinary, enc.decode


class _Planner:
    """Cuts documents into chunks the way each scenario's LightRAG will, counting tokens only once where
    it can: a document well inside one chunk is one chunk without running the chunker."""

    def __init__(self, s: CostSettings, sizes: PromptSizes) -> None:
        self.s, self.sizes = s, sizes
        self.enc = get_encoding(s.encoding)
        self.tokenizer = _Encoder(self.enc)

    def crumb(self, headings: list[str]) -> str:
        if not self.s.section_context or not headings:
            return ""
        return breadcrumb(headings, self.sizes.max_section_tokens, self.tokenizer)

    def wikirag(self, body: str, approx_tokens: int, title: str = "") -> list[_Chunk]:
        """wikirag's chunks (`inject.note_contribution`: chunk_text on the body, each chunk's heading path
        under the note title), which the pipeline hands to LightRAG's extraction."""
        content = body.strip()
        if not content:
            return []
        size = self.s.chunk_token_size
        # chunk_text packs paragraph blocks, paying ~1 token per join; BPE can differ by a token or two at
        # each block edge. Far enough below the size, the whole text is certainly one chunk.
        blocks = content.count("\n\n") + content.count("\n#") + 1
        if approx_tokens + 3 * blocks + 8 <= 0.9 * size:
            first = _first_heading(content)
            return [_Chunk(content, approx_tokens, self.crumb(heading_path(title, [first] if first else [])))]
        chunks: dict[str, _Chunk] = {}  # note_contribution keeps one of identical chunks (same id)
        for c in chunk_text(body, self.tokenizer, size, self.s.chunk_overlap_token_size):
            if c.content not in chunks:
                chunks[c.content] = _Chunk(c.content, c.tokens, self.crumb(heading_path(title, c.headings)))
        return list(chunks.values())

    def vanilla(self, content: str, approx_tokens: int) -> list[_Chunk]:
        """LightRAG's default chunking_by_token_size: fixed windows of `size` tokens, stride size-overlap."""
        if not content:
            return []
        size, overlap = self.s.vanilla_chunk_token_size, self.s.vanilla_chunk_overlap_token_size
        if approx_tokens + 4 <= size:
            return [_Chunk(content, approx_tokens)]
        ids = self.enc.encode_ordinary(content)
        if len(ids) <= size:
            return [_Chunk(content, len(ids))]
        return [_Chunk(self.enc.decode(ids[start : start + size]), min(size, len(ids) - start))
                for start in range(0, len(ids), size - overlap)]


class _Scenario:
    """One scenario's LightRAG: documents go through extraction and merging in insertion order."""

    def __init__(self, s: CostSettings, sizes: PromptSizes, gleaning: int, price: ModelPrice, enc: Any, *,
                 lightrag_merges: bool) -> None:
        self.s, self.sizes, self.gleaning, self.price, self.enc = s, sizes, gleaning, price, enc
        # vanilla: ainsert, so LightRAG drops duplicate documents and merges (summarises) descriptions.
        # wikirag: the pipeline calls LightRAG's extraction step only and merges fragments itself, joining
        # descriptions without an LLM: no duplicate-document check, no summary calls.
        self.lightrag_merges = lightrag_merges
        self.merges = _MergeModel(s, sizes, enc)
        self.seen_docs: dict[str, str] = {}
        self.seen_prompts: set[tuple[str, str]] = set()
        self.output_cap = s.max_total_records * s.record_tokens
        self._crumb_tokens: dict[str, int] = {}
        cacheable = price.cached_input is not None
        self.cache_min = price.cache_min_tokens if cacheable else math.inf

    def document(self, path: str, content: str, chunks: list[_Chunk], hint: int) -> tuple[ScenarioCost, str | None]:
        """The cost of inserting one document; (empty cost, first path) when LightRAG drops it as a duplicate."""
        cost = ScenarioCost(notes=1, chunks=len(chunks))
        if not content:
            return cost, None
        if self.lightrag_merges:
            if content in self.seen_docs:
                return ScenarioCost(), self.seen_docs[content]
            self.seen_docs[content] = path
        sz, s = self.sizes, self.s
        entity_counts: dict[str, int] = {}
        relation_counts: dict[tuple[str, str], int] = {}
        calls = glean = tokens_in = tokens_out = cached = embedded = extract_in = glean_in_total = records = 0
        for chunk in chunks:
            embedded += chunk.tokens
            names = chunk.names if chunk.names is not None else sentence_names(chunk.text)
            if not self.lightrag_merges:  # only the vector count needs them: about one record a name
                records += min(sum(map(len, names)), s.max_total_records)
            else:
                entities, relations = cap_mentions(names, s.max_entity_records, s.max_total_records)
                if len(chunks) == 1:  # the common case: one fragment each
                    entity_counts, relation_counts = dict.fromkeys(entities, 1), dict.fromkeys(relations, 1)
                else:
                    for e in entities:
                        entity_counts[e] = entity_counts.get(e, 0) + 1
                    for r in relations:
                        relation_counts[r] = relation_counts.get(r, 0) + 1
            # LightRAG's LLM cache key is the prompt; wikirag inserts the hint after the key is taken
            key = (chunk.text, chunk.breadcrumb)
            if key in self.seen_prompts:  # the same prompt again: LightRAG's LLM cache answers it
                continue
            self.seen_prompts.add(key)
            user = sz.user_fixed + chunk.tokens + hint
            if chunk.breadcrumb:
                user += sz.section_fixed + self.crumb_tokens(chunk.breadcrumb)
            out = round(min(s.output_ratio * chunk.tokens, self.output_cap))
            calls += 1
            tokens_in += sz.system + user
            extract_in += sz.system + user
            tokens_out += out
            if sz.system >= self.cache_min:
                cached += sz.system
            glean_in = sz.system + user + out + sz.continue_prompt
            if self.gleaning > 0 and glean_in <= s.max_extract_input_tokens:
                glean += 1
                tokens_in += glean_in
                glean_in_total += glean_in
                tokens_out += round(s.gleaning_output_ratio * out)
                if sz.system + user >= self.cache_min:  # the extraction call just sent this prefix
                    cached += sz.system + user
        cost.extraction_calls, cost.gleaning_calls = calls, glean
        cost.extraction_input_tokens, cost.gleaning_input_tokens = extract_in, glean_in_total
        records += len(entity_counts) + len(relation_counts)
        cost.embedding_tokens = embedded + round(records * s.embed_record_tokens)
        for counts, is_relation in ((entity_counts, False), (relation_counts, True)):
            if not self.lightrag_merges:
                break
            for summary_in, summary_out in self.merges.merge(counts, is_relation):
                cost.summary_calls += 1
                cost.summary_input_tokens += summary_in
                tokens_in += summary_in
                tokens_out += summary_out
        cost.input_tokens, cost.output_tokens, cost.cached_input_tokens = tokens_in, tokens_out, cached
        cost.llm_calls = calls + glean + cost.summary_calls
        price_cost(cost, self.price)
        return cost, None

    def crumb_tokens(self, crumb: str) -> int:
        if crumb not in self._crumb_tokens:
            self._crumb_tokens[crumb] = len(self.enc.encode_ordinary(crumb))
        return self._crumb_tokens[crumb]


def price_cost(cost: ScenarioCost, price: ModelPrice) -> None:
    """Fill the three dollar figures of `cost` from its token counts."""
    plain = cost.input_tokens * price.input + cost.output_tokens * price.output
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    cached = ((cost.input_tokens - cost.cached_input_tokens) * price.input
              + cost.cached_input_tokens * cached_rate + cost.output_tokens * price.output)
    cost.usd = plain / 1e6
    cost.usd_cached = cached / 1e6
    cost.usd_batch = plain * (1 - price.batch_discount) / 1e6


def estimate_vault(
    vault: Any,
    decisions: Mapping[str, RouteDecision],
    settings: CostSettings | None = None,
    *,
    texts: Mapping[str, str] | None = None,
    hints: HintSource = None,
    price_table: PriceTable | None = None,
) -> CostEstimate:
    """Estimate all three scenarios for a vault (anything with `.notes` and `.outgoing(path)`).

    `decisions` come from `routing.route_vault`. `texts` are the raw note files for the vanilla scenario
    (default: read from the vault folder). `hints` gives each extract-routed note's hint-header tokens
    (a dict or a callable); default `hint_tokens`. Notes go in path order, as the pipeline inserts them.
    """
    s = (settings or CostSettings()).resolved()
    table = price_table or PriceTable.load(s.prices_file)
    price = s.price(table)
    sizes = prompt_sizes(s)
    planner = _Planner(s, sizes)
    enc = planner.enc
    paths = sorted(vault.notes)
    raw = dict(texts) if texts is not None else read_note_files(vault, paths)
    runs = {
        "vanilla": _Scenario(s, sizes, s.vanilla_gleaning, price, enc, lightrag_merges=True),
        "wikirag": _Scenario(s, sizes, s.gleaning, price, enc, lightrag_merges=False),
    }
    titles = {p: n.title.strip() or n.name for p, n in vault.notes.items()}
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
        body_tokens = decision.features.body_tokens  # routing counted the stripped body
        if (body_tokens == 0 and body) or "&" in body:  # not counted, or HTML entities were unescaped
            body_tokens = len(enc.encode_ordinary(body))
        plan = planner.wikirag(note.body, body_tokens, note.title)
        body_names = sentence_names(body) if len(plan) == 1 else None
        if body_names is not None:
            plan[0].names = body_names

        # vanilla: the whole file. The body is counted already: count the frontmatter alone.
        text = raw.get(path, note.body)
        content = lightrag_content(text)
        head = text[: len(text) - len(note.body)] if note.body and text.endswith(note.body) else None
        approx = (body_tokens + len(enc.encode_ordinary(head))) if head is not None else (
            len(enc.encode_ordinary(content)))
        vanilla_plan = planner.vanilla(content, approx)
        if len(vanilla_plan) == 1 and head is not None and body_names is not None:
            vanilla_plan[0].names = sentence_names(head) + body_names
        vanilla, duplicate = runs["vanilla"].document(path, content, vanilla_plan, 0)

        hint = 0
        if decision.route == "extract":
            if s.hint:
                hint = _hint_for(hints, note, vault.outgoing(path), vault.notes, titles, s)
            wikirag, _ = runs["wikirag"].document(path, body, plan, hint)
        else:
            wikirag = ScenarioCost(chunks=len(plan))
            if decision.route == "inject":
                wikirag.embedding_tokens = _inject_embedding(plan, decision, s)
        row = NoteCost(
            path=path, folder=posixpath.dirname(path) or ".", tokens=body_tokens, chunks=len(plan),
            route=decision.route, reason=decision.reason, hint_tokens=hint, llm_calls=wikirag.llm_calls,
            input_tokens=wikirag.input_tokens, output_tokens=wikirag.output_tokens, usd=wikirag.usd,
            wikirag=wikirag, vanilla=vanilla, duplicate_of=duplicate,
        )
        rows.append(row)
        f = folders.setdefault(row.folder, FolderCost(row.folder))
        f.notes += 1
        f.tokens += body_tokens
        setattr(f, decision.route, getattr(f, decision.route) + 1)
        f.wikirag_usd += wikirag.usd
        f.vanilla_usd += vanilla.usd
        f.wikirag_input_tokens += wikirag.input_tokens
        f.vanilla_input_tokens += vanilla.input_tokens

    totals = {name: ScenarioCost() for name in SCENARIOS}
    structure = totals["structure_only"]
    for row in rows:
        if row.vanilla.notes:
            totals["vanilla"].add(row.vanilla)
        if row.wikirag.notes:
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
    for total in totals.values():
        price_cost(total, price)
    assumptions = {k: getattr(s, k) for k in (
        "output_ratio", "record_tokens", "gleaning_output_ratio", "description_tokens", "embed_record_tokens",
        "chunk_token_size", "chunk_overlap_token_size", "vanilla_chunk_token_size",
        "vanilla_chunk_overlap_token_size", "gleaning", "vanilla_gleaning", "force_llm_summary_on_merge",
        "summary_max_tokens", "summary_context_size", "summary_length_recommended", "max_extract_input_tokens",
        "max_total_records", "max_entity_records", "language", "section_context", "hint")}
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
    )


def _hint_for(hints: HintSource, note: ParsedNote, outgoing: Outgoing, notes: Mapping[str, ParsedNote],
              titles: Mapping[str, str], s: CostSettings) -> int:
    if hints is None:
        return hint_tokens(note, outgoing, notes, default_type=s.default_note_type, encoding=s.encoding,
                           titles=titles)
    if callable(hints):
        return int(hints(note, outgoing))
    return int(hints.get(note.path, 0))


def _inject_records(decision: RouteDecision) -> int:
    """Vectors an injected note writes: its entity, one per distinct link target, one per relation."""
    f = decision.features
    return 1 + 2 * (f.distinct_targets + f.unresolved_links)


def _inject_embedding(plan: list[_Chunk], decision: RouteDecision, s: CostSettings) -> int:
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
        features = note_features(note, outgoing, len(enc.encode_ordinary(note.body.strip())))
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


def estimate_for_config(config: Any, values: Mapping[str, Any] | None = None) -> CostEstimate:
    """Scan, route and estimate a configured vault: what `wikirag cost-estimate` runs. Reads only the
    vault; needs no store and no LLM. `values` are command-line overrides of [cost] keys."""
    from wikirag.plan.routing import route_vault
    from wikirag.vault.model import Vault

    vault = Vault.load(config.vault, exclude=config.exclude)
    decisions = route_vault(vault, config.route, config.route_overrides, encoding=config.index.encoding)
    return estimate_vault(vault, decisions, CostSettings.from_config(config, values))



def render_extraction_prompts(settings: CostSettings) -> dict[str, str]:
    """LightRAG's extraction, gleaning and summary prompts for these settings (lightrag/prompts.py)."""
    s = settings.resolved()
    return render_prompts(s.language, s.max_total_records, s.max_entity_records, s.summary_length_recommended)


def prompt_sizes(settings: CostSettings | None = None, *, use_disk_cache: bool = True) -> PromptSizes:
    """Token sizes of LightRAG's prompts for these settings (measured once per LightRAG version)."""
    s = (settings or CostSettings()).resolved()
    return lightrag_prompt_sizes(s.encoding, s.language, s.max_total_records, s.max_entity_records,
                                 s.summary_length_recommended, use_disk_cache=use_disk_cache)
