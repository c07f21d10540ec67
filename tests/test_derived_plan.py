"""`wikirag index` restores each note's resolutions, routing decision and signature from the rows an earlier run
saved (index.derived): a plan made that way equals a plan made from scratch, and the store it leaves equals a
fresh index, whatever was edited between the runs. Damaged or stale rows are not trusted."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

import wikirag.index.run as run_module
from tests.storekit import HashEmbedding, copy_vault, snapshot
from tests.vault_edits import random_edit, same_plan
from wikirag.index.derived import load_derived
from wikirag.index.ledger import Ledger
from wikirag.index.planning import plan_index
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


class _Runs:
    """Index runs of one vault that record each run's plan and what its saved rows restored."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plans: list = []
        self.derived: list = []
        real_plan, real_load = run_module.plan_index, run_module.load_derived
        monkeypatch.setattr(run_module, "plan_index",
                            lambda *a, **k: self.plans.append(real_plan(*a, **k)) or self.plans[-1])
        monkeypatch.setattr(run_module, "load_derived",
                            lambda *a: self.derived.append(real_load(*a)) or self.derived[-1])
        self.embedding = HashEmbedding().func()

    def index(self, config) -> tuple:
        """Run `index`; return its plan, the plan made from scratch against the same ledger, and its rows."""
        want = plan_index(config, Ledger.load(run_module.open_ledger_store(config)))
        self.plans.clear()
        report = run_module.run_index(config, embedding_func=self.embedding)
        if not self.plans:  # nothing changed on disk: answered from the manifest, no plan made
            assert not (want.new or want.changed or want.deleted) and not report.notes_indexed
            return want, want, self.derived[-1]
        return self.plans[-1], want, self.derived[-1]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_index_from_saved_rows_plans_and_stores_what_a_fresh_one_does(tmp_path: Path, monkeypatch, seed: int):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    rng = random.Random(seed)
    runs = _Runs(monkeypatch)
    overrides: list[str] = []
    config = load_config(vault)
    runs.index(config)
    restored = 0
    for step in range(10):
        kinds = [random_edit(rng, vault, step) for _ in range(rng.choice([1, 1, 2]))]
        if "config" in kinds:  # a route override between runs: decisions of every note are stale
            overrides = [] if overrides else [rng.choice(["daily/*=skip", "people/*=extract", "inject"])]
        config = load_config(vault, route_overrides=overrides)
        got, want, derived = runs.index(config)
        same_plan(got, want)
        restored += len(derived.restored & derived.decided & derived.signed)
        if step % 5 == 4:  # the store equals an index made from scratch
            fresh = load_config(vault, store=tmp_path / f"fresh{step}", route_overrides=overrides)
            run_module.run_index(fresh, embedding_func=runs.embedding)
            assert snapshot(config) == snapshot(fresh), kinds
    assert restored > 0  # the rows were used, not only written


def _rows(config) -> sqlite3.Connection:
    return sqlite3.connect(config.workspace_dir / "wikirag_index.sqlite", isolation_level=None)


def test_damaged_or_stale_rows_are_not_trusted(tmp_path: Path, monkeypatch):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    runs = _Runs(monkeypatch)
    config = load_config(vault)
    got, _, _ = runs.index(config)
    note = next(p for p in sorted(vault.rglob("*.md")) if "[[" in p.read_text())
    rel = note.relative_to(vault).as_posix()
    edited = next(p for p in sorted(vault.rglob("*.md")) if p != note)

    # hand-edited: another valid-looking resolution and decision for one note; the row's checksum no longer fits
    db = _rows(config)
    links, decision = db.execute("SELECT links, decision FROM derived_notes WHERE path = ?", (rel,)).fetchone()
    items = json.loads(links)
    first = next(item for item in items if item[0] == "r")
    first[1] = next(p for p in sorted(got.vault.notes) if p not in (rel, first[1]))
    route = json.loads(decision)
    route[0] = "skip" if route[0] != "skip" else "inject"
    db.execute("UPDATE derived_notes SET links = ?, decision = ? WHERE path = ?",
               (json.dumps(items, separators=(",", ":")), json.dumps(route, separators=(",", ":")), rel))
    db.close()
    edited.write_text(edited.read_text() + "\nEdited.\n")
    got, want, derived = runs.index(config)
    assert rel not in derived.restored and len(derived.restored) > 10
    same_plan(got, want)

    # another path set: a note added, no resolution is taken from the rows
    (vault / "A new note.md").write_text("New. [[Index]]\n")
    got, want, derived = runs.index(config)
    assert not derived.restored
    same_plan(got, want)

    # another config: resolutions are restored, decisions and signatures are not
    edited.write_text(edited.read_text() + "\nEdited again.\n")
    other = load_config(vault, route_overrides=["inject"])
    got, want, derived = runs.index(other)
    assert derived.restored and not derived.decided and not derived.signed
    same_plan(got, want)

    # a context document naming this path set over rows of another: a bogus key is not believed blindly either
    db = _rows(other)
    db.execute("UPDATE docs SET value = '{\"version\": 999}' WHERE name = 'derived_notes'")
    db.close()
    assert not load_derived(other.workspace_dir, run_module._config_key(other)).paths_digest
    got, want, derived = runs.index(other)
    assert not derived.restored
    same_plan(got, want)

    # a damaged table: ignored, and rebuilt by the run
    db = _rows(other)
    db.execute("UPDATE derived_notes SET links = '[not json', checksum = 'x'")
    db.close()
    edited.write_text(edited.read_text() + "\nAnd again.\n")
    got, want, derived = runs.index(other)
    assert not derived.restored
    same_plan(got, want)
    edited.write_text(edited.read_text() + "\nOnce more.\n")
    got, want, derived = runs.index(other)
    assert len(derived.restored) == len(got.vault.notes) - 1
    same_plan(got, want)

    # rows saved under another LightRAG: its name normalisation made their unresolved link names, not trusted
    import wikirag.index.derived as derived_module

    monkeypatch.setattr(derived_module, "normalizer_version", lambda: "0.0-another")
    edited.write_text(edited.read_text() + "\nUnder another LightRAG.\n")
    got, want, derived = runs.index(other)
    assert not derived.restored
    same_plan(got, want)



