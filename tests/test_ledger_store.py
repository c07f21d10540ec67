"""The ledger's SQLite rows: incremental saves, the JSON migration, and indexes kept current."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from wikirag.graph.records import EntityFragment, RelationFragment
from wikirag.index.ledger import Ledger, NoteEntry, Pending, _entry_to_dict
from wikirag.storage.ledger_store import FileLedgerStore
from wikirag.storage.sqlite_store import INDEX_DB_FILENAME, SqliteLedgerStore


def _entry(i: int, names: list[str]) -> NoteEntry:
    me = f"Note {i}"
    entities = [EntityFragment(me, "note", f"about {i}", [f"c{i}"], f"n{i}.md", 0)]
    entities += [EntityFragment(n, None, f"{me} links {n}", [f"c{i}"], f"n{i}.md", 1) for n in names]
    relations = [RelationFragment(me, n, "link", ["link"], [f"c{i}"], f"n{i}.md", 1) for n in names if n != me]
    return NoteEntry(f"d{i}", f"s{i}", doc_id=f"doc-{i}", entity=me, chunk_ids=[f"c{i}"],
                     entities=entities, relations=relations)


def _rebuilt(ledger: Ledger) -> tuple[dict, dict]:
    entities: dict = {}
    relations: dict = {}
    for entry in ledger.notes.values():
        for f in entry.entities:
            entities.setdefault(f.name, []).append(f)
        for f in entry.relations:
            relations.setdefault(tuple(sorted((f.src, f.tgt))), []).append(f)
    return entities, relations


def _same(index, rebuilt: dict) -> bool:
    # fragments are dataclasses of plain values: compare them as sorted reprs
    return set(index) == set(rebuilt) and all(sorted(map(repr, index[k])) == sorted(map(repr, rebuilt[k]))
                                              for k in rebuilt)


def test_a_save_writes_only_the_notes_that_changed(tmp_path: Path):
    ws = tmp_path / "ws"
    ledger = Ledger.load(ws)
    for i in range(50):
        ledger.notes[f"n{i}.md"] = _entry(i, [f"Note {(i + 1) % 50}"])
    ledger.save()
    written: list[tuple[dict, list]] = []
    store = SqliteLedgerStore(ws)
    real = store.save_rows
    store.save_rows = lambda head, upserts, deletes=(), **kw: written.append((dict(upserts), list(deletes))) or real(
        head, upserts, deletes, **kw)
    again = Ledger.load(store)
    again.notes["n3.md"] = _entry(3, ["Gap"])
    again.notes.pop("n7.md")
    again.pending = Pending(entities={"Gap"})
    again.save()
    assert [(sorted(u), d) for u, d in written] == [(["n3.md"], ["n7.md"])]
    third = Ledger.load(ws)
    assert sorted(third.notes) == sorted(p for p in ledger.notes if p != "n7.md")
    assert third.notes["n3.md"].relations[0].tgt == "Gap" and third.pending.entities == {"Gap"}


def test_a_json_ledger_is_moved_into_sqlite_on_first_open(tmp_path: Path):
    ws = tmp_path / "ws"
    ledger = Ledger()
    for i in range(5):
        ledger.notes[f"n{i}.md"] = _entry(i, ["Gap"])
    ledger.pending = Pending(chunk_notes={"n1.md"}, relations={("Gap", "Note 1")})
    ledger.meta = {"embedding": "local:x:384"}
    ledger.save(FileLedgerStore(ws))  # what an older wikirag wrote
    assert (ws / "wikirag_ledger.json").exists()
    moved = Ledger.load(ws)
    assert not (ws / "wikirag_ledger.json").exists() and (ws / INDEX_DB_FILENAME).exists()
    assert moved.notes == ledger.notes and moved.meta == ledger.meta and moved.pending == ledger.pending
    assert Ledger.load(ws).notes == ledger.notes  # and it stays moved


def test_a_failed_save_changes_nothing(tmp_path: Path):
    ws = tmp_path / "ws"
    ledger = Ledger.load(ws)
    ledger.notes["a.md"] = _entry(1, [])
    ledger.save()
    del ledger.notes["a.md"]  # deleted first inside the transaction...
    bad = EntityFragment("x", None, {"not", "json"}, [], "c.md", 0)  # ...then this row fails to encode
    ledger.notes["c.md"] = NoteEntry("d", "s", entities=[bad])
    with pytest.raises(TypeError):
        ledger.save()
    db = sqlite3.connect(ws / INDEX_DB_FILENAME)
    assert [r[0] for r in db.execute("SELECT path FROM ledger_notes")] == ["a.md"]


def test_the_entity_and_relation_indexes_follow_every_change(tmp_path: Path):
    rng = random.Random(5)
    ledger = Ledger.load(tmp_path / "ws")
    names = [f"Note {i}" for i in range(30)] + ["Gap", "Other gap"]
    for step in range(400):
        i = rng.randrange(30)
        if step % 3 == 2 and f"n{i}.md" in ledger.notes:
            del ledger.notes[f"n{i}.md"]
        else:
            ledger.notes[f"n{i}.md"] = _entry(i, rng.sample(names, rng.randint(0, 4)))
        if step % 50 == 0:
            ledger.entity_index()  # built midway, then kept current
    entities, relations = _rebuilt(ledger)
    assert _same(ledger.entity_index(), entities) and _same(ledger.relation_index(), relations)
    assert len(ledger.entity_index()) == len(entities)


def test_fragments_of_some_names_equal_the_full_indexes(tmp_path: Path):
    """A run that touches a few names reads their fragments in one pass instead of indexing every name;
    what it finds (and the record counts) equals the indexes'."""
    rng = random.Random(7)
    ledger = Ledger.load(tmp_path / "ws")
    names = [f"Note {i}" for i in range(40)] + ["Gap", "Other gap"]
    for i in range(40):
        ledger.notes[f"n{i}.md"] = _entry(i, rng.sample(names, rng.randint(0, 4)))
    wanted = {"Note 3", "Gap", "Nobody"}
    keys = {("Note 1", "Note 2"), *(tuple(sorted((f.src, f.tgt))) for f in ledger.notes["n5.md"].relations)}
    assert not ledger.notes.indexed
    entities, relations = ledger.fragments_of(wanted, keys)
    counts = ledger.record_counts()
    assert not ledger.notes.indexed  # one pass, no index built
    full_e, full_r = ledger.entity_index(), ledger.relation_index()
    assert _same(entities, {n: full_e[n] for n in wanted if n in full_e}) and "Nobody" not in entities
    assert _same(relations, {k: full_r[k] for k in keys if k in full_r}) and relations
    assert counts == (len(full_e), len(full_r)) == ledger.record_counts()


