"""Hint-augmented LLM extraction through LightRAG's real pipeline, with a deterministic fake LLM."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.fakes import FakeLLM
from tests.storekit import HashEmbedding, copy_vault, snapshot
from wikirag.graph.hygiene import EntityNames
from wikirag.graph.records import ChunkRecord
from wikirag.index.extract import Member, attribute
from wikirag.index.ledger import Ledger
from wikirag.index.planning import plan_index
from wikirag.index.run import run_index
from wikirag.plan.hints import HINT_TITLE
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


def config_for(vault: Path, store: Path, model: str = "fake:one"):
    return load_config(vault, store=store, overrides={"llm": {"model": model}})


def index(config, llm, **kwargs):
    return run_index(config, llm_func=llm, embedding_func=HashEmbedding().func(), **kwargs)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_vault(SAMPLE, tmp_path / "vault")


class HintEcho(FakeLLM):
    """A fake whose answer depends on the hint it was shown (as a real model's would)."""

    def extraction(self, text: str) -> str:
        return super().extraction(text)

    async def __call__(self, prompt, system_prompt=None, history_messages=None, **kwargs):
        answer = await super().__call__(prompt, system_prompt, history_messages, **kwargs)
        if HINT_TITLE in prompt and self.kind_of(prompt) == "extract":
            hint = prompt[prompt.index(HINT_TITLE): prompt.index("---Input Text---")]
            tag = hashlib.md5(hint.encode()).hexdigest()[:6]
            answer = answer.replace("is named in passage", f"(hint {tag}) is named in passage")
        return answer


def extract_routed(config) -> list[str]:
    plan = plan_index(config, Ledger())
    return sorted(p for p, d in plan.decisions.items() if d.route == "extract")


def test_extract_routed_notes_see_their_hint_on_every_chunk(vault, tmp_path):
    config = config_for(vault, tmp_path / "store")
    llm = FakeLLM(keep_prompts=True)
    report = index(config, llm)
    routed = extract_routed(config)
    assert routed and report.notes_extracted == len(routed)
    extract_calls = [c for c in llm.calls if c.kind == "extract"]
    assert all(HINT_TITLE in c.prompt for c in extract_calls)
    # every routed note's text reached the LLM (alone or in a pack of small notes)
    plan = plan_index(config, Ledger())
    inputs = "\n".join(c.prompt for c in extract_calls)
    for path in routed:
        assert plan.vault.notes[path].body.strip().split("\n")[0] in inputs, path
    snap = snapshot(config)
    # the stored (embedded, retrieved) chunk text is the note's own text, never the hint
    assert not any(HINT_TITLE in chunk["content"] for chunk in snap["chunks"].values())
    ledger = Ledger.load(config.workspace_dir)
    assert all(ledger.notes[p].status == "indexed" for p in routed)
    # extracted entities are in the graph, carrying the note they came from
    extracted = [f for p in routed for f in ledger.notes[p].entities if f.rank == 2]
    assert extracted
    assert all(f.file_path in snap["nodes"][f.name]["file_path"] for f in extracted)
    assert report.llm_calls == len(llm.calls)


def test_a_prompt_that_lost_its_hint_stops_the_run(vault, tmp_path, monkeypatch):
    """If a LightRAG upgrade moved the input-text block, no extraction may go out without its hint."""
    from wikirag.lightrag import hinting

    config = config_for(vault, tmp_path / "store")
    monkeypatch.setattr(hinting, "_INPUT_FENCE", "---Input Text (moved)---\n")
    llm = FakeLLM(keep_prompts=True)
    with pytest.raises(hinting.HintNotApplied, match="refusing to extract without it"):
        index(config, llm)
    assert not any(HINT_TITLE in c.prompt for c in llm.calls)


def test_every_extraction_prompt_counts_as_hinted(vault, tmp_path, monkeypatch):
    from wikirag.index import run

    made = []
    original = run.hinting_llm
    monkeypatch.setattr(run, "hinting_llm", lambda *a, **k: made.append(original(*a, **k)) or made[-1])
    config = config_for(vault, tmp_path / "store")
    llm = FakeLLM(keep_prompts=True)
    index(config, llm)
    asked = [c for c in llm.calls if c.kind in ("extract", "glean")]
    assert asked and made[0].hinted == len(asked)


def test_without_an_llm_extract_notes_wait_as_pending(vault, tmp_path):
    config = load_config(vault, store=tmp_path / "store")
    report = run_index(config, embedding_func=HashEmbedding().func())
    assert report.notes_pending_extraction == len(extract_routed(config)) > 0
    assert report.llm_calls == 0
    # a later run with an LLM completes them
    later = config_for(vault, tmp_path / "store")
    llm = FakeLLM()
    report = index(later, llm)
    assert report.notes_pending_extraction == 0
    assert report.notes_extracted == len(extract_routed(later))


def test_the_fresh_index_invariant_holds_with_extraction(vault, tmp_path):
    config = config_for(vault, tmp_path / "store")
    index(config, HintEcho())
    # edit an extract-routed note, and rename a note others link to (their hints change)
    routed = extract_routed(config)
    note = vault / routed[0]
    note.write_text(note.read_text() + "\n\nA new paragraph about Charles Babbage and the Analytical Engine.\n")
    (vault / "people" / "Alan Turing.md").rename(vault / "people" / "Alan M Turing.md")
    index(config, HintEcho())
    fresh = config_for(vault, tmp_path / "fresh")
    index(fresh, HintEcho())
    assert snapshot(config) == snapshot(fresh)


def test_unchanged_chunks_hit_lightrags_cache(vault, tmp_path):
    config = config_for(vault, tmp_path / "store")
    index(config, FakeLLM())
    target = vault / "Zimmermann Telegram.md"
    target.write_text(target.read_text() + "\n\nOne more sentence about Arthur Zimmermann.\n")
    llm = FakeLLM()
    report = index(config, llm)
    assert report.notes_changed == 1
    assert [c.kind for c in llm.calls].count("extract") == 1  # only the changed chunk went to the LLM


def test_a_rebuild_pays_for_no_answer_it_already_has(vault, tmp_path):
    """`--rebuild` starts the index over but keeps LightRAG's LLM cache: the same chunks, hints and model ask
    the same prompts, so re-deriving the graph costs no LLM call, and the result equals the first build."""
    config = config_for(vault, tmp_path / "store")
    first = FakeLLM()
    index(config, first)
    built = snapshot(config)
    assert [c.kind for c in first.calls].count("extract") > 0
    again = FakeLLM()
    report = index(config, again, rebuild=True)
    assert report.notes_extracted == len(extract_routed(config)) > 0
    assert again.calls == []
    assert snapshot(config) == built


def test_a_rebuild_can_drop_the_llm_cache_on_request(vault, tmp_path):
    config = config_for(vault, tmp_path / "store")
    first = FakeLLM()
    index(config, first)
    again = FakeLLM()
    index(config, again, rebuild=True, drop_llm_cache=True)
    assert [c.kind for c in again.calls].count("extract") == [c.kind for c in first.calls].count("extract")


def test_switching_models_does_not_reuse_cached_answers(vault, tmp_path):
    first = FakeLLM()
    index(config_for(vault, tmp_path / "store", "fake:one"), first)
    llm = FakeLLM()
    report = index(config_for(vault, tmp_path / "store", "fake:two"), llm)
    routed = extract_routed(config_for(vault, tmp_path / "store"))
    assert report.notes_extracted == len(routed)
    assert [c.kind for c in llm.calls].count("extract") == [c.kind for c in first.calls].count("extract") > 0


def test_llm_failures_leave_notes_pending_and_the_run_goes_on(vault, tmp_path):
    config = config_for(vault, tmp_path / "store")
    failing = FakeLLM(mode="fail")
    report = index(config, failing)
    routed = extract_routed(config)
    assert 0 < report.llm_failures <= len(routed)  # one per extraction call that failed: a pack fails as one
    assert report.notes_pending_extraction == len(routed)
    assert any("extraction failed, will retry" in i for i in report.issues)
    snap = snapshot(config)
    assert "Zimmermann Telegram" in snap["nodes"]  # the structure is indexed all the same
    report = index(config, FakeLLM())
    assert report.notes_pending_extraction == 0 and report.notes_extracted == len(routed)


def test_prompt_examples_and_garbage_never_reach_the_graph(vault, tmp_path):
    config = config_for(vault, tmp_path / "store")
    index(config, FakeLLM(mode="examples"))
    nodes = snapshot(config)["nodes"]
    assert not [n for n in nodes if n.startswith("<") or "entity_name" in n.lower()]
    config2 = config_for(vault, tmp_path / "store2")
    report = index(config2, FakeLLM(mode="garbage"))
    assert report.notes_pending_extraction == 0  # garbage parses to nothing; the note is still indexed


def test_llm_names_matching_an_alias_become_that_notes_entity(tmp_path):
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Alan Turing.md").write_text("---\naliases: [Turing]\ntype: person\n---\nA mathematician.\n")
    (vault / "Essay.md").write_text(
        "---\nwikirag: extract\n---\nDuring the war Turing worked with Gordon Welchman at Hut Eight. "
        "Turing and Welchman designed machines.\n")
    config = config_for(vault, tmp_path / "store")
    report = index(config, FakeLLM())
    nodes = snapshot(config)["nodes"]
    assert "Turing" not in nodes
    assert "Essay.md" in nodes["Alan Turing"]["file_path"]
    assert any("'Turing' -> 'Alan Turing' (alias)" in m for m in report.entity_merges)
    assert nodes["Alan Turing"]["entity_type"] == "person"  # the frontmatter type wins over the LLM's


class EchoesExamples(FakeLLM):
    """Names LightRAG's own prompt examples (Tokyo, Noah Carter) and an invented firm in every answer."""

    def extraction(self, text: str) -> str:
        d = self.tuple_delimiter
        lines = [f"entity{d}{name}{d}{kind}{d}{name} is mentioned." for name, kind in
                 (("Tokyo", "location"), ("Noah Carter", "person"), ("Xanadu Holdings", "organization"))]
        return "\n".join([*lines, self.completion])


def test_a_prompt_example_name_is_dropped_only_when_the_text_does_not_name_it(tmp_path, monkeypatch):
    from wikirag.index import planning

    # LightRAG 1.5.7's examples are placeholders only; earlier versions' examples named real entities.
    monkeypatch.setattr(planning, "prompt_example_names", lambda: frozenset({"Tokyo", "Noah Carter", "<entity_name>"}))
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "Trip.md").write_text("---\nwikirag: extract\n---\nIn spring we flew to Tokyo for the conference.\n")
    (vault / "Other.md").write_text("---\nwikirag: extract\n---\nA quiet week at home with the garden.\n")
    # each note extracted alone (packed, Other's echo of "Tokyo" would be Trip's grounded Tokyo: see test_packing)
    config = load_config(vault, store=tmp_path / "store", overrides={"llm": {"model": "fake:one"},
                                                                      "index": {"pack_max_tokens": 0}})
    report = index(config, EchoesExamples())
    nodes = snapshot(config)["nodes"]
    assert "Trip.md" in nodes["Tokyo"]["file_path"] and "Other.md" not in nodes["Tokyo"]["file_path"]
    assert "Noah Carter" not in nodes and "Xanadu Holdings" not in nodes
    # the two filters are told apart in the report
    assert "Other.md: 'Tokyo' (LightRAG prompt example)" in report.entities_dropped
    assert "Trip.md: 'Noah Carter' (LightRAG prompt example)" in report.entities_dropped
    assert "Trip.md: 'Xanadu Holdings' (not found in the text)" in report.entities_dropped


