"""Anchor text (index.anchors): what other notes say where they link to a note, kept in step by `index` and
`watch`-style edits, and fused into `search` below the first two notes of the other signals."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.storekit import HashEmbedding
from wikirag.graph.records import EntityFragment, RelationFragment
from wikirag.index.anchors import anchor_rows
from wikirag.index.ledger import NoteEntry
from wikirag.index.lexical import load_index, tokenize
from wikirag.index.run import run_index
from wikirag.query.engine import WarmEngine
from wikirag.query.notes import NoteTable
from wikirag.query.ranking import FUSION, Fusion, fuse
from wikirag.settings import load_config

NOTES = {
    # Zeta's own text never says "quantum" or "cipher": only Lab's sentence about it does
    "Zeta.md": "A machine built in a barn, mostly out of relays.\n",
    "Lab.md": "The lab kept long records of its work, its staff and its visitors over the years. "
              "The [[Zeta]] machine broke the quantum cipher in 1944.\n\nSee also [[Other]].\n",
    "Other.md": "Unrelated words about gardening and soil.\n",
    **{f"Cipher {n}.md": f"Notes on the quantum cipher, part {n}: its alphabet, its keys and its {word}.\n"
       for n, word in enumerate(("history", "users", "rules", "faults", "printers", "codebooks"))},
}


def _vault(root: Path, notes: dict[str, str] = NOTES) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in notes.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _index(vault: Path):
    config = load_config(vault)
    run_index(config, embedding_func=HashEmbedding().func())
    return config


def _by_target(config) -> dict[str, list[str]]:
    anchors = load_index(config.workspace_dir).anchors
    return {name: sorted(anchors.tokens_of(i)) for i, name in enumerate(anchors.chunk_ids)}


def _search(config, query: str, mode: str = "lexical") -> list:
    async def run():
        async with WarmEngine(config, embedding_func=HashEmbedding().func()) as warm:
            return await warm.search(query, limit=10, mode=mode)

    return asyncio.run(run()).hits


def test_a_notes_anchor_text_is_its_link_sentences_and_a_bare_link_gives_its_name():
    entry = NoteEntry("d", "s", entity="Lab", entities=[
        EntityFragment("Lab", None, "", [], "Lab.md", 0), EntityFragment("Zeta", None, "", [], "Lab.md", 1),
        EntityFragment("Other", None, "", [], "Lab.md", 1)])
    entry.relations = [
        RelationFragment("Lab", "Zeta", "The Zeta machine broke the quantum cipher.\nZeta was fast.", [], [], "Lab.md",
                         2),
        RelationFragment("Lab", "Other", "Lab refers to Other in its body.", [], [], "Lab.md", 1),
        RelationFragment("Lab", "Quantum", "An LLM said the lab studied quanta.", [], [], "Lab.md", 1),  # extracted
    ]
    assert anchor_rows(entry) == [("Other", tokenize("Other")),
                                  ("Zeta", tokenize("The Zeta machine broke the quantum cipher.\nZeta was fast."))]


def test_search_finds_a_note_by_what_another_note_says_about_it(tmp_path, monkeypatch):
    config = _index(_vault(tmp_path / "vault"))
    anchors = _by_target(config)
    assert set(tokenize("quantum cipher")) <= set(anchors["Zeta"])
    question = "who broke the quantum cipher in 1944"  # not one word of Zeta's own text
    hits = _search(config, question)
    found = {h.path: h.matched_by for h in hits}
    assert found["Zeta.md"] == ["anchor"]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    monkeypatch.setattr("wikirag.query.search.FUSION", Fusion(**{**FUSION.__dict__,
                                                                 "weights": {**FUSION.weights, "anchor": 0.0}}))
    before = [h.path for h in _search(config, question)]
    assert "Zeta.md" not in before
    assert [h.path for h in hits][:2] == before[:2]  # the notes whose own words match best keep their places


def test_anchor_text_follows_edits_deletions_and_renames_as_a_fresh_index_has_it(tmp_path):
    vault = _vault(tmp_path / "vault")
    config = _index(vault)
    (vault / "Lab.md").write_text("The [[Zeta]] machine was slow and loud.\n", encoding="utf-8")
    (vault / "Keys.md").write_text("[[Zeta]] read the keys twice.\n", encoding="utf-8")
    (vault / "Other.md").rename(vault / "Soil.md")
    (vault / "Cipher 0.md").unlink()
    run_index(config, embedding_func=HashEmbedding().func())
    incremental = _by_target(config)
    assert "quantum" not in " ".join(incremental["Zeta"]) and "loud" in incremental["Zeta"]
    assert "twice" in incremental["Zeta"] and "Other" not in incremental
    fresh = _index(_vault(tmp_path / "fresh", {p.name: p.read_text() for p in vault.glob("*.md")}))
    assert incremental == _by_target(fresh)
    pairs = load_index(config.workspace_dir, pairs=True).anchor_pairs
    assert sorted(set(pairs.chunk_paths)) == ["Keys.md", "Lab.md"]


def test_a_store_without_anchor_text_is_synced_by_the_next_index_run(tmp_path):
    """An older wikirag's lexical file (another version) has no anchor text: the next run writes it whole."""
    config = _index(_vault(tmp_path / "vault"))
    lexical = config.workspace_dir / "wikirag_lexical.npz"
    lexical.write_bytes(b"not an index")
    assert load_index(config.workspace_dir) is None
    run_index(config, embedding_func=HashEmbedding().func())
    assert "Zeta" in _by_target(config)


