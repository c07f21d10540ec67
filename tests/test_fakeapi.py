"""The fake LLM server, driven by the real openai and anthropic SDKs over HTTP, as the code under test will."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import anthropic
import openai
import pytest

from tests import fakeapi
from tests.fakeapi import FakeAPI
from wikirag.lightrag.guard import import_lightrag
from wikirag.plan.cost_settings import CostSettings, render_extraction_prompts

import_lightrag()
from lightrag.prompt import PROMPTS  # noqa: E402

LONG_SYSTEM = "You are a careful archivist of Bletchley Park. " * 40  # a shared prefix worth caching
fake_api = fakeapi.fake_api  # the module's fixture, taken by name (an import would read as unused to ruff)
CHUNK = "Alan Turing reported to Bletchley Park in September 1939. There he met Gordon Welchman."


def oai(api: FakeAPI, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=api.openai_base_url, api_key="sk-dummy", max_retries=retries)


def ant(api: FakeAPI, retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=api.anthropic_base_url, api_key="sk-ant-dummy", max_retries=retries)


def chat(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def test_chat_usage_counts_a_repeated_prefix_as_cached(fake_api: FakeAPI) -> None:
    client = oai(fake_api)
    first = client.chat.completions.create(model="gpt-x", messages=chat(LONG_SYSTEM, "Who was Turing?"))
    second = client.chat.completions.create(model="gpt-x", messages=chat(LONG_SYSTEM, "Who was Welchman?"))
    other_model = client.chat.completions.create(model="gpt-y", messages=chat(LONG_SYSTEM, "Who was Welchman?"))
    assert first.choices[0].message.content == "ok"  # FakeLLM's answer to a prompt it does not recognise
    assert first.usage.prompt_tokens > 400 and first.usage.completion_tokens == 1
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    cached = second.usage.prompt_tokens_details.cached_tokens
    expected = fake_api.count_tokens(f"system: {LONG_SYSTEM}\nuser: Who was ")
    assert cached == expected and cached < second.usage.prompt_tokens
    assert other_model.usage.prompt_tokens_details.cached_tokens == 0  # caches are per model
    fake_api.cache_min_tokens = 10_000
    again = client.chat.completions.create(model="gpt-x", messages=chat(LONG_SYSTEM, "Who was Turing?"))
    assert again.usage.prompt_tokens_details.cached_tokens == 0  # below the floor nothing is cached


def test_default_answers_speak_lightrags_formats(fake_api: FakeAPI) -> None:
    rendered = render_extraction_prompts(CostSettings())
    user = rendered["user"].replace("```\n\n```", f"```\n{CHUNK}\n```").strip()
    keywords = PROMPTS["keywords_extraction"].format(examples="x", query="Who was Alan Turing?", language="English")
    client = oai(fake_api)
    extraction = client.chat.completions.create(model="m", messages=chat(rendered["system"].strip(), user))
    text = extraction.choices[0].message.content
    assert text.endswith(PROMPTS["DEFAULT_COMPLETION_DELIMITER"])
    assert "entity<|#|>Alan Turing<|#|>" in text and "relation<|#|>" in text
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": keywords}])
    assert "Alan Turing" in json.loads(reply.choices[0].message.content)["low_level_keywords"]
    assert fake_api.llm is not None and fake_api.llm.stats()["extract"].calls == 1


def test_streaming_sends_deltas_and_a_final_usage_chunk(fake_api: FakeAPI) -> None:
    fake_api.answer = lambda messages: "A streamed answer, long enough to need several chunks."
    client = oai(fake_api)
    chunks = list(client.chat.completions.create(model="m", messages=chat("s", "q"), stream=True,
                                                 stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "A streamed answer, long enough to need several chunks." and len(chunks) > 4
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])
    plain = list(client.chat.completions.create(model="m", messages=chat("s", "q"), stream=True))
    assert all(c.usage is None for c in plain) and plain[-1].choices[0].finish_reason == "stop"


def test_storm_answers_429_with_retry_after_and_the_sdk_retries(monkeypatch) -> None:
    waits: list[float] = []  # what the SDK chose to wait, not how long the (maybe loaded) machine took
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda seconds: (waits.append(seconds), real_sleep(seconds))[1])
    with FakeAPI(storm=2, retry_after=0.05) as api:
        with pytest.raises(openai.RateLimitError) as refused:
            oai(api).chat.completions.create(model="m", messages=chat("s", "q"))
        assert refused.value.response.headers["retry-after"] == "0.05"
        reply = oai(api, retries=2).chat.completions.create(model="m", messages=chat("s", "q"))
        assert reply.choices[0].message.content == "ok"
        assert (api.calls, api.rejected) == (3, 2)
    assert waits == [0.05]  # its one retry waited Retry-After, not its own 0.5 s backoff


def test_anthropic_storm_answers_529_overloaded_and_the_sdk_retries() -> None:
    with FakeAPI(storm=1, anthropic_storm_status=529) as api:
        with pytest.raises(anthropic.InternalServerError) as refused:
            ant(api).messages.create(model="c", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
        assert refused.value.status_code == 529 and refused.value.body["error"]["type"] == "overloaded_error"
        api.storm, api.anthropic_storm_status = 3, 429
        hi = [{"role": "user", "content": "hi"}]
        reply = ant(api, retries=2).messages.create(model="c", max_tokens=64, messages=hi)
        assert reply.content[0].text == "ok" and (api.calls, api.rejected) == (4, 3)


def test_a_storm_rate_refuses_a_seeded_fraction() -> None:
    with FakeAPI(storm_rate=0.5, retry_after=0.001, seed=1) as api:
        client = oai(api, retries=20)
        for i in range(10):
            client.chat.completions.create(model="m", messages=chat("s", f"q{i}"))
        assert 0 < api.rejected < api.calls and api.calls - api.rejected == 10


def test_concurrency_counter_sees_every_parallel_call() -> None:
    n = 8
    with FakeAPI(latency=0.2) as api:

        async def main() -> list[str]:
            client = openai.AsyncOpenAI(base_url=api.openai_base_url, api_key="sk-dummy", max_retries=0)
            async with client:
                replies = await asyncio.gather(*(client.chat.completions.create(
                    model="m", messages=chat("s", f"question {i}")) for i in range(n)))
            return [r.choices[0].message.content for r in replies]

        assert asyncio.run(main()) == ["ok"] * n
        assert (api.calls, api.max_in_flight, api.in_flight) == (n, n, 0)  # all n in flight at once: they overlapped


def test_openai_batch_round_trip(fake_api: FakeAPI) -> None:
    client = oai(fake_api)
    lines = [{"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "m", "messages": chat("s", f"q{i}")}} for i in range(3)]
    lines.append({"custom_id": "bad", "method": "POST", "url": "/v1/nowhere", "body": {}})
    upload = client.files.create(file=("in.jsonl", "\n".join(json.dumps(x) for x in lines).encode()), purpose="batch")
    assert upload.purpose == "batch" and fake_api.bodies("/v1/files") == [{"purpose": "batch", "filename": "in.jsonl"}]
    batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    statuses = [batch.status]
    while batch.status not in ("completed", "failed", "cancelled"):
        batch = client.batches.retrieve(batch.id)
        statuses.append(batch.status)
    assert statuses == ["validating", "in_progress", "completed"]
    assert (batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed) == (4, 3, 1)
    results = [json.loads(x) for x in client.files.content(batch.output_file_id).text.splitlines()]
    assert [r["custom_id"] for r in results] == ["req-0", "req-1", "req-2"]
    assert all(r["response"]["status_code"] == 200 for r in results)
    assert results[0]["response"]["body"]["choices"][0]["message"]["content"] == "ok"
    assert results[0]["response"]["body"]["usage"]["prompt_tokens"] > 0
    errors = [json.loads(x) for x in client.files.content(batch.error_file_id).text.splitlines()]
    assert errors[0]["custom_id"] == "bad" and errors[0]["response"]["status_code"] == 400
    second = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert client.batches.cancel(second.id).status == "cancelling"
    assert client.batches.retrieve(second.id).status == "cancelled"


def test_a_batch_waits_out_batch_delay(monkeypatch) -> None:
    clock = [1000.0]  # the fake provider's clock: a loaded machine's slow polls cannot outlast the delay
    monkeypatch.setattr(fakeapi, "time", SimpleNamespace(monotonic=lambda: clock[0], time=time.time))
    with FakeAPI(batch_polls=0, batch_delay=0.2) as api:
        client = oai(api)
        upload = client.files.create(file=("in.jsonl", json.dumps({"custom_id": "a", "method": "POST",
                                     "url": "/v1/chat/completions", "body": {"model": "m", "messages": []}}).encode()),
                                     purpose="batch")
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
        assert client.batches.retrieve(batch.id).status == "in_progress"
        clock[0] = 1000.1
        assert client.batches.retrieve(batch.id).status == "in_progress"
        clock[0] = 1000.25
        assert client.batches.retrieve(batch.id).status == "completed"


def test_anthropic_message_batch_round_trip(fake_api: FakeAPI) -> None:
    fake_api.batch_polls = 3
    client = ant(fake_api)
    requests = [{"custom_id": f"n{i}", "params": {"model": "c", "max_tokens": 64, "system": LONG_SYSTEM,
                                                  "messages": [{"role": "user", "content": f"q{i}"}]}}
                for i in range(3)]
    requests.append({"custom_id": "bad", "params": {"model": "c", "messages": []}})
    batch = client.messages.batches.create(requests=requests)
    polls = 0
    while batch.processing_status != "ended":
        batch = client.messages.batches.retrieve(batch.id)
        polls += 1
    assert polls == 3 and batch.results_url.startswith(fake_api.url)
    assert (batch.request_counts.succeeded, batch.request_counts.errored) == (3, 1)
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["n0"].type == "succeeded" and results["n0"].message.content[0].text == "ok"
    assert results["n0"].message.usage.input_tokens > 400
    assert results["bad"].type == "errored"
    second = client.messages.batches.create(requests=requests[:1])
    assert client.messages.batches.cancel(second.id).processing_status == "canceling"
    ended = client.messages.batches.retrieve(second.id)
    assert ended.processing_status == "ended" and ended.request_counts.canceled == 1
    assert [r.result.type for r in client.messages.batches.results(second.id)] == ["canceled"]


def test_anthropic_cache_control_write_then_read(fake_api: FakeAPI) -> None:
    client = ant(fake_api)
    system = [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]

    def ask(question: str) -> anthropic.types.Message:
        return client.messages.create(model="c", max_tokens=64, system=system,
                                      messages=[{"role": "user", "content": question}])

    first, second = ask("Who was Turing?"), ask("Who was Welchman?")
    assert first.usage.cache_creation_input_tokens > 400 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0 and 0 < second.usage.input_tokens < 20
    body = fake_api.bodies("/v1/messages")[0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    plain = client.messages.create(model="c", max_tokens=64, system=LONG_SYSTEM,
                                   messages=[{"role": "user", "content": "Who was Turing?"}])
    assert plain.usage.cache_read_input_tokens == plain.usage.cache_creation_input_tokens == 0  # no marker


def test_anthropic_streaming_carries_text_and_usage(fake_api: FakeAPI) -> None:
    fake_api.answer = lambda messages: f"You said: {messages[-1]['content']}, and more words to split."
    client = ant(fake_api)
    with client.messages.stream(model="c", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "You said: hi, and more words to split." == final.content[0].text
    assert final.usage.output_tokens > 1 and final.usage.input_tokens > 0 and final.stop_reason == "end_turn"


def test_requests_are_recorded_with_the_sdks_headers(fake_api: FakeAPI) -> None:
    oai(fake_api).chat.completions.create(model="m", messages=chat("s", "q"))
    ant(fake_api).messages.create(model="c", max_tokens=8, messages=[{"role": "user", "content": "q"}])
    first, second = fake_api.requests
    assert first.headers["authorization"] == "Bearer sk-dummy" and first.body["model"] == "m"
    # anthropic 2.x sends the key as a bearer token; older SDKs (>= 0.40 is allowed) as x-api-key
    key = second.headers.get("x-api-key")
    assert second.headers.get("authorization", f"Bearer {key}") == "Bearer sk-ant-dummy"
    assert "anthropic-version" in second.headers
    assert second.body == {"model": "c", "max_tokens": 8, "messages": [{"role": "user", "content": "q"}]}


def test_embeddings_and_a_pluggable_answer() -> None:
    with FakeAPI(answer=lambda messages: messages[-1]["content"].upper()) as api:
        client = oai(api)
        reply = client.chat.completions.create(model="m", messages=chat("s", "shout"))
        assert reply.choices[0].message.content == "SHOUT" and api.llm is None
        vectors = client.embeddings.create(model="e", input=["alan turing", "gordon welchman"])
        floats = client.embeddings.create(model="e", input="alan turing", encoding_format="float")
        assert len(vectors.data) == 2 and len(vectors.data[0].embedding) == 384
        assert vectors.data[0].embedding == pytest.approx(floats.data[0].embedding, abs=1e-6)


def test_errors_are_answered_like_the_apis(fake_api: FakeAPI) -> None:
    with pytest.raises(openai.BadRequestError):
        oai(fake_api).chat.completions.create(model="m", messages=None)  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError):
        ant(fake_api).messages.create(model="c", max_tokens=0, messages=[{"role": "user", "content": "q"}])

    def broken(messages: object) -> str:
        raise RuntimeError("boom")

    fake_api.answer = broken
    with pytest.raises(openai.InternalServerError, match="boom"):
        oai(fake_api).chat.completions.create(model="m", messages=chat("s", "q"))
    with pytest.raises(openai.NotFoundError):
        oai(fake_api).batches.retrieve("batch_nope")
