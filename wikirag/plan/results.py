"""The cost estimate's result objects (per scenario, per note, per folder) and their CSV rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from wikirag.lightrag.prompts import PromptSizes
from wikirag.plan.prices import ModelPrice


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
    cache_write_tokens: int = 0  # of input_tokens: the prefix each call writes into the cache for a later read
    output_tokens: int = 0
    extraction_input_tokens: int = 0  # of input_tokens: the extraction calls
    gleaning_input_tokens: int = 0  # of input_tokens: the gleaning calls (they resend the first answer)
    summary_input_tokens: int = 0  # of input_tokens: the description-summary calls
    embedding_tokens: int = 0  # counted apart: chunks plus entity and relation vectors
    usd: float = 0.0  # list price, no prompt caching
    usd_cached: float = 0.0  # with the provider's prompt caching of the repeated prefix
    usd_batch: float = 0.0  # through the provider's batch API (no caching)

    def add(self, other: ScenarioCost) -> None:
        mine, theirs = self.__dict__, other.__dict__  # (30,000 rows a 13,000-note estimate: no getattr/setattr)
        for name in _SUMMED:
            mine[name] += theirs[name]


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
    pack: int = 0  # notes in the extraction call this note shares (0: it is not packed); its figures are a share


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
class Alternative:
    """The routed plan one setting away (cost-estimate shows it beside the configured plan)."""

    setting: str  # as written in wikirag.toml, e.g. '[route] policy = "prose"'
    routes: dict[str, int]
    wikirag: ScenarioCost


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
    alternatives: list[Alternative] = field(default_factory=list)  # estimate_for_config fills them
    # wikirag's description summaries (LLM configured): in scenarios["wikirag"], made once per record at the end
    # of a run, so in no note's or folder's figures
    summaries: ScenarioCost = field(default_factory=ScenarioCost)
    # files left out of the vault (too large, binary, unreadable): "path: why", one line each; none is priced
    files_skipped: list[str] = field(default_factory=list)

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

