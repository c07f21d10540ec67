"""The providers' batch APIs for `index --batch`: OpenAI's Batch API (a JSONL file of chat completions) and
Anthropic's Message Batches, at about half the list price, answered within 24 hours.

wikirag hands over requests already rendered (system prompt, replayed turns, the hinted user prompt: exactly
what a live call would send) and reads back each request's answer text and usage by `custom_id`. Only
`submit` costs money; `poll` and `results` may be repeated at will, which is what makes a run resumable.
Anthropic requests get the same cache breakpoints as live calls (llm/anthropic.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from wikirag.errors import ConfigError
from wikirag.llm.anthropic import _ANTHROPIC_MAX_TOKENS, anthropic_base_url, cache_marked, usage_counts
from wikirag.llm.spec import OPENAI_COMPATIBLE, provider_target
from wikirag.settings import LLMSettings


@dataclass
class BatchRequest:
    custom_id: str
    kind: str  # extract or glean
    prompt: str
    system_prompt: str | None
    history: list[dict[str, Any]]
    max_tokens: int | None = None
    response_format: Any = None


@dataclass
class BatchState:
    status: str  # the provider's word: validating, in_progress, finalizing, completed, ended, ...
    done: int  # requests answered (or failed) so far
    total: int
    ended: bool


@dataclass
class BatchAnswer:
    text: str | None  # None: this request failed in the batch (a live call will retry it)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    error: str = ""


@dataclass
class BatchAPI:
    """One provider's batch endpoints, with the LLM client's model, address and key."""

    client: Any  # llm.client.LLMClient
    provider: str
    metadata: dict[str, str] = field(default_factory=dict)

    def _openai(self) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(api_key=self.client._api_key(), base_url=self.client.target.base_url,
                           timeout=self.client.settings.timeout_s, max_retries=2)

    def _anthropic(self) -> Any:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(api_key=self.client._api_key(),
                              base_url=anthropic_base_url(self.client.target.base_url),
                              timeout=self.client.settings.timeout_s, max_retries=2)

    def _messages(self, r: BatchRequest) -> list[dict[str, Any]]:
        return [*({"role": "system", "content": r.system_prompt} for _ in [1] if r.system_prompt),
                *r.history, {"role": "user", "content": r.prompt}]

    def openai_line(self, r: BatchRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.client.target.model, "messages": self._messages(r)}
        if r.max_tokens:
            body["max_tokens"] = r.max_tokens
        if r.response_format is not None:
            body["response_format"] = r.response_format
        return {"custom_id": r.custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}

    def anthropic_request(self, r: BatchRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.client.target.model,
                                  "messages": [*r.history, {"role": "user", "content": r.prompt}],
                                  "max_tokens": r.max_tokens or _ANTHROPIC_MAX_TOKENS}
        if r.system_prompt:
            params["system"] = r.system_prompt
        return {"custom_id": r.custom_id, "params": cache_marked(params, r.kind, self.client.cache_first_turn)}

    async def submit(self, requests: list[BatchRequest], tag: str = "") -> str:
        """Create the batch; returns its id. The one call that spends money: record the id at once (and
        `tag` before it: an OpenAI batch carries it as metadata, so `find` can recover a lost id)."""
        if self.provider == "anthropic":
            sdk = self._anthropic()
            try:
                batch = await sdk.messages.batches.create(requests=[self.anthropic_request(r) for r in requests])
            finally:
                await sdk.close()
            return str(batch.id)
        sdk = self._openai()
        try:
            data = "".join(json.dumps(self.openai_line(r), ensure_ascii=False) + "\n" for r in requests).encode()
            upload = await sdk.files.create(file=("wikirag-batch.jsonl", data), purpose="batch")
            batch = await sdk.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                             completion_window="24h",
                                             metadata={**self.metadata, **({"wikirag_run": tag} if tag else {})}
                                             or None)
        finally:
            await sdk.close()
        return str(batch.id)

    async def find(self, tag: str) -> str | None:
        """The batch submitted with metadata `wikirag_run = tag`, if the provider has it (OpenAI: batches
        carry metadata; Anthropic's do not, so there a submission cut off before its id was saved is lost)."""
        if self.provider != "openai":
            return None
        sdk = self._openai()
        try:
            page = await sdk.batches.list(limit=100)
            for batch in page.data:
                if (batch.metadata or {}).get("wikirag_run") == tag:
                    return str(batch.id)
        finally:
            await sdk.close()
        return None

    async def poll(self, batch_id: str) -> BatchState:
        if self.provider == "anthropic":
            sdk = self._anthropic()
            try:
                batch = await sdk.messages.batches.retrieve(batch_id)
            finally:
                await sdk.close()
            c = batch.request_counts
            total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
            return BatchState(batch.processing_status, total - c.processing, total,
                              batch.processing_status == "ended")
        sdk = self._openai()
        try:
            batch = await sdk.batches.retrieve(batch_id)
        finally:
            await sdk.close()
        counts = batch.request_counts
        done = (counts.completed + counts.failed) if counts else 0
        return BatchState(batch.status, done, counts.total if counts else 0,
                          batch.status in ("completed", "failed", "expired", "cancelled"))

    async def results(self, batch_id: str) -> dict[str, BatchAnswer]:
        """Every request's answer by custom_id (an ended batch)."""
        out: dict[str, BatchAnswer] = {}
        if self.provider == "anthropic":
            sdk = self._anthropic()
            try:
                async for entry in await sdk.messages.batches.results(batch_id):
                    result = entry.result
                    if result.type != "succeeded":
                        out[entry.custom_id] = BatchAnswer(None, error=result.type)
                        continue
                    counts = usage_counts(result.message.usage)
                    text = "".join(b.text for b in result.message.content if getattr(b, "type", "") == "text")
                    out[entry.custom_id] = BatchAnswer(text, counts["prompt_tokens"], counts["completion_tokens"],
                                                       counts["cached_tokens"], counts["written_tokens"])
            finally:
                await sdk.close()
            return out
        sdk = self._openai()
        try:
            batch = await sdk.batches.retrieve(batch_id)
            for file_id in (batch.output_file_id, batch.error_file_id):
                if not file_id:
                    continue
                content = await sdk.files.content(file_id)
                for line in content.text.splitlines():
                    if line.strip():
                        custom_id, answer = openai_result(json.loads(line))
                        out[custom_id] = answer
        finally:
            await sdk.close()
        return out


def openai_result(row: dict[str, Any]) -> tuple[str, BatchAnswer]:
    """One line of a Batch API output or error file."""
    response = row.get("response") or {}
    body = response.get("body") or {}
    if response.get("status_code") != 200 or not body.get("choices"):
        error = row.get("error") or body.get("error") or {}
        return str(row.get("custom_id")), BatchAnswer(None, error=str(error.get("message", error))[:200])
    usage = body.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    text = body["choices"][0].get("message", {}).get("content") or ""
    return str(row.get("custom_id")), BatchAnswer(text, int(usage.get("prompt_tokens") or 0),
                                                  int(usage.get("completion_tokens") or 0), int(cached))


def check_batch(settings: LLMSettings) -> None:
    """A one-line ConfigError unless the configured provider has a batch API (OpenAI, Anthropic)."""
    if not settings.model:
        raise ConfigError("--batch needs an LLM (set WIKIRAG_LLM or --llm, e.g. openai:gpt-4o-mini)")
    target = provider_target(settings)
    if target.provider == "ollama" or target.named in OPENAI_COMPATIBLE:
        raise ConfigError(f"--batch: {target.named}:{target.model} has no batch API "
                          "(OpenAI and Anthropic have one); run without --batch")


def batch_api(client: Any) -> BatchAPI:
    """The batch API of the client's provider (check_batch first)."""
    check_batch(client.settings)
    return BatchAPI(client, client.target.provider)
