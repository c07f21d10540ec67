"""query_store with and without an LLM, on a real store (hashed embeddings, fake LLM)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.fakes import FakeLLM
from tests.storekit import HashEmbedding, copy_vault
from wikirag.errors import QueryFailed
from wikirag.index.ledger import Ledger
from wikirag.index.run import run_index
from wikirag.lightrag.query import errors_held
from wikirag.query.retrieve import Vocabulary, derive_keywords, query_store
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("q")
    vault = copy_vault(SAMPLE, root / "vault")
    config = load_config(vault, store=root / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    return config


def ask(config, question, **kwargs):
    return asyncio.run(query_store(config, question, embedding_func=HashEmbedding().func(), **kwargs))


def test_keywords_come_from_the_vaults_own_names(store):
    vocabulary = Vocabulary.from_ledger(Ledger.load(store.workspace_dir))
    high, low = derive_keywords("What did Turing build at Station X?", vocabulary)
    # aliases name their notes' entities: "Turing" is Alan Turing, "Station X" is Bletchley Park
    assert set(low) == {"Alan Turing", "Bletchley Park"}
    # the high-level keywords are the question's content words, without its stopwords
    assert "build" in " ".join(high).split()
    assert not {"what", "did", "at"} & {w.casefold() for k in high for w in k.split()}
    high, low = derive_keywords("zebra quantum", vocabulary)
    assert low == ["zebra quantum"] and high == ["zebra quantum"]  # no names: the question's own phrases


def test_with_an_llm_the_answer_comes_with_its_sources(store):
    llm = FakeLLM()
    result = ask(store, "Who designed the Bombe?", mode="hybrid", llm_func=llm)
    assert result.answer and "fake answer" in result.answer
    assert result.no_answer_reason is None
    assert [c.kind for c in llm.calls] == ["keywords", "answer"]  # LightRAG's own keyword call, then the answer
    assert result.sources
    for source in result.sources:  # the whole URI: vault name and note path percent-encoded, no .md
        file = quote(source.path.removesuffix(".md"), safe="")
        assert source.obsidian_uri == f"obsidian://open?vault={quote(store.vault.name, safe='')}&file={file}"


def test_bypass_answers_without_citing_notes_it_never_read(store):
    """Bypass sends the question straight to the LLM: no retrieval, so no sources (BM25 and the names used to
    rank some into the answer's sources)."""
    result = ask(store, "Who designed the Bombe?", mode="bypass", llm_func=FakeLLM())
    assert result.answer and result.sources == [] and not result.chunks


def test_streaming_hands_each_piece_to_the_caller(store):
    pieces: list[str] = []

    async def streaming_llm(prompt, system_prompt=None, history_messages=None, stream=False, **kwargs):
        if not stream:
            return '{"high_level_keywords": ["machines"], "low_level_keywords": ["Bombe"]}'

        async def gen():
            for word in ("The ", "Bombe ", "answer."):
                yield word
        return gen()

    result = ask(store, "Who designed the Bombe?", mode="mix", llm_func=streaming_llm, on_token=pieces.append)
    assert pieces == ["The ", "Bombe ", "answer."] and result.answer == "The Bombe answer."


def test_context_only_with_an_llm_makes_no_llm_call(store):
    llm = FakeLLM()
    result = ask(store, "Who designed the Bombe?", mode="local", llm_func=llm, context_only=True)
    assert result.answer is None and "--context-only" in result.no_answer_reason
    assert llm.calls == []
    assert result.entities


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def lightrag_records():
    handler, logger = _Records(), logging.getLogger("lightrag")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def test_a_failing_llm_is_a_clear_error_not_an_empty_result(store, lightrag_records):
    with pytest.raises(QueryFailed) as failed:
        ask(store, "Who designed the Bombe?", mode="naive", llm_func=FakeLLM(mode="fail", fail_kinds=("answer",)))
    # one line says why; LightRAG's own ERROR lines about the same failure are not printed beside it
    assert "\n" not in str(failed.value) and "Query failed" not in str(failed.value)
    assert not [r for r in lightrag_records if r.levelno >= logging.ERROR]


def test_lightrags_errors_are_logged_when_the_query_goes_on(lightrag_records):
    logger = logging.getLogger("lightrag")
    with errors_held():
        logger.error("an error LightRAG went on past")
        assert lightrag_records == []  # held while the query runs
    assert [r.getMessage() for r in lightrag_records] == ["an error LightRAG went on past"]
    with pytest.raises(QueryFailed), errors_held():
        logger.error("the failure")
        raise QueryFailed("query failed: the failure")
    assert len(lightrag_records) == 1


class _RecordingLLM:
    """FakeLLM's answers, with every system prompt kept: LightRAG puts an answer's context there."""

    def __init__(self) -> None:
        self.fake, self.system_prompts = FakeLLM(), []

    async def __call__(self, prompt, system_prompt=None, **kwargs):
        self.system_prompts.append(system_prompt or "")
        return await self.fake(prompt, system_prompt=system_prompt, **kwargs)


_BIAS = "我们会因为自己更容易想到某件事，而认为这件事发生的概率更高。多看了几次飞机坠毁新闻，就以为飞机失事概率很高。"
_CHINESE_QUESTION = "为什么多看几次飞机失事的新闻，就会觉得坐飞机更危险？"


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    """English notes and two Chinese ones. The hashed test vectors, like the English local model, match no
    Chinese question to a Chinese chunk (a run of CJK characters is one "word" to them); BM25's bigrams do."""
    root = tmp_path_factory.mktemp("zh")
    vault = root / "vault"
    vault.mkdir()
    (vault / "现成偏误.md").write_text(f"{_BIAS}\n", encoding="utf-8")
    (vault / "信息茧房.md").write_text("人们关注的信息领域会习惯性地被自己的兴趣所引导，生活桎梏于蚕茧一般的茧房中。\n",
                                      encoding="utf-8")
    for i, topic in enumerate(("tomatoes in a greenhouse", "a bicycle's gears", "baking sourdough bread",
                               "the rules of chess openings", "planning a walking holiday")):
        (vault / f"Note {i}.md").write_text(f"# Note {i}\n\nSome thoughts about {topic}, written down.\n",
                                            encoding="utf-8")
    config = load_config(vault, store=root / "store")
    run_index(config, embedding_func=HashEmbedding().func())
    return config


@pytest.mark.parametrize("mode", ["naive", "mix", "local"])
def test_an_answer_reads_the_chunks_bm25_finds(mixed_store, mode):
    """The answer's context takes BM25's chunks (naive, mix) and the entities of BM25's notes (local) in turn
    with LightRAG's vector hits: a question the vectors cannot match still reaches the LLM with its note's
    text; --no-fusion gives LightRAG's own context. Each is answered from its own context: asked the same
    question just before, LightRAG's answer cache (keyed by the question, not the context) served the other's."""
    fused, own, again = _RecordingLLM(), _RecordingLLM(), _RecordingLLM()
    ask(mixed_store, _CHINESE_QUESTION, mode=mode, llm_func=own, fusion=False)
    result = ask(mixed_store, _CHINESE_QUESTION, mode=mode, llm_func=fused)
    ask(mixed_store, _CHINESE_QUESTION, mode=mode, llm_func=again, fusion=False)
    assert result.answer and "answer" in [c.kind for c in fused.fake.calls]
    assert any(_BIAS[:20] in prompt for prompt in fused.system_prompts)
    for unfused in (own, again):
        assert "answer" in [c.kind for c in unfused.fake.calls]  # asked, not served from a cache
        assert not any(_BIAS[:20] in prompt for prompt in unfused.system_prompts)


def test_a_chunk_order_holds_for_its_own_question_only(mixed_store):
    """One warm engine, two questions at once: each gets the chunks its own order chose, and a call outside
    any order gets LightRAG's vector hits (lightrag.context_order)."""
    from wikirag.index.lexical import load_index
    from wikirag.lightrag.context_order import ContextOrder, context_order, reorder_context
    from wikirag.lightrag.engine import open_engine

    async def go():
        async with open_engine(mixed_store, embedding_func=HashEmbedding().func()) as rag:
            lexical = load_index(mixed_store.workspace_dir)
            by_note = dict(zip(lexical.chunk_paths, lexical.chunk_ids, strict=True))
            reorder_context(rag)
            reorder_context(rag)  # idempotent: one wrapper

            async def hits(note: str | None) -> list[str]:
                if note is None:
                    found = await rag.chunks_vdb.query("tomatoes greenhouse", top_k=3)
                else:
                    order = ContextOrder(chunks=lambda vector_ids, k: [by_note[note], *vector_ids, *lexical.chunk_ids])
                    with context_order(order):
                        await asyncio.sleep(0)  # let the other question run in between
                        found = await rag.chunks_vdb.query("tomatoes greenhouse", top_k=3)
                return [h["file_path"] for h in found]

            first, second, plain = await asyncio.gather(hits("现成偏误.md"), hits("信息茧房.md"), hits(None))
            assert first[0] == "现成偏误.md" and second[0] == "信息茧房.md"
            assert "现成偏误.md" not in plain and "信息茧房.md" not in plain and plain[0] == "Note 0.md"
            assert len(first) == len(second) == 3  # no more than LightRAG asked for, read from its chunk store

            entities = ContextOrder(entities=lambda names, k: ["No such entity", "现成偏误", *names])
            with context_order(entities):
                named = [h["entity_name"] for h in await rag.entities_vdb.query("tomatoes greenhouse", top_k=3)]
            assert named[0] == "现成偏误" and "No such entity" not in named  # the graph holds no such node

    asyncio.run(go())


def test_with_an_llm_a_question_nothing_matches_is_no_answer_with_its_reason(mixed_store):
    """LightRAG found no context, so it asked the LLM nothing and gave its canned "Sorry": that is no answer,
    and the result says why (it was a QueryFailed "the LLM returned no answer")."""
    llm = FakeLLM()
    result = ask(mixed_store, "量子色动力学里的渐近自由是什么意思？", mode="local", llm_func=llm, fusion=False)
    assert result.answer is None and "found nothing" in result.no_answer_reason
    assert "answer" not in [c.kind for c in llm.calls]


def test_with_an_llm_a_long_question_without_keywords_is_no_answer_either(mixed_store):
    """An LLM that finds no keywords in a question of 50 characters or more: LightRAG returns its canned "Sorry"
    without a call (llm_generated false); that is no answer either, not an answer to show."""
    kinds = FakeLLM()

    async def no_keywords(prompt, system_prompt=None, **kwargs):
        assert kinds.kind_of(prompt, system_prompt) == "keywords", "only the keyword call may be made"
        return '{"high_level_keywords": [], "low_level_keywords": []}'

    question = "What did the people in these notes think about the long history of all of it?"
    assert len(question) >= 50
    result = ask(mixed_store, question, mode="local", llm_func=no_keywords)
    assert result.answer is None and "found nothing" in result.no_answer_reason


def test_a_chunk_order_leaves_hits_without_ids_as_they_are():
    """Every LightRAG 1.5 vector backend gives each hit its id; one that did not would have its hits dropped
    by the reordering, so they stand as the store gave them."""
    from types import SimpleNamespace

    from wikirag.lightrag.context_order import ContextOrder, context_order, reorder_context

    hits = [{"content": "a chunk with no id", "file_path": "a.md"}]

    async def query(query, top_k, query_embedding=None):
        return list(hits)

    async def unused(*args, **kwargs):
        raise AssertionError("nothing is read for hits that stand")

    rag = SimpleNamespace(chunks_vdb=SimpleNamespace(query=query), entities_vdb=SimpleNamespace(query=query),
                          text_chunks=SimpleNamespace(get_by_ids=unused),
                          chunk_entity_relation_graph=SimpleNamespace(get_nodes_batch=unused))
    reorder_context(rag)

    async def go():
        with context_order(ContextOrder(chunks=lambda ids, k: ["other"], entities=lambda ids, k: ["other"])):
            return await rag.chunks_vdb.query("q", top_k=5), await rag.entities_vdb.query("q", top_k=5)

    assert asyncio.run(go()) == (hits, hits)


def test_a_pasted_book_is_not_a_question(store):
    from wikirag.query.notes import MAX_QUESTION_CHARS

    with pytest.raises(QueryFailed, match="characters long"):
        ask(store, "Enigma " * (MAX_QUESTION_CHARS // 7 + 1))
    assert ask(store, "Who designed the Bombe? " + "Context. " * 500).sources  # a long question is fine


def test_an_interrupted_index_is_named_by_query_search_and_doctor(tmp_path, fast_embedding):
    """A first index killed mid-batch left every note of the batch in the ledger and none in LightRAG: `query`
    printed a header and nothing else, and `doctor` counted those notes as indexed."""
    from typer.testing import CliRunner

    from tests.storekit import indexed_copy
    from wikirag.cli import app
    from wikirag.index.ledger import Ledger

    config = indexed_copy(Path(__file__).resolve().parent.parent / "sample_vault", tmp_path / "vault")
    runner = CliRunner()
    ok = runner.invoke(app, ["query", "Who designed the Bombe?", "--vault", str(config.vault), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["notes"] == []
    ledger = Ledger.load(config.workspace_dir)
    ledger.pending.chunk_notes = set(sorted(ledger.notes)[:3])  # as a run leaves it before its writes
    ledger.save()
    line = "the last index run was interrupted and left 3 notes unwritten"
    out = runner.invoke(app, ["query", "Who designed the Bombe?", "--vault", str(config.vault), "--json"])
    assert out.exit_code == 0 and out.stdout and line in json.loads(out.stdout)["notes"][0]
    shown = runner.invoke(app, ["search", "Bombe", "--vault", str(config.vault), "-m", "lexical"],
                          env={"COLUMNS": "200"})
    assert line in shown.output
    from wikirag.query.engine import WarmEngine

    async def status():
        async with WarmEngine(config) as engine:
            return engine.status()

    assert line in (asyncio.run(status()).unfinished or "")  # what MCP's status tool returns
    doctor = runner.invoke(app, ["doctor", str(config.vault)], env={"COLUMNS": "300"})
    assert f"{len(ledger.notes) - 3} notes indexed" in doctor.output and "left 3 notes unwritten" in doctor.output
    completed = runner.invoke(app, ["index", str(config.vault)])  # completes the run: the line goes
    assert completed.exit_code == 0, completed.output
    done = runner.invoke(app, ["query", "Who designed the Bombe?", "--vault", str(config.vault), "--json"])
    assert json.loads(done.stdout)["notes"] == []
