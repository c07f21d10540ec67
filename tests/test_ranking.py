"""How sources and search hits are ranked (query.ranking): each signal's note ranking, their fusion, and the
fused sources of LightRAG's modes through the library and the CLI on the sample vault."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, indexed_copy
from wikirag.cli import app
from wikirag.index.lexical import build_index, tokenize
from wikirag.query.notes import NoteTable
from wikirag.query.ranking import (
    FUSION,
    Fusion,
    chunk_notes,
    context_chunk_order,
    fuse,
    graph_notes,
    lexical_notes,
    named_notes,
)
from wikirag.query.retrieve import ask

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_vault"
CORPUS = Path(os.environ.get("WIKIRAG_CORPUS", ROOT.parent / "shared" / "corpus"))
runner = CliRunner()


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory):
    return indexed_copy(SAMPLE, tmp_path_factory.mktemp("ranking") / "vault")


def test_chunk_notes_keep_lightrags_chunk_order_not_chunk_counts():
    # LightRAG's reference list puts the note with most chunks first; its chunk order is its relevance order
    chunks = [{"file_path": "answer.md"}, {"file_path": "long.md"}, {"file_path": "long.md"},
              {"file_path": "long.md"}, {"file_path": ""}, {"file_path": "other.md"}]
    assert chunk_notes(chunks) == ["answer.md", "long.md", "other.md"]


def test_graph_notes_are_the_notes_the_entities_stand_for():
    table = NoteTable({"people/Alan Turing.md": {"entity": "Alan Turing"}, "projects/Bombe.md": {"entity": "Bombe"},
                       "Colossus.md": {}, "Index.md": {"entity": "Index"}})
    entities = [{"entity_name": "Bombe", "file_path": "Index.md<SEP>people/Alan Turing.md"},
                {"entity_name": "diagonal board"},  # extracted, no note of its own
                {"entity_name": "Colossus"}]  # a note without an entity field: its file name
    relations = [{"src_id": "Alan Turing", "tgt_id": "Bombe"}, {"src_id": "Index", "tgt_id": "Colossus"}]
    # entities and relation ends in turn; a note once; the notes merely mentioning an entity are not its note
    assert graph_notes(table, entities, relations) == ["projects/Bombe.md", "people/Alan Turing.md",
                                                       "Colossus.md", "Index.md"]
    assert graph_notes(table, [], []) == []


def _index(rows: list[tuple[str, str]]):
    return build_index([(f"c{i}", path, "", tokenize(text)) for i, (path, text) in enumerate(rows)])


def test_an_answers_chunks_take_lightrags_and_bm25s_in_turn():
    """Vector hit, BM25 hit, vector hit, ...: a chunk both found comes once, at its first turn, and the list
    stops at LightRAG's count; without a lexical index the vector hits stand."""
    index = _index([("a.md", "enigma rotor wiring"), ("b.md", "enigma plugboard"), ("c.md", "a rotor")])
    choose = context_chunk_order(index, "enigma rotor")
    lexical = [index.chunk_ids[i] for i, _ in index.top("enigma rotor", 3)]
    assert lexical[0] == "c0" and sorted(lexical) == ["c0", "c1", "c2"]  # the chunk with both words leads
    assert choose(["v1", "c0", "v2"], 4) == ["v1", "c0", lexical[1], "v2"]
    assert choose(["v1", "v2", "v3", "v4"], 3) == ["v1", "c0", "v2"]
    assert choose([], 5) == lexical
    assert context_chunk_order(None, "enigma rotor")(["v1", "v2"], 5) == ["v1", "v2"]


def test_a_note_is_ranked_by_its_best_chunk_unless_spread_adds_the_rest():
    filler = " ".join(f"word{i}" for i in range(40))
    index = _index([("long.md", f"zymurgy {filler}"), ("long.md", f"zymurgy {filler} more"),
                    ("long.md", f"zymurgy {filler} again"), ("short.md", "zymurgy zymurgy brewing"),
                    ("other.md", "nothing to see")])
    ranked, _ = lexical_notes(index, "zymurgy", FUSION)
    assert ranked == ["short.md", "long.md"]  # one strong chunk beats three weak ones: no crowding by length
    summed, _ = lexical_notes(index, "zymurgy", Fusion(weights=FUSION.weights, spread=1.0))
    assert summed == ["long.md", "short.md"]


