"""The BM25 index: weights as bm25s computes them, and an incremental sync that ends equal to a fresh build."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from wikirag.index.bm25 import bm25_weights
from wikirag.index.ledger import NoteEntry, NoteTable
from wikirag.index.lexical import build_index, cjk_letter_share, load_index, tokenize
from wikirag.index.lexical_sync import dirty_notes, sync_search_files

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
QUERIES = ["attention memory", "spaced repetition cards", "zebra", "the", "graph of notes", "memory memory loop"]


def _rows(texts: dict[str, list[str]]) -> list[tuple[str, str, str, list[str]]]:
    return [(f"chunk-{path}-{i}", path, f"{path} heading", tokenize(f"{path} heading\n{text}"))
            for path, chunks in sorted(texts.items()) for i, text in enumerate(chunks)]


TEXTS = {
    "a.md": ["Attention is a limited resource; memory holds what attention kept.", "Cards for spaced repetition."],
    "b.md": ["A graph of notes links memory and attention."],
    "c.md": ["Zebra crossings, zebra stripes: zebra zebra."],
    "d.md": ["Spaced repetition cards train memory. Memory loops."],
}


def test_weights_equal_bm25s():
    bm25s = pytest.importorskip("bm25s")
    rows = _rows(TEXTS)
    index = build_index(rows)
    vocab = {t: i for i, t in enumerate(index.vocab)}
    ids = [[vocab[t] for t in tokens] for *_, tokens in rows]
    retriever = bm25s.BM25(k1=1.5, b=0.75)
    retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    expected = retriever.scores
    assert np.array_equal(index.indptr, np.asarray(expected["indptr"]))
    assert np.array_equal(index.indices, np.asarray(expected["indices"]))
    np.testing.assert_allclose(index.data, np.asarray(expected["data"]), rtol=1e-6)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # the same float64 arithmetic as bm25s's
        assert np.array_equal(index.data, np.asarray(expected["data"], dtype=np.float32))


def test_a_lone_cjk_character_finds_the_text_holding_it():
    """`query` sends a one-character Chinese question to `search`; text indexes a CJK run as its bigrams, so `猫`
    found only a note that was `猫` alone, never 我的猫很可爱 ("No note matches")."""
    from wikirag.query.search import best_passages

    index = build_index(_rows({"a.md": ["我的猫很可爱。"], "b.md": ["狗在院子里。"], "c.md": ["猫"], "d.md": ["cat"]}))
    assert {index.chunk_paths[i] for i, _ in index.top("猫", 10)} == {"a.md", "c.md"}
    assert [index.chunk_paths[i] for i, _ in index.top("院", 10)] == ["b.md"]
    assert [index.chunk_paths[i] for i, _ in index.top("的猫", 10)] == ["a.md"]  # two characters: the bigram only
    assert best_passages("狗在院子里。\n\n我的猫很可爱。", "猫", count=1) == ([], ["我的猫很可爱。"])


def test_weights_of_no_tokens_are_empty():
    data, indices, indptr = bm25_weights(np.zeros(0, np.int32), np.zeros(3, np.int64), 0, 1.5, 0.75)
    assert len(data) == len(indices) == 0 and list(indptr) == [0]


class _Chunks:
    """LightRAG's chunk store as far as the sync reads it; counts the ids it was asked for."""

    def __init__(self) -> None:
        self.records: dict[str, dict] = {}
        self.asked: list[str] = []

    async def get_by_ids(self, ids: list[str]) -> list[dict | None]:
        self.asked.extend(ids)
        return [self.records.get(i) for i in ids]


class _Rag:
    def __init__(self) -> None:
        self.text_chunks = _Chunks()


class _Ledger:
    def __init__(self) -> None:
        self.notes = NoteTable()


def _put(rag: _Rag, ledger: _Ledger, path: str, chunks: list[str], title: str = "") -> None:
    ids = [f"chunk-{path}-{i}-{abs(hash(text))}" for i, text in enumerate(chunks)]
    for cid, text in zip(ids, chunks, strict=True):
        rag.text_chunks.records[cid] = {"content": text, "heading": {"heading": title or path, "parent_headings": []}}
    digest = str(abs(hash((tuple(ids), title))))
    ledger.notes[path] = NoteEntry("d", "s", doc_id=f"doc-{path}", chunk_ids=ids, chunk_digest=digest)


def _same(a, b) -> None:
    assert (a.chunk_ids, a.chunk_paths, a.headings) == (b.chunk_ids, b.chunk_paths, b.headings)
    assert [a.tokens_of(i) for i in range(a.size)] == [b.tokens_of(i) for i in range(b.size)]
    assert sorted(a.vocab) == sorted(b.vocab)
    for query in QUERIES:
        assert np.array_equal(a.scores(query), b.scores(query)), query
        assert a.top(query, 3) == b.top(query, 3)
    assert a.note_keys == b.note_keys


