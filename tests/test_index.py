"""The index pipeline end to end on real LightRAG file stores (fast hashed embeddings)."""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path

import pytest

from tests.storekit import HashEmbedding, age_vault_files, copy_vault, ledger_doc, snapshot
from wikirag.errors import StoreLocked, StoreMismatch
from wikirag.graph.contribution import plain_text
from wikirag.graph.naming import note_entity_names
from wikirag.index.run import StoreLock, run_index
from wikirag.lightrag.writer import StoreWriter
from wikirag.settings import load_config
from wikirag.vault.model import Vault

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


def index(vault: Path, store: Path, **kwargs):
    config = load_config(vault, store=store)
    return config, run_index(config, embedding_func=HashEmbedding().func(), **kwargs)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_vault(SAMPLE, tmp_path / "vault")


def test_every_resolved_link_becomes_an_edge_with_its_sentence(vault, tmp_path):
    config, report = index(vault, tmp_path / "store")
    snap = snapshot(config)
    loaded = Vault.load(vault)
    names = note_entity_names(loaded.notes)
    checked = 0
    for path in loaded.notes:
        if loaded.notes[path].route_override == "skip":  # `wikirag: skip` keeps a note out of the index
            continue
        for link, resolution in loaded.outgoing(path):
            if not resolution.path or resolution.path == path or resolution.is_attachment:
                continue
            key = tuple(sorted((names[path], names[resolution.path])))
            assert key in snap["edges"], f"{path}: {link.raw} has no edge"
            edge = snap["edges"][key]
            assert path in edge["file_path"]
            context = plain_text(link.context)
            if link.context and len(context.split()) > len(plain_text(link.raw).split()) + 1:
                assert context in edge["description"], (link.raw, edge["description"])
            checked += 1
    assert checked > 100
    assert report.notes_total == len(loaded.notes)
    assert report.notes_skipped == 1
    assert not any(p == "daily/2024-03-11.md" for n in snap["nodes"].values() for p in n["file_path"])
    assert report.relations == len(snap["edges"])
    assert report.chunks == len(snap["chunks"]) == len(snap["vdb_chunks"])
    assert set(snap["vdb_chunks"]) == set(snap["chunks"])
    assert len(snap["vdb_entities"]) == len(snap["nodes"])
    assert len(snap["vdb_relationships"]) == len(snap["edges"])


def test_records_carry_their_notes_and_chunks(vault, tmp_path):
    config, _ = index(vault, tmp_path / "store")
    snap = snapshot(config)
    bombe = snap["nodes"]["Bombe"]
    assert bombe["entity_type"] == "machine"
    assert "projects/Bombe.md" in bombe["file_path"]
    assert all(c in snap["chunks"] for c in bombe["source_id"])
    # an unresolved link is a first-class node of its own type
    assert snap["nodes"]["Purple cipher"]["entity_type"] == "unresolved"
    # notes named by their frontmatter title; same-name notes stay two entities
    assert {"The Enigma machine", "Enigma (cipher principle)"} <= set(snap["nodes"])
    # titles equal but for case (concepts/Frequency analysis, daily/frequency Analysis) are qualified
    assert {"Frequency analysis (concepts)", "frequency Analysis (daily)"} <= set(snap["nodes"])
    # chunk texts are the notes' own text, with the vault-relative path (not a basename)
    for chunk in snap["chunks"].values():
        [path] = chunk["file_path"]
        assert "/" in path or path.endswith(".md")
        assert chunk["content"].strip()


def test_unchanged_vault_reindexes_nothing(vault, tmp_path):
    config, first = index(vault, tmp_path / "store")
    embedder = HashEmbedding()
    second = run_index(config, embedding_func=embedder.func())
    assert second.notes_unchanged == first.notes_total - first.notes_skipped
    assert second.notes_indexed == 0
    assert embedder.texts == 0
    assert second.entities == first.entities and second.relations == first.relations


