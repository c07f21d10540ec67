"""Lexical + names + LightRAG retrieval: the tokenizer, the BM25 index kept in step by `index`, the names
automaton, LightRAG's document rows, and `wikirag search` through the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, copy_vault, indexed_copy
from wikirag.cli import app
from wikirag.index.lexical import LEXICAL_FILENAME, load_index, tokenize
from wikirag.index.run import run_index
from wikirag.query.engine import WarmEngine
from wikirag.query.notes import NoteTable, read_note_table
from wikirag.query.search import best_passages, rrf
from wikirag.settings import load_config
from wikirag.storage.fs import is_store_file

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
runner = CliRunner()


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory):
    return indexed_copy(SAMPLE, tmp_path_factory.mktemp("retrieval") / "vault")


def _search(config, query, mode="lexical", limit=5):
    async def run():
        async with WarmEngine(config, embedding_func=HashEmbedding().func()) as warm:
            return await warm.search(query, limit=limit, mode=mode)

    return asyncio.run(run())


def test_tokens_are_stemmed_without_stopwords_and_cjk_becomes_bigrams():
    assert tokenize("The machines were running") == ["machin", "run"]
    assert tokenize("卡片笔记") == ["卡片", "片笔", "笔记"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("ＡＢＣ Ｄｅｆ") == ["abc", "def"]  # NFKC folds full-width letters
    assert tokenize("Zettelkasten与卡片") == ["zettelkasten", "与卡", "卡片"]


def test_rrf_sums_reciprocal_ranks():
    fused = rrf({"a": ["x", "y"], "b": ["y", "z"]})
    assert [p for p, _ in fused] == ["y", "x", "z"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


def test_names_match_at_word_boundaries_only():
    table = NoteTable({"Enigma.md": {"title": "Enigma", "aliases": ["The machine"]},
                       "卡片笔记.md": {"title": "卡片笔记"}, "Enigma machine.md": {"title": "Enigma machine"}})
    assert table.notes_named_in("How did the Enigma machine work?") == ["Enigma machine.md"]
    assert table.notes_named_in("Enigmas and enigmatic things") == []
    assert table.notes_named_in("我在用卡片笔记写作") == ["卡片笔记.md"]
    assert table.resolve("the MACHINE") == "Enigma.md" and table.resolve("[[Enigma machine|x]]") == "Enigma machine.md"


def test_index_writes_the_lexical_index_and_document_rows(sample_store):
    config = sample_store
    index = load_index(config.workspace_dir)
    notes = read_note_table(config).notes
    assert index is not None and index.size == sum(n["chunks"] for n in notes.values())
    assert is_store_file(config.workspace_dir / LEXICAL_FILENAME)
    rows = json.loads((config.workspace_dir / "kv_store_doc_status.json").read_text())
    assert sorted(r["file_path"] for r in rows.values()) == sorted(notes)
    assert all(r["status"] == "processed" for r in rows.values())
    docs = json.loads((config.workspace_dir / "kv_store_full_docs.json").read_text())
    assert set(docs) == set(rows) and all(d["file_path"] in notes for d in docs.values())


def test_lexical_search_finds_exact_terms_with_passages(sample_store):
    result = _search(sample_store, "diagonal board")
    assert result.hits[0].path in {"people/Gordon Welchman.md", "projects/Bombe.md"}
    assert any("diagonal board" in p.lower() for p in result.hits[0].passages)
    assert result.hits[0].matched_by[0] == "lexical"  # lexical mode: BM25, with the anchor text of links to it
    assert set(result.hits[0].matched_by) <= {"lexical", "anchor"}


def test_a_passage_names_its_section_and_never_a_heading_or_code_comment_as_one():
    text = ("---\ntitle: x\n---\nIntro about engines.\n\n# Engines\n## Rotors\nThe rotor wiring stepped.\n\n"
            "```bash\n# rotor wiring script\nrun rotors\n```\n\n## Plugboard\nSwaps letters in pairs.\n")
    assert best_passages(text, "rotor wiring", count=1) == (["Engines", "Rotors"], ["The rotor wiring stepped."])
    # a `#` line inside a fence is code, not a heading: the fence is a passage of the Rotors section
    assert best_passages(text, "rotor script", count=1) == (["Engines", "Rotors"],
                                                             ["```bash\n# rotor wiring script\nrun rotors\n```"])
    assert best_passages(text, "intro", count=1) == ([], ["Intro about engines."])
    assert best_passages(text, "nothing matches", count=1) == ([], ["Intro about engines."])


def test_a_passage_leaves_comments_out():
    text = ("Rotor notes.\n\n<!-- include: rotor_wiring_examples.md -->\n\n%% rotor wiring: check again %%\n\n"
            "The rotor wiring %%(draft)%% stepped.\n\n$$\nrotor \\cdot wiring\n$$\n")
    assert best_passages(text, "rotor wiring", count=3) == ([], ["The rotor wiring stepped.",
                                                                 "$$\nrotor \\cdot wiring\n$$", "Rotor notes."])


def test_search_points_at_the_section_of_its_best_passage(sample_store):
    hit = _search(sample_store, "diagonal board")
    welchman = next(h for h in hit.hits if h.path == "people/Gordon Welchman.md")
    assert welchman.heading == "Gordon Welchman > The diagonal board"  # the note opens with its title as H1
    assert welchman.obsidian_uri.endswith("%23The%20diagonal%20board")
    assert welchman.passages[0].startswith("Welchman's best-known contribution")
    result = runner.invoke(app, ["search", "diagonal board", "--vault", str(sample_store.vault), "--store",
                                 str(sample_store.store), "-m", "lexical"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "Gordon Welchman › The diagonal board" in result.output
    wrapped = [line for line in result.output.splitlines() if line.strip() and not line.lstrip()[:1].isdigit()]
    assert all(line.startswith("    ") for line in wrapped)  # passages and links indented on every line


def test_a_specific_name_ranks_its_note_and_a_common_one_does_not(sample_store):
    # an alias of Al-Kindi, written once in the vault. (Asked as "What did Alkindus write?", BM25 weighs that one
    # "alkindus" against Index.md's five "Secret Writing"s, a near tie that the names signal's 0.1 cannot decide.)
    result = _search(sample_store, "Who was Alkindus?", limit=3)
    assert result.hits[0].path == "people/Al-Kindi.md" and "names" in result.hits[0].matched_by
    common = _search(sample_store, "Turing", limit=3)  # an alias too, but written in many notes
    assert common.hits[0].path == "people/Alan Turing.md" and "names" not in common.hits[0].matched_by


def test_search_fuses_lightrag_retrieval(sample_store):
    result = _search(sample_store, "Who came up with the diagonal board?", mode="mix")
    assert any("lightrag" in h.matched_by for h in result.hits)
    assert "people/Gordon Welchman.md" in [h.path for h in result.hits]


def test_edits_and_deletions_reach_the_lexical_index_and_document_rows(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Alpha.md").write_text("# Alpha\n\nNothing special here.\n", encoding="utf-8")
    (vault / "Beta.md").write_text("# Beta\n\nLinks to [[Alpha]].\n", encoding="utf-8")
    (vault / "卡片.md").write_text("# 卡片\n\n卡片笔记写作法强调每张卡片只记录一个想法。\n", encoding="utf-8")
    config = load_config(vault, store=tmp_path / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    assert _search(config, "xylophonic").hits == []
    assert _search(config, "写作法").hits[0].path == "卡片.md"
    (vault / "Alpha.md").write_text("# Alpha\n\nA xylophonic melody.\n", encoding="utf-8")
    (vault / "Beta.md").unlink()
    run_index(config, embedding_func=HashEmbedding().func())
    assert [h.path for h in _search(config, "xylophonic").hits] == ["Alpha.md"]
    assert "Beta.md" not in load_index(config.workspace_dir).chunk_paths
    rows = json.loads((config.workspace_dir / "kv_store_doc_status.json").read_text())
    assert sorted(r["file_path"] for r in rows.values()) == ["Alpha.md", "卡片.md"]


def test_rebuild_deletes_the_lexical_index_and_writes_it_again(tmp_path, fast_embedding):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    lexical = load_config(vault).workspace_dir / LEXICAL_FILENAME
    lexical.write_bytes(b"not an index")
    assert runner.invoke(app, ["index", str(vault), "--rebuild"]).exit_code == 0
    assert load_index(lexical.parent) is not None


def test_cli_search_prints_ranked_notes(sample_store, fast_embedding):
    vault = str(sample_store.vault)
    result = runner.invoke(app, ["search", "Who broke the Zimmermann telegram?", "--vault", vault, "--json", "-n", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["hits"]) == 3
    hit = next(h for h in data["hits"] if h["path"] == "Zimmermann Telegram.md")
    assert hit["obsidian_uri"].startswith("obsidian://open?vault=vault&file=Zimmermann") and hit["passages"]
    shown = runner.invoke(app, ["search", "diagonal board", "--vault", vault, "-m", "lexical"])
    assert shown.exit_code == 0 and "Welchman" in shown.stdout
    bad = runner.invoke(app, ["search", "x", "--vault", vault, "-m", "bogus"])
    assert bad.exit_code == 1 and "unknown search mode" in bad.output


def test_the_retrieval_tokenizer_round_trips_and_counts_close_to_tiktoken():
    from wikirag.lightrag.readtokens import retrieval_tokenizer
    from wikirag.lightrag.tokens import count_tokens

    tokenizer = retrieval_tokenizer()
    for path in ("people/Alan Turing.md", "concepts/暗号史.md", "Index.md"):
        text = (SAMPLE / path).read_text(encoding="utf-8")
        tokens = tokenizer.encode(text)
        assert tokenizer.decode(tokens) == text
        assert tokenizer.decode(tokens[:10]) == text[: len(tokenizer.decode(tokens[:10]))]
        assert 0.75 < len(tokens) / count_tokens(text) < 1.25, path


def test_the_retrieval_tokenizer_cuts_lists_at_the_longest_prefix_that_fits():
    from lightrag.utils import truncate_list_by_token_size

    from wikirag.lightrag.readtokens import retrieval_tokenizer

    tokenizer = retrieval_tokenizer()
    texts = [line for path in sorted(SAMPLE.rglob("*.md")) for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    tokens = tokenizer.encode("\n".join(texts[:50]))
    text, offsets = tokenizer.tokenizer.decode_with_offsets(tokens)
    assert text == "\n".join(texts[:50])
    assert offsets == [len(tokenizer.decode(tokens[:i])) for i in range(len(tokens))]
    items = [{"text": t} for t in texts]
    for budget in (1, 40, 333, 2000, 10**6):
        kept = truncate_list_by_token_size(items, lambda item: item["text"], "\n", budget, tokenizer)
        fits = [k for k in range(len(items) + 1)
                if k == 0 or len(tokenizer.encode("\n".join(texts[:k]))) <= budget]
        assert len(kept) == max(fits), budget


@pytest.mark.parametrize("path", ["a/b.md", "x.", ".md", "a.b.md", "dir.x/name", "n", "a/.hidden.md", "卡片.md",
                                  "a/b/c.MD", "a/b.", "..md"])
def test_file_stem_is_pathlibs_stem(path):
    from pathlib import PurePath

    from wikirag.query.notes import file_stem

    assert file_stem(path) == PurePath(path).stem


def test_a_huge_notes_passages_are_found_deep_in_it_without_tokenizing_every_paragraph(monkeypatch):
    import wikirag.query.search as search

    paragraphs = [f"Paragraph {i} about rotors and plugboards." for i in range(5000)]
    paragraphs[4321] = "The zebra crossing machines were rebuilt."
    text = "\n\n".join(paragraphs)
    tokenized = []
    real = search.tokenize
    monkeypatch.setattr(search, "tokenize", lambda t: tokenized.append(t) or real(t))
    assert best_passages(text, "zebra machine", count=1) == ([], ["The zebra crossing machines were rebuilt."])
    assert len(tokenized) < 10  # the query, and the one paragraph that holds its words
    tokenized.clear()
    _, passages = best_passages(text, "rotors", count=2)  # every paragraph holds it: the first 2,000 are scored
    assert passages == paragraphs[:2] and len(tokenized) == search.MAX_SCORED_PARAGRAPHS + 1


def test_a_query_of_words_no_note_holds_says_its_hits_are_only_vector_neighbours(sample_store):
    """A query whose words BM25, the names and the anchor text all miss ("zzqqxx"; or stopwords alone, which the
    hashing test embedding still places near some chunks) gets LightRAG's nearest chunks however far they are:
    the result says so."""
    assert not _search(sample_store, "zzqqxx vvkkpp", mode="lexical").hits
    vague = _search(sample_store, "which of these was it", mode="naive")
    assert vague.hits and any("none of the query's words matched" in n for n in vague.notes)
    real = _search(sample_store, "diagonal board", mode="naive")
    assert real.hits and not any("none of the query's words matched" in n for n in real.notes)


def test_a_note_that_is_only_its_properties_is_found_by_its_title_and_aliases(tmp_path):
    """oldwinter-cards keeps a note per quote or person with no body (114 of 964): its title, aliases and
    description become its chunk, so BM25 and the vectors find it. An empty file stays without a chunk."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "🧑济沅.md").write_text("---\naliases:\n  - 李济沅\n  - 好室友\ntitle: 🧑济沅\n---\n", encoding="utf-8")
    (vault / "quote.md").write_text("---\ntitle: We shape our tools and thereafter our tools shape us\n---\n\n",
                                    encoding="utf-8")
    (vault / "empty.md").write_text("", encoding="utf-8")
    (vault / "other.md").write_text("Notes about tools for gardening, and a room-mate called Li.\n", encoding="utf-8")
    config = load_config(vault)
    run_index(config, embedding_func=HashEmbedding().func())
    index = load_index(config.workspace_dir)
    assert "empty.md" not in index.chunk_paths
    assert _search(config, "李济沅").hits[0].path == "🧑济沅.md"
    hits = _search(config, "shape our tools")
    assert hits.hits[0].path == "quote.md" and "lexical" in hits.hits[0].matched_by
