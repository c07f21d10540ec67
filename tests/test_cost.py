"""The cost model: chunk counts, LightRAG's calls, prices, scenarios, and accuracy against a real LightRAG.

The accuracy tests index the sample vault with a real LightRAG 1.5 (file stores in a tmp folder), the
token-counting `FakeLLM` and a hashing embedding, once as vanilla LightRAG (its default chunking) and once
the wikirag way (extract-routed notes through `open_engine`), and compare with `estimate_vault`.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import logging
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes import FakeLLM, fake_embedding_func
from tests.storekit import copy_vault
from wikirag.errors import ConfigError
from wikirag.index.run import run_index
from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.prompts import breadcrumb, lightrag_content, lightrag_defaults
from wikirag.lightrag.tokens import count_tokens, lightrag_tokenizer
from wikirag.markdown.chunking import chunk_text
from wikirag.models import ParsedNote, Resolution, WikiLink
from wikirag.plan.cost import estimate_note, estimate_vault, hint_tokens
from wikirag.plan.cost_settings import CostSettings, prompt_sizes, render_extraction_prompts
from wikirag.plan.mentions import chunk_mentions
from wikirag.plan.prices import ModelPrice, PriceTable
from wikirag.plan.results import ScenarioCost, csv_rows
from wikirag.plan.routing import RouteDecision, note_features, route_note, route_vault
from wikirag.plan.scenarios import price_cost
from wikirag.settings import WikiragConfig, load_config
from wikirag.vault.model import Vault
from wikirag.vault.read import read_note_files

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_vault"
import_lightrag()
from lightrag.chunker import chunking_by_token_size  # noqa: E402


def note(body: str, path: str = "n.md", **kw) -> ParsedNote:
    return ParsedNote(path=path, name=Path(path).stem, title=Path(path).stem, body=body,
                      words=len(body.split()), **kw)


def extract(n: ParsedNote, outgoing=()) -> RouteDecision:
    return route_note(n, list(outgoing), override="extract",
                      features=note_features(n, list(outgoing), count_tokens(n.body.strip())))


class FakeVault:
    """Just what the estimator reads: notes and their outgoing links."""

    def __init__(self, notes: dict[str, ParsedNote], links: dict[str, list] | None = None) -> None:
        self.notes, self._links = notes, links or {}

    def outgoing(self, path: str) -> list:
        return list(self._links.get(path, []))


# -- chunks ---------------------------------------------------------------------------------------------------

WORDS = st.sampled_from("the Turing machine Bletchley Park cipher wheel of and rotor Enigma key is a".split())
PARAGRAPH = st.lists(WORDS, min_size=1, max_size=120).map(" ".join)
BLOCK = st.one_of(PARAGRAPH, PARAGRAPH.map(lambda p: "# " + p[:40]), PARAGRAPH.map(lambda p: "## " + p[:30]),
                  PARAGRAPH.map(lambda p: f"```\n{p}\n```"), PARAGRAPH.map(lambda p: "- " + p))
DOCUMENT = st.lists(BLOCK, min_size=1, max_size=14).map("\n\n".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENT)
def test_chunk_counts_equal_the_chunkers(text):
    cost = estimate_note(note(text), [], extract(note(text)), CostSettings(), raw_text=text, hint=0)
    tokenizer = lightrag_tokenizer()
    # wikirag: note_contribution's chunks (chunk_text on the body, identical chunks kept once)
    assert cost.chunks == len({c.content for c in chunk_text(text, tokenizer, 600, 60)})
    vanilla = chunking_by_token_size(tokenizer, lightrag_content(text), None, False, 100, 1200)
    assert cost.vanilla.chunks == len(vanilla)
    assert cost.wikirag.extraction_calls == cost.chunks


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="sample vault not present")
def test_sample_vault_chunk_counts_equal_the_chunkers():
    vault = Vault.load(SAMPLE)
    tokenizer = lightrag_tokenizer()
    small = CostSettings(chunk_token_size=300, chunk_overlap_token_size=30)
    estimate = estimate_vault(vault, route_vault(vault), small)
    raw = read_note_files(vault, sorted(vault.notes))
    for row in estimate.notes:
        body = vault.notes[row.path].body
        assert row.chunks == len({c.content for c in chunk_text(body, tokenizer, 300, 30)}), row.path
        expected = len(chunking_by_token_size(tokenizer, lightrag_content(raw[row.path]), None, False, 100, 1200))
        assert row.vanilla.chunks in (expected, 0), row.path  # 0: a duplicate LightRAG drops


def test_breadcrumb_matches_lightrag():
    from lightrag.chunk_schema import format_heading_context
    from lightrag.operate import _truncate_section_context

    from wikirag.markdown.chunking import heading_record

    tokenizer = lightrag_tokenizer()
    cases = [["Alan Turing"], ["A", "B  c", "D"], ["Ünïcödé → arrow", "zero\u200bwidth"], ["x" * 120, "y" * 90],
             ["word " * 70] * 4]
    for headings in cases:
        path = format_heading_context({"heading": heading_record("", headings)})
        assert breadcrumb(headings, 256, tokenizer) == _truncate_section_context(path, tokenizer, 256), headings


# -- LightRAG's calls -----------------------------------------------------------------------------------------

PROSE = ("Alan Turing worked at Bletchley Park with Gordon Welchman on the Bombe. "
         "They broke Enigma traffic in Hut 8. ") * 15


def test_prompt_sizes_are_the_rendered_templates():
    sizes = prompt_sizes(CostSettings(), use_disk_cache=False)
    rendered = render_extraction_prompts(CostSettings())
    assert sizes.system == count_tokens(rendered["system"].strip()) > 1000
    assert sizes.user_fixed == count_tokens(rendered["user"].strip())
    assert sizes.continue_prompt == count_tokens(rendered["continue"].strip())
    assert sizes.summary_fixed == count_tokens(rendered["summary"].strip())
    assert 3 <= sizes.summary_fragment <= 8


def test_prompt_sizes_disk_cache_round_trip(tmp_path, monkeypatch):
    from wikirag.lightrag import prompts as cost

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cost._cached_prompt_sizes.cache_clear()
    first = prompt_sizes(CostSettings(language="French"))
    assert (tmp_path / "wikirag" / "prompt-sizes.json").exists()
    cost._cached_prompt_sizes.cache_clear()
    assert prompt_sizes(CostSettings(language="French")) == first == prompt_sizes(
        CostSettings(language="French"), use_disk_cache=False)
    cost._cached_prompt_sizes.cache_clear()


def test_extraction_call_sizes_follow_the_templates():
    n = note(PROSE)
    cost = estimate_note(n, [], extract(n), CostSettings(gleaning=1), hint=0)
    sizes = prompt_sizes()
    chunk = count_tokens(lightrag_content(PROSE))
    crumb = sizes.section_fixed + count_tokens("n")  # every wikirag chunk sits under its note's title
    w = cost.wikirag
    assert (w.extraction_calls, w.gleaning_calls) == (1, 1)
    assert w.extraction_input_tokens == sizes.system + sizes.user_fixed + crumb + chunk
    out = round(2.38 * chunk)
    assert w.gleaning_input_tokens == sizes.system + sizes.user_fixed + crumb + chunk + out + sizes.continue_prompt
    v = cost.vanilla  # stock LightRAG's chunks carry no section context
    assert v.extraction_input_tokens == sizes.system + sizes.user_fixed + chunk


def test_gleaning_adds_one_call_per_chunk_and_respects_the_input_cap():
    text = "\n\n".join(f"Part {i}. {PROSE}" for i in range(4))
    n = note(text)
    on = estimate_note(n, [], extract(n), CostSettings(gleaning=1), hint=0).wikirag
    off = estimate_note(n, [], extract(n), CostSettings(), hint=0).wikirag  # wikirag's default: no gleaning
    capped = estimate_note(n, [], extract(n), CostSettings(gleaning=1, max_extract_input_tokens=2000),
                           hint=0).wikirag
    assert on.extraction_calls == off.extraction_calls == capped.extraction_calls > 1
    assert on.gleaning_calls == on.extraction_calls and off.gleaning_calls == capped.gleaning_calls == 0
    assert on.input_tokens > off.input_tokens


def test_section_context_and_hints_are_paid_per_chunk():
    body = "# Alan Turing\n\n" + PROSE
    n = note(body)
    plain = estimate_note(n, [], extract(n), CostSettings(section_context=False), hint=0).wikirag
    with_crumb = estimate_note(n, [], extract(n), CostSettings(), hint=0).wikirag
    hinted = estimate_note(n, [], extract(n), CostSettings(), hint=50).wikirag
    crumb = prompt_sizes().section_fixed + count_tokens("n → Alan Turing")  # title, then the heading
    assert with_crumb.extraction_input_tokens - plain.extraction_input_tokens == crumb
    assert hinted.extraction_input_tokens - with_crumb.extraction_input_tokens == 50


def test_default_hint_is_the_pipelines_header():
    from wikirag.graph.naming import note_entity_names
    from wikirag.plan.hints import HINT_TITLE, note_hint

    turing = note("text", path="people/Alan Turing.md", type="person", aliases=["Prof"])
    bombe = note("text", path="projects/Bombe.md", type="machine")
    notes = {turing.path: turing, bombe.path: bombe}
    outgoing = [(WikiLink(raw="[[Bombe]]", target="Bombe"), Resolution("resolved", bombe.path)),
                (WikiLink(raw="[[Nowhere]]", target="Nowhere"), Resolution("unresolved"))]
    from wikirag.plan.hints import hint_text

    text = hint_text(turing, outgoing, notes)
    assert text == note_hint(turing, outgoing, note_entity_names(notes), notes, "person")
    assert text.startswith(HINT_TITLE) and "Alan Turing -> Bombe (machine)" in text
    assert hint_tokens(turing, outgoing, notes) == count_tokens(text)


def test_duplicates_and_repeated_prompts_cost_nothing_twice():
    shared = ("Ada Lovelace wrote about the Analytical Engine. " * 150).strip()  # longer than one window
    notes = {"a.md": note(shared + "\n\nTail A.", "a.md"), "b.md": note(shared + "\n\nTail A.", "b.md"),
             "c.md": note(shared + "\n\nCharles Babbage built another tail entirely.", "c.md"),
             "x/same.md": note("Grace Hopper wrote a compiler.", "x/same.md"),
             "y/same.md": note("Grace Hopper wrote a compiler.", "y/same.md")}
    decisions = {p: extract(n) for p, n in notes.items()}
    rows = {r.path: r for r in estimate_vault(FakeVault(notes), decisions, CostSettings(), hints={}).notes}
    # vanilla LightRAG drops a document whose content it already holds ...
    assert rows["b.md"].duplicate_of == "a.md" and rows["b.md"].vanilla.llm_calls == 0
    # ... and answers a prompt it has seen from its LLM cache: c's first window is a's
    c = rows["c.md"].vanilla
    assert c.chunks == 2 and c.extraction_calls == 1
    # wikirag extracts each note (no duplicate check); a chunk repeats its prompt only under the same title
    assert rows["b.md"].wikirag.extraction_calls == rows["b.md"].chunks
    assert rows["x/same.md"].wikirag.extraction_calls == 1 and rows["y/same.md"].wikirag.extraction_calls == 0


# -- summaries ---------------------------------------------------------------------------------------------------


def recurring_vault(notes: int) -> FakeVault:
    return FakeVault({f"n{i:02}.md": note(f"Ada Lovelace met person {i} in London today.", f"n{i:02}.md")
                      for i in range(notes)})


@pytest.mark.parametrize(("notes", "summaries"), [(7, 0), (8, 1), (14, 1), (15, 2), (22, 3)])
def test_summary_calls_follow_lightrags_merge_rule(notes, summaries):
    # "Ada Lovelace", "London" and their relation gain one fragment per note; a summary leaves one
    # fragment behind, so LightRAG summarises at the 8th, 15th, 22nd note (force_llm_summary_on_merge = 8).
    vault = recurring_vault(notes)
    decisions = {p: extract(n) for p, n in vault.notes.items()}
    est = estimate_vault(vault, decisions, CostSettings(), hints={})
    vanilla = est.scenarios["vanilla"]
    assert vanilla.summary_calls == 3 * summaries  # two entities and one relation
    assert vanilla.summary_calls == sum(r.vanilla.summary_calls for r in est.notes)
    lower = estimate_vault(vault, decisions, CostSettings(force_llm_summary_on_merge=4), hints={})
    assert lower.scenarios["vanilla"].summary_calls >= vanilla.summary_calls
    # wikirag merges extracted fragments itself, joining descriptions: LightRAG never summarises
    assert est.scenarios["wikirag"].summary_calls == 0


def test_mentions_model():
    entities, relations = chunk_mentions(
        "He met Alan Turing at Bletchley Park. Turing left.\n- The British Bombe and [[Gordon Welchman]]")
    assert entities == ["Alan Turing", "Bletchley Park", "British Bombe", "Gordon Welchman"]
    assert relations == [("Alan Turing", "Bletchley Park"), ("British Bombe", "Gordon Welchman")]
    many = " ".join(f"Name{i} Person{i} met." for i in range(60))
    capped_entities, capped_relations = chunk_mentions(many.replace(" met.", " met Other. "), 40, 100)
    assert len(capped_entities) == 40 and len(capped_entities) + len(capped_relations) <= 100


# -- prices ---------------------------------------------------------------------------------------------------------


def test_shipped_price_table():
    table = PriceTable.load()
    assert len(table.models) >= 12 and table.as_of
    for name in ("gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o4-mini",
                 "claude-3-5-haiku", "claude-sonnet-4", "gemini-2.5-flash", "deepseek-chat", "local"):
        assert name in table.models
    assert table.get("openai:gpt-4o-mini-2024-07-18").name == "gpt-4o-mini"
    assert table.get("claude-3-5-haiku-latest").name == "claude-3-5-haiku"
    assert table.get("ollama:qwen2.5:7b").input == 0.0
    with pytest.raises(ConfigError, match="no price for model 'mystery-1'"):
        table.get("mystery-1")


def test_user_price_file_overrides_and_adds(tmp_path):
    user = tmp_path / "prices.toml"
    user.write_text('[models."gpt-4o-mini"]\ninput = 1.0\n[models."my-model"]\ninput = 2.0\noutput = 3.0\n')
    table = PriceTable.load(user)
    assert table.models["gpt-4o-mini"].input == 1.0 and table.models["gpt-4o-mini"].output == 0.60
    assert table.get("my-model").output == 3.0 and table.get("my-model").source == str(user)
    (tmp_path / "bad.toml").write_text('[models."x"]\ncost = 1\n')
    with pytest.raises(ConfigError, match="unknown keys"):
        PriceTable.load(tmp_path / "bad.toml")


def test_command_line_prices():
    price = CostSettings(model="mystery-1", price_in=1.0, price_out=2.0).price()
    assert (price.input, price.output, price.cached_input, price.source) == (1.0, 2.0, None, "command line")
    assert CostSettings(model="gpt-4o", price_in=9.0).price().output == 10.0
    # a provider wikirag sets no prompt cache up for loses its cached price, but its price is still the table's
    assert CostSettings(model="deepseek-chat").price().source == "shipped table"
    with pytest.raises(ConfigError):
        CostSettings(model="mystery-1", price_in=1.0).price()


def test_price_and_caching_math():
    cost = ScenarioCost(input_tokens=3_000_000, cached_input_tokens=2_000_000, output_tokens=1_000_000)
    price_cost(cost, ModelPrice("m", input=0.5, cached_input=0.1, output=2.0, batch_discount=0.5))
    assert cost.usd == pytest.approx(1.5 + 2.0)
    assert cost.usd_cached == pytest.approx(0.5 + 0.2 + 2.0)
    assert cost.usd_batch == pytest.approx(1.75)
    price_cost(cost, ModelPrice("no-cache", input=0.5, output=2.0))
    assert cost.usd_cached == cost.usd


def test_cached_prefix_needs_a_caching_provider_and_a_long_enough_prefix():
    n = note(PROSE)
    sizes = prompt_sizes()
    user = sizes.user_fixed + sizes.section_fixed + count_tokens("n") + count_tokens(PROSE.strip())
    # A run's first extraction call writes the system prompt into the cache; with gleaning on it also writes
    # its first turn, which the gleaning call reads back with the system prompt.
    openai = estimate_note(n, [], extract(n), CostSettings(gleaning=1), hint=0).wikirag
    assert (openai.cache_write_tokens, openai.cached_input_tokens) == (sizes.system + user, sizes.system + user)
    assert openai.usd_cached < openai.usd
    plain = estimate_note(n, [], extract(n), CostSettings(), hint=0).wikirag
    assert (plain.cache_write_tokens, plain.cached_input_tokens) == (sizes.system, 0)
    local = estimate_note(n, [], extract(n), CostSettings(model="local", gleaning=1), hint=0).wikirag
    assert local.cached_input_tokens == local.cache_write_tokens == 0 and local.usd == 0
    # Haiku caches prefixes of 2,048 tokens and up: not the system prompt alone, but system + first turn
    haiku = estimate_note(n, [], extract(n), CostSettings(model="claude-3-5-haiku", gleaning=1), hint=0).wikirag
    assert (haiku.cache_write_tokens, haiku.cached_input_tokens) == (sizes.system + user, sizes.system + user)


def test_cache_writes_are_priced_at_the_providers_write_price():
    """Anthropic bills a cache write at 1.25x input (5-minute cache) and a read at 0.1x: with gleaning on, every
    extraction call writes its first turn, which its gleaning call reads back."""
    notes = {f"n{i}.md": note(PROSE + f" Note {i}.", f"n{i}.md") for i in range(3)}
    decisions = {p: extract(n) for p, n in notes.items()}
    sizes = prompt_sizes()
    sonnet = CostSettings(model="claude-sonnet-4", gleaning=1)
    cost = estimate_vault(FakeVault(notes), decisions, sonnet, hints={}).scenarios["wikirag"]
    price = sonnet.price()
    assert (price.input, price.cached_input, price.cache_write) == (3.00, 0.30, 3.75)
    users = cost.extraction_input_tokens - 3 * sizes.system
    assert cost.cache_write_tokens == sizes.system + users  # the system prompt once, then each first turn
    assert cost.cached_input_tokens == 2 * sizes.system + (3 * sizes.system + users)  # later calls, gleaning
    fresh = cost.input_tokens - cost.cached_input_tokens - cost.cache_write_tokens
    expected = (fresh * 3.00 + cost.cached_input_tokens * 0.30 + cost.cache_write_tokens * 3.75
                + cost.output_tokens * 15.00) / 1e6
    assert cost.usd_cached == pytest.approx(expected, rel=1e-12)
    without_writes = replace(price, cache_write=None)
    assert cost.usd_cached > (fresh * 3.00 + cost.cached_input_tokens * 0.30 + cost.cache_write_tokens
                              * without_writes.input + cost.output_tokens * 15.00) / 1e6


# -- settings and the result ---------------------------------------------------------------------------------------


def test_settings_from_mapping_and_lightrag_defaults():
    from lightrag import constants

    s = CostSettings.from_mapping({"model": "gpt-4o", "output_ratio": "1.5", "gleaning": 0})
    assert (s.model, s.output_ratio, s.gleaning) == ("gpt-4o", 1.5, 0)
    with pytest.raises(ConfigError, match=r"\[cost\] colour"):
        CostSettings.from_mapping({"colour": "red"})
    r = CostSettings().resolved()
    assert r.gleaning == 0 and r.vanilla_gleaning == constants.DEFAULT_MAX_GLEANING  # wikirag gleans off
    assert CostSettings(gleaning=None).resolved().gleaning == constants.DEFAULT_MAX_GLEANING
    assert r.force_llm_summary_on_merge == constants.DEFAULT_FORCE_LLM_SUMMARY_ON_MERGE
    assert lightrag_defaults()["summary_max_tokens"] == constants.DEFAULT_SUMMARY_MAX_TOKENS


def test_settings_from_config():
    config = WikiragConfig(vault=Path("v"), store=Path("s"), workspace="w",
                           sections={"cost": {"output_ratio": 3, "prices_file": "prices.toml"}})
    config.index.chunk_token_size, config.llm.model = 400, "openai:gpt-4.1-mini"
    s = CostSettings.from_config(config, {"output_ratio": 2})
    assert (s.chunk_token_size, s.model, s.output_ratio) == (400, "openai:gpt-4.1-mini", 2.0)
    assert s.prices_file == str(Path("v") / "prices.toml")
    assert CostSettings.from_config(config).output_ratio == 3.0
    assert replace(s, prices_file=None).price().name == "gpt-4.1-mini"


def mixed_vault(n: int = 30) -> FakeVault:
    notes, links = {}, {}
    for i in range(n):
        path = f"{'maps' if i % 2 else 'essays'}/note {i}.md"
        if i % 2:  # a map of content: links and little else
            lines = [f"- [[Topic {i}-{k}]] about the Topic {k} of Person {i}." for k in range(6)]
            notes[path] = note("\n".join(lines), path)
            links[path] = [(WikiLink(raw="[[x]]", target=f"Topic {i}-{k}", context=lines[k][2:]),
                            Resolution("resolved", f"t{i}-{k}.md")) for k in range(6)]
        else:
            notes[path] = note(f"Essay {i} by Ada Lovelace on Charles Babbage's engines. " * 20, path)
    return FakeVault(notes, links)


def test_scenarios_order_and_json_contract():
    vault = mixed_vault()
    decisions = route_vault(vault)
    assert {d.route for d in decisions.values()} == {"inject", "extract"}
    est = estimate_vault(vault, decisions, CostSettings())
    sc = est.scenarios
    for field_name in ("llm_calls", "input_tokens", "output_tokens", "usd"):
        assert getattr(sc["structure_only"], field_name) == 0
        assert 0 < getattr(sc["wikirag"], field_name) < getattr(sc["vanilla"], field_name)
    assert est.routes == {"inject": 15, "extract": 15, "skip": 0}
    data = json.loads(json.dumps(asdict(est)))
    assert len(data["notes"]) == est.note_count == 30
    for name in ("vanilla", "wikirag", "structure_only"):
        assert {"llm_calls", "input_tokens", "output_tokens", "usd"} <= set(data["scenarios"][name])
    assert {"path", "tokens", "chunks", "route", "reason", "llm_calls", "input_tokens",
            "output_tokens"} <= set(data["notes"][0])
    assert sum(f["notes"] for f in data["folders"]) == 30
    assert [f.folder for f in est.folders] == ["essays", "maps"]
    # summaries are made once per record at the end of a run: in the total, in no folder
    assert sum(f.wikirag_usd for f in est.folders) + est.summaries.usd == pytest.approx(sc["wikirag"].usd)
    top = est.top_notes(3)
    assert [r.route for r in top] == ["extract"] * 3 and top[0].usd >= top[-1].usd
    header, rows = csv_rows(est)
    assert header[:8] == ["path", "folder", "tokens", "chunks", "route", "reason", "hint_tokens", "llm_calls"]
    assert len(rows) == 30 and all(len(r) == len(header) for r in rows)


def test_skip_costs_nothing_anywhere_but_vanilla():
    vault = mixed_vault(4)
    decisions = route_vault(vault, overrides=["skip"])
    est = estimate_vault(vault, decisions, CostSettings())
    assert est.scenarios["wikirag"].llm_calls == 0 and est.scenarios["structure_only"].embedding_tokens == 0
    assert est.scenarios["vanilla"].llm_calls > 0


# -- accuracy against a real LightRAG -------------------------------------------------------------------------------


def _vault_root(tmp_path_factory) -> Path:
    if SAMPLE.is_dir():
        return SAMPLE
    spec = importlib.util.spec_from_file_location("bench_cost", ROOT / "bench" / "cost_estimate.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    root = tmp_path_factory.mktemp("generated_vault")
    bench.generate(40, root)
    return root


def _doc_args(paths: list[str]) -> dict:
    # unique ids, and file names without folders (LightRAG keeps the basename: a/Enigma.md == b/Enigma.md)
    return {"ids": ["doc-" + hashlib.md5(p.encode()).hexdigest() for p in paths],
            "file_paths": [p.replace("/", "__") for p in paths]}


async def _index_vanilla(texts: dict[str, str], workdir: Path) -> FakeLLM:
    from lightrag import LightRAG

    llm = FakeLLM(keep_prompts=True)
    # stock LightRAG as a vanilla user runs it: default chunking_func, 1200/100, default gleaning
    rag = LightRAG(working_dir=str(workdir), workspace="vanilla", llm_model_func=llm,
                   embedding_func=fake_embedding_func(), tokenizer=lightrag_tokenizer(),
                   chunk_token_size=1200, chunk_overlap_token_size=100)
    await rag.initialize_storages()
    try:
        paths = sorted(texts)
        await rag.ainsert([texts[p] for p in paths], **_doc_args(paths))
    finally:
        await rag.finalize_storages()
    return llm


def _index_wikirag(vault_root: Path, workdir: Path, toml: str = "") -> tuple[FakeLLM, WikiragConfig]:
    """The real pipeline: extract-routed notes through LightRAG's extraction step, with their hints."""
    vault = copy_vault(vault_root, workdir / "vault")
    if toml:
        (vault / "wikirag.toml").write_text(toml)
    config = load_config(vault, store=workdir / "store", overrides={"llm": {"model": "fake:one"}})
    llm = FakeLLM(keep_prompts=True)
    report = run_index(config, llm_func=llm, embedding_func=fake_embedding_func())
    assert report.llm_calls == len(llm.calls) and not report.llm_failures
    return llm, config