def test_fusion_keeps_bm25s_head_and_reorders_below_it():
    notes = NoteTable({p: {} for p in ("a.md", "b.md", "c.md", "d.md", "e.md", "x.md")})
    rankings = {"lexical": ["a.md", "b.md", "c.md", "d.md", "e.md"], "lightrag": ["x.md", "e.md"],
                "graph": ["x.md", "e.md"], "names": []}
    fused = [p for p, _s, _f in fuse(notes, rankings)]
    # BM25's first stays first, and a note only the other signals find stays below BM25's top ten...
    assert fused[0] == "a.md" and fused[-1] == "x.md"
    # ...but a note they agree on moves up within BM25's list
    assert fused.index("e.md") < fused.index("c.md")
    found = {p: f for p, _s, f in fuse(notes, rankings)}
    assert found["e.md"] == ["lexical", "lightrag", "graph"] and found["x.md"] == ["lightrag", "graph"]
    # a signal with weight 0 neither scores nor is reported
    silent = Fusion(weights={**FUSION.weights, "graph": 0.0}, k=FUSION.k)
    assert all("graph" not in f for _p, _s, f in fuse(notes, rankings, silent))


def test_a_navigation_note_is_demoted_below_the_prose_note_that_answers():
    """A note that is mostly links (a hub listing every name) matches the words of a thematic question best and
    BM25 ranks it first; fusion with the lexical index halves its score, so the prose note comes first. Without
    the index, or with the factor at 1, BM25's order stands; a prose note with as many links is not touched."""
    index = _index([("Index.md", "enigma bombe colossus lorenz"),
                    ("Bombe.md", "the bombe broke enigma settings daily at bletchley with cribs " * 10),
                    ("Lorenz.md", "colossus read lorenz teleprinter traffic " * 4)])
    notes = NoteTable({"Index.md": {"links": 4}, "Bombe.md": {"links": 4}, "Lorenz.md": {"links": 1}})
    rankings = {"lexical": lexical_notes(index, "enigma bombe colossus", FUSION)[0]}
    assert rankings["lexical"][0] == "Index.md"
    assert [p for p, _s, _f in fuse(notes, rankings)][0] == "Index.md"  # no index: nothing is known
    fused = [p for p, _s, _f in fuse(notes, rankings, FUSION, index)]
    assert fused.index("Bombe.md") < fused.index("Index.md")
    off = Fusion(weights=FUSION.weights, k=FUSION.k, nav_density=FUSION.nav_density, nav_factor=1.0)
    assert [p for p, _s, _f in fuse(notes, rankings, off, index)] == [p for p, _s, _f in fuse(notes, rankings)]
    from wikirag.query.ranking import navigation_notes

    assert navigation_notes(notes, index, FUSION.nav_density) == {"Index.md"}


def test_the_names_rows_count_the_distinct_names_a_note_links_to(sample_store):
    """`links` in a note's names row: the distinct names its own links reach (what marks a navigation note),
    not the entities extracted from its text nor repeated links."""
    from wikirag.index.ledger import Ledger
    from wikirag.query.notes import read_note_table

    table = read_note_table(sample_store)
    ledger = Ledger.load(sample_store.workspace_dir)
    for path, row in table.notes.items():
        entry = ledger.notes[path]
        linked = {f.tgt for f in entry.relations if f.src == entry.entity}
        assert row["links"] == len(linked & {f.name for f in entry.entities if f.rank == 1})
    hub = max(table.notes, key=lambda p: table.notes[p]["links"])
    assert hub == "Index.md" and table.notes[hub]["links"] >= 15


def test_graph_modes_cite_the_notes_of_their_entities_and_no_fusion_keeps_lightrags_order(sample_store):
    config = sample_store
    question = "Who came up with the Bombe's diagonal board, and why did it make the machine more effective?"
    embedding = HashEmbedding().func()
    own = ask(config, question, mode="local", context_only=True, fusion=False, embedding_func=embedding)
    assert {tuple(s.found_by) for s in own.sources} == {("lightrag",)}
    fused = ask(config, question, mode="local", context_only=True, embedding_func=embedding)
    by_path = {s.path: s.found_by for s in fused.sources}
    assert "graph" in by_path["projects/Bombe.md"]  # the entity "Bombe" stands for this note
    assert [s.path for s in fused.sources][:2] == ["projects/Bombe.md", "people/Gordon Welchman.md"]
    assert len(fused.sources) == max(5, len(own.sources))  # fusion reorders and chooses, it does not pile up
    assert fused.chunks == own.chunks and fused.entities == own.entities  # the context stays LightRAG's