def test_anchor_text_cannot_pass_the_first_two_notes_of_the_other_signals():
    notes = NoteTable({p: {} for p in ("a.md", "b.md", "c.md", "d.md", "e.md", "g.md", "z.md")})
    rankings = {"lexical": ["a.md", "b.md", "c.md", "g.md", "d.md", "e.md"], "anchor": ["g.md", "b.md", "z.md"]}
    unheld = Fusion(**{**FUSION.__dict__, "anchor_head": 0})
    assert [p for p, _s, _f in fuse(notes, rankings, unheld)][:3] == ["b.md", "a.md", "g.md"]
    held = fuse(notes, rankings)
    assert [p for p, _s, _f in held] == ["a.md", "b.md", "g.md", "c.md", "d.md", "e.md", "z.md"]
    assert held[-1][2] == ["anchor"]  # found by anchor text alone: last, but found
    scores = [s for _p, s, _f in held]
    assert scores == sorted(scores, reverse=True)  # a held note scores at least what follows it
    without = {k: v for k, v in rankings.items() if k != "anchor"}
    assert [p for p, _s, _f in fuse(notes, without)] == rankings["lexical"]


def test_an_edit_that_leaves_every_link_sentence_as_it_was_keeps_the_grouped_index(tmp_path, monkeypatch):
    """Regrouping the pairs and weighing them again costs ~0.2 s at 13,000 notes: a run whose edits change no
    link sentence keeps the saved grouping, which is what a fresh build would give."""
    import wikirag.index.lexical_sync as lexical_sync

    vault = _vault(tmp_path / "vault")
    config = _index(vault)
    regrouped = []
    real = lexical_sync.by_target
    monkeypatch.setattr(lexical_sync, "by_target", lambda pairs: regrouped.append(1) or real(pairs))
    (vault / "Lab.md").write_text(NOTES["Lab.md"].replace("long records", "short records"), encoding="utf-8")
    run_index(config, embedding_func=HashEmbedding().func())
    assert regrouped == []
    (vault / "Lab.md").write_text(NOTES["Lab.md"].replace("in 1944", "in 1945"), encoding="utf-8")
    run_index(config, embedding_func=HashEmbedding().func())
    assert regrouped == [1] and "1945" in _by_target(config)["Zeta"]
    fresh = _index(_vault(tmp_path / "fresh", {p.name: p.read_text() for p in vault.glob("*.md")}))
    assert _by_target(config) == _by_target(fresh)
