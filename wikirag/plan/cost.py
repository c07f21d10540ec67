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

import hashlib
import html
import importlib.util
import itertools
import json
import math
import os
import posixpath
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from wikirag.errors import ConfigError
from wikirag.graph.contribution import note_type
from wikirag.lightrag.tokens import DEFAULT_ENCODING, get_encoding
from wikirag.markdown.chunking import chunk_text, heading_path
from wikirag.markdown.parse import normalize_text
from wikirag.models import ParsedNote
from wikirag.plan.hints import note_hint
from wikirag.plan.routing import Outgoing, RouteDecision, _from_mapping, note_features
from wikirag.settings import IndexSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SCENARIOS = ("vanilla", "wikirag", "structure_only")
LOCAL_PROVIDERS = ("ollama", "llamacpp", "llama.cpp", "lmstudio", "vllm", "local")


# -- prices -------------------------------------------------------------------------------------------------


@dataclass
class ModelPrice:
    """USD per 1M tokens for one model."""

    name: str
    provider: str = ""
    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None  # None: the provider does not cache prompts
    batch_discount: float = 0.0
    cache_min_tokens: int = 1024
    aliases: list[str] = field(default_factory=list)
    source: str = ""  # where this price came from: the shipped table, a user file, the command line


@dataclass
class PriceTable:
    models: dict[str, ModelPrice] = field(default_factory=dict)
    as_of: str = ""
    source: str = ""

    @classmethod
    def load(cls, user_file: str | Path | None = None) -> PriceTable:
        """The shipped table (wikirag/data/prices.toml), with `user_file`'s entries merged over it."""
        shipped = resources.files("wikirag").joinpath("data/prices.toml").read_text(encoding="utf-8")
        table = cls()
        table._merge(tomllib.loads(shipped), "shipped table")
        if user_file is not None:
            path = Path(user_file)
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ConfigError(f"{path}: price file not found") from None
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: {exc}") from None
            table._merge(data, str(path))
        return table

    def _merge(self, data: Mapping[str, Any], origin: str) -> None:
        meta = data.get("table", {})
        self.as_of = str(meta.get("as_of", self.as_of))
        self.source = str(meta.get("source", self.source))
        known = set(ModelPrice.__dataclass_fields__) - {"name", "source"}
        for name, entry in (data.get("models") or {}).items():
            if not isinstance(entry, dict) or set(entry) - known:
                raise ConfigError(f"{origin}: [models.{name!r}] has unknown keys {sorted(set(entry) - known)}")
            base = self.models.get(name, ModelPrice(name))
            self.models[name] = replace(base, **entry, source=origin)

    def get(self, model: str) -> ModelPrice:
        """Find `model` by name, alias or `provider:name`, or as the longest table name it starts with
        (`gpt-4o-mini-2024-07-18` -> `gpt-4o-mini`). Local providers (`ollama:...`) cost nothing."""
        provider, _, bare = model.rpartition(":") if ":" in model else ("", "", model)
        if model.count(":") > 1:  # "ollama:qwen2.5:7b"
            provider, bare = model.split(":", 1)[0], model.split(":", 1)[1]
        candidates = [model, bare]
        for name in candidates:
            if name in self.models:
                return self.models[name]
            for price in self.models.values():
                if name in price.aliases:
                    return price
        if provider.lower() in LOCAL_PROVIDERS and "local" in self.models:
            return self.models["local"]
        prefixes = [n for n in self.models if bare.startswith(n)]
        if prefixes:
            return self.models[max(prefixes, key=len)]
        raise ConfigError(
            f"no price for model {model!r}: give --price-in and --price-out, or add it to a prices file "
            f"(known: {', '.join(sorted(self.models))})"
        )


# -- settings -----------------------------------------------------------------------------------------------


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
        return _from_mapping(cls, values or {}, "cost")

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


@lru_cache(maxsize=1)
def _import_lightrag() -> Any:
    from wikirag.lightrag.engine import import_lightrag  # imports LightRAG away from a stray .env

    return import_lightrag()