@pytest.fixture(scope="module")
def accuracy_runs(tmp_path_factory):
    logging.getLogger("lightrag").setLevel(logging.ERROR)
    root = _vault_root(tmp_path_factory)
    wikirag, config = _index_wikirag(root, tmp_path_factory.mktemp("wikirag"))
    vault = Vault.load(root, config.exclude)
    decisions = route_vault(vault, config.route, config.route_overrides, encoding=config.index.encoding)
    texts = read_note_files(vault, sorted(vault.notes))
    vanilla = asyncio.run(_index_vanilla(texts, tmp_path_factory.mktemp("vanilla_store")))
    settings = CostSettings.from_config(config, {"model": "gpt-4o-mini"})
    estimate = estimate_vault(vault, decisions, settings, texts=texts)
    return {"vault": vault, "decisions": decisions, "texts": texts, "estimate": estimate,
            "settings": settings, "vanilla": vanilla, "wikirag": wikirag}


@pytest.fixture(scope="module")
def prose_runs(tmp_path_factory):
    """The same, under `[route] policy = "prose"`: some notes send only their uncovered sections, and
    small notes and sections share packs."""
    logging.getLogger("lightrag").setLevel(logging.ERROR)
    root = _vault_root(tmp_path_factory)
    llm, config = _index_wikirag(root, tmp_path_factory.mktemp("prose"), '[route]\npolicy = "prose"\n')
    vault = Vault.load(root, config.exclude)
    decisions = route_vault(vault, config.route, config.route_overrides, encoding=config.index.encoding)
    settings = CostSettings.from_config(config, {"model": "gpt-4o-mini"})
    estimate = estimate_vault(vault, decisions, settings, vanilla=False)
    return {"llm": llm, "decisions": decisions, "estimate": estimate, "vault": vault, "settings": settings}


