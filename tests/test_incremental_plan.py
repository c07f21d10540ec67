"""`watch`'s incremental planning: a plan made from the previous one equals a plan made from scratch."""

from __future__ import annotations

from pathlib import Path

from tests.storekit import copy_vault
from wikirag.index.ledger import Ledger
from wikirag.index.planning import plan_index
from wikirag.index.watch import apply_paths
from wikirag.settings import load_config
from wikirag.vault.model import Vault

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


def _same(a, b) -> None:
    assert a.signatures == b.signatures
    assert a.body_tokens == b.body_tokens
    assert {p: (d.route, d.reason) for p, d in a.decisions.items()} == {
        p: (d.route, d.reason) for p, d in b.decisions.items()}
    assert (a.new, a.changed, a.unchanged, a.deleted) == (b.new, b.changed, b.unchanged, b.deleted)


def test_a_plan_from_the_previous_one_equals_a_fresh_plan(tmp_path: Path):
    vault_dir = copy_vault(SAMPLE, tmp_path / "vault")
    config = load_config(vault_dir, store=tmp_path / "store")
    vault = Vault.load(vault_dir)
    ledger = Ledger()
    previous = plan_index(config, ledger, vault)
    notes = sorted(p for p in vault.notes)
    steps = [
        lambda: (vault_dir / notes[0]).write_text("# Renamed title\n\nNow links [[Nowhere yet]].\n"),
        lambda: (vault_dir / "Nowhere yet.md").write_text("It exists now, see [[" + notes[1][:-3] + "]].\n"),
        lambda: (vault_dir / notes[2]).unlink(),
        lambda: (vault_dir / notes[3]).write_text("---\naliases: [Another name]\n---\nShort.\n"),
    ]
    touched = [{notes[0]}, {"Nowhere yet.md"}, {notes[2]}, {notes[3]}]
    for step, paths in zip(steps, touched, strict=True):
        step()
        apply_paths(vault, paths)
        incremental = plan_index(config, ledger, vault, previous=previous)
        fresh = plan_index(config, ledger, Vault.load(vault_dir))
        _same(incremental, fresh)
        previous = incremental
