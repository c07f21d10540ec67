"""`wikirag index --batch`: every extraction request of the run through the provider's batch API (about half
price, answered within a day), then the ordinary run, which finds every answer in LightRAG's cache.

1. A recording pass (lightrag/extraction.record_prompts) runs LightRAG's extraction on every unit the run
   will extract, with a stand-in LLM: it yields each request exactly as a live call would send it (hint
   applied) and the cache key LightRAG will look its answer up by. Units whose answer is cached already
   (an unchanged pack) need no request.
2. Each request's cache key and a tag go into the ledger (`meta.batch`), one batch is submitted (an OpenAI
   batch carries the tag as metadata), and its id is saved at once. A run stopped between the provider's
   answer and that save finds the OpenAI batch by its tag; Anthropic batches carry no metadata, so there
   that window (one HTTP response) is the one place a second submission can happen.
3. The batch is polled (state, counts, ETA on the progress line) until it ends; a run interrupted here (Ctrl-C,
   kill -9) finds the id in the ledger next time and polls the same batch: nothing is submitted twice.
4. The answers are written into LightRAG's cache under those keys (journaled, then flushed), the ledger's
   batch cleared. With gleaning on, step 1 now records the gleaning requests (they replay the first answer)
   and a second batch round follows.
5. After the last note batch, the description summaries the run will make (index/summaries.py) are recorded
   and answered the same way, before the summary step reads them from the cache.
Requests that failed inside the batch are recorded again: a new batch while rounds remain, else the
ordinary run asks them live.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wikirag.index.extracting import hint_digest, unit_payload
from wikirag.index.ledger import Ledger
from wikirag.index.live import LiveRun
from wikirag.index.planning import Plan, stable_digest
from wikirag.index.report import IndexReport, Progress
from wikirag.index.summaries import Summaries, summary_jobs
from wikirag.index.units import Unit, UnitPlan, note_units, pack_unit
from wikirag.lightrag.answers import flush_answers
from wikirag.lightrag.extraction import drop_cached, record_prompts, store_answers
from wikirag.lightrag.summaries import record_summaries
from wikirag.llm.batch import BatchAPI, BatchRequest
from wikirag.settings import WikiragConfig


async def run_batches(rag: Any, api: BatchAPI, plan: Plan, ledger: Ledger, units_plan: UnitPlan,
                      config: WikiragConfig, report: IndexReport, progress: Progress, live: LiveRun | None,
                      tokenizer: Any, contribution_for: Any) -> None:
    """Answer every extraction request of the run through batches (first, a batch an earlier run left)."""
    rounds = 2 if config.index.gleaning > 0 else 1
    submitted = 0
    while True:
        if ledger.meta.get("batch"):
            await _finish(rag, api, ledger, config, report, progress, live)
        if submitted >= rounds:
            return
        requests = await _record(rag, plan, ledger, units_plan, config, tokenizer, contribution_for)
        if not requests:
            return
        await _submit(api, ledger, requests, plan)
        submitted += 1


async def run_summary_batches(rag: Any, api: BatchAPI, plan: Plan, ledger: Ledger, summaries: Summaries,
                              config: WikiragConfig, report: IndexReport, progress: Progress,
                              live: LiveRun | None) -> None:
    """The run's description summaries through batches too (a round per map-reduce level of a long list), so
    that the live summary step finds them in LightRAG's cache."""
    for _round in range(SUMMARY_ROUNDS):
        if ledger.meta.get("batch"):
            await _finish(rag, api, ledger, config, report, progress, live)
        requests = await record_summaries(rag, summary_jobs(ledger, summaries))
        if not requests:
            return
        await _submit(api, ledger, requests, plan)
    if ledger.meta.get("batch"):
        await _finish(rag, api, ledger, config, report, progress, live)


SUMMARY_ROUNDS = 4  # levels of LightRAG's map-reduce; anything deeper is asked live