def test_estimate_follows_sections_and_packs(prose_runs, accuracy_runs):
    r = prose_runs
    assert any(d.sections for d in r["decisions"].values())  # the run really sent sections
    assert any(row.pack for row in r["estimate"].notes)  # ... and packs
    assert any(row.pack for row in accuracy_runs["estimate"].notes)  # the default plan packs too
    for estimate, llm in ((r["estimate"], r["llm"]), (accuracy_runs["estimate"], accuracy_runs["wikirag"])):
        figures = _compare(estimate.scenarios["wikirag"], llm)
        message = json.dumps(figures)
        assert figures["extraction_calls"][0] == figures["extraction_calls"][1] > 0, message
        assert _within(figures["extraction_input"], 0.02), message
        assert _within(figures["summary_calls"], 0.10), message
        assert _within(figures["input_tokens"], 0.10), message
        calibrated = estimate_vault(r["vault"] if llm is r["llm"] else accuracy_runs["vault"],
                                    r["decisions"] if llm is r["llm"] else accuracy_runs["decisions"],
                                    _calibrated(llm, r["settings"]), vanilla=False).scenarios["wikirag"]
        assert _within(_compare(calibrated, llm)["input_tokens"], 0.02), message


def _calibrated(llm: FakeLLM, base: CostSettings) -> CostSettings:
    """The fake model's own output ratio and description length, measured from what it answered."""
    extract = [c for c in llm.calls if c.kind == "extract"]
    chunk_tokens = sum(count_tokens(_chunk_text(llm, c.prompt)) for c in extract)
    ratio = sum(c.output_tokens for c in extract) / chunk_tokens
    answers = [llm.extraction(llm.input_text(c.prompt)) for c in extract]
    d = llm.tuple_delimiter
    descriptions = [line.split(d)[-1] for a in answers for line in a.splitlines() if d in line]
    return replace(base, output_ratio=ratio, gleaning_output_ratio=0.0,
                   description_tokens=sum(map(count_tokens, descriptions)) / len(descriptions))


