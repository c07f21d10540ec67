"""`watch`'s incremental planning: a plan made from the previous one equals a plan made from scratch."""

from __future__ import annotations

from pathlib import Path

from tests.storekit import copy_vault
from wikirag.index.ledger import Ledger
from wikirag.index.planning import plan_index
from wikirag.index.watch_events import apply_paths
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


def test_routing_figures_from_the_parse_cache_give_the_fresh_plan(tmp_path: Path, monkeypatch):
    """A fresh `wikirag index` takes routing's character figures of unchanged notes from the parse cache and
    measures only the notes whose text changed; the plan equals one measured from scratch."""
    import wikirag.plan.routing as routing
    from wikirag.index.parsecache import load_parse_cache, save_parse_cache

    vault_dir = copy_vault(SAMPLE, tmp_path / "vault")
    config = load_config(vault_dir, store=tmp_path / "store")
    ledger = Ledger()
    first = plan_index(config, ledger)
    save_parse_cache(config.workspace_dir, config.index.encoding, first.vault.notes, first.vault.digests,
                     first.body_tokens, None, first.vault.stats, first.vault.clean, first.figures)
    notes = sorted(first.vault.notes)
    (vault_dir / notes[0]).write_text("# Renamed\n\nA long paragraph of prose that no link explains, about many "
                                      "things at once, with [[Nowhere yet]] at its end.\n\n## More\n\nMore prose.\n")
    (vault_dir / "Nowhere yet.md").write_text("It exists now, see [[" + notes[1][:-3] + "]].\n")
    measured: list[str] = []
    real = routing.char_figures
    monkeypatch.setattr(routing, "char_figures",
                        lambda note, links=None: measured.append(note.path) or real(note, links))
    cached = plan_index(config, ledger, cache=load_parse_cache(config.workspace_dir, config.index.encoding))
    assert sorted(measured) == sorted([notes[0], "Nowhere yet.md"])
    monkeypatch.undo()
    fresh = plan_index(config, ledger)
    _same(cached, fresh)
    assert {p: d.features for p, d in cached.decisions.items()} == {p: d.features for p, d in fresh.decisions.items()}
