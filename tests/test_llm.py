"""wikirag.llm against tiny local servers speaking the providers' wire formats (no network, no model).

The OpenAI tests go through the real `openai` SDK inside LightRAG's own binding; Ollama through the
`ollama` client inside LightRAG's binding; Anthropic through the `anthropic` SDK. The server follows a
per-request script (an HTTP status, a delay, or a normal answer) and records what it received.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wikirag.errors import ConfigError
from wikirag.lightrag.engine import lightrag_llm_kwargs
from wikirag.llm.check import acheck_llm
from wikirag.llm.client import make_llm_func
from wikirag.llm.retry import Backoff, LLMCallError, affects_every_call, is_retryable
from wikirag.llm.spec import describe_llm, parse_llm_spec
from wikirag.llm.usage import LLMUsage
from wikirag.redaction import redact
from wikirag.settings import LLMSettings

FAST = Backoff(initial_s=0.01, max_s=0.05)
FAKE_KEY = "sk-test-Zq8xV3mK9pL2wR7tY4uB"


class FakeServer:
    """OpenAI /v1/chat/completions, Ollama /api/chat and Anthropic /v1/messages on 127.0.0.1.

    `script` holds one action per request, in order (then "ok" forever): an int HTTP status, a float
    (sleep that many seconds, then answer), "ok", or "nousage" (answer without a usage block).
    """

    def __init__(self, script=(), *, delay: float = 0.0, error_body: dict | None = None,
                 retry_after: str | None = None) -> None:
        self.script = list(script)
        self.delay = delay
        self.error_body = error_body
        self.retry_after = retry_after
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.usage = (11, 7)  # (input, output) the server reports
        self.reply: str | None = None  # the answer's text (default "answer <request number>")
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                owner.handle(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):  # a client that timed out and left
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length") or 0)) or b"{}")
        with self.lock:
            headers = {k.lower(): v for k, v in h.headers.items()}
            self.requests.append({"path": h.path, "headers": headers, "body": body})
            action = self.script.pop(0) if self.script else "ok"
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            if isinstance(action, float):
                time.sleep(action)
                action = "ok"
            if isinstance(action, int):
                self._send(h, action, self.error_body or {"error": {"message": f"scripted {action}",
                                                                   "type": "server_error"}})
            elif h.path.endswith("/api/chat"):
                self._ollama(h, body)
            elif h.path.endswith("/v1/messages"):
                self._anthropic(h, body)
            else:
                self._openai(h, body, usage=action != "nousage")
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self.lock:
                self.in_flight -= 1

    def _send(self, h, status: int, payload: dict | str, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(data.encode())))
        if status == 429 and self.retry_after is not None:
            h.send_header("Retry-After", self.retry_after)
        h.end_headers()
        h.wfile.write(data.encode())

    def _openai(self, h, body: dict, *, usage: bool) -> None:
        n_in, n_out = self.usage
        reply = self.reply or f"answer {len(self.requests)}"
        if body.get("stream"):
            chunks = [{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                       "choices": [{"index": 0, "delta": {"content": part}, "finish_reason": None}]}
                      for part in ("ans", "wer")]
            if usage:
                chunks.append({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                               "choices": [], "usage": {"prompt_tokens": n_in, "completion_tokens": n_out,
                                                        "total_tokens": n_in + n_out}})
            text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(h, 200, text, "text/event-stream")
            return
        payload = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                "finish_reason": "stop"}]}
        if usage:
            payload["usage"] = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
        self._send(h, 200, payload)

    def _ollama(self, h, body: dict) -> None:
        n_in, n_out = self.usage
        base = {"model": body["model"], "created_at": "2025-01-01T00:00:00Z"}
        if body.get("stream"):
            lines = [{**base, "message": {"role": "assistant", "content": p}, "done": False} for p in ("o", "k")]
            lines.append({**base, "message": {"role": "assistant", "content": ""}, "done": True,
                          "done_reason": "stop", "prompt_eval_count": n_in, "eval_count": n_out})
            self._send(h, 200, "".join(json.dumps(x) + "\n" for x in lines), "application/x-ndjson")
            return
        self._send(h, 200, {**base, "message": {"role": "assistant", "content": "ollama says hi"}, "done": True,
                            "done_reason": "stop", "prompt_eval_count": n_in, "eval_count": n_out})

    def _anthropic(self, h, body: dict) -> None:
        n_in, n_out = self.usage
        self._send(h, 200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                            "content": [{"type": "text", "text": "claude says hi"}], "stop_reason": "end_turn",
                            "stop_sequence": None, "usage": {"input_tokens": n_in, "output_tokens": n_out}})


@pytest.fixture
def server():
    servers: list[FakeServer] = []

    def start(*script, **kwargs) -> FakeServer:
        s = FakeServer(script, **kwargs)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


@pytest.fixture(autouse=True)
def clean_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)


def openai_settings(srv: FakeServer, **kw) -> LLMSettings:
    return LLMSettings(model="openai:test-model", base_url=srv.url + "/v1", **{"max_retries": 3, **kw})


def run(coro):
    return asyncio.run(coro)


# -- spec, description, redaction ------------------------------------------------------------------


@pytest.mark.parametrize("spec, expected", [
    ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
    ("ollama:qwen2.5:7b", ("ollama", "qwen2.5:7b")),
    ("anthropic:claude-3-5-haiku-latest", ("anthropic", "claude-3-5-haiku-latest")),
    ("  OpenAI : gpt-4o ", ("openai", "gpt-4o")),
    ("lmstudio:qwen3-8b", ("lmstudio", "qwen3-8b")),
    ("vllm:Qwen/Qwen2.5-7B-Instruct", ("vllm", "Qwen/Qwen2.5-7B-Instruct")),
])
def test_parse_llm_spec(spec, expected):
    assert parse_llm_spec(spec) == expected


@pytest.mark.parametrize("spec, message", [
    ("", "write it as provider:model"),
    ("gpt-4o-mini", "write it as provider:model"),
    ("openai:", "write it as provider:model"),
    (":gpt-4o", "write it as provider:model"),
    ("gemini:pro", "unknown provider 'gemini'"),
])
def test_parse_llm_spec_errors(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_llm_spec(spec)


@pytest.mark.parametrize("field, value, message", [
    ("concurrency", -1, "concurrency must be at least 1"),
    ("timeout_s", 0.0, "timeout_s must be positive"),
    ("max_retries", -1, "max_retries must be from 0 to 20"),
    ("max_retries", 1_000_000, "max_retries must be from 0 to 20"),
])
def test_bad_settings_are_config_errors(field, value, message):
    with pytest.raises(ConfigError, match=message):
        make_llm_func(LLMSettings(model="ollama:x", **{field: value}))


def test_missing_key_is_a_config_error_naming_the_variable():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_llm_func(LLMSettings(model="openai:gpt-4o-mini"))
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        make_llm_func(LLMSettings(model="anthropic:claude-3-5-haiku-latest"))
    make_llm_func(LLMSettings(model="openai:local", base_url="http://127.0.0.1:1/v1"))  # local: no key needed
    make_llm_func(LLMSettings(model="ollama:qwen2.5:7b"))


def test_describe_llm_never_shows_the_key_or_url_credentials(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    info = describe_llm(LLMSettings(model="openai:gpt-4o-mini", base_url="https://user:pw@proxy.example:8443/v1?key=abc"))
    assert info["provider"] == "openai" and info["model"] == "gpt-4o-mini"
    assert info["base_url_host"] == "https://proxy.example:8443"
    assert info["key_env"] == "OPENAI_API_KEY" and info["key_set"] is True
    text = json.dumps(info)
    assert FAKE_KEY not in text and "pw" not in text and "abc" not in text
    assert describe_llm(LLMSettings())["configured"] is False
    named = describe_llm(LLMSettings(model="lmstudio:qwen3"))
    assert (named["wire"], named["base_url_host"], named["key_required"]) == ("openai", "http://127.0.0.1:1234", False)
    assert named["key_env"] == "OPENAI_API_KEY"  # set, so it will be sent even to a local server
    monkeypatch.delenv("OPENAI_API_KEY")
    assert describe_llm(LLMSettings(model="lmstudio:qwen3"))["key_env"] is None  # nothing to worry about
    assert describe_llm(LLMSettings(model="anthropic:claude"))["key_env"] == "ANTHROPIC_API_KEY"


def test_lightrag_kwargs_follow_the_settings():
    kw = lightrag_llm_kwargs(LLMSettings(model="ollama:qwen2.5:7b", concurrency=3, timeout_s=60, max_retries=2))
    assert kw["llm_model_max_async"] == 3
    assert kw["default_llm_timeout"] * 2 >= 60 * 3 + 30 * 2  # LightRAG's 2x cap outlasts all attempts


def test_redact(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "plainvalue-without-prefix-123")
    text = ("Incorrect API key provided: sk-proj-abcDEF1234567890. Authorization: Bearer abc.def-ghi_jkl "
            "url https://x.example/v1?key=AIzaSyD-secret&alt=json x-api-key: plainvalue-without-prefix-123 "
            "and sk-ant-api03-XYZxyz0987654321")
    out = redact(text)
    for secret in ("sk-proj-abcDEF1234567890", "abc.def-ghi_jkl", "AIzaSyD-secret", "plainvalue-without-prefix-123",
                   "sk-ant-api03-XYZxyz0987654321"):
        assert secret not in out
    assert "Incorrect API key provided" in out and "&alt=json" in out
    assert redact("nothing to hide: 429 Too Many Requests") == "nothing to hide: 429 Too Many Requests"
    # a base URL's user:password: sent as Basic auth, which a server may echo; and the URL itself
    echoed = redact("401 - Incorrect API key provided: Basic dXNlcjpwdy1MRUFLQ0hFQ0s=. See http://user:pw-x@h:9/v1")
    assert "dXNlcjpwdy1MRUFLQ0hFQ0s" not in echoed and "pw-x" not in echoed and "http://[redacted]@h:9/v1" in echoed
    assert redact("Basic settings stay readable") == "Basic settings stay readable"


def test_reprs_hold_no_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    llm = make_llm_func(LLMSettings(model="openai:gpt-4o-mini"))
    assert FAKE_KEY not in repr(llm) and FAKE_KEY not in repr(llm.usage)
    assert FAKE_KEY not in str(vars(llm)) and FAKE_KEY not in str(vars(llm.usage))


# -- OpenAI wire through LightRAG's binding --------------------------------------------------------


def test_retries_429_500_and_timeout_then_succeeds_with_reported_usage(server):
    srv = server(429, 500, 2.0, retry_after="0")
    usage = LLMUsage()
    llm = make_llm_func(openai_settings(srv, timeout_s=0.5), usage, backoff=FAST)
    assert run(llm("hello", system_prompt="be brief")) == "answer 4"
    assert len(srv.requests) == 4
    assert (usage.calls, usage.retries, usage.failures, usage.requests) == (1, 3, 0, 4)
    assert (usage.input_tokens, usage.output_tokens, usage.estimated_calls) == (11, 7, 0)
    sent = srv.requests[-1]["body"]
    assert sent["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    assert srv.requests[-1]["headers"]["authorization"] == "Bearer not-needed"  # a local server needs no key


def test_gives_up_after_max_retries(server):
    srv = server(503, 503, 503, 503, 503)
    usage = LLMUsage()
    llm = make_llm_func(openai_settings(srv, max_retries=2), usage, backoff=FAST)
    with pytest.raises(LLMCallError) as info:
        run(llm("hello"))
    assert len(srv.requests) == 3
    assert (info.value.status_code, info.value.retryable, info.value.attempts) == (503, True, 3)
    assert (usage.calls, usage.retries, usage.failures) == (1, 2, 1)
    assert not info.value.every_call  # an overloaded server may answer the next call


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_no_retry_on_client_errors(server, status):
    srv = server(status, status)
    usage = LLMUsage()
    with pytest.raises(LLMCallError) as info:
        run(make_llm_func(openai_settings(srv), usage, backoff=FAST)("hello"))
    assert len(srv.requests) == 1
    assert info.value.status_code == status and not info.value.retryable
    assert (usage.retries, usage.failures) == (0, 1)
    # a refused key or an unknown model fails every call; a 400 or 422 is about this request
    assert info.value.every_call == (status in (401, 403, 404))


def test_permanent_quota_429_is_not_retried(server):
    srv = server(429, error_body={"error": {"message": "You exceeded your current quota",
                                            "type": "insufficient_quota"}})
    with pytest.raises(LLMCallError, match="quota") as info:
        run(make_llm_func(openai_settings(srv), backoff=FAST)("hello"))
    assert len(srv.requests) == 1
    assert info.value.every_call


def test_401_message_is_redacted_and_the_key_was_sent(server, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    srv = server(401, error_body={"error": {"message": f"Incorrect API key provided: {FAKE_KEY}.",
                                            "type": "invalid_request_error", "code": "invalid_api_key"}})
    with pytest.raises(LLMCallError) as info:
        run(make_llm_func(openai_settings(srv), backoff=FAST)("hello"))
    assert srv.requests[0]["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in str(info.value) and "[redacted]" in str(info.value)
    assert "401" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert FAKE_KEY not in caplog.text  # LightRAG's binding logs the error body; our filter cleans it


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    usage = LLMUsage()
    llm = make_llm_func(LLMSettings(model="openai:m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2),
                        usage, backoff=FAST)
    with pytest.raises(LLMCallError) as info:
        run(llm("hello"))
    assert info.value.retryable and info.value.attempts == 3 and info.value.every_call
    assert (usage.retries, usage.failures) == (2, 1)


def test_usage_is_the_sum_of_what_the_server_reported(server):
    srv = server()
    usage = LLMUsage()
    llm = make_llm_func(openai_settings(srv), usage)

    async def calls():
        srv.usage = (100, 20)
        await llm("first")
        srv.usage = (250, 40)
        await llm("second", history_messages=[{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}])
        srv.usage = (5, 1)
        await llm("keywords please", response_format={"type": "json_object"})

    run(calls())
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.estimated_calls) == (3, 355, 61, 0)
    assert usage.by_kind["keywords"].input_tokens == 5 and usage.by_kind["other"].calls == 2
    assert srv.requests[2]["body"]["response_format"] == {"type": "json_object"}
    assert asdict(usage)["by_kind"]["keywords"] == {"calls": 1, "input_tokens": 5, "output_tokens": 1,
                                                    "cached_input_tokens": 0, "cache_write_input_tokens": 0}


def test_missing_usage_falls_back_to_a_marked_estimate(server):
    srv = server("nousage")
    usage = LLMUsage()
    run(make_llm_func(openai_settings(srv), usage)("count these words please"))
    assert usage.estimated_calls == 1 and usage.input_tokens > 0 and usage.output_tokens > 0


def test_lightrag_extraction_prompts_are_counted_by_kind(server):
    from wikirag.lightrag.guard import import_lightrag

    import_lightrag()
    from lightrag.prompt import PROMPTS

    srv = server()
    usage = LLMUsage()
    llm = make_llm_func(openai_settings(srv), usage)
    prompt = PROMPTS["entity_extraction_user_prompt"].split("{")[0] + "... Alice met Bob."
    run(llm(prompt, system_prompt="sys", hashing_kv=object()))
    assert usage.by_kind["extract"].calls == 1


@pytest.mark.parametrize("concurrency", [2, 4])
def test_concurrency_cap_holds(server, concurrency):
    srv = server(delay=0.25)
    llm = make_llm_func(openai_settings(srv, concurrency=concurrency))

    async def many():
        return await asyncio.gather(*(llm(f"q{i}") for i in range(8)))

    assert len(run(many())) == 8
    assert srv.max_in_flight == concurrency


def test_one_client_serves_several_event_loops(server):
    srv = server()
    llm = make_llm_func(openai_settings(srv))
    assert run(llm("a")).startswith("answer") and run(llm("b")).startswith("answer")


def test_stream_returns_an_iterator_and_counts_the_final_usage_chunk(server):
    srv = server()
    usage = LLMUsage()
    llm = make_llm_func(openai_settings(srv), usage)

    async def consume():
        stream = await llm("tell me", stream=True, enable_cot=True)
        assert not isinstance(stream, str)
        return "".join([part async for part in stream])

    assert run(consume()) == "answer"
    assert srv.requests[0]["body"]["stream_options"] == {"include_usage": True}
    assert (usage.input_tokens, usage.output_tokens, usage.by_kind["answer"].calls) == (11, 7, 1)


def test_an_outer_token_tracker_sees_the_same_usage(server):
    srv = server()

    class Tracker:
        def __init__(self):
            self.seen = []

        def add_usage(self, counts):
            self.seen.append(counts)

    tracker = Tracker()
    run(make_llm_func(openai_settings(srv))("hi", token_tracker=tracker))
    assert tracker.seen == [{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}]


def test_our_own_bugs_are_not_disguised_as_provider_errors(server):
    srv = server()
    usage = LLMUsage()

    class Typed:  # the OpenAI binding refuses typed response formats with a TypeError
        pass

    with pytest.raises(TypeError):
        run(make_llm_func(openai_settings(srv), usage)("x", response_format=Typed()))
    assert usage.failures == 1 and not srv.requests


def test_lightrag_can_rebuild_our_error_with_a_prefix():
    # LightRAG's uncached path re-raises `type(e)(f"[LLM func] {e}")`.
    error = LLMCallError("openai:m: boom", status_code=500, retryable=True, attempts=3)
    assert str(type(error)(f"[LLM func] {error}")) == "[LLM func] openai:m: boom"


def test_lightrag_insert_over_the_openai_wire(server, tmp_path):
    from tests.storekit import HashEmbedding
    from wikirag.lightrag.engine import open_engine
    from wikirag.settings import load_config

    srv = server()
    srv.reply = ("entity<|#|>Ada Lovelace<|#|>person<|#|>Ada Lovelace wrote the first algorithm.\n"
                 "entity<|#|>Analytical Engine<|#|>artifact<|#|>Babbage's machine.\n"
                 "relation<|#|>Ada Lovelace<|#|>Analytical Engine<|#|>programming<|#|>She programmed it.\n"
                 "<|COMPLETE|>")
    vault = tmp_path / "vault"
    vault.mkdir()
    # gleaning on (wikirag's default is off): both LightRAG call kinds go over the wire
    config = load_config(vault, store=tmp_path / "store", environ={}, overrides={"index": {"gleaning": 1}})
    usage = LLMUsage()
    llm = make_llm_func(openai_settings(srv), usage)
    text = "Ada Lovelace wrote the first algorithm for the Analytical Engine."

    async def insert():
        async with open_engine(config, llm_func=llm, embedding_func=HashEmbedding().func()) as rag:
            await rag.ainsert(text, file_paths=["Ada.md"])
            return await rag.chunk_entity_relation_graph.get_node("Ada Lovelace")

    node = run(insert())
    assert node is not None and "first algorithm" in node["description"]
    assert usage.by_kind["extract"].calls == 1 and usage.by_kind["glean"].calls == 1
    assert (usage.input_tokens, usage.estimated_calls) == (22, 0)
    assert usage.requests == len(srv.requests) == 2


def test_retry_classification():
    import httpx

    assert is_retryable(TimeoutError()) and is_retryable(ConnectionRefusedError())
    assert is_retryable(httpx.ReadTimeout("slow")) and is_retryable(httpx.ConnectError("refused"))
    assert not is_retryable(httpx.UnsupportedProtocol("no scheme"))
    assert not is_retryable(ValueError("bad"))
    # what stops a run's extraction once the retries are spent: the server cannot be reached
    assert affects_every_call(ConnectionRefusedError()) and affects_every_call(httpx.ConnectError("refused"))
    assert not affects_every_call(TimeoutError()) and not affects_every_call(httpx.ReadTimeout("slow"))


# -- Ollama (native /api/chat) and Anthropic (/v1/messages) ----------------------------------------


def test_ollama_native_chat_with_reported_usage_and_our_retries(server):
    srv = server(503)
    usage = LLMUsage()
    llm = make_llm_func(LLMSettings(model="ollama:qwen2.5:7b", base_url=srv.url + "/v1", max_retries=2),
                        usage, backoff=FAST)
    assert run(llm("hello", system_prompt="sys", max_tokens=50)) == "ollama says hi"
    assert [r["path"] for r in srv.requests] == ["/api/chat", "/api/chat"]  # "/v1" dropped for the native API
    body = srv.requests[-1]["body"]
    assert body["model"] == "qwen2.5:7b" and body["options"]["num_ctx"] == 8192
    assert body["options"]["num_predict"] == 50
    assert (usage.retries, usage.input_tokens, usage.output_tokens, usage.estimated_calls) == (1, 11, 7, 0)


def test_ollama_stream_and_json_format(server):
    srv = server()
    usage = LLMUsage()
    llm = make_llm_func(LLMSettings(model="ollama:m", base_url=srv.url), usage)

    async def go():
        await llm("kw", response_format={"type": "json_object"})
        stream = await llm("tell", stream=True)
        return "".join([p async for p in stream])

    assert run(go()) == "ok"
    assert srv.requests[0]["body"]["format"] == "json"
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (2, 22, 14)


def test_anthropic_messages_with_usage_retry_and_no_retry_on_401(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
    srv = server(529)
    usage = LLMUsage()
    llm = make_llm_func(LLMSettings(model="anthropic:claude-test", base_url=srv.url, max_retries=2), usage,
                        backoff=FAST)
    history = [{"role": "system", "content": "extra rule"}, {"role": "user", "content": "u"},
               {"role": "assistant", "content": "a"}]
    assert run(llm("hello", system_prompt="sys", history_messages=history,
                   response_format={"type": "json_object"})) == "claude says hi"
    body = srv.requests[-1]["body"]
    assert body["system"] == "sys\n\nextra rule" and body["max_tokens"] == 8192
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert "response_format" not in body
    headers = srv.requests[-1]["headers"]  # x-api-key, or a Bearer header in newer SDKs
    assert "sk-ant-test-0123456789abcdef" in (headers.get("x-api-key"), headers.get("authorization", "")[7:])
    assert (usage.retries, usage.input_tokens, usage.output_tokens) == (1, 11, 7)

    srv401 = server(401, error_body={"type": "error", "error": {"type": "authentication_error",
                                                                "message": "invalid x-api-key"}})
    llm401 = make_llm_func(LLMSettings(model="anthropic:claude-test", base_url=srv401.url), backoff=FAST)
    with pytest.raises(LLMCallError) as info:
        run(llm401("hello"))
    assert len(srv401.requests) == 1 and info.value.status_code == 401
    assert "sk-ant-test-0123456789abcdef" not in str(info.value)


# -- doctor ----------------------------------------------------------------------------------------


def test_check_llm_reports_ok_and_latency(server):
    srv = server()
    check = run(acheck_llm(openai_settings(srv)))
    assert check.ok and check.reply == "answer 1" and check.latency_s is not None
    assert (check.provider, check.model, check.base_url_host) == ("openai", "test-model", srv.url)
    assert (check.input_tokens, check.output_tokens) == (11, 7)
    assert srv.requests[0]["body"]["max_tokens"] == 16


def test_check_llm_reports_errors_without_retrying_or_leaking(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    srv = server(500, error_body={"error": {"message": f"boom {FAKE_KEY}", "type": "server_error"}})
    check = run(acheck_llm(openai_settings(srv, max_retries=4)))
    assert not check.ok and len(srv.requests) == 1
    assert "500" in check.error and FAKE_KEY not in check.error
    assert not run(acheck_llm(LLMSettings())).ok


def test_lightrags_lines_about_failures_wikirag_reports_are_dropped():
    import logging
    import os

    from wikirag.lightrag.guard import import_lightrag

    lightrag = import_lightrag()
    logger, seen = logging.getLogger("lightrag"), []
    handler = logging.Handler()
    handler.emit = seen.append
    logger.addHandler(handler)
    binding = os.path.join(os.path.dirname(lightrag.__file__), "llm", "openai.py")
    elsewhere = os.path.join(os.path.dirname(lightrag.__file__), "operate.py")
    try:
        for pathname, level, message in [
            (elsewhere, logging.ERROR, "extract LLM func: Error in decorated function for task 1_2: refused"),
            (binding, logging.ERROR, "OpenAI API Connection Error: Connection error."),  # retried, then reported
            (binding, logging.WARNING, "a binding's warning"),
            (elsewhere, logging.ERROR, "an error of LightRAG's own"),
        ]:
            logger.handle(logger.makeRecord("lightrag", level, pathname, 1, message, (), None))
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in seen] == ["a binding's warning", "an error of LightRAG's own"]


def test_an_anthropic_base_url_written_with_its_v1_reaches_the_messages_api(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
    srv = server()
    llm = make_llm_func(LLMSettings(model="anthropic:claude-test", base_url=srv.url + "/v1/", max_retries=0),
                        backoff=FAST)
    assert run(llm("hello"))
    assert srv.requests[-1]["path"] == "/v1/messages"
