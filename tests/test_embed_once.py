"""A run in several batches embeds each record once, with its final text, and stores what one batch stores
(index/apply.py: a record later batches touch again has its vector owed until the last of them). Crashes and
stops between or inside batches leave a store the next run completes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.storekit import HashEmbedding, ledger_doc, snapshot
from tests.vault_edits import random_edit
from wikirag.index import apply
from wikirag.index.run import run_index
from wikirag.lightrag.ids import md5_id
from wikirag.lightrag.writer import StoreWriter
from wikirag.settings import WikiragConfig, load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


def hub_vault(root: Path, notes: int = 9) -> Path:
    """Notes that all link a hub note (processed last), a target without a note, and each other both ways (an
    undirected relation whose two ends lie in different batches)."""
    root.mkdir(parents=True)
    for i in range(notes):
        back = notes - 1 - i  # N0 <-> N8 lie in the first and the last batch
        (root / f"N{i}.md").write_text(f"# N{i}\n\nN{i} is filed under [[Zeta hub]] and cites [[Ghost]] and "
                                       f"[[N{back}]] for the proof.\n")
    (root / "Zeta hub.md").write_text("# Zeta hub\n\nThe hub of this vault, see [[N0]].\n")
    return root


def index(vault: Path, store: Path, batch_size: int, **kwargs):
    config = load_config(vault, store=store)
    config.index.batch_size = batch_size
    embedder = HashEmbedding()
    report = run_index(config, embedding_func=embedder.func(), **kwargs)
    return config, report, embedder


def owes_nothing(config: WikiragConfig) -> None:
    """Every graph node and edge has its vector row, and the ledger promises nothing."""
    snap = snapshot(config)
    assert not any(snap["pending"].values())
    assert set(snap["vdb_entities"]) == {md5_id(n, "ent-") for n in snap["nodes"]}
    assert set(snap["vdb_relationships"]) == {md5_id(a + b, "rel-") for a, b in snap["edges"]}
    for name, node in snap["nodes"].items():  # the vector's text is the node's current one
        assert snap["vdb_entities"][md5_id(name, "ent-")]["content"] == f"{name}\n{node['description']}"


def test_records_several_batches_touch_are_embedded_once(tmp_path):
    vault = hub_vault(tmp_path / "vault")
    _, whole, one_batch = index(vault, tmp_path / "whole", 1000)
    config, report, batches = index(vault, tmp_path / "batches", 2)
    assert report.entities_written > report.entities  # the hub's node was written by several batches
    assert batches.texts == one_batch.texts == report.chunks + report.entities + report.relations
    owes_nothing(config)


def test_a_run_in_batches_stores_what_one_batch_stores(tmp_path):
    vault = hub_vault(tmp_path / "vault")
    whole, _, _ = index(vault, tmp_path / "whole", 1000)
    config, _, _ = index(vault, tmp_path / "batches", 2)
    assert snapshot(config) == snapshot(whole)


@pytest.mark.parametrize("seed", [1, 2])
def test_incremental_runs_in_batches_equal_a_fresh_index(tmp_path, seed):
    """Edits of every kind (renames, deletions, new notes resolving links) applied two notes a batch."""
    rng = random.Random(seed)
    from tests.storekit import copy_vault

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    config, _, _ = index(vault, tmp_path / "store", 2)
    for step in range(6):
        random_edit(rng, vault, step, ("text", "link", "title", "alias", "new resolving", "delete", "rename"))
    index(vault, tmp_path / "store", 2)
    owes_nothing(config)
    fresh, _, _ = index(vault, tmp_path / "fresh", 1000)
    assert snapshot(config) == snapshot(fresh)


def test_a_stop_between_batches_leaves_no_vector_owed(tmp_path):
    vault = hub_vault(tmp_path / "vault")
    asked = iter([False, True])  # batch 1 runs, then a Ctrl-C arrives
    config, report, _ = index(vault, tmp_path / "store", 2, should_stop=lambda: next(asked))
    assert report.interrupted and report.notes_indexed == 2
    owes_nothing(config)  # the hub's node, written by batch 1, has its vector
    _, report, _ = index(vault, tmp_path / "store", 2)
    assert not report.interrupted and not report.recovered_pending
    whole, _, _ = index(vault, tmp_path / "whole", 1000)
    assert snapshot(config) == snapshot(whole)


def test_a_crash_between_batches_leaves_the_owed_vectors_in_pending(tmp_path, monkeypatch):
    vault = hub_vault(tmp_path / "vault")
    original = apply.contribution_for
    calls = {"n": 0}

    def dies_in_batch_two(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the first note of batch 2: batch 1 is flushed, the hub's vector owed
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(apply, "contribution_for", dies_in_batch_two)
    with pytest.raises(KeyboardInterrupt):
        index(vault, tmp_path / "store", 2)
    monkeypatch.setattr(apply, "contribution_for", original)
    config = load_config(vault, store=tmp_path / "store")
    promised = ledger_doc(config.workspace_dir)["pending"]
    snap = snapshot(config)
    assert "Zeta hub" in promised["entities"] and "Zeta hub" in snap["nodes"]
    assert md5_id("Zeta hub", "ent-") not in snap["vdb_entities"]  # owed, and the ledger says so

    config, report, _ = index(vault, tmp_path / "store", 2)
    assert report.recovered_pending
    owes_nothing(config)
    whole, _, _ = index(vault, tmp_path / "whole", 1000)
    assert snapshot(config) == snapshot(whole)


@pytest.mark.parametrize(("method", "owed"), [("upsert_entities", "Zeta hub"), ("upsert_relations", ("N0", "N8"))])
def test_a_writer_failing_while_an_owed_vector_is_written_is_completed_by_the_next_run(tmp_path, monkeypatch,
                                                                                       method, owed):
    vault = hub_vault(tmp_path / "vault")
    original = getattr(StoreWriter, method)
    seen = {"deferred": False}

    def key(record: dict) -> str | tuple[str, str]:
        return record["entity_id"] if "entity_id" in record else (record["src_id"], record["tgt_id"])

    async def fails(self, records, *, defer_vectors=()):
        if any(key(r) == owed for r in records):
            if owed in defer_vectors:
                seen["deferred"] = True
            elif seen["deferred"]:  # the batch that writes its vector at last: half written, then the process dies
                await original(self, [r for r in records if key(r) != owed])
                raise KeyboardInterrupt
        await original(self, records, defer_vectors=defer_vectors)

    monkeypatch.setattr(StoreWriter, method, fails)
    with pytest.raises(KeyboardInterrupt):
        index(vault, tmp_path / "store", 2)
    monkeypatch.setattr(StoreWriter, method, original)
    config = load_config(vault, store=tmp_path / "store")
    promised = ledger_doc(config.workspace_dir)["pending"]
    assert (owed in promised["entities"]) if isinstance(owed, str) else (list(owed) in promised["relations"])

    config, report, _ = index(vault, tmp_path / "store", 2)
    assert report.recovered_pending
    owes_nothing(config)
    whole, _, _ = index(vault, tmp_path / "whole", 1000)
    assert snapshot(config) == snapshot(whole)


def stored_texts(config: WikiragConfig) -> set[str]:
    snap = snapshot(config)
    return {r["content"] for part in ("vdb_chunks", "vdb_entities", "vdb_relationships") for r in snap[part].values()}


def test_a_record_a_deleted_note_held_is_embedded_once_when_a_changed_note_touches_it_too(tmp_path):
    """A one-batch run (what `watch` makes of a save): the deletion step leaves Ghost's vector to the batch that
    changes its other mention, instead of embedding the text in between."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "A.md").write_text("# A\n\nA cites [[Ghost]] in passing.\n")
    (vault / "B.md").write_text("# B\n\nB cites [[Ghost]] for a start.\n")
    (vault / "C.md").write_text("# C\n\nC stands alone.\n")
    config, _, _ = index(vault, tmp_path / "store", 1000)
    before = stored_texts(config)
    (vault / "A.md").unlink()
    (vault / "B.md").write_text("# B\n\nB cites [[Ghost]] for the second time.\n")
    _, report, embedder = index(vault, tmp_path / "store", 1000)
    assert report.notes_deleted == 1 and report.notes_indexed == 1
    assert embedder.texts == len(stored_texts(config) - before)  # each new text once, none in between
    owes_nothing(config)
    fresh, _, _ = index(vault, tmp_path / "fresh", 1000)
    assert snapshot(config) == snapshot(fresh)