async def _record(rag: Any, plan: Plan, ledger: Ledger, units_plan: UnitPlan, config: WikiragConfig,
                  tokenizer: Any, contribution_for: Any) -> list[dict[str, Any]]:
    groups: dict[Any, list[Unit]] = {}
    for path in sorted(p for p in plan.to_process if plan.extracting(p)):
        if path in units_plan.pack_of:
            ref = units_plan.pack_of[path]
            if ("pack", ref) not in groups:
                pack = units_plan.packs[ref]
                groups["pack", ref] = [pack_unit(plan, pack, tokenizer, config.index.default_note_type)]
        else:
            groups["note", path] = note_units(plan, path, contribution_for(path), tokenizer, config)
    payload: dict[str, dict[str, Any]] = {}
    hints: dict[str, str] = {}
    stale: list[str] = []
    ledger.notes.load(m for kind, ref in groups for m in (units_plan.packs[ref].paths if kind == "pack" else [ref]))
    for (kind, ref), units in groups.items():
        members = units_plan.packs[ref].paths if kind == "pack" else [ref]
        digest = hint_digest(plan, units)
        for m in members:  # as the live run would: answers asked with another hint are not reused
            entry = ledger.notes.get(m)
            if entry is not None and entry.hint_digest != digest:
                stale += entry.cache_keys if entry.hint_digest else []
                entry.hint_digest, entry.cache_keys = digest, []
                ledger.notes[m] = entry  # set again: a ledger that saves changed rows only must see it
        payload.update(unit_payload(units, members[0]))
        hints.update({u.content: u.hint for u in units})
    if stale:
        await drop_cached(rag, stale)
        await flush_answers(rag)
    ledger.save()
    return await record_prompts(rag, payload, hints) if payload else []


async def _submit(api: BatchAPI, ledger: Ledger, calls: list[dict[str, Any]], plan: Plan) -> None:
    requests: dict[str, BatchRequest] = {}
    keys: dict[str, list[Any]] = {}
    for call in calls:
        custom_id = call["key"].rsplit(":", 1)[-1]
        kind = call.get("kind") or ("glean" if call["history"] else "extract")
        requests[custom_id] = BatchRequest(custom_id, kind, call["prompt"], call["system_prompt"], call["history"],
                                           call["max_tokens"], call["response_format"])
        keys[custom_id] = [call["key"], call["entry"].get("chunk_id"), call["entry"].get("cache_type", "extract"),
                           kind]
    # Write-ahead: the requests and a tag first (an OpenAI batch carries the tag, so a run stopped between
    # the provider's answer and the next line finds that batch again), then the id at once: a run stopped
    # from there on polls this batch instead of paying for another.
    tag = stable_digest([plan.llm_model, sorted(keys)])
    ledger.meta["batch"] = {"id": None, "tag": tag, "provider": api.provider, "model": plan.llm_model,
                            "requests": keys}
    ledger.save()
    ledger.meta["batch"]["id"] = await api.submit(list(requests.values()), tag)
    ledger.save()


async def _finish(rag: Any, api: BatchAPI, ledger: Ledger, config: WikiragConfig, report: IndexReport,
                  progress: Progress, live: LiveRun | None) -> None:
    state = ledger.meta["batch"]
    if not state.get("id"):  # stopped while submitting: did the provider get it?
        state["id"] = await api.find(state.get("tag", ""))
        if not state["id"]:
            del ledger.meta["batch"]  # never submitted (or not findable): the requests are recorded again
            ledger.save()
            return
        ledger.save()
    if live is not None:
        live.begin()
    while True:
        status = await api.poll(state["id"])
        if live is not None:
            live.batch_state, live.batch_done, live.batch_total = status.status, status.done, status.total
            progress(live.line(), live.done, live.total)
        else:
            progress(f"batch {status.status}", status.done, status.total)
        if status.ended:
            break
        await asyncio.sleep(max(config.llm.batch_poll_s, 0.0))
    answers = await api.results(state["id"])
    usage = getattr(api.client, "usage", None)
    entries: dict[str, dict[str, Any]] = {}
    failed = 0
    for custom_id, (key, chunk_id, cache_type, kind) in state["requests"].items():
        answer = answers.get(custom_id)
        if answer is None or answer.text is None:
            failed += 1
            continue
        entries[key] = {"return": answer.text, "cache_type": cache_type, "chunk_id": chunk_id,
                        "original_prompt": "", "queryparam": None}
        if usage is not None:
            usage.add_call(kind)
            usage.add_tokens(kind, answer.input_tokens, answer.output_tokens,
                             cached_input_tokens=answer.cached_input_tokens,
                             cache_write_input_tokens=answer.cache_write_input_tokens)
    await store_answers(rag, entries)
    await flush_answers(rag)
    report.llm_batch_requests += len(entries)
    if failed:
        report.issues.append(f"--batch: {failed} requests failed in batch {state['id']}; asked again")
    if live is not None:
        live.batch_state = ""
        live.batch_done = live.batch_total = 0
    del ledger.meta["batch"]
    ledger.save()