def _chunk_text(llm: FakeLLM, prompt: str) -> str:
    """The chunk alone: wikirag's hint sits inside the fence LightRAG's input text starts with."""
    from wikirag.lightrag.hinting import input_text

    return input_text(prompt) or llm.input_text(prompt)


def _compare(estimated: ScenarioCost, llm: FakeLLM) -> dict[str, tuple[int, int]]:
    real = llm.stats()
    return {
        "extraction_calls": (estimated.extraction_calls, real["extract"].calls),
        "gleaning_calls": (estimated.gleaning_calls, real["glean"].calls),
        "summary_calls": (estimated.summary_calls, real["summary"].calls),
        "extraction_input": (estimated.extraction_input_tokens, real["extract"].input_tokens),
        "gleaning_input": (estimated.gleaning_input_tokens, real["glean"].input_tokens),
        "summary_input": (estimated.summary_input_tokens, real["summary"].input_tokens),
        "input_tokens": (estimated.input_tokens, sum(s.input_tokens for s in real.values())),
    }


def _within(pair: tuple[int, int], share: float) -> bool:
    estimated, real = pair
    return abs(estimated - real) <= share * real


@pytest.mark.parametrize("scenario", ["vanilla", "wikirag"])
def test_estimate_matches_a_real_lightrag_run(accuracy_runs, scenario):
    estimated = accuracy_runs["estimate"].scenarios[scenario]
    llm = accuracy_runs[scenario]
    figures = _compare(estimated, llm)
    message = json.dumps(figures)
    assert llm.stats()["unknown"].calls == 0
    assert figures["extraction_calls"][0] == figures["extraction_calls"][1] > 0, message
    assert figures["gleaning_calls"][0] == figures["gleaning_calls"][1], message
    # vanilla: LightRAG's merges summarise as notes arrive; wikirag: once per record at the end of the run
    assert _within(figures["summary_calls"], 0.10) and figures["summary_calls"][1] > 0, message
    assert _within(figures["extraction_input"], 0.01), message  # prompt sizes are measured, not modelled
    assert _within(figures["input_tokens"], 0.10), message


