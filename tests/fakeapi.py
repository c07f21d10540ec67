"""A fake OpenAI + Anthropic HTTP server, so tests can drive the real SDKs (and LightRAG's bindings) offline.

`FakeAPI` runs an aiohttp server on 127.0.0.1 (a free port) in its own thread and event loop; use it as a
context manager or through the `fake_api` fixture. Point the SDKs at it with `openai_base_url` (".../v1")
and `anthropic_base_url` (no "/v1": the Anthropic SDK adds it). Routes:

- OpenAI: POST /v1/chat/completions (plain, or SSE with `stream: true`; a final usage chunk when
  `stream_options.include_usage`), POST /v1/embeddings, POST /v1/files, GET /v1/files/{id}[/content],
  POST /v1/batches, GET /v1/batches (newest first, one page), GET /v1/batches/{id},
  POST /v1/batches/{id}/cancel.
- Anthropic: POST /v1/messages (plain or SSE), POST /v1/messages/batches, GET /v1/messages/batches/{id},
  GET /v1/messages/batches/{id}/results, POST /v1/messages/batches/{id}/cancel.

Tokens are counted with tiktoken (o200k_base) unless `count_tokens` is given. Cache rules, kept simple:
- OpenAI `cached_tokens`: the tokens of the longest common character prefix between this prompt and any
  earlier prompt to the same model ("role: content" lines joined by newlines), or 0 below
  `cache_min_tokens` (the real API's floor is 1024; it also rounds to 128-token steps, which we don't).
- Anthropic: blocks are read in the API's order (tools, system, messages). Each block carrying
  `cache_control` ends a cacheable prefix; a prefix sent before (same model, identical text) is a cache
  read, the rest up to the last marker is a cache write, and everything else is `input_tokens`. Markers whose
  prefix is under `cache_min_tokens` are ignored.
Knobs (attributes, changeable mid-test): `answer`, `latency`, `storm`, `storm_rate`, `retry_after`,
`anthropic_storm_status`, `embeddings_fail_from`, `embedding_dimensions`, `cache_min_tokens`, `batch_polls`,
`batch_delay`, `stream_chunk`, `fail_status`, `fail_kinds`, `stream_cut_after`. Readings:
`requests` (every `Received`), `bodies(path)`, `calls`, `rejected`, `in_flight`, `max_in_flight`, `llm`
(the default FakeLLM, with its per-kind `stats()`); `reset()` clears them.
Batches advance only when polled: "validating", then "in_progress", then done on the `batch_polls`-th GET
once `batch_delay` seconds have passed (Anthropic: "in_progress" until then, then "ended").
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import json
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from tests.fakes import FakeLLM, hashing_embed
from wikirag.lightrag.tokens import get_encoding

Messages = list[dict[str, str]]  # [{"role": ..., "content": plain text}], an Anthropic system as role "system"
Answer = Callable[[Messages], "str | Awaitable[str]"]
RECEIVED: Any = web.RequestKey("received", object) if hasattr(web, "RequestKey") else "received"
MODEL_PATHS = ("/v1/chat/completions", "/v1/messages", "/v1/embeddings")  # the paths storms and counters see


def fake_llm_answer(llm: FakeLLM | None = None) -> Answer:
    """Answers through tests.fakes.FakeLLM, so LightRAG's extraction and keyword prompts get parseable replies."""
    llm = llm or FakeLLM()

    async def answer(messages: Messages) -> str:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        turns = [m for m in messages if m["role"] != "system"]
        prompt = turns[-1]["content"] if turns else ""
        return await llm(prompt, system_prompt=system, history_messages=turns[:-1])

    return answer


@dataclass
class Received:
    """One HTTP request as the server saw it: headers with lower-case names; body the parsed JSON, an upload's
    form fields, or None."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None
    at: float = field(default_factory=time.monotonic)


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if block.get("type") == "text":
        return str(block.get("text", ""))
    return json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)


def _text(content: Any) -> str:
    """A message's content as plain text, whether a string or a list of content blocks."""
    return content if isinstance(content, str) else "".join(_block_text(b) for b in content or [])


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings by binary search on slice equality (C speed): the character
    loop of os.path.commonprefix, against every earlier prompt, held the GIL long enough to slow the client
    under test in the same process (the throughput benchmark)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _oai_error(status: int, message: str, kind: str = "invalid_request_error") -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _ant_error(status: int, message: str, kind: str = "invalid_request_error") -> tuple[int, dict[str, Any]]:
    return status, {"type": "error", "error": {"type": kind, "message": message}}