def test_incremental_sync_ends_equal_to_a_fresh_build(tmp_path):
    rag, ledger = _Rag(), _Ledger()
    for path, chunks in TEXTS.items():
        _put(rag, ledger, path, chunks)
    work, fresh = tmp_path / "work", tmp_path / "fresh"
    work.mkdir(), fresh.mkdir()
    asyncio.run(sync_search_files(rag, ledger, work))
    before = load_index(work)
    _put(rag, ledger, "a.md", ["Attention is scarce.", "Cards for spaced repetition."])  # one chunk changed
    _put(rag, ledger, "b.md", TEXTS["b.md"], title="A new title")  # same chunks, new heading
    del ledger.notes["c.md"]  # every "zebra" goes: the term leaves the vocabulary
    _put(rag, ledger, "e.md", ["Brand new words: xylophone memory."])
    rag.text_chunks.asked.clear()
    dirty = dirty_notes(before, ledger)
    assert dirty == {"a.md", "b.md", "c.md", "e.md"}
    asyncio.run(sync_search_files(rag, ledger, work, old=before, dirty=dirty))
    incremental = load_index(work)
    assert set(rag.text_chunks.asked) == {c for p in ("a.md", "b.md", "e.md") for c in ledger.notes[p].chunk_ids}
    assert "zebra" not in incremental.vocab and "A new title" in incremental.headings
    asyncio.run(sync_search_files(rag, ledger, fresh))
    _same(incremental, load_index(fresh))


def test_a_chunk_missing_from_the_store_is_fetched_again_next_sync(tmp_path):
    rag, ledger = _Rag(), _Ledger()
    for path, chunks in TEXTS.items():
        _put(rag, ledger, path, chunks)
    lost = ledger.notes["d.md"].chunk_ids[0]
    record = rag.text_chunks.records.pop(lost)
    asyncio.run(sync_search_files(rag, ledger, tmp_path))
    first = load_index(tmp_path)
    assert lost not in first.chunk_ids and first.note_keys["d.md"] == ""
    rag.text_chunks.records[lost] = record
    dirty = dirty_notes(first, ledger)
    assert dirty == {"d.md"}
    asyncio.run(sync_search_files(rag, ledger, tmp_path, old=first, dirty=dirty))
    assert lost in load_index(tmp_path).chunk_ids


def _saved(config) -> tuple[dict, dict]:
    from wikirag.index.search_rows import read_rows

    return read_rows(config.workspace_dir, "names"), read_rows(config.workspace_dir, "links")


def _derived_tables(config) -> tuple[dict, dict]:
    from wikirag.index.ledger import Ledger
    from wikirag.index.search_rows import links_table, names_table

    ledger = Ledger.load(config.workspace_dir)
    return names_table(ledger), links_table(ledger)


def test_names_and_links_rows_are_rederived_only_for_changed_ledger_rows(tmp_path, monkeypatch):
    """After a run, the names and links rows equal tables derived from every ledger entry, the run derived rows
    only for the notes whose ledger rows changed, and the report's record counts (from the refcount tables)
    are the ledger's; a saved row that no longer decodes, found when its note changes, makes that run derive
    every row again (rows are trusted by their digest, as the ledger's and the parse cache's are)."""
    import sqlite3

    from tests.storekit import HashEmbedding, indexed_copy
    from wikirag.index import search_rows
    from wikirag.index.ledger import Ledger
    from wikirag.index.run import run_index
    from wikirag.storage.sqlite_store import INDEX_DB_FILENAME

    config = indexed_copy(SAMPLE, tmp_path / "vault")
    notes = sorted(config.vault.rglob("*.md"))
    edited, removed = notes[1], notes[2]
    edited.write_text(edited.read_text(encoding="utf-8") + "\nSee also [[A brand new page]].\n", encoding="utf-8")
    removed.unlink()
    (config.vault / "A brand new page.md").write_text("# A brand new page\n\nLinks [[" + notes[3].stem + "]].\n",
                                                      encoding="utf-8")
    derived: list[str] = []
    real = search_rows.names_row
    monkeypatch.setattr(search_rows, "names_row", lambda entry: derived.append(entry.doc_id) or real(entry))
    report = run_index(config, embedding_func=HashEmbedding().func())
    during = len(derived)

    ledger = Ledger.load(config.workspace_dir)
    assert _saved(config) == _derived_tables(config)
    assert (report.entities, report.relations) == (len(ledger.entity_index()), len(ledger.relation_index()))
    assert 2 <= during < len(ledger.notes) // 2  # the new and edited notes (and those they link)

    edited_path = edited.relative_to(config.vault).as_posix()
    with sqlite3.connect(config.workspace_dir / INDEX_DB_FILENAME) as conn:  # damaged: derived again whole
        conn.execute("UPDATE search_notes SET names = '{ not json' WHERE path = ?", (edited_path,))
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    derived.clear()
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert len(derived) == len(ledger.notes) and _saved(config) == _derived_tables(config)
    assert (report.entities, report.relations) == Ledger.load(config.workspace_dir).record_counts()