def _edit_vault(vault: Path) -> None:
    """Edits of every kind: change, delete, rename, new note resolving old links, duplicate title."""
    turing = vault / "people" / "Alan Turing.md"
    turing.write_text(turing.read_text().replace("Bletchley", "Bletchley Park, Buckinghamshire,"))
    (vault / "projects" / "Venona.md").unlink()
    (vault / "people" / "Tommy Flowers.md").rename(vault / "people" / "Thomas Flowers.md")
    (vault / "concepts" / "Purple cipher.md").write_text(
        "---\ntype: cipher\n---\nPurple was the Japanese diplomatic cipher machine broken by "
        "[[William Friedman]]'s team in 1940.\n"
    )
    (vault / "people" / "Bombe.md").write_text("A person nicknamed Bombe, linked to [[Alan Turing]].\n")
    shutil.rmtree(vault / "summaries")


def test_incremental_index_equals_a_fresh_index(vault, tmp_path):
    config, _ = index(vault, tmp_path / "store")
    _edit_vault(vault)
    _, report = index(vault, tmp_path / "store")
    assert report.notes_deleted >= 4 and report.notes_new == 3
    assert report.notes_changed > 0  # notes whose [[Purple cipher]] now resolves, and the renamed target
    fresh_config, _ = index(vault, tmp_path / "fresh")
    assert snapshot(config) == snapshot(fresh_config)


def test_a_changed_title_or_alias_leaves_no_stale_record(vault, tmp_path):
    """Chunks carry their note's title (the section breadcrumb): a new title must reach every stored field."""
    config, _ = index(vault, tmp_path / "store")
    note = vault / "people" / "Alan Turing.md"
    text = note.read_text()
    note.write_text("---\ntitle: Alan Mathison Turing\naliases: [Prof]\n---\n" + text.split("---\n", 2)[-1]
                    if text.startswith("---\n") else "---\ntitle: Alan Mathison Turing\naliases: [Prof]\n---\n" + text)
    index(vault, tmp_path / "store")
    fresh_config, _ = index(vault, tmp_path / "fresh")
    assert snapshot(config) == snapshot(fresh_config)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_edit_sequences_keep_the_fresh_index_invariant(tmp_path, seed):
    rng = random.Random(seed)
    vault = tmp_path / "vault"
    (vault / "a").mkdir(parents=True)
    names = [f"N{i}" for i in range(12)]

    def write(name: str) -> None:
        links = " and ".join(f"[[{rng.choice(names + ['Ghost', 'a/N1'])}]]" for _ in range(rng.randint(0, 4)))
        folder = vault / ("a" if rng.random() < 0.3 else "")
        (folder / f"{name}.md").write_text(f"# {name}\n\n{name} relates to {links}.\n\nMore text {rng.random()}.\n")

    for name in names[:8]:
        write(name)
    config, _ = index(vault, tmp_path / "store")
    for _round in range(3):
        for _ in range(4):
            notes = sorted(vault.rglob("*.md"))
            action = rng.choice(["edit", "delete", "add", "rename"])
            if action == "edit" and notes:
                target = rng.choice(notes)
                target.write_text(target.read_text() + f"\nEdited, see [[{rng.choice(names)}]].\n")
            elif action == "delete" and notes:
                rng.choice(notes).unlink()
            elif action == "add":
                write(rng.choice(names))
            elif action == "rename" and notes:
                source = rng.choice(notes)
                source.rename(source.with_name(f"{rng.choice(names)}-r.md"))
        index(vault, tmp_path / "store")
        fresh_config, _ = index(vault, tmp_path / f"fresh{_round}")
        assert snapshot(config) == snapshot(fresh_config)