def test_the_names_digest_takes_a_lone_surrogate():
    """Should a lone surrogate reach an entity name (the parser keeps YAML's escapes out of titles today), the
    rows' context digest is still taken (orjson refuses such text) and still tells names apart."""
    from wikirag.index.derived import names_key

    odd = names_key({"a.md": "Odd \ud800"}, {})
    assert len(odd) == 40 and odd != names_key({"a.md": "Odd \ud801"}, {}) != names_key({"a.md": "Odd"}, {})


def test_an_edit_run_decodes_no_unchanged_note_from_the_parse_cache(tmp_path: Path, monkeypatch):
    """Work proportional to the change: after one note is edited, the run re-parses that note and restores every
    other note's resolutions and signature without decoding its text or links (index.parsecache.CachedNote,
    vault.model.RestoredLinks); the store it leaves equals a fresh index."""
    from tests.storekit import indexed_copy
    from wikirag.index.parsecache import CachedNote
    from wikirag.index.run import run_index

    config = indexed_copy(SAMPLE, tmp_path / "vault")
    edited = sorted(config.vault.rglob("*.md"))[10]
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more line about [[Alan Turing]].\n",
                      encoding="utf-8")
    decoded: list[str] = []
    real = CachedNote._materialize

    def counting(self):
        if type(self) is CachedNote:
            decoded.append(self.path)
        return real(self)

    monkeypatch.setattr(CachedNote, "_materialize", counting)
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert report.notes_changed == 1 and decoded == []
    fresh = load_config(copy_vault(config.vault, tmp_path / "fresh"), store=tmp_path / "fresh_store")
    run_index(fresh, embedding_func=HashEmbedding().func())
    assert snapshot(config) == snapshot(fresh)


def test_rows_from_before_the_unresolved_column_are_dropped_and_written_again(tmp_path: Path, monkeypatch):
    """A store whose `derived_notes` has no `unresolved` column (DERIVED_VERSION 2): the table is created anew on
    open, the run derives every note as a first one does, and the next run restores from the new rows."""
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    runs = _Runs(monkeypatch)
    config = load_config(vault)
    runs.index(config)
    db = _rows(config)
    db.execute("DROP TABLE derived_notes")
    db.execute("CREATE TABLE derived_notes (path TEXT PRIMARY KEY, digest TEXT NOT NULL, links TEXT NOT NULL, "
               "decision TEXT NOT NULL, signature TEXT NOT NULL, checksum TEXT NOT NULL)")
    db.execute("INSERT INTO derived_notes VALUES ('Index.md', 'x', '[]', '[]', '', '0')")
    db.close()
    edited = sorted(vault.rglob("*.md"))[3]
    edited.write_text(edited.read_text() + "\nEdited.\n")
    got, want, derived = runs.index(config)
    assert not derived.restored
    same_plan(got, want)
    db = _rows(config)
    assert "unresolved" in {row[1] for row in db.execute("PRAGMA table_info(derived_notes)")}
    assert db.execute("SELECT count(*) FROM derived_notes").fetchone()[0] == len(got.vault.notes)
    db.close()
    edited.write_text(edited.read_text() + "\nEdited again.\n")
    got, want, derived = runs.index(config)
    assert len(derived.restored) == len(got.vault.notes) - 1
    same_plan(got, want)


def test_a_vault_with_restored_links_is_freed_without_the_cycle_collector(tmp_path: Path, monkeypatch):
    """Restored links reach their vault through a weak reference: a run's vault goes when its last reference
    does (a process that indexes again and again, such as a library caller, does not pile up vaults between
    collections), and a restored note still resolves its links again while its vault lives."""
    import gc
    import weakref

    from wikirag.index.parsecache import load_parse_cache
    from wikirag.vault.model import RestoredLinks, Vault

    vault_dir = copy_vault(SAMPLE, tmp_path / "vault")
    runs = _Runs(monkeypatch)
    config = load_config(vault_dir)
    runs.index(config)
    cache = load_parse_cache(config.workspace_dir, config.index.encoding)
    derived = load_derived(config.workspace_dir, run_module._config_key(config))
    vault = Vault.load(vault_dir, parsed={p: (d, n) for p, (d, n, _) in cache.items()}, trusted=cache.stats,
                       restore=derived)
    path = next(p for p in vault.notes if isinstance(vault._outgoing[p], RestoredLinks) and vault.notes[p].links)
    pairs = vault._outgoing[path]
    link = vault.notes[path].links[0]
    assert pairs.resolve(link) == vault.resolve(path, link) and pairs.resolve(link).status != "unresolved"
    gone = weakref.ref(vault)
    was = gc.isenabled()
    gc.disable()
    try:
        del vault, pairs
        assert gone() is None
    finally:
        if was:
            gc.enable()