@pytest.mark.parametrize("scenario", ["vanilla", "wikirag"])
def test_calibrated_estimate_matches_closely(accuracy_runs, scenario):
    # Told the fake model's output length, the estimate of what is sent is near exact: the remaining
    # error is in the model of which entities recur, not in the accounting of LightRAG's prompts.
    r = accuracy_runs
    llm = r[scenario]
    settings = _calibrated(llm, r["settings"])
    estimated = estimate_vault(r["vault"], r["decisions"], settings, texts=r["texts"]).scenarios[scenario]
    figures = _compare(estimated, llm)
    message = json.dumps(figures)
    assert _within(figures["gleaning_input"], 0.02), message
    assert _within(figures["summary_input"], 0.10), message
    assert _within(figures["input_tokens"], 0.02), message


# -- the other settings, side by side ---------------------------------------------------------------------------


def test_cost_estimate_shows_the_other_policy_gleaning_and_packing_side_by_side(tmp_path):
    from typer.testing import CliRunner

    from wikirag.cli import app
    from wikirag.plan.cost import estimate_for_config

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    config = load_config(vault, store=tmp_path / "store")
    estimate = estimate_for_config(config)
    by_setting = {a.setting: a for a in estimate.alternatives}
    assert set(by_setting) == {'[route] policy = "prose"', "[index] gleaning = 1", "[index] pack_max_tokens = 0"}
    prose = route_vault(Vault.load(vault), replace(config.route, policy="prose"))
    expected = estimate_vault(Vault.load(vault), prose, CostSettings.from_config(config)).scenarios["wikirag"]
    assert by_setting['[route] policy = "prose"'].wikirag.input_tokens == expected.input_tokens
    assert by_setting['[route] policy = "prose"'].routes["extract"] > estimate.routes["extract"]
    glean = by_setting["[index] gleaning = 1"].wikirag
    assert glean.gleaning_calls == glean.extraction_calls == estimate.scenarios["wikirag"].extraction_calls
    assert by_setting["[index] pack_max_tokens = 0"].wikirag.llm_calls > estimate.scenarios["wikirag"].llm_calls

    runner = CliRunner()
    result = runner.invoke(app, ["cost-estimate", str(vault)])
    assert result.exit_code == 0, result.output
    assert "One setting away" in result.stdout and '[route] policy = "prose"' in result.stdout
    result = runner.invoke(app, ["cost-estimate", str(vault), "--json"])
    data = json.loads(result.stdout)
    assert [a["setting"] for a in data["alternatives"]][0] == '[route] policy = "prose"'
    (vault / "wikirag.toml").write_text('[route]\npolicy = "prose"\n')
    data = json.loads(runner.invoke(app, ["cost-estimate", str(vault), "--json"]).stdout)
    assert data["alternatives"][0]["setting"] == '[route] policy = "links"'
    assert data["alternatives"][0]["wikirag"]["input_tokens"] == estimate.scenarios["wikirag"].input_tokens