def lightrag_defaults() -> dict[str, Any]:
    """LightRAG's own defaults for the knobs the cost model reads (not its env overrides)."""
    from lightrag import constants as c  # a light module: no .env loading, no heavy imports

    return {
        "gleaning": c.DEFAULT_MAX_GLEANING,
        "force_llm_summary_on_merge": c.DEFAULT_FORCE_LLM_SUMMARY_ON_MERGE,
        "summary_max_tokens": c.DEFAULT_SUMMARY_MAX_TOKENS,
        "summary_context_size": c.DEFAULT_SUMMARY_CONTEXT_SIZE,
        "summary_length_recommended": c.DEFAULT_SUMMARY_LENGTH_RECOMMENDED,
        "max_extract_input_tokens": c.DEFAULT_MAX_EXTRACT_INPUT_TOKENS,
        "max_total_records": c.DEFAULT_MAX_EXTRACTION_RECORDS,
        "max_entity_records": c.DEFAULT_MAX_EXTRACTION_ENTITIES,
        "max_source_ids_per_entity": c.DEFAULT_MAX_SOURCE_IDS_PER_ENTITY,
        "max_source_ids_per_relation": c.DEFAULT_MAX_SOURCE_IDS_PER_RELATION,
        "language": c.DEFAULT_SUMMARY_LANGUAGE,
    }


# -- LightRAG's prompts, rendered -------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptSizes:
    """Token counts of LightRAG's installed prompt templates, rendered as `extract_entities` renders them."""

    lightrag_version: str
    encoding: str
    system: int  # extraction system prompt, sent with every extraction and gleaning call
    user_fixed: int  # extraction user prompt around an empty chunk (the chunk's tokens are added)
    section_fixed: int  # the `---Section Context---` block around an empty breadcrumb
    continue_prompt: int  # gleaning's "continue" user prompt
    summary_fixed: int  # description-summary prompt around an empty name and description list
    summary_fragment: int  # JSON wrapping added to each description in the summary prompt
    max_section_tokens: int  # LightRAG's cap on the breadcrumb


def render_extraction_prompts(settings: CostSettings) -> dict[str, str]:
    """LightRAG's prompts for an empty chunk, formatted exactly as `extract_entities` (text mode, the
    default) and `_summarize_descriptions` format them: system, user (no section block), section block,
    continue (gleaning), summary."""
    s = settings.resolved()
    _import_lightrag()
    from lightrag.prompt import PROMPTS, resolve_entity_extraction_prompt_profile

    profile = resolve_entity_extraction_prompt_profile({}, False)
    example_context = dict(
        tuple_delimiter=PROMPTS["DEFAULT_TUPLE_DELIMITER"],
        completion_delimiter=PROMPTS["DEFAULT_COMPLETION_DELIMITER"],
        entity_types_guidance=profile["entity_types_guidance"],
        language=s.language,
    )
    examples = "\n".join(profile["entity_extraction_examples"]).format(**example_context)
    context = dict(example_context, examples=examples, max_total_records=s.max_total_records,
                   max_entity_records=s.max_entity_records)
    return {
        "system": PROMPTS["entity_extraction_system_prompt"].format(**context),
        "user": PROMPTS["entity_extraction_user_prompt"].format(**context, input_text="",
                                                                  heading_context_block=""),
        "section": PROMPTS["entity_extraction_section_context"].format(heading_path=""),
        "continue": PROMPTS["entity_continue_extraction_user_prompt"].format(**context, input_text=""),
        "summary": PROMPTS["summarize_entity_descriptions"].format(
            description_type="Entity", description_name="", description_list="",
            summary_length=s.summary_length_recommended, language=s.language),
    }


def prompt_sizes(settings: CostSettings | None = None, *, use_disk_cache: bool = True) -> PromptSizes:
    """The rendered prompt sizes for these settings, measured once per LightRAG version and settings.

    Rendering needs `lightrag.prompt`, whose import costs ~0.6 s; the sizes are kept in
    `~/.cache/wikirag/prompt-sizes.json` keyed by a hash of LightRAG's prompt.py and constants.py and the
    settings, so a LightRAG upgrade (or a prompt edit) measures again.
    """
    s = (settings or CostSettings()).resolved()
    key = (s.encoding, s.language, s.max_total_records, s.max_entity_records, s.summary_length_recommended)
    if not use_disk_cache:
        return _measure_prompt_sizes(*key)
    return _cached_prompt_sizes(*key)


