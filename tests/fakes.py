"""Deterministic stand-ins for the LLM and the embedding model, for tests that run a real LightRAG.

`FakeLLM` has LightRAG's `llm_model_func` signature. It recognises LightRAG's prompts by the installed
templates' fixed openings (`lightrag.prompt.PROMPTS`), answers them in LightRAG's own formats, and counts
every call's input (system + history + prompt) and output tokens per kind with tiktoken.

Which names it "extracts" from a chunk is a rule, not intelligence: by default the cost model's own rule
(`wikirag.cost.sentence_names`: capitalised phrases; relations between names in one sentence), so a test
comparing estimate and run measures LightRAG's mechanics (chunking, calls, caching, merges) and not the
guess about what a real model would name. Pass `names=` to use another rule.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.tokens import get_encoding
from wikirag.plan.mentions import cap_mentions, sentence_names

MODES = ("normal", "fail", "timeout", "garbage", "examples")
KINDS = ("extract", "glean", "summary", "keywords", "answer", "unknown")


def _opening(template: str) -> str:
    """The fixed text a template starts with, up to its first placeholder, as it reads once formatted."""
    head = re.split(r"(?<!\{)\{(?!\{)", template, maxsplit=1)[0]
    return head.replace("{{", "{").replace("}}", "}")


@dataclass
class Call:
    kind: str
    input_tokens: int
    output_tokens: int
    prompt: str = ""  # kept only with keep_prompts=True


@dataclass
class KindStats:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class FakeLLM:
    """An async LLM function: `await fake(prompt, system_prompt=None, history_messages=[], **kwargs)`.

    mode: "normal"; "fail" (raise RuntimeError); "timeout" (sleep `delay` seconds, default an hour);
    "garbage" (text in no known format); "examples" (echo the output-format examples of LightRAG's own
    extraction prompt, placeholders and all). `fail_kinds` limits fail/timeout/garbage/examples to some
    call kinds (default: extraction and gleaning). `glean`: "empty" (nothing missed) or "repeat".
    """

    mode: str = "normal"
    encoding: str = "o200k_base"
    names: Callable[[str], list[list[str]]] = sentence_names
    glean: str = "empty"
    delay: float = 3600.0
    fail_kinds: tuple[str, ...] = ("extract", "glean")
    keep_prompts: bool = False
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        import_lightrag()
        from lightrag.prompt import PROMPTS

        self.tuple_delimiter = PROMPTS["DEFAULT_TUPLE_DELIMITER"]
        self.completion = PROMPTS["DEFAULT_COMPLETION_DELIMITER"]
        self._openings = {
            "extract": _opening(PROMPTS["entity_extraction_user_prompt"]),
            "glean": _opening(PROMPTS["entity_continue_extraction_user_prompt"]),
            "summary": _opening(PROMPTS["summarize_entity_descriptions"]),
            "keywords": _opening(PROMPTS["keywords_extraction"]),
        }
        self._answer_openings = (_opening(PROMPTS["rag_response"]), _opening(PROMPTS["naive_rag_response"]))
        before, after = PROMPTS["entity_extraction_user_prompt"].split("{input_text}")
        self._input_start = before[before.rindex("}") + 1 :]  # "---Input Text---\n```\n"
        self._input_end = _opening(after).rstrip()  # "\n```\n\n---Output---"
        self._examples = "\n".join(PROMPTS["entity_extraction_examples"]).format(
            tuple_delimiter=self.tuple_delimiter, completion_delimiter=self.completion)
        self._enc = get_encoding(self.encoding)
        self._last_extraction = self.completion

    # -- the LLM function ------------------------------------------------------------------------------
    async def __call__(self, prompt: str, system_prompt: str | None = None,
                       history_messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> str:
        kind = self.kind_of(prompt, system_prompt)
        sent = self._count(system_prompt) if system_prompt else 0
        sent += sum(self._count(str(m.get("content") or "")) for m in history_messages or [])
        sent += self._count(prompt)
        if self.mode != "normal" and kind in self.fail_kinds:
            self._record(kind, sent, "", prompt)
            if self.mode == "fail":
                raise RuntimeError(f"fake LLM failure ({kind})")
            if self.mode == "timeout":
                await asyncio.sleep(self.delay)
                raise TimeoutError(f"fake LLM timed out ({kind})")
            answer = self._examples if self.mode == "examples" else "Lorem ipsum ∅ <|#|> not a record at all"
            self.calls[-1].output_tokens = self._count(answer)
            return answer
        answer = self.answer(kind, prompt)
        self._record(kind, sent, answer, prompt)
        return answer

    def kind_of(self, prompt: str, system_prompt: str | None = None) -> str:
        for kind, opening in self._openings.items():
            if prompt.startswith(opening):
                return kind
        if system_prompt and system_prompt.startswith(self._answer_openings):
            return "answer"
        return "unknown"

    def answer(self, kind: str, prompt: str) -> str:
        if kind == "extract":
            return self.extraction(self.input_text(prompt))
        if kind == "glean":
            return self.completion if self.glean == "empty" else self._last_extraction
        if kind == "summary":
            return self.summary(prompt)
        if kind == "keywords":
            m = re.search(r"^User Query: (.*)$", prompt, re.M)
            query = m.group(1) if m else ""
            low = [n for names in sentence_names(query) for n in names]
            high = [w.lower() for w in re.findall(r"[A-Za-z]{6,}", query)][:3]
            return json.dumps({"high_level_keywords": high, "low_level_keywords": low})
        if kind == "answer":
            return "A fake answer from the context.\n\n### References\n\n- [1] fake"
        return "ok"

    def summary(self, prompt: str) -> str:
        """LightRAG's summary prompt answered with the name, the number of descriptions and a digest of them:
        a different fragment list gives a different summary, the same list the same one."""
        m = re.search(r"^(Entity|Relation) Name: (.*)$", prompt, re.M)
        listed = re.findall(r'^\{"Description".*$', prompt, re.M)
        name = m.group(2) if m else "it"
        digest = hashlib.md5("\n".join(listed).encode()).hexdigest()[:6]
        return f"{name} is summarised from {len(listed)} descriptions (digest {digest})."

    # -- extraction ------------------------------------------------------------------------------------
    def input_text(self, prompt: str) -> str:
        start = prompt.index(self._input_start) + len(self._input_start)
        end = prompt.rindex(self._input_end)
        return prompt[start:end]

    def extraction(self, text: str) -> str:
        d = self.tuple_delimiter
        passage = hashlib.md5(text.encode()).hexdigest()[:6]  # descriptions differ between chunks
        entities, relations = cap_mentions(self.names(text))
        lines = [f"entity{d}{e}{d}Other{d}{e} is named in passage {passage} of the input text." for e in entities]
        lines += [f"relation{d}{a}{d}{b}{d}co-occurrence{d}{a} and {b} are named together in passage {passage}."
                  for a, b in relations]
        lines.append(self.completion)
        self._last_extraction = "\n".join(lines)
        return self._last_extraction

    # -- counting --------------------------------------------------------------------------------------
    def _count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def _record(self, kind: str, sent: int, answer: str, prompt: str) -> None:
        self.calls.append(Call(kind, sent, self._count(answer), prompt if self.keep_prompts else ""))

    def stats(self) -> dict[str, KindStats]:
        out = {kind: KindStats() for kind in KINDS}
        for call in self.calls:
            s = out[call.kind]
            s.calls += 1
            s.input_tokens += call.input_tokens
            s.output_tokens += call.output_tokens
        return out

    def reset(self) -> None:
        self.calls.clear()


def hashing_embed(dim: int = 384) -> Callable[..., Any]:
    """A deterministic bag-of-words embedding: each word hashed into one of `dim` buckets, L2-normalised."""

    async def embed(texts: list[str], **_: Any) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    return embed


def fake_embedding_func(dim: int = 384) -> Any:
    """`hashing_embed` wrapped in LightRAG's EmbeddingFunc (no max_token_size: chunks are never re-split)."""
    import_lightrag()
    from lightrag.utils import EmbeddingFunc

    return EmbeddingFunc(embedding_dim=dim, func=hashing_embed(dim), model_name="fake-hashing")