def test_one_memo_for_the_plan_and_its_alternatives_changes_no_figure(tmp_path):
    """cost-estimate prices the vault three times with one EstimateMemo (chunk plans, sentence names, hints,
    packs and routing figures done once) and derives gleaning on/off from the plan's gleaning terms: every
    figure equals four independent estimates', with gleaning off or on, packing on or off."""
    from wikirag.plan.cost import alternatives, estimate_for_config
    from wikirag.plan.cost_settings import CostSettings
    from wikirag.plan.routing import route_vault
    from wikirag.vault.model import Vault

    vault_dir = copy_vault(SAMPLE, tmp_path / "vault")
    for toml in ('[route]\npolicy = "links"\n', '[route]\npolicy = "prose"\n', '[index]\ngleaning = 1\n',
                 '[route]\npolicy = "prose"\n[index]\ngleaning = 1\npack_max_tokens = 0\n'):
        (vault_dir / "wikirag.toml").write_text(toml)
        config = load_config(vault_dir, store=tmp_path / "store")
        shared = estimate_for_config(config)
        vault = Vault.load(vault_dir)
        decisions = route_vault(vault, config.route, config.route_overrides, encoding=config.index.encoding)
        settings = CostSettings.from_config(config)
        alone = estimate_vault(vault, decisions, settings)
        alone.alternatives = alternatives(vault, config, settings, decisions)
        assert len(shared.alternatives) == (2 if "pack_max_tokens" in toml else 3)
        assert any(a.wikirag.gleaning_calls for a in shared.alternatives) or shared.scenarios["wikirag"].gleaning_calls
        assert json.dumps(shared, default=vars) == json.dumps(alone, default=vars)