def test_a_hand_edited_names_row_is_derived_again_not_trusted(tmp_path):
    """A saved names row missing a key, or not a row at all, is not trusted: readers skip it, and a run that
    meets one (its note changed) derives every row again instead of failing; its record counts stay the
    ledger's."""
    import sqlite3

    import orjson

    from tests.storekit import HashEmbedding, indexed_copy
    from wikirag.index import search_rows
    from wikirag.index.ledger import Ledger
    from wikirag.index.run import run_index
    from wikirag.storage.sqlite_store import INDEX_DB_FILENAME

    config = indexed_copy(SAMPLE, tmp_path / "vault")
    ledger = Ledger.load(config.workspace_dir)
    a, b = sorted(ledger.notes)[:2]
    assert set(search_rows.names_row(ledger.notes[a])) == search_rows._NAMES_ROW_KEYS
    row = search_rows.names_row(ledger.notes[a])
    del row["entity_record"]
    with sqlite3.connect(config.workspace_dir / INDEX_DB_FILENAME) as conn:
        conn.execute("UPDATE search_notes SET names = ? WHERE path = ?", (orjson.dumps(row).decode(), a))
        conn.execute("UPDATE search_notes SET names = '\"not a row\"' WHERE path = ?", (b,))
    assert b not in search_rows.read_rows(config.workspace_dir, "names")  # a reader skips what is not a row
    note = config.vault / a  # its row is read to count it out of the refcounts: not a derived row's shape
    note.write_text(note.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert report.notes_changed == 1
    assert _saved(config) == _derived_tables(config)  # every row derived again, b's too
    assert (report.entities, report.relations) == Ledger.load(config.workspace_dir).record_counts()


def test_record_counts_follow_edits_renames_and_deletions(tmp_path):
    """The refcount tables count an entity or relation while any note holds it: after a note that shares names
    with others is deleted, another renamed and a third rewritten, the counts equal the ledger's, and a store
    from before the rows (names and links JSON files) is moved to rows by its next run."""
    from tests.storekit import HashEmbedding, indexed_copy
    from wikirag.index.ledger import Ledger
    from wikirag.index.lexical import NAMES_FILENAME, OLD_LINKS_FILENAME
    from wikirag.index.run import run_index

    config = indexed_copy(SAMPLE, tmp_path / "vault")
    notes = sorted(config.vault.rglob("*.md"))
    notes[4].unlink()
    notes[5].rename(notes[5].with_name("Renamed note.md"))
    notes[6].write_text("# Rewritten\n\nNow about [[Alan Turing]] and [[A note nobody wrote]].\n", encoding="utf-8")
    embed = HashEmbedding().func()
    report = run_index(config, embedding_func=embed)
    ledger = Ledger.load(config.workspace_dir)
    assert (report.entities, report.relations) == (len(ledger.entity_index()), len(ledger.relation_index()))
    assert _saved(config) == _derived_tables(config)

    (config.workspace_dir / OLD_LINKS_FILENAME).write_text("{}", encoding="utf-8")  # as an older wikirag left it
    (config.workspace_dir / NAMES_FILENAME).write_text('{"version": 4, "notes": {}, "rows": 1}', encoding="utf-8")
    report = run_index(config, embedding_func=embed)
    assert not (config.workspace_dir / OLD_LINKS_FILENAME).exists()
    assert _saved(config) == _derived_tables(config)
    assert (report.entities, report.relations) == ledger.record_counts()


def test_the_cjk_share_counts_letters_only():
    """Chinese, Japanese and Korean letters among all letters; the middle dot and sound marks inside the CJK
    ranges are not letters, and digits and punctuation count for nothing."""
    assert cjk_letter_share(["信息茧房 abcd", "1234 !!"]) == pytest.approx(4 / 8)
    assert cjk_letter_share(["・・・ ゛゜ abc"]) == 0.0
    assert cjk_letter_share(["ひらがな カタカナ 한국어"]) == 1.0
    assert cjk_letter_share(["", "123"]) == 0.0