def test_a_folder_type_and_the_llms_type_meet_for_a_fuzzy_merge(tmp_path):
    vault = tmp_path / "v"
    (vault / "people").mkdir(parents=True)
    (vault / "people" / "Gordon Welchman.md").write_text("Head of Hut 6.\n")  # type "people", from its folder
    (vault / "Essay.md").write_text("---\nwikirag: extract\n---\nGordon Welchmann ran Hut 6 in the war.\n")

    class SaysPerson(FakeLLM):
        def extraction(self, text: str) -> str:
            d = self.tuple_delimiter
            return "\n".join([f"entity{d}Gordon Welchmann{d}Person{d}Ran Hut 6.", self.completion])

    config = config_for(vault, tmp_path / "store")
    report = index(config, SaysPerson())
    nodes = snapshot(config)["nodes"]
    assert "Gordon Welchmann" not in nodes
    assert "Essay.md" in nodes["Gordon Welchman"]["file_path"]
    assert any("'Gordon Welchmann' -> 'Gordon Welchman' (fuzzy)" in m for m in report.entity_merges)


def test_a_budget_extracts_what_fits_and_leaves_the_rest_pending(vault, tmp_path):
    (vault / "wikirag.toml").write_text("[cost]\nprice_in = 0.15\nprice_out = 0.60\n")  # the fake's price
    config = config_for(vault, tmp_path / "store")
    routed = extract_routed(config)
    report = index(config, FakeLLM(), budget_usd=0.005)  # at these prices: a handful of notes
    first = report.notes_extracted
    assert 0 < first < len(routed)
    assert report.notes_over_budget == len(routed) - report.notes_extracted
    assert report.notes_pending_extraction == report.notes_over_budget
    assert report.estimated_usd <= 0.005
    ledger = Ledger.load(config.workspace_dir)
    assert all(e.status != "extracting" for e in ledger.notes.values())  # nothing half-written
    # without a budget the next run finishes the rest, and the store equals a fresh full run
    report = index(config, FakeLLM())
    assert report.notes_extracted == len(routed) - first
    assert report.notes_pending_extraction == 0
    fresh = config_for(vault, tmp_path / "fresh")
    index(fresh, FakeLLM())
    assert snapshot(config) == snapshot(fresh)