_TRICKY = st.text(alphabet=st.sampled_from(list("\n\n\n\r \t/-aZ1's:.)#é\u00a0\u2028\u0301漢😀")), max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TRICKY, min_size=1, max_size=6))
def test_token_counts_by_line_equal_direct_counting(pieces):
    """TokenCounts sums the counts of a text's lines (cut after newlines before a letter, digit or '-'):
    each sum equals the tokenizer's own count of the whole text, for both encodings it cuts."""
    from wikirag.lightrag.tokens import get_encoding
    from wikirag.plan.memo import TokenCounts

    for name in ("o200k_base", "cl100k_base"):
        enc = get_encoding(name)
        counts = TokenCounts(enc)
        assert counts.by_line
        for text in ["\n".join(pieces), "\n-".join(pieces), "\nA".join(pieces), "\n/".join(pieces)]:
            assert counts[text] == len(enc.encode_ordinary(text)), (name, text)


def test_token_counts_by_line_on_notes_hints_and_packs():
    """The same on real texts: every sample note, and the hint and pack texts the estimate counts."""
    from wikirag.lightrag.tokens import get_encoding
    from wikirag.plan.memo import TokenCounts
    from wikirag.plan.packing import Pack, PackItem

    vault = Vault.load(SAMPLE)
    texts = list(read_note_files(vault, sorted(vault.notes)).values())
    texts += [hint_text_of(vault, p) for p in sorted(vault.notes)]
    items = [PackItem(p, n.title, n.body, 0) for p, n in sorted(vault.notes.items())]
    texts.append(Pack(items).content())
    for name in ("o200k_base", "cl100k_base"):
        enc = get_encoding(name)
        counts = TokenCounts(enc)
        assert [counts[t] for t in texts] == [len(enc.encode_ordinary(t)) for t in texts]
        assert len(counts.parts) > len(texts)  # the texts were counted in lines, not whole


_JOINED = st.text(alphabet=st.sampled_from(list("\n \t/#-aZ1's:.)é\u00a0\u2028漢😀")), min_size=1, max_size=80)


@settings(max_examples=300, deadline=None)
@given(st.lists(_JOINED, min_size=1, max_size=6), st.sampled_from(["\n\n", "\n", " \n\n", ": "]))
def test_token_counts_join_equal_direct_counting(texts, sep):
    """TokenCounts.join (a pack's count from its title lines' and member texts' counts, long texts counted
    again only from their last word) equals the tokenizer's count of the joined text, for both encodings."""
    from wikirag.lightrag.tokens import get_encoding
    from wikirag.plan.memo import TokenCounts

    texts = [t * 3 for t in texts]  # long enough (64+ characters) to take the last-word path too
    for name in ("o200k_base", "cl100k_base"):
        enc = get_encoding(name)
        counts = TokenCounts(enc)
        assert counts.join(texts, sep) == len(enc.encode_ordinary(sep.join(texts))), (name, texts, sep)
        assert counts.join([t.strip() or "x" for t in texts], sep) == len(
            enc.encode_ordinary(sep.join(t.strip() or "x" for t in texts)))


def test_pack_texts_join_to_its_content_and_count_as_it():
    """Pack.texts joined with blank lines is the content (each member_block); TokenCounts.join of them
    counts what the LLM reads, with every member's text counted once beforehand (as cost-estimate seeds
    the notes' body counts): only title lines and last words are counted for the pack."""
    from wikirag.lightrag.tokens import get_encoding
    from wikirag.plan.memo import TokenCounts
    from wikirag.plan.packing import Pack, PackItem, member_block

    vault = Vault.load(SAMPLE)
    items = [PackItem(p, n.title, n.body.strip(), 0) for p, n in sorted(vault.notes.items()) if n.body.strip()]
    for pack in (Pack(items), Pack(items[:2]), Pack(items[-3:])):
        assert pack.content() == "\n\n".join(member_block(m.title, m.text) for m in pack.members)
        for name in ("o200k_base", "cl100k_base"):
            enc = get_encoding(name)
            counts = TokenCounts(enc)
            counts.update((m.text, len(enc.encode_ordinary(m.text))) for m in pack.members)
            assert counts.join(pack.texts()) == len(enc.encode_ordinary(pack.content()))
            assert not any(m.text + "\n\n" in counts for m in pack.members if len(m.text) >= 64
                           and " " in m.text)


def hint_text_of(vault: Vault, path: str) -> str:
    from wikirag.plan.hints import hint_text

    return hint_text(vault.notes[path], vault.outgoing(path), vault.notes)


def test_pack_names_are_the_names_of_the_pack_text():
    """A pack's assumed names are found member by member, reusing each note's body names: the same as
    sentence_names of the whole pack text, for whole bodies and for sections alike."""
    from wikirag.plan.memo import EstimateMemo
    from wikirag.plan.mentions import sentence_names
    from wikirag.plan.pack_costs import pack_names as _pack_names
    from wikirag.plan.packing import Pack, PackItem, extract_text

    vault = Vault.load(SAMPLE)
    memo = EstimateMemo()
    items = []
    for i, (path, note) in enumerate(sorted(vault.notes.items())):
        body = lightrag_content(note.body)
        memo.names(path, body)  # as the note's own estimate records them
        items.append(PackItem(path, note.title, body if i % 2 else extract_text(note.body, [(1, 3)]), 0))
    pack = Pack(items)
    assert sum(map(len, _pack_names(pack, vault, memo))) > len(items)
    assert _pack_names(pack, vault, memo) == sentence_names(pack.content())


def test_cost_estimate_prices_stock_lightrag_on_the_files_as_read_once(tmp_path):
    """index.reads keeps the texts Vault.load read cleanly for the vanilla scenario (and reads the others, as
    estimate_vault would): the same estimate as reading every file again, for BOMs, CRLF, NULs, bad UTF-8."""
    from wikirag.index.reads import estimate_cost
    from wikirag.plan.cost import estimate_for_config

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    (vault / "Bom.md").write_bytes("\ufeff---\ntitle: Bom Note\n---\r\nAda Lovelace met Charles Babbage.\r\n".encode())
    (vault / "Nul.md").write_bytes(b"---\ntags: [x]\n---\nGrace Hopper\x00 wrote COBOL.\n")
    (vault / "Bad.md").write_bytes(b"---\ntitle: Bad\n---\nAlan Turing \xff\xfe broke Enigma.\n")
    config = load_config(vault, store=tmp_path / "store")
    shared = estimate_cost(config)
    assert {"Bom.md", "Nul.md", "Bad.md"} <= {row.path for row in shared.notes}
    assert json.dumps(shared, default=vars) == json.dumps(estimate_for_config(config), default=vars)