def test_stats_graph_figures_from_the_ledger_equal_the_stores(tmp_path: Path):
    from tests.storekit import HashEmbedding, copy_vault
    from wikirag.index.run import run_index
    from wikirag.query.export import store_graph_stats
    from wikirag.query.ledger_stats import ledger_graph_stats
    from wikirag.settings import load_config

    vault = copy_vault(Path(__file__).resolve().parent.parent / "sample_vault", tmp_path / "vault")
    config = load_config(vault, store=tmp_path / "store")
    assert ledger_graph_stats(config) is None
    run_index(config, embedding_func=HashEmbedding().func())
    note = next(iter(sorted(vault.rglob("*.md"))))
    note.write_text(note.read_text(encoding="utf-8") + "\nSee [[A brand new gap]].\n", encoding="utf-8")
    run_index(config, embedding_func=HashEmbedding().func())
    from_ledger = ledger_graph_stats(config)
    assert from_ledger.nodes > 40 and from_ledger == store_graph_stats(config)


class _CountingStore:
    """A row store that records which rows were fetched (decoded) and how often."""

    def __init__(self, store) -> None:
        self.store, self.fetched = store, []

    def __getattr__(self, name):
        return getattr(self.store, name)

    def fetch(self, paths):
        self.fetched.append(sorted(paths))
        return self.store.fetch(paths)