@lru_cache(maxsize=16)
def _cached_prompt_sizes(*key: Any) -> PromptSizes:
    fingerprint = _lightrag_fingerprint()
    cache_file = _cache_dir() / "prompt-sizes.json"
    entry = f"{fingerprint}:{json.dumps(key, ensure_ascii=False)}"
    try:
        stored = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    if isinstance(stored, dict) and isinstance(stored.get(entry), dict):
        try:
            return PromptSizes(**stored[entry])
        except TypeError:
            pass  # written by another wikirag version: measure again
    sizes = _measure_prompt_sizes(*key)
    stored = {k: v for k, v in stored.items() if k.startswith(fingerprint)} if isinstance(stored, dict) else {}
    stored[entry] = asdict(sizes)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_file.parent, prefix=".prompt-sizes-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(stored, out)
        os.replace(tmp, cache_file)
    except OSError:
        pass  # a read-only home only costs the re-measuring
    return sizes


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "wikirag"


def _lightrag_fingerprint() -> str:
    """sha1 of LightRAG's version and prompt/constant sources, found without importing LightRAG."""
    spec = importlib.util.find_spec("lightrag")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("lightrag-hku is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    digest = hashlib.sha1()
    for name in ("_version.py", "prompt.py", "constants.py"):
        try:
            digest.update((folder / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=16)
def _measure_prompt_sizes(encoding: str, language: str, records: int, entities: int,
                          summary_length: int) -> PromptSizes:
    settings = CostSettings(encoding=encoding, language=language, max_total_records=records,
                            max_entity_records=entities, summary_length_recommended=summary_length)
    rendered = render_extraction_prompts(settings)
    lightrag = _import_lightrag()
    from lightrag.constants import DEFAULT_MAX_SECTION_CONTEXT_TOKENS

    enc = get_encoding(encoding)

    def count(text: str) -> int:
        return len(enc.encode_ordinary(text))

    # LightRAG strips every prompt before sending it (sanitize_text_for_encoding); so do we.
    samples = ["Alan Turing designed the British Bombe at Bletchley Park in 1939.",
               "A mathematician who led Hut 8 against naval Enigma.", "Worked with Gordon Welchman."]
    jsonl = "\n".join(json.dumps({"Description": d}, ensure_ascii=False) for d in samples)
    return PromptSizes(
        lightrag_version=getattr(lightrag, "__version__", "unknown"),
        encoding=encoding,
        system=count(rendered["system"].strip()),
        user_fixed=count(rendered["user"].strip()),
        section_fixed=count(rendered["section"]),
        continue_prompt=count(rendered["continue"].strip()),
        summary_fixed=count(rendered["summary"].strip()),
        summary_fragment=math.ceil((count(jsonl) - sum(count(d) for d in samples)) / len(samples)),
        max_section_tokens=DEFAULT_MAX_SECTION_CONTEXT_TOKENS,
    )


# -- results ------------------------------------------------------------------------------------------------


@dataclass
class ScenarioCost:
    notes: int = 0  # notes that reach LightRAG's LLM pipeline in this scenario
    chunks: int = 0
    llm_calls: int = 0
    extraction_calls: int = 0
    gleaning_calls: int = 0
    summary_calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens: the prompt prefix a caching provider serves from cache
    output_tokens: int = 0
    extraction_input_tokens: int = 0  # of input_tokens: the extraction calls
    gleaning_input_tokens: int = 0  # of input_tokens: the gleaning calls (they resend the first answer)
    summary_input_tokens: int = 0  # of input_tokens: the description-summary calls
    embedding_tokens: int = 0  # counted apart: chunks plus entity and relation vectors
    usd: float = 0.0  # list price, no prompt caching
    usd_cached: float = 0.0  # with the provider's prompt caching of the repeated prefix
    usd_batch: float = 0.0  # through the provider's batch API (no caching)

    def add(self, other: ScenarioCost) -> None:
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))


_SUMMED = tuple(n for n in ScenarioCost.__dataclass_fields__ if not n.startswith("usd"))  # prices: recomputed


@dataclass
class NoteCost:
    """One note. The flat fields are the wikirag plan; `vanilla` is stock LightRAG on the same note."""

    path: str
    folder: str
    tokens: int  # the note body, tiktoken
    chunks: int  # wikirag's chunks (injected notes have chunks too; they are embedded, not extracted)
    route: str
    reason: str
    hint_tokens: int = 0  # hint header added to each chunk's prompt (extract route only)
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    wikirag: ScenarioCost = field(default_factory=ScenarioCost)
    vanilla: ScenarioCost = field(default_factory=ScenarioCost)
    duplicate_of: str | None = None  # vanilla LightRAG drops this note: same content as this earlier note