def test_cli_query_prints_fused_sources_and_no_fusion_lightrags(sample_store, fast_embedding):
    vault = str(sample_store.vault)
    args = ["query", "What did Leon Battista Alberti contribute to cryptography?", "--vault", vault,
            "-m", "global", "--context-only", "--json"]
    fused = runner.invoke(app, args)
    own = runner.invoke(app, [*args, "--no-fusion"])
    assert fused.exit_code == 0 and own.exit_code == 0, fused.output + own.output
    fused_sources = json.loads(fused.stdout)["sources"]
    own_sources = json.loads(own.stdout)["sources"]
    assert fused_sources[0]["path"] == "concepts/Polyalphabetic substitution.md"
    assert "lexical" in fused_sources[0]["found_by"]
    assert all(s["found_by"] == ["lightrag"] for s in own_sources)


@pytest.mark.parametrize("name, vault", [("sample_vault", SAMPLE),
                                         ("data_engineering_wiki", CORPUS / "data-engineering-wiki"),
                                         ("data_engineering_wiki_2", CORPUS / "data-engineering-wiki"),
                                         ("obsidian_tasks_docs", CORPUS / "obsidian-tasks-docs"),
                                         ("obsidian_tasks_docs_2", CORPUS / "obsidian-tasks-docs"),
                                         ("mathwiki", CORPUS / "mathwiki"),
                                         ("oldwinter_cards", CORPUS / "oldwinter-cards")])
def test_benchmark_questions_point_at_existing_notes(name, vault):
    if not vault.is_dir():
        pytest.skip(f"{vault} is not here (set WIKIRAG_CORPUS to the shared corpus)")
    questions = json.loads((ROOT / "bench" / "questions" / f"{name}.json").read_text())["questions"]
    assert len(questions) >= 15
    for item in questions:
        assert item["q"].strip() and item["notes"], item
        for path in item["notes"]:
            assert (vault / path).is_file(), f"{name}: {path}"


def test_a_file_name_outranks_another_notes_alias_as_in_obsidian():
    table = NoteTable({"Collide.md": {"title": "Collide", "aliases": ["Note A"]}, "Note A.md": {"title": "Note A"}})
    assert table.by_name["note a"] == ["Note A.md", "Collide.md"]
    assert table.display_name("note a") == "Note A"
    assert table.notes_named_in("what does note a say") == ["Note A.md", "Collide.md"]


def test_a_query_that_is_a_name_points_at_that_note_even_when_its_words_are_common():
    texts = {"Note.md": "The Note page.", "Note A.md": "The Note A page.", "Note B.md": "The Note B page.",
             "Other.md": "Another note."}
    table = NoteTable({p: {"title": p[:-3]} for p in texts})
    index = build_index([(f"c{i}", p, "", tokenize(t)) for i, (p, t) in enumerate(texts.items())])
    # "a" is a stopword and "note" is in every note: inside a longer question the name is a topic, not a pointer
    assert named_notes(table, index, "which note says something about things") == []
    assert named_notes(table, index, "Note A") == ["Note A.md"]
    assert named_notes(table, index, "note a?") == ["Note A.md"]


def _names_in_by_the_rule(table: NoteTable, text: str) -> list[str]:
    """What names_in promises, spelt out: every name found at word boundaries, longest first, less any name
    lying inside a longer one found where it is."""
    import re

    folded, found = text.casefold(), []
    for surface in table.by_name:
        for m in re.finditer(rf"(?<!\w){re.escape(surface)}(?!\w)", folded):
            found.append((m.start(), m.end(), surface))
    found.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
    kept: list[tuple[int, int, str]] = []
    for span in found:
        if not any(k[0] <= span[0] and span[1] <= k[1] for k in kept):
            kept.append(span)
    return list(dict.fromkeys(s[2] for s in kept))


def test_names_in_keeps_the_longest_names_and_drops_the_ones_inside_them():
    import random

    names = ["Alan Turing", "Turing", "Bletchley Park", "Park", "Enigma", "Enigma machine", "machine code", "code",
             "Al-Kindi", "Kindi"]
    table = NoteTable({f"{n}.md": {"title": n} for n in names})
    words = ["alan", "turing", "bletchley", "park", "enigma", "machine", "code", "al-kindi", "kindi", "the", "of"]
    rng = random.Random(3)
    for _ in range(2000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 14)))
        assert table.names_in(text) == _names_in_by_the_rule(table, text), text
    assert table.names_in("Enigma " * 20_000) == ["enigma"]  # a name said 20,000 times (this was quadratic)
