"""Extraction at API speed, against the fake OpenAI/Anthropic server over HTTP (tests/fakeapi.py): requests in
flight up to `[llm] concurrency`, a 429 storm survived with no note lost, cached input tokens counted,
Anthropic's extraction requests marked for the prompt cache, the live progress line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakeapi import FakeAPI
from tests.storekit import HashEmbedding
from wikirag.index.run import run_index
from wikirag.settings import load_config


def prose_vault(root: Path, notes: int) -> Path:
    """Notes with prose and no links, each longer than a pack: every one is extracted alone (one call)."""
    root.mkdir(parents=True)
    for i in range(notes):
        sentences = " ".join(f"Researcher Ada Example{i} studied Topic{i}x{k} at Institute{k} in {1900 + i}, "
                             f"with a long account of method {k} and its results for field {i}."
                             for k in range(40))
        (root / f"Essay {i:03d}.md").write_text(f"# Essay {i}\n\n{sentences}\n", encoding="utf-8")
    return root


def index(vault: Path, store: Path, api: FakeAPI, monkeypatch, *, provider: str = "openai", concurrency: int = 8,
          progress=None):
    key = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    monkeypatch.setenv(key, "sk-test-not-real")
    url = api.anthropic_base_url if provider == "anthropic" else api.openai_base_url
    config = load_config(vault, store=store, overrides={
        "llm": {"model": f"{provider}:fake-model", "base_url": url, "concurrency": concurrency, "max_retries": 6}})
    return run_index(config, progress=progress, embedding_func=HashEmbedding().func())


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return prose_vault(tmp_path / "vault", 24)


def test_extraction_reaches_the_configured_concurrency(vault, tmp_path, monkeypatch):
    with FakeAPI(latency=0.3) as api:
        report = index(vault, tmp_path / "store", api, monkeypatch, concurrency=8)
    assert report.notes_extracted == 24 and report.llm_failures == 0
    assert api.max_in_flight == 8  # one note at a time kept this at 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_429_storm_loses_no_note(vault, tmp_path, monkeypatch, provider):
    """OpenAI 429s, Anthropic 529 "overloaded": the pool waits out Retry-After and every note gets extracted."""
    with FakeAPI(latency=0.05, storm=12, storm_rate=0.2, retry_after=0.2, anthropic_storm_status=529) as api:
        report = index(vault, tmp_path / "store", api, monkeypatch, provider=provider, concurrency=8)
        refused, answered = api.rejected, api.calls - api.rejected
    assert refused >= 12
    assert report.notes_extracted == 24 and report.notes_pending_extraction == 0 and report.llm_failures == 0
    assert report.llm_calls == answered  # every call answered once in the end; the refusals were retries


def test_a_rate_limit_pauses_the_whole_pool(tmp_path, monkeypatch):
    """After a 429 with Retry-After, no request of the pool starts before the pause is over."""
    import asyncio

    from wikirag.llm.client import make_llm_func
    from wikirag.settings import LLMSettings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    with FakeAPI(latency=0.0, storm=1, retry_after=0.5) as api:
        llm = make_llm_func(LLMSettings(model="openai:fake-model", base_url=api.openai_base_url, concurrency=4))

        async def calls() -> None:
            first = asyncio.ensure_future(llm("first"))
            await asyncio.sleep(0.15)  # the first call has been refused by now: the pool is paused
            await asyncio.gather(first, *(llm(f"later {i}") for i in range(3)))

        asyncio.run(calls())
        times = [r for r in api.requests if r.path == "/v1/chat/completions"]
    assert len(times) == 5 and api.rejected == 1
    assert llm.usage.retries == 1


def _is_summary(content) -> bool:
    text = content if isinstance(content, str) else " ".join(part.get("text", "") for part in content)
    return "synthesize a list of descriptions" in text


def test_cached_input_tokens_are_counted(vault, tmp_path, monkeypatch):
    with FakeAPI(latency=0.0, cache_min_tokens=1024) as api:
        report = index(vault, tmp_path / "store", api, monkeypatch, concurrency=1)
        bodies = api.bodies("/v1/chat/completions")
    extraction = [b for b in bodies if b["messages"][0]["role"] == "system"]
    assert all(_is_summary(b["messages"][-1]["content"]) for b in bodies if b not in extraction)
    systems = {b["messages"][0]["content"] for b in extraction}
    # the static prefix (LightRAG's system prompt) is byte-identical across calls: the hint is in the user turn
    assert len(systems) == 1
    assert report.llm_cached_input_tokens > 0
    assert report.llm_cached_input_tokens >= (len(extraction) - 1) * 1024
    assert report.llm_cached_input_tokens < report.llm_input_tokens


def test_anthropic_extraction_requests_carry_cache_control(vault, tmp_path, monkeypatch):
    with FakeAPI(latency=0.0, cache_min_tokens=0) as api:
        report = index(vault, tmp_path / "store", api, monkeypatch, provider="anthropic", concurrency=1)
        bodies = api.bodies("/v1/messages")
    assert report.notes_extracted == 24 and len(bodies) == report.llm_calls
    summaries = [b for b in bodies if "system" not in b]  # LightRAG's description summaries: one user turn
    assert all(_is_summary(b["messages"][-1]["content"]) for b in summaries)
    bodies = [b for b in bodies if "system" in b]
    for body in bodies:
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in str(body["messages"])  # gleaning off: the chunk's turn is not marked
    # the cached prefix is static: the chunk and its hint are in the user turn
    assert len({body["system"][-1]["text"] for body in bodies}) == 1
    assert report.llm_cached_input_tokens > 0  # every call after the first reads the system prompt
    # ... which the first call wrote (Anthropic bills that at 1.25x input; the report and live spend keep it)
    assert report.llm_cache_write_input_tokens > 0
    assert report.llm_cached_input_tokens == report.llm_cache_write_input_tokens * (len(bodies) - 1)


def test_the_live_spend_prices_cache_writes_and_reads_apart():
    from wikirag.index.live import LiveRun
    from wikirag.llm.usage import LLMUsage
    from wikirag.plan.cost_settings import CostSettings

    usage = LLMUsage()
    live = LiveRun(total=1, usage=usage, price=CostSettings(model="anthropic:claude-sonnet-4").price())
    live.begin()
    usage.add_tokens("extract", 1_000_000, 100_000, cached_input_tokens=600_000, cache_write_input_tokens=300_000)
    # fresh 0.1M x $3 + read 0.6M x $0.30 + written 0.3M x $3.75 + output 0.1M x $15
    assert live.spent_usd() == pytest.approx(0.3 + 0.18 + 1.125 + 1.5)


def test_the_progress_line_shows_notes_in_flight_tokens_and_eta(vault, tmp_path, monkeypatch):
    lines: list[tuple[str, int, int]] = []
    with FakeAPI(latency=0.2) as api:
        index(vault, tmp_path / "store", api, monkeypatch, concurrency=4,
              progress=lambda stage, done, total: lines.append((stage, done, total)))
    extracting = [line for line in lines if line[0].startswith("extracting")]
    assert extracting and extracting[-1][1:] == (24, 24)
    assert any("in flight" in s and " in (" in s and "ETA" in s for s, _d, _t in extracting)


def test_cost_estimate_prices_the_cache_only_where_wikirag_sets_it_up():
    from wikirag.plan.cost_settings import CostSettings

    assert CostSettings(model="openai:gpt-4o-mini").price().cached_input is not None
    assert CostSettings(model="anthropic:claude-3-5-haiku").price().cached_input is not None
    assert CostSettings(model="gemini-2.5-flash").price().cached_input is None  # not set up by wikirag
    assert CostSettings(model="gemini-2.5-flash", price_cached_in=0.01).price().cached_input == 0.01