def _reply(result: tuple[int, dict[str, Any]], **headers: str) -> web.Response:
    return web.json_response(result[1], status=result[0], headers=headers or None)


def _missing(what: str, anthropic: bool = False) -> web.HTTPNotFound:
    body = (_ant_error if anthropic else _oai_error)(404, f"no such {what}", "not_found_error")[1]
    return web.HTTPNotFound(text=json.dumps(body), content_type="application/json")


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


class FakeAPI:
    """The server and its knobs. Knobs are plain attributes, read on each request, so tests may change them
    between calls. Counters (`calls`, `rejected`, `in_flight`, `max_in_flight`) and `requests` are updated
    under `lock`; they count only model calls (MODEL_PATHS), storm rejections included."""

    def __init__(self, *, answer: Answer | None = None, latency: float = 0.0, storm: int = 0,
                 storm_rate: float = 0.0, retry_after: float = 0.05, anthropic_storm_status: int = 429,
                 cache_min_tokens: int = 0, batch_polls: int = 2, batch_delay: float = 0.0,
                 stream_chunk: int = 16, count_tokens: Callable[[str], int] | None = None, seed: int = 0) -> None:
        self.llm: FakeLLM | None = None if answer else FakeLLM()
        self.answer: Answer = answer or fake_llm_answer(self.llm)
        self.latency = latency  # seconds each model call waits before answering (storm answers don't)
        self.storm = storm  # the first `storm` model calls are refused ...
        self.storm_rate = storm_rate  # ... and then this fraction of the others, at random (seeded)
        self.retry_after = retry_after  # the Retry-After header (seconds, may be fractional) on refusals
        self.anthropic_storm_status = anthropic_storm_status  # 429 rate_limit_error or 529 overloaded_error
        self.cache_min_tokens = cache_min_tokens
        self.batch_polls = batch_polls
        self.batch_delay = batch_delay
        self.stream_chunk = stream_chunk  # characters of answer per SSE delta
        # Every chat completion is refused with this status (401: the message echoes the key sent, as a hostile
        # server might), or only those whose FakeLLM kind is in `fail_kinds` ("keywords", "answer", ...).
        self.fail_status: int | None = None
        self.fail_kinds: tuple[str, ...] | None = None
        self.stream_cut_after: int | None = None  # a streamed answer's connection drops after this many deltas
        self.embeddings_fail_from: int | None = None  # from this embeddings request on (1-based), answer 500
        # A request's `dimensions`: "honour" it, "ignore" it (384 wide), or "refuse" it with a 400, as OpenAI
        # does for text-embedding-ada-002.
        self.embedding_dimensions = "honour"
        self.embedding_requests = 0
        encoding = get_encoding("o200k_base")
        self.count_tokens = count_tokens or (lambda text: len(encoding.encode_ordinary(text)))
        self.lock = threading.Lock()
        self._random = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.url = self.openai_base_url = self.anthropic_base_url = ""  # set by start()
        self.reset()

    # -- observing ---------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget requests, counters, caches, files and batches (the knobs stay)."""
        with self.lock:
            self.requests: list[Received] = []
            self.calls = self.rejected = self.in_flight = self.max_in_flight = 0
            self._oai_seen: dict[str, list[str]] = {}
            self._ant_cache: set[str] = set()
            self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
            self.batches: dict[str, dict[str, Any]] = {}

    def bodies(self, path: str) -> list[Any]:
        """The bodies of every request received on `path`, in order."""
        with self.lock:
            return [r.body for r in self.requests if r.path == path]

    # -- lifecycle ---------------------------------------------------------------------------------------
    def start(self) -> FakeAPI:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="fakeapi", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake API server did not start")
        return self

    def stop(self) -> None:
        if self._loop and self._thread:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = self._thread = None

    def __enter__(self) -> FakeAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self, ready: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        app = web.Application(middlewares=[self._record], client_max_size=256 * 1024**2)
        post, get = web.post, web.get
        app.add_routes([
            post("/v1/chat/completions", self._chat_route), post("/v1/embeddings", self._embeddings_route),
            post("/v1/files", self._upload), get("/v1/files/{id}", self._file_meta),
            get("/v1/files/{id}/content", self._file_content), post("/v1/batches", self._oai_batch_create),
            get("/v1/batches", self._oai_batch_list), get("/v1/batches/{id}", self._oai_batch_get),
            post("/v1/batches/{id}/cancel", self._oai_batch_cancel),
            post("/v1/messages", self._messages_route), post("/v1/messages/batches", self._ant_batch_create),
            get("/v1/messages/batches/{id}", self._ant_batch_get),
            get("/v1/messages/batches/{id}/results", self._ant_batch_results),
            post("/v1/messages/batches/{id}/cancel", self._ant_batch_cancel),
        ])
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        self.openai_base_url, self.anthropic_base_url = f"{self.url}/v1", self.url  # Anthropic's SDK adds /v1
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    # -- every request: record; model calls: count, storm, wait ------------------------------------------
    @web.middleware
    async def _record(self, request: web.Request, handler: Callable[..., Awaitable[web.StreamResponse]]
                      ) -> web.StreamResponse:
        body = await request.json() if request.content_type == "application/json" and request.can_read_body else None
        received = Received(request.method, request.path, {k.lower(): v for k, v in request.headers.items()}, body)
        request[RECEIVED] = received
        with self.lock:
            self.requests.append(received)
        if request.path not in MODEL_PATHS:
            return await handler(request)
        with self.lock:
            n, self.calls = self.calls, self.calls + 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            refuse = n < self.storm or (self.storm_rate > 0 and self._random.random() < self.storm_rate)
            self.rejected += refuse
        try:
            if refuse:
                return self._refusal(request.path)
            if self.latency:
                await asyncio.sleep(self.latency)
            return await handler(request)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _refusal(self, path: str) -> web.Response:
        after = f"{self.retry_after:g}"
        if path != "/v1/messages":
            return _reply(_oai_error(429, "Rate limit reached (fake storm)", "requests"), **{"Retry-After": after})
        status = self.anthropic_storm_status
        kind = "overloaded_error" if status == 529 else "rate_limit_error"
        return _reply(_ant_error(status, f"{kind} (fake storm)", kind), **{"Retry-After": after})

    async def _answer(self, messages: Messages) -> str:
        text = self.answer(messages)
        return await text if inspect.isawaitable(text) else text

    # -- OpenAI chat completions -------------------------------------------------------------------------
    async def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """One chat completion as (status, body): shared by the HTTP route and the Batch API."""
        if not body.get("model") or not isinstance(body.get("messages"), list):
            return _oai_error(400, "'model' and 'messages' are required")
        messages = [{"role": str(m.get("role")), "content": _text(m.get("content"))} for m in body["messages"]]
        prompt = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        try:
            text = await self._answer(messages)
        except Exception as exc:  # the answer function failing is the server failing
            return _oai_error(500, f"fake answer failed: {exc}", "server_error")
        with self.lock:
            seen = self._oai_seen.setdefault(body["model"], [])
            common = max((_common_prefix(prompt, s) for s in seen), default=0)
            seen.append(prompt)
        prompt_tokens, cached = self.count_tokens(prompt), self.count_tokens(prompt[:common])
        cached = min(cached, prompt_tokens) if cached >= max(self.cache_min_tokens, 1) else 0
        completion_tokens = self.count_tokens(text)
        return 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"], "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                         "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }

    def _failure(self, request: web.Request, body: dict[str, Any]) -> web.Response | None:
        if self.fail_status is None:
            return None
        if self.fail_kinds is not None:
            messages = body.get("messages") or []
            prompt = _text(messages[-1].get("content")) if messages else ""
            system = next((_text(m.get("content")) for m in messages if m.get("role") == "system"), None)
            if (self.llm or FakeLLM()).kind_of(prompt, system) not in self.fail_kinds:
                return None
        if self.fail_status == 401:
            key = request.headers.get("Authorization", "").removeprefix("Bearer ")
            return _reply(_oai_error(401, f"Incorrect API key provided: {key}.", "invalid_request_error"))
        return _reply(_oai_error(self.fail_status, "The server had an error (fake)", "server_error"))

    async def _chat_route(self, request: web.Request) -> web.StreamResponse:
        body = request[RECEIVED].body or {}
        failure = self._failure(request, body)
        if failure is not None:
            return failure
        status, out = await self._chat(body)
        if status != 200 or not body.get("stream"):
            return _reply((status, out))
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {k: out[k] for k in ("id", "created", "model", "system_fingerprint")}
        base["object"] = "chat.completion.chunk"
        text = out["choices"][0]["message"]["content"]
        deltas = [{"role": "assistant", "content": ""}] + [{"content": text[i : i + self.stream_chunk]}
                                                             for i in range(0, len(text), self.stream_chunk)]
        chunks = [{"index": 0, "delta": d, "finish_reason": None} for d in deltas]
        chunks.append({"index": 0, "delta": {}, "finish_reason": "stop"})
        events = [base | {"choices": [c]} | ({"usage": None} if usage else {}) for c in chunks]
        if usage:
            events.append(base | {"choices": [], "usage": out["usage"]})
        if self.stream_cut_after is not None:  # the first deltas, then the connection drops
            return await self._sse(request, [(None, e) for e in events[:self.stream_cut_after + 1]], cut=True)
        return await self._sse(request, [(None, e) for e in events] + [(None, "[DONE]")])

    async def _sse(self, request: web.Request, events: list[tuple[str | None, Any]], cut: bool = False
                   ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            await response.write(((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode())
        if cut and request.transport is not None:
            await asyncio.sleep(0.05)  # the deltas reach the client first
            request.transport.close()  # mid-body: the client's read fails (an incomplete chunked body)
            return response
        await response.write_eof()
        return response

    async def _embeddings_route(self, request: web.Request) -> web.Response:
        """Hashing bag-of-words vectors (tests.fakes.hashing_embed), as floats or base64 like the real API."""
        with self.lock:
            self.embedding_requests += 1
            failing = self.embeddings_fail_from is not None and self.embedding_requests >= self.embeddings_fail_from
        if failing:
            return web.json_response({"error": {"message": "upstream embedding backend unavailable",
                                                "type": "server_error"}}, status=500)
        body = request[RECEIVED].body or {}
        if body.get("dimensions") is not None and self.embedding_dimensions == "refuse":
            return _reply(_oai_error(400, "This model does not support specifying dimensions."))
        texts = [body["input"]] if isinstance(body.get("input"), str) else list(body.get("input") or [])
        honoured = body.get("dimensions") if self.embedding_dimensions == "honour" else None
        vectors = await hashing_embed(int(honoured or 384))(texts)
        as_b64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i, "embedding": base64.b64encode(v.astype(np.float32).tobytes())
                 .decode() if as_b64 else v.tolist()} for i, v in enumerate(vectors)]
        tokens = sum(self.count_tokens(t) for t in texts)
        return web.json_response({"object": "list", "data": data, "model": body.get("model"),
                                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    # -- OpenAI files and batches ------------------------------------------------------------------------
    def _store_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        meta = {"id": f"file-{uuid.uuid4().hex[:24]}", "object": "file", "bytes": len(data),
                "created_at": int(time.time()), "filename": filename, "purpose": purpose, "status": "processed"}
        with self.lock:
            self.files[meta["id"]] = (meta, data)
        return meta

    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            return _reply(_oai_error(400, "'file' is required"))
        request[RECEIVED].body = {"purpose": form.get("purpose"), "filename": upload.filename}
        return web.json_response(self._store_file(upload.file.read(), upload.filename, str(form.get("purpose"))))

    def _file(self, request: web.Request) -> tuple[dict[str, Any], bytes]:
        with self.lock:
            if request.match_info["id"] not in self.files:
                raise _missing("file")
            return self.files[request.match_info["id"]]

    async def _file_meta(self, request: web.Request) -> web.Response:
        return web.json_response(self._file(request)[0])

    async def _file_content(self, request: web.Request) -> web.Response:
        return web.Response(body=self._file(request)[1], content_type="application/octet-stream")

    async def _oai_batch_create(self, request: web.Request) -> web.Response:
        body = request[RECEIVED].body or {}
        with self.lock:
            found = self.files.get(str(body.get("input_file_id")))
        if not found:
            return _reply(_oai_error(400, "unknown input_file_id"))
        lines = [json.loads(line) for line in found[1].decode().splitlines() if line.strip()]
        batch = {"id": f"batch_{uuid.uuid4().hex[:24]}", "object": "batch", "endpoint": body.get("endpoint"),
                 "input_file_id": body["input_file_id"], "completion_window": body.get("completion_window", "24h"),
                 "status": "validating", "created_at": int(time.time()), "output_file_id": None,
                 "error_file_id": None, "errors": None, "metadata": body.get("metadata"),
                 "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
        with self.lock:
            self.batches[batch["id"]] = {"public": batch, "lines": lines, "polls": 0, "t0": time.monotonic()}
        return web.json_response(batch)

    async def _oai_batch_list(self, request: web.Request) -> web.Response:
        with self.lock:
            data = [job["public"] for bid, job in self.batches.items() if bid.startswith("batch_")][::-1]
        return web.json_response({"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None, "has_more": False})

    def _job(self, request: web.Request) -> dict[str, Any]:
        with self.lock:
            if request.match_info["id"] not in self.batches:
                raise _missing("batch", anthropic=request.path.startswith("/v1/messages"))
            return self.batches[request.match_info["id"]]

    def _due(self, job: dict[str, Any]) -> bool:
        """Count a poll; True once (never for a second, overlapping poll) when the batch should finish now."""
        job["polls"] += 1
        due = job["polls"] >= self.batch_polls and time.monotonic() - job["t0"] >= self.batch_delay
        started, job["started"] = job.get("started", False), job.get("started", False) or due
        return due and not started

    async def _oai_batch_get(self, request: web.Request) -> web.Response:
        job = self._job(request)
        batch = job["public"]
        if batch["status"] == "cancelling":
            batch.update(status="cancelled", cancelled_at=int(time.time()))
        elif batch["status"] in ("validating", "in_progress"):
            if self._due(job):
                await self._run_oai_batch(job)
            else:
                batch.update(status="in_progress", in_progress_at=batch.get("in_progress_at") or int(time.time()))
        return web.json_response(batch)

    async def _run_oai_batch(self, job: dict[str, Any]) -> None:
        done: list[str] = []
        failed: list[str] = []
        for line in job["lines"]:
            if line.get("url") == "/v1/chat/completions":
                status, body = await self._chat(line.get("body") or {})
            else:
                status, body = _oai_error(400, f"unsupported url {line.get('url')!r}")
            out = {"id": f"batch_req_{uuid.uuid4().hex[:24]}", "custom_id": line.get("custom_id"),
                   "response": {"status_code": status, "request_id": uuid.uuid4().hex, "body": body}, "error": None}
            (done if status == 200 else failed).append(json.dumps(out))
        batch = job["public"]
        for key, rows in (("output_file_id", done), ("error_file_id", failed)):
            if rows:
                batch[key] = self._store_file(("\n".join(rows) + "\n").encode(), f"{key}.jsonl", "batch_output")["id"]
        batch["request_counts"].update(completed=len(done), failed=len(failed))
        batch.update(status="completed", completed_at=int(time.time()))

    async def _oai_batch_cancel(self, request: web.Request) -> web.Response:
        job = self._job(request)
        if job["public"]["status"] in ("validating", "in_progress"):
            job["public"].update(status="cancelling", cancelling_at=int(time.time()))
        return web.json_response(job["public"])

    # -- Anthropic messages ------------------------------------------------------------------------------
    def _ant_cache_usage(self, model: str, body: dict[str, Any]) -> tuple[int, int, int]:
        """(input_tokens, cache_creation_input_tokens, cache_read_input_tokens) under the module's cache rule."""
        system = body.get("system")
        blocks: list[tuple[str, Any]] = [(json.dumps(t, sort_keys=True), t) for t in body.get("tools") or []]
        blocks += [(f"system: {_block_text(b)}", b) for b in ([system] if isinstance(system, str) else system or [])]
        for m in body["messages"]:
            content = m.get("content")
            blocks += [(f"{m.get('role')}: {_block_text(b)}", b) for b in
                       ([content] if isinstance(content, str) else content or [])]
        prefix, marks = "", []
        for text, block in blocks:
            prefix += text + "\n"
            if isinstance(block, dict) and block.get("cache_control"):
                tokens = self.count_tokens(prefix)
                if tokens >= self.cache_min_tokens:
                    marks.append((hashlib.sha256(f"{model}\n{prefix}".encode()).hexdigest(), tokens))
        total = self.count_tokens(prefix)
        with self.lock:
            hits = [tokens for key, tokens in marks if key in self._ant_cache]
            self._ant_cache.update(key for key, _ in marks)
        read = hits[-1] if hits else 0
        created = marks[-1][1] - read if marks and marks[-1][1] > read else 0
        return max(total - read - created, 0), created, read

    async def _message(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """One Messages API answer as (status, body): shared by the HTTP route and Message Batches."""
        if not body.get("model") or not isinstance(body.get("messages"), list) or not body.get("max_tokens"):
            return _ant_error(400, "'model', 'messages' and 'max_tokens' are required")
        system = body.get("system")
        messages = [{"role": "system", "content": _text(system)}] if system else []
        messages += [{"role": str(m.get("role")), "content": _text(m.get("content"))} for m in body["messages"]]
        try:
            text = await self._answer(messages)
        except Exception as exc:
            return _ant_error(500, f"fake answer failed: {exc}", "api_error")
        fresh, created, read = self._ant_cache_usage(body["model"], body)
        return 200, {
            "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": fresh, "output_tokens": self.count_tokens(text),
                      "cache_creation_input_tokens": created, "cache_read_input_tokens": read},
        }

    async def _messages_route(self, request: web.Request) -> web.StreamResponse:
        body = request[RECEIVED].body or {}
        status, out = await self._message(body)
        if status != 200 or not body.get("stream"):
            return _reply((status, out))
        text, usage = out["content"][0]["text"], out["usage"]
        start = out | {"content": [], "stop_reason": None, "usage": usage | {"output_tokens": 1}}
        pieces = [text[i : i + self.stream_chunk] for i in range(0, len(text), self.stream_chunk)]
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            *(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": p}}) for p in pieces),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": usage["output_tokens"]}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        return await self._sse(request, events)

    # -- Anthropic message batches -----------------------------------------------------------------------
    async def _ant_batch_create(self, request: web.Request) -> web.Response:
        requests = (request[RECEIVED].body or {}).get("requests")
        if not isinstance(requests, list) or not requests:
            return _reply(_ant_error(400, "'requests' is required"))
        now = time.time()
        batch = {"id": f"msgbatch_{uuid.uuid4().hex[:24]}", "type": "message_batch", "processing_status": "in_progress",
                 "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0,
                                    "expired": 0},
                 "created_at": _iso(now), "expires_at": _iso(now + 86400), "ended_at": None, "archived_at": None,
                 "cancel_initiated_at": None, "results_url": None}
        with self.lock:
            self.batches[batch["id"]] = {"public": batch, "lines": requests, "polls": 0, "t0": time.monotonic()}
        return web.json_response(batch)

    async def _ant_batch_get(self, request: web.Request) -> web.Response:
        job = self._job(request)
        batch = job["public"]
        if batch["processing_status"] == "canceling":
            counts = batch["request_counts"]
            counts.update(canceled=counts["processing"], processing=0)
            job["results"] = [{"custom_id": r.get("custom_id"), "result": {"type": "canceled"}} for r in job["lines"]]
            self._end(batch)
        elif batch["processing_status"] == "in_progress" and self._due(job):
            job["results"] = []
            for item in job["lines"]:
                status, out = await self._message(item.get("params") or {})
                result = {"type": "succeeded", "message": out} if status == 200 else {"type": "errored", "error": out}
                job["results"].append({"custom_id": item.get("custom_id"), "result": result})
            ok = sum(r["result"]["type"] == "succeeded" for r in job["results"])
            batch["request_counts"].update(processing=0, succeeded=ok, errored=len(job["results"]) - ok)
            self._end(batch)
        return web.json_response(batch)

    def _end(self, batch: dict[str, Any]) -> None:
        batch.update(processing_status="ended", ended_at=_iso(time.time()),
                     results_url=f"{self.url}/v1/messages/batches/{batch['id']}/results")

    async def _ant_batch_results(self, request: web.Request) -> web.Response:
        job = self._job(request)
        if "results" not in job:
            raise _missing("results (yet)", anthropic=True)
        lines = "".join(json.dumps(r) + "\n" for r in job["results"])
        return web.Response(text=lines, content_type="application/binary")

    async def _ant_batch_cancel(self, request: web.Request) -> web.Response:
        job = self._job(request)
        if job["public"]["processing_status"] == "in_progress":
            job["public"].update(processing_status="canceling", cancel_initiated_at=_iso(time.time()))
        return web.json_response(job["public"])


@pytest.fixture
def fake_api() -> Iterator[FakeAPI]:
    """A started FakeAPI with default knobs (change them on the object); stopped after the test."""
    with FakeAPI() as api:
        yield api