@dataclass
class FolderCost:
    folder: str
    notes: int = 0
    tokens: int = 0
    inject: int = 0
    extract: int = 0
    skip: int = 0
    wikirag_usd: float = 0.0
    vanilla_usd: float = 0.0
    wikirag_input_tokens: int = 0
    vanilla_input_tokens: int = 0


@dataclass
class CostEstimate:
    vault: str
    model: str
    price: ModelPrice
    prices_as_of: str
    encoding: str
    lightrag_version: str
    note_count: int
    scenarios: dict[str, ScenarioCost]
    routes: dict[str, int]
    notes: list[NoteCost]
    folders: list[FolderCost]
    prompt_sizes: PromptSizes
    assumptions: dict[str, Any]

    def top_notes(self, n: int = 10, scenario: str = "wikirag") -> list[NoteCost]:
        """The `n` most expensive notes in a scenario (by input plus output tokens at list price)."""
        key = (lambda c: c.usd) if scenario == "wikirag" else (lambda c: getattr(c, scenario).usd)
        tokens = (lambda c: c.input_tokens) if scenario == "wikirag" else (
            lambda c: getattr(c, scenario).input_tokens)
        return sorted(self.notes, key=lambda c: (-key(c), -tokens(c), c.path))[:n]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


CSV_COLUMNS = ["path", "folder", "tokens", "chunks", "route", "reason", "hint_tokens", "llm_calls",
               "input_tokens", "output_tokens", "usd", "vanilla_chunks", "vanilla_llm_calls",
               "vanilla_input_tokens", "vanilla_output_tokens", "vanilla_usd", "duplicate_of"]


def csv_rows(estimate: CostEstimate) -> tuple[list[str], list[list[Any]]]:
    """One row per note, for `--csv`."""
    rows = [
        [c.path, c.folder, c.tokens, c.chunks, c.route, c.reason, c.hint_tokens, c.llm_calls, c.input_tokens,
         c.output_tokens, round(c.usd, 6), c.vanilla.chunks, c.vanilla.llm_calls, c.vanilla.input_tokens,
         c.vanilla.output_tokens, round(c.vanilla.usd, 6), c.duplicate_of or ""]
        for c in estimate.notes
    ]
    return list(CSV_COLUMNS), rows


# -- hint header ---------------------------------------------------------------------------------------------


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


# -- chunk plans ---------------------------------------------------------------------------------------------


@dataclass
class _Chunk:
    text: str
    tokens: int
    breadcrumb: str = ""  # LightRAG's section path for the chunk ("" when it has no heading)
    names: list[list[str]] | None = None  # sentence_names(text), when already known


def lightrag_content(text: str) -> str:
    """What LightRAG keeps of a document (sanitize_text_for_encoding: strip, HTML unescape; the control
    characters it also drops are too rare to matter for a count)."""
    text = text.strip()
    return html.unescape(text).strip() if "&" in text else text


def _first_heading(content: str) -> str:
    from wikirag.markdown.chunking import _HEADING  # the chunker's own heading rule

    end = content.find("\n")
    m = _HEADING.match(content if end < 0 else content[:end])
    return m.group(2).strip() if m else ""


@lru_cache(maxsize=1)
def _breadcrumb_format() -> tuple[int, str]:
    from lightrag.chunk_schema import DEFAULT_HEADING_LEVEL_MAX_CHARS, HEADING_BREADCRUMB_SEP

    return DEFAULT_HEADING_LEVEL_MAX_CHARS, HEADING_BREADCRUMB_SEP