def test_a_run_interrupted_mid_write_is_completed_by_the_next(vault, tmp_path, monkeypatch):
    config, _ = index(vault, tmp_path / "store")
    _edit_vault(vault)

    calls = {"n": 0}
    original = StoreWriter.upsert_relations

    async def crash(self, records, **kwargs):
        calls["n"] += 1
        await original(self, records[: len(records) // 2], **kwargs)  # half written, then the process "dies"
        raise KeyboardInterrupt

    monkeypatch.setattr(StoreWriter, "upsert_relations", crash)
    with pytest.raises(KeyboardInterrupt):
        index(vault, tmp_path / "store")
    assert calls["n"] == 1
    monkeypatch.setattr(StoreWriter, "upsert_relations", original)
    assert snapshot(config)["pending"]["entities"], "the promise must be on disk before the writes"

    _, report = index(vault, tmp_path / "store")
    assert report.recovered_pending
    fresh_config, _ = index(vault, tmp_path / "fresh")
    assert snapshot(config) == snapshot(fresh_config)


def test_a_second_writer_gets_a_clear_message(vault, tmp_path):
    config = load_config(vault, store=tmp_path / "store")
    with StoreLock(config), pytest.raises(StoreLocked, match="another wikirag process"):
        run_index(config, embedding_func=HashEmbedding().func())


def test_a_run_that_finds_nothing_changed_needs_no_lock(vault, tmp_path):
    """Nothing changed since the last completed run (the manifest matches): the answer comes before the lock is
    asked for, so it is given while another process holds it. With a change, the run needs the lock."""
    config, first = index(vault, tmp_path / "store")
    age_vault_files(vault)
    index(vault, tmp_path / "store")  # records the manifest for these stat data
    with StoreLock(config):
        again = run_index(config, embedding_func=HashEmbedding().func())
        assert again.notes_indexed == 0 and again.notes_unchanged == first.notes_total - first.notes_skipped
        note = vault / "projects" / "Bombe.md"
        note.write_text(note.read_text() + "\nOne more line.\n")
        with pytest.raises(StoreLocked, match="another wikirag process"):
            run_index(config, embedding_func=HashEmbedding().func())



def test_a_rebuild_cut_short_leaves_no_manifest_claiming_the_store(vault, tmp_path, monkeypatch):
    """`--rebuild` deleted the store's files in name order, wikirag's index database (the manifest, and on files
    the ledger) after LightRAG's: a rebuild killed in between left a manifest and a ledger that answered "nothing
    changed" over an empty store (found in review). Both go first now; the next run builds the store again."""
    import wikirag.storage.fs as fs

    config, first = index(vault, tmp_path / "store")
    age_vault_files(vault)
    index(vault, tmp_path / "store")  # records the manifest for these stat data
    real = fs.is_store_file

    def killed_after_the_index_db(path):  # the index database is gone, LightRAG's files not yet
        if path.name.startswith("kv_store"):
            raise KeyboardInterrupt("killed mid-wipe")
        return real(path)

    monkeypatch.setattr(fs, "is_store_file", killed_after_the_index_db)
    with pytest.raises(KeyboardInterrupt):
        run_index(config, rebuild=True, embedding_func=HashEmbedding().func())
    monkeypatch.undo()
    again = run_index(config, embedding_func=HashEmbedding().func())
    assert again.notes_unchanged == 0 and again.notes_indexed > 0
    assert snapshot(config) == snapshot(index(vault, tmp_path / "fresh")[0])


def rebuild_killed_mid_wipe(config, vault: Path, monkeypatch) -> None:
    """Delete a note of an indexed vault, then run `--rebuild` and "kill" it once the wipe has deleted the index
    database but not yet LightRAG's files (found by bench/crash_sweep.py --at write)."""
    import wikirag.storage.fs as fs

    (vault / "projects" / "Venona.md").unlink()  # the store holds records of a note the vault no longer has
    real = fs.is_store_file

    def killed_after_the_index_db(path):
        if path.name.startswith("kv_store"):
            raise KeyboardInterrupt("killed mid-wipe")
        return real(path)

    with monkeypatch.context() as patched:
        patched.setattr(fs, "is_store_file", killed_after_the_index_db)
        with pytest.raises(KeyboardInterrupt):
            run_index(config, rebuild=True, embedding_func=HashEmbedding().func())
    assert not (config.workspace_dir / "wikirag_index.sqlite").exists()
    assert all((config.workspace_dir / name).exists() for name in ("kv_store_text_chunks.json", "vdb_chunks.json"))


def test_a_rebuild_killed_mid_wipe_is_finished_by_the_next_run(vault, tmp_path, monkeypatch):
    """The next run found no ledger, wrote every note over LightRAG's remaining files and never deleted what the
    gone note had left there (its chunks, entity and relations stayed). It finishes the wipe first now."""
    config, _ = index(vault, tmp_path / "store")
    assert "Venona" in snapshot(config)["nodes"]
    rebuild_killed_mid_wipe(config, vault, monkeypatch)
    run_index(config, embedding_func=HashEmbedding().func())
    assert snapshot(config) == snapshot(index(vault, tmp_path / "fresh")[0])
    assert not (config.workspace_dir / "wikirag_rebuild.json").exists()


def test_a_store_refuses_another_embedding_model(vault, tmp_path, monkeypatch):
    index(vault, tmp_path / "store")
    monkeypatch.setenv("WIKIRAG_EMBEDDING", "openai:text-embedding-3-small")
    monkeypatch.setenv("WIKIRAG_EMBEDDING_DIM", "1536")
    with pytest.raises(StoreMismatch, match="--rebuild"):
        index(vault, tmp_path / "store")


def test_dry_run_writes_nothing(vault, tmp_path):
    config, report = index(vault, tmp_path / "store", dry_run=True)
    assert report.notes_new == report.notes_total - report.notes_skipped > 0
    assert not config.workspace_dir.exists()


def test_two_vaults_in_one_store_stay_apart(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "Alpha.md").write_text("Alpha links [[Beta]].\n")
    (two / "Gamma.md").write_text("Gamma links [[Delta]].\n")
    c1, _ = index(one, tmp_path / "shared")
    c2, _ = index(two, tmp_path / "shared")
    assert c1.workspace != c2.workspace
    assert set(snapshot(c1)["nodes"]) == {"Alpha", "Beta"}
    assert set(snapshot(c2)["nodes"]) == {"Gamma", "Delta"}


def test_the_store_is_a_plain_lightrag_working_dir(vault, tmp_path):
    config, _ = index(vault, tmp_path / "store")
    from lightrag import LightRAG, QueryParam

    from wikirag.lightrag.tokens import lightrag_tokenizer

    async def no_llm(*args, **kwargs):
        raise AssertionError("naive context queries must not call the LLM")

    async def run() -> str:
        rag = LightRAG(working_dir=str(config.store), workspace=config.workspace,
                       embedding_func=HashEmbedding().func(), llm_model_func=no_llm,
                       tokenizer=lightrag_tokenizer())
        await rag.initialize_storages()
        try:
            return await rag.aquery("Who designed the Bombe?",
                                    QueryParam(mode="naive", only_need_context=True, enable_rerank=False))
        finally:
            await rag.finalize_storages()
            # built outside open_engine: drop LightRAG's process-wide data for this workspace ourselves
            from lightrag.kg.shared_storage import finalize_share_data

            finalize_share_data()

    context = asyncio.run(run())
    assert "Bombe" in context
    assert "projects/Bombe.md" in context


@pytest.mark.slow
@pytest.mark.parametrize("after_first_write", [0.0, 0.4])
def test_kill_9_during_index_then_the_next_run_completes(tmp_path, after_first_write):
    """SIGKILL the real `wikirag index` after its first write-ahead; the next run must equal a fresh index."""
    import os
    import signal
    import subprocess
    import sys
    import time

    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(150):
        text = f"# Note {i}\n\nNote {i} cites [[Note {(i * 7) % 150}]] and [[Gap {i % 9}]].\n"
        (vault / f"Note {i}.md").write_text(text)
    store = tmp_path / "store"
    config = load_config(vault, store=store)
    ledger_file = config.workspace_dir / "wikirag_index.sqlite"
    env = {**os.environ, "WIKIRAG_INDEX_BATCH_SIZE": "10"}  # many flushes: many places to die
    proc = subprocess.Popen([sys.executable, "-m", "wikirag.cli", "index", str(vault), "--store", str(store),
                             "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not (
            ledger_file.exists() and ledger_doc(config.workspace_dir)):  # the first write-ahead committed
        time.sleep(0.01)
    time.sleep(after_first_write)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    killed = ledger_doc(config.workspace_dir)
    assert len(killed["notes"]) < 150 or any(killed["pending"].values()), "the kill came after the run ended"
    report = run_index(config)  # the real embedder, as the killed run used
    assert report.notes_total == 150
    fresh = load_config(vault, store=tmp_path / "fresh")
    run_index(fresh)
    assert snapshot(config) == snapshot(fresh)


def test_the_parse_cache_is_only_a_shortcut(vault, tmp_path):
    import sqlite3

    config, _ = index(vault, tmp_path / "store")
    db = sqlite3.connect(config.workspace_dir / "wikirag_index.sqlite")
    with db:
        assert db.execute("SELECT count(*) FROM parsed_notes").fetchone()[0] > 10
        db.execute("UPDATE parsed_notes SET note = '{not json'")  # a damaged cache is ignored, never trusted
    db.close()
    note = vault / "projects" / "Bombe.md"
    note.write_text(note.read_text() + "\nAlso see [[Purple cipher]].\n")
    index(vault, tmp_path / "store")
    fresh, _ = index(vault, tmp_path / "fresh")
    assert snapshot(config) == snapshot(fresh)


def test_notes_whose_stat_data_is_unchanged_are_not_read_again(vault, tmp_path, monkeypatch):
    import os

    import wikirag.vault.model as model

    old = 1_600_000_000
    for path in vault.rglob("*.md"):
        os.utime(path, (old, old))  # not racy: modified long before the cache rows are written
    config, _ = index(vault, tmp_path / "store")
    reads: list[str] = []
    real_read = model.read_note
    monkeypatch.setattr(model, "read_note", lambda abs_path, rel, *a: reads.append(rel) or real_read(abs_path, rel, *a))
    note = vault / "projects" / "Bombe.md"
    note.write_text(note.read_text() + "\nAlso see [[Purple cipher]].\n")  # a new size and mtime
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert reads == ["projects/Bombe.md"] and report.notes_changed >= 1
    fresh, _ = index(vault, tmp_path / "fresh")
    assert snapshot(config) == snapshot(fresh)


def test_vaults_as_people_write_them_index_without_a_traceback(tmp_path):
    """Random bytes named .md, control characters, NULs, CJK names, a broken fence and odd frontmatter."""
    import os

    vault = tmp_path / "vault"
    (vault / "笔记").mkdir(parents=True)
    (vault / "binary.md").write_bytes(os.urandom(20_000))
    (vault / "controls.md").write_text("Bell \x07 and escape \x1b[31m red, see [[笔记/中文]].\n")
    (vault / "nul.md").write_bytes(b"before\x00after [[controls]]\n")
    (vault / "笔记" / "中文.md").write_text("# 中文\n\n链接 [[nul]] 和 [[缺失]]。\n")
    (vault / "broken.md").write_text("---\ntitle: [unclosed\n---\n```\n[[in a fence that never closes]]\n")
    (vault / "odd.md").write_text("---\ntags: 5\naliases: null\nTitle: Upper\n---\nbody [[ ]] [[|x]] [[a|b|c]]\n")
    config, report = index(vault, tmp_path / "store")
    assert report.notes_failed == 1 and any(i.startswith("binary.md: looks binary") for i in report.issues)
    snap = snapshot(config)
    assert "中文" in snap["nodes"] and "缺失" in snap["nodes"]
    assert all("\x07" not in c["content"] and "\x1b" not in c["content"] for c in snap["chunks"].values())


def test_an_untouched_vault_is_answered_from_the_manifest(vault, tmp_path, monkeypatch):
    config, first = index(vault, tmp_path / "store")
    age_vault_files(vault)
    index(vault, tmp_path / "store")  # records the manifest for these stat data
    from wikirag.index import run as pipeline

    def no_reading(*args, **kwargs):
        raise AssertionError("nothing changed: the vault must not be read again")

    monkeypatch.setattr(pipeline.Vault, "load", no_reading)
    again = run_index(config, embedding_func=HashEmbedding().func())
    assert (again.entities, again.relations, again.chunks) == (first.entities, first.relations, first.chunks)
    assert again.notes_unchanged == first.notes_total - first.notes_skipped and again.notes_indexed == 0
    monkeypatch.undo()
    note = vault / "projects" / "Bombe.md"
    note.write_text(note.read_text().replace("Bombe", "Bomb", 1))  # a real edit is seen
    assert index(vault, tmp_path / "store")[1].notes_changed == 1


def test_an_entity_losing_its_last_chunk_keeps_no_stale_chunk_tracker(tmp_path):
    """Found by the vault fuzzer: an empty note linked from one other note; deleting the linking note left
    the empty note's entity with no chunk, but its `entity_chunks` tracker still listed the deleted chunk."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Empty.md").write_text("")
    (vault / "Linker.md").write_text("Linker points at [[Empty]] in one sentence.\n")
    config, _ = index(vault, tmp_path / "store")
    assert snapshot(config)["entity_chunks"]["Empty"]["count"] == 1
    (vault / "Linker.md").unlink()
    config, _ = index(vault, tmp_path / "store")
    config_fresh, _ = index(vault, tmp_path / "fresh")
    assert "Empty" in snapshot(config)["nodes"]
    assert snapshot(config) == snapshot(config_fresh)


def test_a_note_with_a_read_problem_and_a_frontmatter_error_is_one_issue_line(tmp_path):
    """Found by the vault fuzzer: a note with a 100k-character line and a YAML bomb in its frontmatter got two
    lines in the report's `issues` (the read problem, then the frontmatter error): one file, one line."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Good.md").write_text("A plain note.\n")
    (vault / "Both.md").write_text("---\ntitle: [unclosed\n---\n" + "word " * 30_000 + "\n")
    _, report = index(vault, tmp_path / "store")
    lines = [line for line in report.issues if line.startswith("Both.md: ")]
    assert len(lines) == 1 and len(report.issues) == 1, report.issues
    assert "characters" in lines[0] and "invalid YAML" in lines[0]


def test_a_note_deleted_after_the_scan_hides_its_nfc_twin_for_one_run_only(tmp_path, monkeypatch):
    """The run scans once (the manifest check and the reads share the scan), so a note deleted between the scan
    and its read is reported as vanished, and its NFC twin as skipped in its favour. The next run must not take
    that run's scan for the vault (manifest, parse cache): it indexes the twin and reports nothing."""
    import os
    import time
    import unicodedata

    from wikirag.index import run as pipeline

    vault = tmp_path / "vault"
    vault.mkdir()
    decomposed = vault / unicodedata.normalize("NFD", "café.md")  # the scan lists it first ("e" < "é")
    decomposed.write_text("decomposed\n")
    (vault / "café.md").write_text("composed [[Other]]\n")
    (vault / "Other.md").write_text("other\n")
    old = time.time_ns() - 10_000_000_000  # older than the racy window: stat data may be trusted
    for path in vault.iterdir():
        os.utime(path, ns=(old, old))
    real_scan = pipeline.scan_vault

    def scan_then_delete(*args, **kwargs):
        scan = real_scan(*args, **kwargs)
        decomposed.unlink()
        return scan

    monkeypatch.setattr(pipeline, "scan_vault", scan_then_delete)
    _, first = index(vault, tmp_path / "store")
    assert sorted(line.split(": ", 1)[1][:8] for line in first.issues) == ["spelled ", "vanished"], first.issues
    monkeypatch.undo()
    config, second = index(vault, tmp_path / "store")
    assert second.issues == [] and second.notes_total == 2
    fresh, _ = index(vault, tmp_path / "fresh")
    assert snapshot(config) == snapshot(fresh)
    assert index(vault, tmp_path / "store")[1].issues == []


def _refuse(monkeypatch, folders: set[Path] = frozenset(), files: set[Path] = frozenset()) -> None:
    """What `chmod 000` does for another user (these tests run as root too, whom it does not stop)."""
    import os

    real_scandir, real_open = os.scandir, os.open

    def scandir(path="."):  # noqa: ANN001, ANN202
        if isinstance(path, (str, os.PathLike)) and Path(os.path.abspath(path)) in folders:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    def open_(path, flags, *args, **kwargs):  # noqa: ANN001, ANN202
        if isinstance(path, (str, os.PathLike)) and Path(os.path.abspath(path)) in files:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("what", ["folder", "note", "vault"])
def test_a_folder_or_note_that_cannot_be_read_keeps_what_the_index_holds_of_it(vault, tmp_path, monkeypatch, what):
    # Unreadable is not deleted: a permission slip or a disk not mounted yet must not throw away the notes'
    # index (and their extractions, which may have cost LLM calls); the next readable run finds them unchanged.
    store = tmp_path / "store"
    config, _ = index(vault, store)
    before = snapshot(config)
    folder = vault / "people"
    assert len(list(folder.glob("*.md"))) >= 2
    with monkeypatch.context() as mp:
        if what == "folder":
            _refuse(mp, folders={folder})
        elif what == "note":
            _refuse(mp, files={folder / "Alan Turing.md"})
        else:
            _refuse(mp, folders={vault})
        age_vault_files(vault)  # the run must read, not answer from the manifest
        (vault / "Index.md").write_text((vault / "Index.md").read_text() + "\nOne more line.\n")
        _, report = index(vault, store)
    assert report.notes_deleted == 0
    place = {"folder": "people", "note": "people/Alan Turing.md", "vault": "."}[what]
    assert any(line.startswith(place) and "what the index holds of it is kept" in line for line in report.issues), \
        report.issues
    kept = snapshot(config)
    assert set(kept["ledger_notes"]) == set(before["ledger_notes"])
    assert kept["nodes"].keys() == before["nodes"].keys()
    _, report = index(vault, store)  # readable again: the notes are there, unchanged
    assert (report.notes_deleted, report.notes_new) == (0, 0)
    assert snapshot(config) == snapshot(index(vault, tmp_path / "fresh")[0])


def test_a_qualified_name_that_is_another_note_s_title_does_not_merge_the_two(tmp_path):
    # a/Note.md and b/Note.md are qualified by folder: "Note (a)", "Note (b)", the very names of two other notes
    vault = tmp_path / "vault"
    for rel, text in {"Note (a).md": "root note [[Note]]\n", "a/Note.md": "in a [[Note (a)]]\n",
                      "b/Note.md": "in b\n", "c.md": "---\ntitle: Note (b)\n---\ntitled like b's\n"}.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    names = note_entity_names(Vault.load(vault).notes)
    assert len(set(names.values())) == 4, names
    assert names["Note (a).md"] == "Note (a)" and names["c.md"] == "Note (b)"  # a title of its own stays
    config, _ = index(vault, tmp_path / "store")
    assert set(names.values()) <= set(snapshot(config)["nodes"])  # four note entities, not two


def test_names_written_in_nfd_and_nfc_are_one_name(tmp_path):
    # macOS writes names in NFD: a link typed both ways is one target for the resolver (it folds NFC), so it was
    # one missing note shown as two entities that look alike, and an NFD title met no NFC one, two "Café" nodes
    import unicodedata

    nfd = unicodedata.normalize("NFD", "Café")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text(f"---\ntitle: {nfd}\n---\ntitled in NFD\n")
    (vault / "Café.md").write_text("named in NFC\n")
    (vault / "l.md").write_text(f"[[Missing {nfd}]] and [[Missing Café]]\n")
    names = note_entity_names(Vault.load(vault).notes)
    assert names["a.md"] != names["Café.md"] and all(unicodedata.is_normalized("NFC", n) for n in names.values())
    config, _ = index(vault, tmp_path / "store")
    nodes = set(snapshot(config)["nodes"])
    assert "Missing Café" in nodes and len(nodes) == 4, sorted(map(ascii, nodes))


def test_lightrags_separator_in_a_title_or_link_is_no_separator_in_the_graph(tmp_path):
    # "a<SEP>b" as an entity name: LightRAG keys a relation "source<SEP>target" and splits descriptions on it
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("---\ntitle: 'x<SEP>y'\n---\nSee [[b]] and [[c<SEP>d]].\n")
    (vault / "b.md").write_text("A note.\n")
    config, _ = index(vault, tmp_path / "store")
    nodes = set(snapshot(config)["nodes"])
    assert {"x‹SEP›y", "c‹SEP›d", "b"} <= nodes and not any("<SEP>" in n for n in nodes), nodes


def test_a_note_named_only_by_spaces_leaves_the_name_note_to_note_md(tmp_path):
    # " .md" normalised to "", then "Note " to "Note": it took Note.md's name, and both became qualified
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("Note", " ", "\u3000"):
        (vault / f"{name}.md").write_text(f"body of [{name}]\n")
    (vault / "l.md").write_text("[[.md]]\n")  # a link whose name is empty: no entity "Note" either
    names = note_entity_names(Vault.load(vault).notes)
    assert names["Note.md"] == "Note" and names[" .md"].startswith("Untitled note"), names
    config, _ = index(vault, tmp_path / "store")
    assert sorted(n for n in snapshot(config)["nodes"] if n.startswith("Note")) == ["Note"]


def test_entity_names_are_bounded_and_stay_apart(tmp_path):
    """A title pasted as a paragraph, or a link to one, is no name a store can key: LightRAG's PostgreSQL tables
    hold names in VARCHAR(512) and relations under "source<SEP>target" (tests/test_embedded.py runs it there)."""
    from wikirag.graph.naming import NAME_MAX_BYTES, NAME_MAX_CHARS

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text(f"---\ntitle: {'T' * 600}\n---\n[[{'y' * 3000}]] [[{'日' * 300}]]\n")
    (vault / "b.md").write_text(f"---\ntitle: {'T' * 700}\n---\nsame first 249 characters\n")
    names = note_entity_names(Vault.load(vault).notes)
    assert names["a.md"] != names["b.md"]
    config, _ = index(vault, tmp_path / "store")
    nodes = snapshot(config)["nodes"]
    assert len(nodes) == 4
    assert all(len(n) <= NAME_MAX_CHARS and len(n.encode()) <= NAME_MAX_BYTES for n in nodes), sorted(map(len, nodes))


def test_a_title_written_as_a_yaml_block_is_a_one_line_name(tmp_path):
    # `title: |` keeps its line breaks: no name LightRAG reads from an LLM's lines could ever meet it
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("---\ntitle: |\n  Line one\n  Line two\n---\n[[b]]\n")
    (vault / "b.md").write_text('---\ntitle: "tab\\there"\n---\nbody\n')
    assert sorted(note_entity_names(Vault.load(vault).notes).values()) == ["Line one Line two", "tab here"]
    config, _ = index(vault, tmp_path / "store")
    assert set(snapshot(config)["nodes"]) == {"Line one Line two", "tab here"}


def test_index_progress_counts_the_texts_embedded_and_a_log_gets_plain_lines(tmp_path, monkeypatch):
    """A first index of a few hundred notes is one batch: its bar stood still for the minutes the embedding took,
    and a log or a pipe (no bar) got nothing at all until the end."""
    import asyncio

    from typer.testing import CliRunner

    import wikirag.cli.indexing as indexing
    from tests.storekit import copy_vault
    from wikirag.cli import app
    from wikirag.index.live import EmbeddingProgress

    class Counter:
        texts = 5

    seen: list[tuple[str, int, int]] = []
    counter = Counter()
    shown = EmbeddingProgress(lambda *a: seen.append(a), counter)
    shown("index", 0, 40)
    assert seen == [("index", 0, 40)]  # nothing embedded by this run yet

    async def ticking() -> None:
        task = asyncio.ensure_future(shown.tick(0.01))
        await asyncio.sleep(0.05)
        counter.texts = 130  # embedding goes on inside the batch: the line says so without a new call
        await asyncio.sleep(0.05)
        task.cancel()

    asyncio.run(ticking())
    assert seen[-1] == ("index · 125 texts embedded", 0, 40) and len(seen) == 2  # repeated once, when it moved

    from lightrag.utils import EmbeddingFunc

    from tests.storekit import HashEmbedding
    from wikirag.lightrag import engine

    def counted_hash(spec, counter, base_url=None):  # the hashing embedding, counted as the real one is
        embed = HashEmbedding()

        async def func(texts, **kwargs):
            counter.calls, counter.texts = counter.calls + 1, counter.texts + len(texts)
            return await embed(texts, **kwargs)

        return EmbeddingFunc(embedding_dim=embed.func().embedding_dim, func=func, model_name="hash-test")

    monkeypatch.setattr(engine, "make_embedding_func", counted_hash)
    monkeypatch.setattr(indexing, "LOG_EVERY_SECONDS", 0.0)
    vault = copy_vault(Path(__file__).resolve().parent.parent / "sample_vault", tmp_path / "vault")
    result = CliRunner().invoke(app, ["index", str(vault)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("[")]
    assert lines[0] == "[0/1] scan" and any("texts embedded" in line for line in lines), lines
    monkeypatch.setattr(indexing, "LOG_EVERY_SECONDS", 60.0)  # a run shorter than that: no progress line
    quick = CliRunner().invoke(app, ["index", str(vault), "--rebuild"])
    assert quick.exit_code == 0 and not [line for line in quick.output.splitlines() if line.startswith("[")]