def test_cost_estimate_of_an_indexed_vault_prices_stock_lightrag_on_the_files(tmp_path):
    """With the parse cache, files Vault.load spared are read for the vanilla scenario only when they have
    frontmatter (without, the file is the note's body): the same estimate as reading every file again."""
    import os

    from tests.storekit import HashEmbedding
    from wikirag.index.reads import estimate_cost
    from wikirag.plan.cost import estimate_for_config

    vault = copy_vault(SAMPLE, tmp_path / "vault")
    (vault / "Bom.md").write_bytes("\ufeffAda Lovelace met Charles Babbage.\r\nIn London.\r".encode())
    (vault / "Bad.md").write_bytes(b"Alan Turing \xff\xfe broke Enigma.\n")
    (vault / "Fm.md").write_bytes(b"---\ntitle: Fm\n---\r\nGrace Hopper wrote COBOL.\n")
    (vault / "Empty.md").write_bytes(b"")
    old = 1_600_000_000
    for path in vault.rglob("*.md"):
        os.utime(path, (old, old))  # long before the cache rows: trusted from their stat data, not read again
    config = load_config(vault, store=tmp_path / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    shared = estimate_cost(config)
    assert {"Bom.md", "Bad.md", "Fm.md", "Empty.md"} <= {row.path for row in shared.notes}
    assert json.dumps(shared, default=vars) == json.dumps(estimate_for_config(config), default=vars)


def test_cost_estimate_json_of_a_big_vault_holds_the_same_values_on_one_line(monkeypatch):
    """Above INDENTED_JSON_NOTES the JSON is written by orjson on one line: the values must not change."""
    from typer.testing import CliRunner

    from wikirag.cli import app

    cli_app = importlib.import_module("wikirag.cli.app")  # the module (the package's `app` is the Typer app)

    runner = CliRunner()
    sample = str(Path(__file__).resolve().parent.parent / "sample_vault")
    indented = runner.invoke(app, ["cost-estimate", sample, "--json"])
    assert indented.exit_code == 0, indented.output
    monkeypatch.setattr(cli_app, "INDENTED_JSON_NOTES", 1)
    one_line = runner.invoke(app, ["cost-estimate", sample, "--json"])
    assert one_line.exit_code == 0, one_line.output
    assert one_line.stdout.count("\n") == 1 < indented.stdout.count("\n")
    assert json.loads(one_line.stdout) == json.loads(indented.stdout)


@pytest.mark.parametrize(("model", "vanilla_caches"), [("claude-sonnet-4", False), ("gpt-4o-mini", True)])
def test_stock_lightrag_reads_anthropics_cache_only_where_it_marks_it(model, vanilla_caches):
    """wikirag marks Anthropic's cache breakpoints; stock LightRAG's Anthropic binding does not, so vanilla pays
    full input there. OpenAI caches a repeated prefix for both."""
    notes = {f"n{i}.md": note(PROSE + f" Note {i}.", f"n{i}.md") for i in range(3)}
    decisions = {p: extract(n) for p, n in notes.items()}
    est = estimate_vault(FakeVault(notes), decisions, CostSettings(model=model), hints={})
    vanilla, wikirag = est.scenarios["vanilla"], est.scenarios["wikirag"]
    assert wikirag.cached_input_tokens > 0 and wikirag.usd_cached < wikirag.usd
    assert (vanilla.cached_input_tokens > 0) == vanilla_caches
    assert (vanilla.usd_cached < vanilla.usd) == vanilla_caches
    assert vanilla.usd_cached == pytest.approx(sum(r.vanilla.usd_cached for r in est.notes))


def test_cost_estimate_names_the_files_it_left_out(tmp_path):
    from typer.testing import CliRunner

    from wikirag.cli import app

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("A note that links [[Other]] in a sentence of prose.\n")
    (vault / "packed.md").write_bytes(bytes(range(256)) * 40)  # binary data with a .md name
    (vault / "utf16.md").write_bytes("text".encode("utf-16"))
    runner = CliRunner()
    shown = runner.invoke(app, ["cost-estimate", str(vault)], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert "Files left out, not priced: 2" in shown.output
    assert "packed.md: looks binary" in shown.output and "utf16.md: UTF-16" in shown.output
    data = json.loads(runner.invoke(app, ["cost-estimate", str(vault), "--json"]).output)
    assert data["note_count"] == 1 and sorted(f.split(":")[0] for f in data["files_skipped"]) == ["packed.md",
                                                                                              "utf16.md"]


def test_a_pasted_image_costs_wikirag_one_chunk_and_vanilla_what_lightrag_reads():
    """markdown.payloads: wikirag's chunks (and the body tokens routing counts) cut a 200 KB base64 image to a
    stand-in; vanilla, stock LightRAG, still chunks the file as written, payload and all."""
    import base64

    image = base64.b64encode(bytes(range(256)) * 600).decode()
    text = f"# Wiring\n\nGordon Welchman drew the diagonal board.\n\n![](data:image/png;base64,{image})\n"
    vault = FakeVault({"w.md": note(text, "w.md")})
    row = estimate_vault(vault, route_vault(vault), CostSettings(), texts={"w.md": text}).notes[0]
    tokenizer = lightrag_tokenizer()
    assert row.route == "extract" and row.tokens < 40 and row.chunks == row.wikirag.extraction_calls == 1
    assert row.wikirag.input_tokens < 3_000
    vanilla = chunking_by_token_size(tokenizer, lightrag_content(text), None, False, 100, 1200)
    assert row.vanilla.chunks == len(vanilla) > 40
