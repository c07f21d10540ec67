"""The fake LLM speaks LightRAG's formats: checked against LightRAG's own prompts and parsers."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from tests.fakes import KINDS, FakeLLM, fake_embedding_func, hashing_embed
from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.tokens import count_tokens
from wikirag.plan.cost_settings import CostSettings, render_extraction_prompts

import_lightrag()
from lightrag.operate import _process_extraction_result  # noqa: E402
from lightrag.prompt import PROMPTS  # noqa: E402

CHUNK = (
    "Alan Turing reported to Bletchley Park in September 1939. There he met Gordon Welchman.\n"
    "- The British Bombe was designed by Alan Turing and improved by Gordon Welchman.\n"
    "nothing capitalised on this line"
)


def extraction_prompts(chunk: str = CHUNK) -> tuple[str, str]:
    rendered = render_extraction_prompts(CostSettings())
    user = rendered["user"].replace("```\n\n```", f"```\n{chunk}\n```")
    return rendered["system"].strip(), user.strip()


def run(coro):
    return asyncio.run(coro)


def test_recognises_each_lightrag_prompt():
    fake = FakeLLM()
    system, user = extraction_prompts()
    rendered = render_extraction_prompts(CostSettings())
    keywords = PROMPTS["keywords_extraction"].format(examples="x", query="Who was Alan Turing?", language="English")
    assert fake.kind_of(user, system) == "extract"
    assert fake.kind_of(rendered["continue"].strip(), system) == "glean"
    assert fake.kind_of(rendered["summary"].strip()) == "summary"
    assert fake.kind_of(keywords) == "keywords"
    assert fake.kind_of("hello", "You are a poet.") == "unknown"


def test_extraction_answer_parses_with_lightrags_parser():
    fake = FakeLLM()
    system, user = extraction_prompts()
    answer = run(fake(user, system_prompt=system))
    assert answer.endswith(PROMPTS["DEFAULT_COMPLETION_DELIMITER"])
    nodes, edges = run(_process_extraction_result(answer, "chunk-1", 0))
    assert set(nodes) == {"Alan Turing", "Bletchley Park", "September", "Gordon Welchman", "British Bombe"}
    assert ("Alan Turing", "Bletchley Park") in edges or ("Bletchley Park", "Alan Turing") in edges
    assert all(n[0]["entity_type"] == "other" for n in nodes.values())


def test_extraction_text_is_taken_from_between_the_fences():
    fake = FakeLLM()
    _, user = extraction_prompts("Only Ada Lovelace here.")
    assert fake.input_text(user) == "Only Ada Lovelace here."


def test_counts_system_history_and_prompt_tokens_per_kind():
    fake = FakeLLM()
    system, user = extraction_prompts()
    first = run(fake(user, system_prompt=system))
    cont = render_extraction_prompts(CostSettings())["continue"].strip()
    history = [{"role": "user", "content": user}, {"role": "assistant", "content": first}]
    glean = run(fake(cont, system_prompt=system, history_messages=history))
    assert glean == PROMPTS["DEFAULT_COMPLETION_DELIMITER"]  # nothing missed
    stats = fake.stats()
    assert set(stats) == set(KINDS)
    assert stats["extract"].calls == 1 and stats["glean"].calls == 1
    assert stats["extract"].input_tokens == count_tokens(system) + count_tokens(user)
    assert stats["extract"].output_tokens == count_tokens(first)
    assert stats["glean"].input_tokens == (count_tokens(system) + count_tokens(user) + count_tokens(first)
                                           + count_tokens(cont))


def test_is_deterministic():
    system, user = extraction_prompts()
    assert run(FakeLLM()(user, system_prompt=system)) == run(FakeLLM()(user, system_prompt=system))


def test_summary_and_keyword_answers():
    fake = FakeLLM()
    summary = PROMPTS["summarize_entity_descriptions"].format(
        description_type="Entity", description_name="Alan Turing",
        description_list='{"Description": "a"}\n{"Description": "b"}', summary_length=600, language="English")
    answer = run(fake(summary))
    assert answer.startswith("Alan Turing is summarised from 2 descriptions (digest ")
    assert run(fake(summary)) == answer  # deterministic
    other = summary.replace('{"Description": "b"}', '{"Description": "c"}')
    assert run(fake(other)) != answer  # another fragment list, another summary
    keywords = PROMPTS["keywords_extraction"].format(examples="", query="What did Alan Turing build?",
                                                     language="English")
    data = json.loads(run(fake(keywords)))
    assert data["low_level_keywords"] == ["Alan Turing"]
    assert isinstance(data["high_level_keywords"], list)


def test_fail_mode_raises_and_is_counted():
    fake = FakeLLM(mode="fail")
    system, user = extraction_prompts()
    with pytest.raises(RuntimeError, match="fake LLM failure"):
        run(fake(user, system_prompt=system))
    assert fake.stats()["extract"].calls == 1
    # other kinds still answer
    assert "summarised" in run(fake(PROMPTS["summarize_entity_descriptions"].format(
        description_type="Entity", description_name="X", description_list="", summary_length=1, language="en")))


def test_timeout_mode_sleeps():
    fake = FakeLLM(mode="timeout", delay=5)
    system, user = extraction_prompts()

    async def call():
        return await asyncio.wait_for(fake(user, system_prompt=system), timeout=0.05)

    with pytest.raises(asyncio.TimeoutError):
        run(call())


def test_garbage_mode_yields_nothing_parseable():
    fake = FakeLLM(mode="garbage")
    system, user = extraction_prompts()
    answer = run(fake(user, system_prompt=system))
    nodes, edges = run(_process_extraction_result(answer, "chunk-1", 0))
    assert (nodes, edges) == ({}, {})


def test_examples_mode_echoes_lightrags_own_format_examples():
    fake = FakeLLM(mode="examples")
    system, user = extraction_prompts()
    answer = run(fake(user, system_prompt=system))
    assert "<entity_name>" in answer and PROMPTS["DEFAULT_TUPLE_DELIMITER"] in answer
    nodes, _ = run(_process_extraction_result(answer, "chunk-1", 0))
    assert "<entity_name>" not in nodes  # LightRAG refuses the placeholder type "<entity_type>"


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError):
        FakeLLM(mode="clever")


def test_hashing_embedding_is_deterministic_and_normalised():
    embed = hashing_embed(64)
    a = run(embed(["Alan Turing at Bletchley", ""]))
    b = run(embed(["Alan Turing at Bletchley", ""]))
    assert a.shape == (2, 64) and np.array_equal(a, b)
    assert np.isclose(np.linalg.norm(a[0]), 1.0) and not a[1].any()
    assert fake_embedding_func().embedding_dim == 384
