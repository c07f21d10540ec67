"""`wikirag index --budget USD`: extract only the notes whose estimated cost fits the budget; the rest wait."""

from __future__ import annotations

from pathlib import Path

from wikirag.index.planning import Plan
from wikirag.index.report import IndexReport
from wikirag.lightrag.tokens import count_tokens
from wikirag.settings import WikiragConfig
from wikirag.vault.model import Vault


def apply_budget(plan: Plan, config: WikiragConfig, budget_usd: float, report: IndexReport) -> None:
    """Extract notes in path order while their estimated cost fits the budget; the rest stay pending
    (indexed from their links) for a later run. Estimates are at list price, ignoring cache hits."""
    from wikirag.plan.cost import estimate_vault
    from wikirag.plan.cost_settings import CostSettings

    candidates = [p for p in plan.to_process if plan.extracting(p)]
    if not candidates:
        return
    subset = VaultSubset(plan.vault, candidates)
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


class VaultSubset:
    """The part of a vault a cost estimate prices (the budget, the live line): these notes, with the whole
    vault's link resolution."""

    def __init__(self, vault: Vault, paths: list[str]) -> None:
        self.root = vault.root
        self.notes = {p: vault.notes[p] for p in paths}
        self._vault = vault

    def outgoing(self, path: str) -> list:
        return self._vault.outgoing(path)

    def abs_path(self, path: str) -> Path:
        return self._vault.abs_path(path)