def test_gleaning_one_doubles_the_calls_and_the_estimate_follows(vault, tmp_path):
    from wikirag.plan.cost import estimate_for_config

    glean = load_config(vault, store=tmp_path / "a", overrides={"llm": {"model": "fake:one"},
                                                                "index": {"gleaning": 1}})
    plain = config_for(vault, tmp_path / "b")  # the default: no gleaning
    with_glean, without = FakeLLM(), FakeLLM()
    index(glean, with_glean)
    index(plain, without)
    kinds = [c.kind for c in without.calls]
    assert "glean" not in kinds and kinds.count("extract") == [c.kind for c in with_glean.calls].count("extract")
    prices = {"price_in": 0.15, "price_out": 0.6}
    estimated = estimate_for_config(plain, prices).scenarios["wikirag"]
    assert estimated.gleaning_calls == 0 and estimated.extraction_calls == kinds.count("extract")
    glean_kinds = [c.kind for c in with_glean.calls]
    estimated = estimate_for_config(glean, prices).scenarios["wikirag"]
    assert estimated.gleaning_calls == glean_kinds.count("glean") == glean_kinds.count("extract")


def test_an_unreachable_llm_stops_extraction_once_and_the_notes_wait_for_the_next_run(vault, tmp_path):
    import socket

    from rich.console import Console

    from wikirag.cli.render import render_index_report

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    config = load_config(vault, store=tmp_path / "store", overrides={"llm": {
        "model": "openai:m", "base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 0}})
    report = run_index(config, embedding_func=HashEmbedding().func())
    extract_routed = sum(1 for e in Ledger.load(config.workspace_dir).notes.values() if e.route == "extract")
    assert extract_routed > 10
    # the first note's call found no server: the others were not sent, and the reason is said once
    assert "Connection" in report.llm_unavailable
    assert [i for i in report.issues if "LLM unavailable" in i] == [
        f"LLM unavailable, extraction stopped for this run: {report.llm_unavailable}"]
    assert not [i for i in report.issues if "extraction failed" in i]
    assert 1 <= report.llm_calls < extract_routed and report.notes_pending_extraction == extract_routed
    console = Console(record=True, width=200)
    render_index_report(report, console)
    assert "once the LLM can be reached" in console.export_text() and "set WIKIRAG_LLM" not in console.export_text()
    # the store is whole: a run with a working LLM extracts every waiting note
    again = run_index(config, llm_func=FakeLLM(), embedding_func=HashEmbedding().func())
    assert again.notes_extracted == extract_routed and again.notes_pending_extraction == 0
    assert not [i for i in again.issues if "LLM" in i or "extraction" in i]


def _chunk(chunk_id: str, content: str, order: int) -> ChunkRecord:
    return ChunkRecord(chunk_id, content, 10, order, None, order * 10, order * 10 + 9)


def test_a_record_cites_the_chunk_it_was_extracted_from():
    """A note read chunk by chunk: each record cites the chunk whose call produced it, even when an earlier
    chunk also mentions the name (the first such chunk was cited before)."""
    chunks = [_chunk("chunk-a", "Ada Lovelace met Babbage in London.", 0),
              _chunk("chunk-b", "Later, Ada Lovelace wrote the first program for the Engine.", 1)]
    nodes = [{"name": "Ada Lovelace", "type": "person", "description": "wrote a program", "unit": "chunk-b"}]
    edges = [{"src": "Ada Lovelace", "tgt": "Engine", "keywords": "program", "description": "programmed",
              "unit": "chunk-b"}]
    member = Member("ada.md", chunks[0].content + "\n" + chunks[1].content, "", chunks)
    raw = attribute(nodes, edges, member, {"chunk-a", "chunk-b"}, EntityNames(), shared=False)
    assert [e[3] for e in raw["entities"]] == ["chunk-b"]
    assert [r[4] for r in raw["relations"]] == ["chunk-b"]


def test_a_packed_relation_cites_the_chunk_that_names_both_ends():
    """A pack's unit is no stored chunk: a relation cites the member's chunk holding both of its ends."""
    chunks = [_chunk("chunk-a", "Babbage designed the Engine.", 0),
              _chunk("chunk-b", "Ada Lovelace corresponded with Babbage about the Engine.", 1)]
    edges = [{"src": "Ada Lovelace", "tgt": "Babbage", "keywords": "letters", "description": "wrote to",
              "unit": "unit-pack"}]
    member = Member("ada.md", chunks[0].content + "\n" + chunks[1].content, "", chunks)
    raw = attribute([], edges, member, {"unit-pack"}, EntityNames(), shared=False)
    assert [r[4] for r in raw["relations"]] == ["chunk-b"]
