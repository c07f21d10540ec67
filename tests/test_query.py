"""query_store with and without an LLM, on a real store (hashed embeddings, fake LLM)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.fakes import FakeLLM
from tests.storekit import HashEmbedding, copy_vault
from wikirag.errors import QueryFailed
from wikirag.index.ledger import Ledger
from wikirag.index.run import run_index
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


def test_a_failing_llm_is_a_clear_error_not_an_empty_result(store):
    with pytest.raises(QueryFailed):
        ask(store, "Who designed the Bombe?", mode="naive", llm_func=FakeLLM(mode="fail", fail_kinds=("answer",)))
