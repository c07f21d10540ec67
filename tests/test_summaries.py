"""Description summaries: with an LLM, a hub's descriptions get LightRAG's summary (once per changed fragment
list, answered from LightRAG's cache afterwards); without one, the bounded merge; the cost model counts them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.fakes import FakeLLM
from tests.storekit import HashEmbedding, snapshot
from wikirag.graph.merge import bounded, entity_descriptions, merge_entity
from wikirag.index.ledger import Ledger
from wikirag.index.run import run_index
from wikirag.index.summaries import TODO_KEY
from wikirag.plan.cost import estimate_for_config
from wikirag.settings import load_config

HUB = "Standup Meeting"  # linked from every daily note, has no note: its mentions pile up


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("lightrag").setLevel(logging.ERROR)


def hub_vault(root: Path, days: int = 40) -> Path:
    (root / "daily").mkdir(parents=True)
    (root / "Platform Team.md").write_text("---\ntype: team\n---\nThe team that runs the shared platform.\n")
    for i in range(days):
        (root / "daily" / f"2024-03-{i:02d}.md").write_text(
            f"Worked on ticket {i} about the caching layer {i % 5}. In the [[{HUB}]] the [[Platform Team]] "
            f"discussed rollout step {i} and the budget for quarter {i % 4}.\n")
    return root


def llm_config(vault: Path, store: Path):
    return load_config(vault, store=store, overrides={"llm": {"model": "fake:one"}})


def index(config, llm=None):
    return run_index(config, llm_func=llm, embedding_func=HashEmbedding().func())


def summaries(llm: FakeLLM) -> list[str]:
    """The names summarised, from the prompts the fake LLM saw."""
    return sorted(c.prompt.split(" Name: ", 1)[1].split("\n", 1)[0] for c in llm.calls if c.kind == "summary")


def test_a_hub_gets_the_llms_summary_and_an_unchanged_rerun_pays_nothing(tmp_path):
    vault = hub_vault(tmp_path / "vault")
    config = llm_config(vault, tmp_path / "store")
    llm = FakeLLM(keep_prompts=True)
    report = index(config, llm)
    assert HUB in summaries(llm)
    assert report.descriptions_summarised == len(summaries(llm))
    # every fragment stays in the ledger: 40 mentions, and what extraction said of it in some notes
    ledger = Ledger.load(config.workspace_dir)
    listed = entity_descriptions(HUB, ledger.entity_index()[HUB])
    assert len(listed) >= 40
    description = snapshot(config)["nodes"][HUB]["description"]  # the LLM's summary of them all, not joined
    assert description.startswith(f"{HUB} is summarised from {len(listed)} descriptions (digest ")
    assert report.llm_calls == len(llm.calls)  # through the run's LLM accounting
    assert not ledger.meta.get(TODO_KEY)

    again = FakeLLM(keep_prompts=True)
    index(config, again)
    assert summaries(again) == []
    # an edit elsewhere re-derives other records; the hub is not summarised again
    (vault / "Platform Team.md").write_text("---\ntype: team\n---\nThe team that runs the shared platform and CI.\n")
    edit = FakeLLM(keep_prompts=True)
    index(config, edit)
    assert HUB not in summaries(edit)


def test_one_more_mention_re_summarises_that_entity_only_and_equals_a_fresh_index(tmp_path):
    vault = hub_vault(tmp_path / "vault")
    config = llm_config(vault, tmp_path / "store")
    index(config, FakeLLM())
    before = len(entity_descriptions(HUB, Ledger.load(config.workspace_dir).entity_index()[HUB]))
    (vault / "daily" / "2024-04-01.md").write_text(f"Skipped the [[{HUB}]] to fix the deploy pipeline.\n")
    llm = FakeLLM(keep_prompts=True)
    index(config, llm)
    assert summaries(llm) == [HUB]
    assert f"{before + 1} descriptions" in snapshot(config)["nodes"][HUB]["description"]
    fresh = llm_config(vault, tmp_path / "fresh")
    index(fresh, FakeLLM())
    assert snapshot(config) == snapshot(fresh)


def test_without_an_llm_the_description_is_the_bounded_merge(tmp_path):
    vault = hub_vault(tmp_path / "vault", days=200)
    config = load_config(vault, store=tmp_path / "store")
    report = index(config)
    assert report.llm_calls == 0 and report.descriptions_summarised == 0
    fragments = Ledger.load(config.workspace_dir).entity_index()[HUB]
    stored = snapshot(config)["nodes"][HUB]["description"]
    assert stored == merge_entity(HUB, fragments)["description"]
    listed = entity_descriptions(HUB, fragments)
    assert len(bounded(listed)) < len(listed) == 200  # the bound really cut


def test_configuring_an_llm_later_summarises_and_removing_it_restores_the_bounded_merge(tmp_path):
    vault = hub_vault(tmp_path / "vault")
    plain = load_config(vault, store=tmp_path / "store")
    index(plain)
    llm = FakeLLM(keep_prompts=True)
    index(llm_config(vault, tmp_path / "store"), llm)
    assert HUB in summaries(llm)
    index(llm_config(vault, tmp_path / "fresh-llm"), FakeLLM())
    assert snapshot(llm_config(vault, tmp_path / "store")) == snapshot(llm_config(vault, tmp_path / "fresh-llm"))
    index(plain)
    index(load_config(vault, store=tmp_path / "fresh-plain"))
    assert snapshot(plain) == snapshot(load_config(vault, store=tmp_path / "fresh-plain"))


class FailsSummaries(FakeLLM):
    """Answers the first `allowed` summary prompts, then fails every other one (the provider gave up)."""

    allowed = 1

    async def __call__(self, prompt, system_prompt=None, history_messages=None, **kwargs):
        if self.kind_of(prompt) == "summary":
            if self.allowed <= 0:
                raise RuntimeError("fake provider down")
            self.allowed -= 1
        return await super().__call__(prompt, system_prompt, history_messages, **kwargs)


def test_a_failed_summary_keeps_the_bounded_description_and_is_retried_without_paying_twice(tmp_path):
    vault = hub_vault(tmp_path / "vault")
    config = llm_config(vault, tmp_path / "store")
    reference = FakeLLM(keep_prompts=True)
    index(llm_config(vault, tmp_path / "reference"), reference)
    due = summaries(reference)
    assert len(due) >= 2
    first = FailsSummaries(keep_prompts=True)
    report = index(config, first)
    assert any("description summary failed, kept bounded, will retry" in i for i in report.issues)
    assert len(Ledger.load(config.workspace_dir).meta[TODO_KEY]["entities"]
               + Ledger.load(config.workspace_dir).meta[TODO_KEY]["relations"]) == len(due) - 1
    retry = FakeLLM(keep_prompts=True)
    index(config, retry)
    assert len(summaries(retry)) == len(due) - 1  # the answered one came from LightRAG's cache
    assert snapshot(config) == snapshot(llm_config(vault, tmp_path / "reference"))


def test_cost_estimate_counts_the_summaries_the_run_makes(tmp_path):
    from typer.testing import CliRunner

    from wikirag.cli import app

    vault = hub_vault(tmp_path / "vault")
    (vault / "notes").mkdir()
    for i in range(12):  # prose the LLM extracts, too long to share a pack: names recurring across notes
        (vault / "notes" / f"Essay {i}.md").write_text(
            f"Ada Lovelace wrote to Charles Babbage about engine {i}. Charles Babbage replied from London.\n\n"
            + " ".join(f"The difference engine computed table {i}-{k} of polynomial values." for k in range(40))
            + "\n")
    config = llm_config(vault, tmp_path / "store")
    llm = FakeLLM(keep_prompts=True)
    index(config, llm)
    real = llm.stats()["summary"]
    estimate = estimate_for_config(config, {"model": "gpt-4o-mini"})
    assert estimate.summaries.summary_calls == real.calls > 2
    assert abs(estimate.summaries.summary_input_tokens - real.input_tokens) <= 0.10 * real.input_tokens
    assert estimate.scenarios["wikirag"].summary_calls == real.calls
    result = CliRunner().invoke(app, ["cost-estimate", str(vault), "--model", "gpt-4o-mini"])
    assert result.exit_code == 0, result.output
    assert f"wikirag includes {real.calls} description-summary calls" in " ".join(result.output.split())