def breadcrumb(headings: list[str], max_tokens: int, tokenizer: Any) -> str:
    """The `---Section Context---` path LightRAG builds from a wikirag chunk's headings
    (`format_heading_context`, then `_truncate_section_context`), without importing LightRAG's pipeline
    for the common case of plain, short headings."""
    if not headings:
        return ""
    cap, separator = _breadcrumb_format()
    if all(h.isascii() and h.isprintable() for h in headings):
        levels = [" ".join(h.split()) for h in headings]
        levels = [h if len(h) <= cap else h[: cap - 1].rstrip() + "…" for h in levels if h]
        path = separator.join(levels)
    else:
        from lightrag.chunk_schema import format_heading_context

        from wikirag.markdown.chunking import heading_record

        path = format_heading_context({"heading": heading_record("", headings)})
    if len(path) <= max_tokens:  # a token is at least one character: certainly within the cap
        return path
    from lightrag.operate import _truncate_section_context

    return _truncate_section_context(path, tokenizer, max_tokens)


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


# -- what an LLM will name --------------------------------------------------------------------------------

# Which entities and relations an LLM extracts cannot be known offline. The model: entities are proper-noun
# phrases (runs of capitalised words, leading function words dropped, a lone capitalised word that opens a
# sentence ignored); relations join entities named next to each other in one sentence. Sentences end at a newline
# or ". ". It matters for how often one entity recurs across chunks, which is what triggers LightRAG's
# description-summary calls, and for the number of vectors embedded.
_CAPS = "A-ZÀ-ÖØ-ÞĀ-Ž"
_FUNCTION_WORDS = frozenset((
    "A An And As At But By For From He Her His How I If In Is It Its My No Not Of On Or Our See She So "
    "That The Their Then There These They This Those To We What When Where Which Who Why With You Your "
    "After Also Before Both Each Every Here Many Most One Some Such Was Were Will"
).split())
_CAPITALISED_RUN = re.compile(rf"[{_CAPS}][\w'’-]*(?: [{_CAPS}][\w'’-]*)*")
_OPENING = re.compile(r"[\s>*_#\-+\[\]\"'“‘(|!:0-9.)]*")  # list markers, quotes, brackets before a 1st word


def sentence_names(text: str) -> list[list[str]]:
    """The proper-noun phrases of each sentence of `text` that names any."""
    out = []
    for line in text.split("\n"):
        if not line or line.islower():
            continue
        for sentence in line.split(". ") if ". " in line else (line,):
            names: list[str] = []
            opening = -1
            for m in _CAPITALISED_RUN.finditer(sentence):
                start = m.start()
                if start and (sentence[start - 1].isalnum() or sentence[start - 1] in "_'’"):
                    continue  # inside a word ("iPhone")
                run = m.group()
                if " " not in run:
                    if run in _FUNCTION_WORDS:
                        continue
                    if opening < 0:
                        opening = _OPENING.match(sentence).end()
                    if start == opening:
                        continue  # a lone capitalised word opening a sentence ("During", "Turing")
                    name = run
                else:
                    words = run.split(" ")
                    k = 0
                    while k < len(words) and words[k] in _FUNCTION_WORDS:
                        k += 1
                    if k == len(words):
                        continue
                    name = " ".join(words[k:]) if k else run
                name = name.rstrip("'’-")
                if len(name) > 1 and name not in names:
                    names.append(name)
            if names:
                out.append(names)
    return out


def cap_mentions(sentences: list[list[str]], max_entities: int = 40, max_records: int = 100
                 ) -> tuple[list[str], list[tuple[str, str]]]:
    """(entities, relations) as one extraction answer would list them, capped like LightRAG's prompt caps
    them: at most `max_entities` entities and `max_records` rows in all."""
    entities: dict[str, None] = {}
    relations: dict[tuple[str, str], None] = {}
    for names in sentences:
        for name in names:
            if name not in entities and len(entities) < max_entities:
                entities[name] = None
        if len(names) < 2:
            continue
        kept = [n for n in names if n in entities]
        for a, b in itertools.pairwise(kept):  # neighbours in the sentence, as a model relates them
            relations[(a, b) if a < b else (b, a)] = None
    room = max(0, max_records - len(entities))
    return list(entities), list(relations)[:room]


def chunk_mentions(text: str, max_entities: int = 40, max_records: int = 100
                   ) -> tuple[list[str], list[tuple[str, str]]]:
    """The entities and relations the model expects an LLM to extract from one chunk."""
    return cap_mentions(sentence_names(text), max_entities, max_records)


# -- description merges -----------------------------------------------------------------------------------