def check_lazy_reads(make_store) -> None:
    """A loaded ledger reads every note's summary without decoding rows, decodes only the notes asked for,
    and its fragments, record counts and saves equal those of a fully decoded ledger. Shared with the
    PostgreSQL tests (`make_store()` returns a fresh store object over the same rows)."""
    rng = random.Random(11)
    names = [f"Note {i}" for i in range(60)] + ["Gap", "Other gap"]
    ledger = Ledger.load(make_store())
    for i in range(60):
        ledger.notes[f"n{i}.md"] = _entry(i, rng.sample(names, rng.randint(0, 4)))
    ledger.save()
    counting = _CountingStore(make_store())
    lazy = Ledger.load(counting)
    assert len(lazy.notes) == 60 and "n3.md" in lazy.notes and not counting.fetched
    for path, entry in ledger.notes.items():
        row = lazy.notes.summary(path)
        assert (row.signature, row.status, row.chunk_digest, row.chunks) == (
            entry.signature, entry.status, entry.chunk_digest, len(entry.chunk_ids))
        assert row.digest == ledger.notes.digests[path]
    assert not counting.fetched
    assert lazy.notes["n3.md"] == ledger.notes["n3.md"] and counting.fetched == [["n3.md"]]
    # the store counts (nothing decoded), as the indexes of every decoded fragment do
    assert lazy.record_counts() == (len(ledger.entity_index()), len(ledger.relation_index()))
    assert counting.fetched == [["n3.md"]]
    lazy.notes.load(["n1.md", "n3.md", "n1.md", "missing.md", "n2.md"])  # one read, each stored row once
    assert counting.fetched[-1] == ["n1.md", "n2.md"] and len(counting.fetched) == 2

    # unsaved changes: set, removed while still undecoded, added
    eager = Ledger.load(make_store())
    eager.notes.load_all()
    for table in (lazy.notes, eager.notes):
        table["n5.md"] = _entry(5, ["Gap", "Note 9"])
        del table["n7.md"]
        table["n60.md"] = _entry(60, ["Note 3", "Other gap"])
    wanted = {"Note 3", "Gap", "Note 7", "Nobody"}
    keys = {("Gap", "Note 5"), ("Note 3", "Note 60"), *(tuple(sorted((f.src, f.tgt)))
                                                       for f in eager.notes["n11.md"].relations)}
    found_e, found_r = lazy.fragments_of(wanted, keys)
    full_e, full_r = eager.entity_index(), eager.relation_index()
    assert _same(found_e, {n: full_e[n] for n in wanted if n in full_e})
    assert all(f.file_path != "n7.md" for fs in found_e.values() for f in fs)  # the removed note's are gone
    assert _same(found_r, {k: full_r[k] for k in keys if k in full_r}) and found_r
    assert len({p for batch in counting.fetched for p in batch}) < 40  # the holders, not every note

    lazy.save()
    reread = Ledger.load(make_store())
    assert reread.notes == eager.notes and reread.record_counts() == (len(full_e), len(full_r))
    assert {p: reread.notes.summary(p).digest for p in reread.notes} == lazy.notes.digests


def test_a_loaded_ledger_decodes_only_the_notes_asked_for(tmp_path: Path):
    check_lazy_reads(lambda: SqliteLedgerStore(tmp_path / "ws"))


def test_a_ledger_from_before_row_digests_gets_them_on_open(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    db = sqlite3.connect(ws / INDEX_DB_FILENAME)
    db.execute("CREATE TABLE docs (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("CREATE TABLE ledger_notes (path TEXT PRIMARY KEY, entry TEXT NOT NULL)")  # the old schema
    db.execute("INSERT INTO docs VALUES ('ledger', ?)", (json.dumps({"version": 1, "meta": {}, "pending": {}}),))
    entries = {f"n{i}.md": _entry(i, ["Gap"]) for i in range(3)}
    db.executemany("INSERT INTO ledger_notes VALUES (?, ?)",
                   [(p, json.dumps(_entry_to_dict(e))) for p, e in entries.items()])
    db.commit()
    db.close()
    ledger = Ledger.load(ws)
    digests = {p: ledger.notes.summary(p).digest for p in ledger.notes}
    assert all(len(d) == 40 for d in digests.values()) and len(set(digests.values())) == 3
    assert dict(ledger.notes.items()) == entries and ledger.record_counts() == (4, 3)
    ledger.notes["n1.md"] = _entry(1, ["Other gap"])
    ledger.save()
    again = Ledger.load(ws)
    assert again.notes.summary("n1.md").digest != digests["n1.md"]
    assert again.notes.summary("n2.md").digest == digests["n2.md"] and again.notes == ledger.notes


def test_small_documents_keep_their_values(tmp_path):
    """A document comes back as it was stored: NaN, infinities and integers beyond 64 bits too (orjson, used for
    the manifest only, would turn the first into null and read the last as floats without an error)."""
    import math

    from wikirag.storage.sqlite_store import connect_index_db, get_doc, put_doc

    conn = connect_index_db(tmp_path)
    value = {"nan": math.nan, "inf": math.inf, "big": 2**70, "neg": -(2**65), "text": "é\ud800", "list": [1, 2.5]}
    put_doc(conn, "doc", value)
    back = get_doc(conn, "doc")
    assert math.isnan(back.pop("nan")) and back == {k: v for k, v in value.items() if k != "nan"}
    manifest = {"notes": {"a.md": [12, 1796160626846270974]}, "issues": ["b.md: bad \ud800"], "big": 2**70}
    put_doc(conn, "manifest", manifest, fast=True)  # what orjson refuses goes through json
    assert get_doc(conn, "manifest", fast=True) == manifest
    put_doc(conn, "manifest", {"notes": {"a.md": [12, 7]}}, fast=True)
    assert get_doc(conn, "manifest", fast=True) == {"notes": {"a.md": [12, 7]}}
    conn.close()
