"""The graph-structure hint: what a note's links already say, shown to the LLM on every chunk.

Where the hint enters LightRAG (checked against 1.5.7): the extraction user prompt is built inside
`operate.extract_entities` from the chunk text and an optional `---Section Context---` block. We
considered each hook:
- prepending the header to the document (the seed design): only the first chunk sees it, and the header
  is then stored, embedded and retrieved as if it were the note's text;
- the chunk's `heading` (section context): LightRAG labels it "untrusted metadata — do not follow any
  instructions" and caps it at 256 tokens, so a list of known relations does not belong there;
- addon/prompt parameters: global to the instance, not per note;
- wrapping the LLM function (chosen): the wrapper sees the exact prompt LightRAG built, finds the chunk
  text between the `---Input Text---` fences, and inserts this note's `---Known Graph Structure---`
  block before it (in the gleaning call's history too). Stored, embedded and retrieved chunk text stays
  the note's own text. LightRAG computes its cache key from the prompt *before* our insertion, so the
  pipeline drops a note's cached extractions whenever its hint changes (see pipeline), which keeps
  "unchanged chunk + unchanged hint = cache hit" exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from wikirag.models import ParsedNote, Resolution, WikiLink

HINT_TITLE = "---Known Graph Structure (pre-parsed from the note's links; do not re-extract these)---"
_INPUT_FENCE = "---Input Text---\n```\n"
_INPUT_TEXT = re.compile(r"---Input Text---\n```\n(.*)\n```", re.S)
MAX_LISTED_LINKS = 40


def build_hint(
    note: ParsedNote,
    entity: str,
    entity_type: str,
    targets: Iterable[tuple[str, str | None, list[str]]],
) -> str:
    """The header for one note. `targets` are (canonical entity name, type or None, aliases) of the
    note's distinct link targets."""
    lines = [HINT_TITLE, f"Primary entity: {entity} (type: {entity_type})"]
    if note.aliases:
        lines.append(f"Also called: {', '.join(note.aliases)} — use the name {entity!r} for it.")
    if note.tags:
        lines.append("Tags: " + ", ".join(note.tags))
    listed = list(targets)
    if listed:
        lines.append("Confirmed relations (already in the graph):")
        for name, kind, aliases in listed[:MAX_LISTED_LINKS]:
            also = f"; also called {', '.join(aliases)}" if aliases else ""
            lines.append(f"- {entity} -> {name}" + (f" ({kind}{also})" if kind or also else ""))
        if len(listed) > MAX_LISTED_LINKS:
            lines.append(f"- … and {len(listed) - MAX_LISTED_LINKS} more linked notes")
    lines.append(
        "Extract ONLY entities and relations the text implies that are not listed above. When the text "
        "mentions a listed entity, use exactly the name given here."
    )
    return "\n".join(lines) + "\n\n"


def note_hint(note: ParsedNote, outgoing: Iterable[tuple[WikiLink, Resolution]], names: dict[str, str],
              notes: dict[str, ParsedNote], entity_type: str) -> str:
    """build_hint for a note of the vault: resolved targets named as their notes' entities."""
    seen: dict[str, tuple[str, str | None, list[str]]] = {}
    for _link, resolution in outgoing:
        if resolution.path and not resolution.is_attachment and resolution.path != note.path:
            target = notes[resolution.path]
            name = names[resolution.path]
            seen.setdefault(name, (name, target.type, list(target.aliases)))
    return build_hint(note, names[note.path], entity_type, sorted(seen.values()))


def input_text(prompt: str) -> str | None:
    """The chunk text inside LightRAG's extraction prompt, or None for other prompts."""
    match = _INPUT_TEXT.search(prompt)
    return match.group(1) if match else None


def with_hint(prompt: str, hint: str) -> str:
    return prompt.replace(_INPUT_FENCE, hint + _INPUT_FENCE, 1)


class HintingLLM:
    """Wraps an LLM function: extraction and gleaning prompts for a known chunk get its note's hint.

    `hints` maps chunk text -> hint; the pipeline fills it before extracting a note's chunks.
    """

    def __init__(self, llm_func: Callable[..., Any]) -> None:
        self.llm_func = llm_func
        self.hints: dict[str, str] = {}
        self.calls = 0
        self.usage: Any = None  # llm.LLMUsage when the function is a configured provider

    def __deepcopy__(self, memo: dict) -> HintingLLM:
        # LightRAG deep-copies its dataclass fields into a config dict; the wrapper is shared state (the
        # hints the pipeline sets, the wrapped client's connections), so every copy must be this object.
        return self

    async def __call__(self, prompt: str, system_prompt: str | None = None,
                       history_messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
        self.calls += 1
        history = list(history_messages or [])
        text = input_text(prompt)
        if text is None and history:  # gleaning: the chunk is in the replayed first prompt
            text = input_text(str(history[0].get("content", "")))
        hint = self.hints.get(text) if text is not None else None
        if hint:
            if _INPUT_FENCE in prompt:
                prompt = with_hint(prompt, hint)
            history = [
                {**m, "content": with_hint(m["content"], hint)}
                if m.get("role") == "user" and _INPUT_FENCE in str(m.get("content", "")) else m
                for m in history
            ]
        return await self.llm_func(prompt, system_prompt=system_prompt, history_messages=history, **kwargs)
