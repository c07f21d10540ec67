"""What an index run did, as one result object (`--json` prints it; field names are the contract).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: `wikirag index` handing its run to a watch imports this module and no pipeline
    from wikirag.index.ledger import Ledger
    from wikirag.index.planning import Plan
    from wikirag.vault.model import Vault

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
    llm_unavailable: str = ""  # a failure every call would meet (server down, key refused): extraction stopped
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
    llm_cached_input_tokens: int = 0  # of llm_input_tokens: read from the provider's prompt cache
    llm_cache_write_input_tokens: int = 0  # of llm_input_tokens: written into it (Anthropic bills 1.25x input)
    descriptions_summarised: int = 0  # entity/relation descriptions written as LightRAG's LLM summary
    llm_batch_requests: int = 0  # --batch: extraction requests answered through the provider's batch API
    recovered_pending: bool = False
    interrupted: bool = False  # stopped between note batches (SIGTERM, Ctrl-C in watch); the rest waits
    entity_merges: list[str] = field(default_factory=list)  # LLM names merged into known entities
    entities_dropped: list[str] = field(default_factory=list)  # LLM entities not grounded in the text
    seconds: float = 0.0
    issues: list[str] = field(default_factory=list)

    def stop_asking_the_llm(self, exc: BaseException, what: str) -> bool:
        """Whether `exc` is a failure every other LLM call of the run would meet (llm.retry.affects_every_call).
        The first such failure is kept in `llm_unavailable` and said once in the issues, naming `what` stopped
        ("extraction", "description summaries"); extraction and summaries then ask the LLM nothing more."""
        from wikirag.llm.retry import llm_call_error

        cause = llm_call_error(exc)
        if cause is None or not cause.every_call:
            return False
        if not self.llm_unavailable:
            self.llm_unavailable = str(cause)[:300]
            self.issues.append(f"LLM unavailable, {what} stopped for this run: {self.llm_unavailable}")
        return True


def fill_plan_counts(report: IndexReport, plan: Plan, ledger: Ledger) -> None:
    report.notes_total = len(plan.vault.notes)
    report.notes_new = len(plan.new)
    report.notes_changed = len(plan.changed)
    report.notes_unchanged = len(plan.unchanged)
    report.notes_deleted = len(plan.deleted)
    report.issues = issue_lines(plan.vault)
    report.notes_failed = sum(1 for i in plan.vault.issues if i.skipped and i.path.lower().endswith(".md"))
    report.notes_skipped = len(plan.skipped)


def issue_lines(vault: Vault) -> list[str]:
    """One line per file: a note read with a problem and with a frontmatter error gets both on one line. (Two
    files whose names are equal after NFC keep a line each: the skipped one's names both spellings.)"""
    errors = {path: note.frontmatter_error for path, note in vault.notes.items() if note.frontmatter_error}
    lines = []
    for issue in vault.issues:
        error = None if issue.skipped else errors.pop(issue.path, None)
        lines.append(f"{issue.path}: {issue.message}" + (f"; {error}" if error else ""))
    return lines + [f"{path}: {error}" for path, error in sorted(errors.items())]


def fill_totals(report: IndexReport, ledger: Ledger, records: tuple[int, int] | None = None) -> None:
    """The store's totals; `records`: the entity and relation counts when the caller has them."""
    summaries = [row for _, row in ledger.notes.summaries()]  # without decoding the notes' rows
    report.notes_pending_extraction = sum(1 for row in summaries if row.status == "pending_extraction")
    report.entities, report.relations = records or ledger.record_counts()
    report.chunks = sum(row.chunks for row in summaries)