class _MergeModel:
    """LightRAG's merge of extracted descriptions, replayed on fragment counts.

    Per document, every entity (relation) collects one description per chunk that names it; LightRAG
    joins them to what is stored and calls the LLM (`_handle_entity_relation_summary`) when the list
    reaches `force_llm_summary_on_merge` fragments or `summary_max_tokens` tokens, map-reducing lists
    longer than `summary_context_size` tokens. A summary replaces the list with one fragment. Chunks past
    `max_source_ids_per_*` (LightRAG's KEEP policy) add nothing. Every fragment is `description_tokens`.
    """

    def __init__(self, s: CostSettings, sizes: PromptSizes, enc: Any) -> None:
        self.s, self.sizes, self.enc = s, sizes, enc
        self.stored: dict[Any, tuple[int, float]] = {}  # key -> (fragments, tokens)
        self.chunks: dict[Any, int] = {}
        self.name_tokens: dict[Any, int] = {}

    def merge(self, counts: Mapping[Any, int], is_relation: bool) -> list[tuple[int, int]]:
        """Merge one document's fragment counts; returns its summary calls as (input, output) tokens."""
        s = self.s
        cap = s.max_source_ids_per_relation if is_relation else s.max_source_ids_per_entity
        force, max_tokens, context = s.force_llm_summary_on_merge, s.summary_max_tokens, s.summary_context_size
        desc = s.description_tokens
        calls: list[tuple[int, int]] = []
        stored, chunks = self.stored, self.chunks
        for key, new in counts.items():
            seen = chunks.get(key, 0)
            if seen + new > cap:
                new = max(0, cap - seen)
                if new == 0:
                    continue
            chunks[key] = seen + new
            n, tokens = stored.get(key, (0, 0.0))
            n, tokens = n + new, tokens + new * desc
            if n <= 1 or (n < force and tokens < max_tokens and (tokens <= context or n <= 2)):
                stored[key] = (n, tokens)  # joined without the LLM (the common case)
                continue
            groups, n, tokens = self._summarize(n, tokens)
            name_tokens = self.name_tokens.get(key)
            if name_tokens is None:
                name = f"({key[0]}, {key[1]})" if is_relation else key
                name_tokens = self.name_tokens[key] = len(self.enc.encode_ordinary(name))
            for group_n, group_tokens in groups:
                sent = min(group_tokens, context)
                calls.append((round(self.sizes.summary_fixed + name_tokens + sent
                                    + group_n * self.sizes.summary_fragment),
                              round(min(s.summary_length_recommended, group_tokens))))
            stored[key] = (n, tokens)
        return calls

    def _summarize(self, n: int, tokens: float) -> tuple[list[tuple[int, float]], int, float]:
        """LightRAG's summary loop on `n` equal fragments: (calls as (fragments, tokens), stored after)."""
        s = self.s
        current = [tokens / n] * n
        calls: list[tuple[int, float]] = []
        while True:
            total = sum(current)
            if total <= s.summary_context_size or len(current) <= 2:
                if len(current) < s.force_llm_summary_on_merge and total < s.summary_max_tokens:
                    return calls, len(current), total
                calls.append((len(current), total))
                return calls, 1, min(s.summary_length_recommended, total)
            groups: list[list[float]] = []
            group: list[float] = []
            group_tokens = 0.0
            for size in current:
                if group_tokens + size > s.summary_context_size and group:
                    if len(group) == 1:
                        groups.append(group + [size])
                        group, group_tokens = [], 0.0
                    else:
                        groups.append(group)
                        group, group_tokens = [size], size
                else:
                    group.append(size)
                    group_tokens += size
            if group:
                groups.append(group)
            current = []
            for g in groups:
                if len(g) == 1:
                    current.append(g[0])
                else:
                    calls.append((len(g), sum(g)))
                    current.append(min(s.summary_length_recommended, sum(g)))


# -- the estimate -------------------------------------------------------------------------------------------


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


def read_note_files(vault: Any, paths: list[str]) -> dict[str, str]:
    """The note files as a vanilla LightRAG user would insert them (frontmatter included)."""
    out = {}
    root = getattr(vault, "root", None)
    for path in paths:
        where = vault.abs_path(path) if hasattr(vault, "abs_path") else (
            os.path.join(root, path) if root is not None else None)
        try:
            with open(where, encoding="utf-8", errors="replace", newline="") as fh:
                out[path] = normalize_text(fh.read())
        except (OSError, TypeError):
            out[path] = vault.notes[path].body
    return out


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
