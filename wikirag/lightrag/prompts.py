"""LightRAG's extraction prompts as the cost model needs them: the installed templates rendered exactly as
`extract_entities` renders them, their token sizes (kept on disk per LightRAG version), LightRAG's own
defaults for the extraction knobs, and the `---Section Context---` breadcrumb LightRAG builds per chunk.
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import json
import math
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from wikirag.errors import ConfigError
from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.tokens import get_encoding


def lightrag_defaults() -> dict[str, Any]:
    """LightRAG's own defaults for the knobs the cost model reads (not its env overrides)."""
    # `lightrag.constants` alone: plain values, no .env loading (that is lightrag.base, which
    # import_lightrag guards) and none of the ~2.5 s of imports behind it, which cost-estimate never needs.
    from lightrag import constants as c

    return {
        "gleaning": c.DEFAULT_MAX_GLEANING,
        "force_llm_summary_on_merge": c.DEFAULT_FORCE_LLM_SUMMARY_ON_MERGE,
        "summary_max_tokens": c.DEFAULT_SUMMARY_MAX_TOKENS,
        "summary_context_size": c.DEFAULT_SUMMARY_CONTEXT_SIZE,
        "summary_length_recommended": c.DEFAULT_SUMMARY_LENGTH_RECOMMENDED,
        "max_extract_input_tokens": c.DEFAULT_MAX_EXTRACT_INPUT_TOKENS,
        "max_total_records": c.DEFAULT_MAX_EXTRACTION_RECORDS,
        "max_entity_records": c.DEFAULT_MAX_EXTRACTION_ENTITIES,
        "max_source_ids_per_entity": c.DEFAULT_MAX_SOURCE_IDS_PER_ENTITY,
        "max_source_ids_per_relation": c.DEFAULT_MAX_SOURCE_IDS_PER_RELATION,
        "language": c.DEFAULT_SUMMARY_LANGUAGE,
    }


@dataclass(frozen=True)
class PromptSizes:
    """Token counts of LightRAG's installed prompt templates, rendered as `extract_entities` renders them."""

    lightrag_version: str
    encoding: str
    system: int  # extraction system prompt, sent with every extraction and gleaning call
    user_fixed: int  # extraction user prompt around an empty chunk (the chunk's tokens are added)
    section_fixed: int  # the `---Section Context---` block around an empty breadcrumb
    continue_prompt: int  # gleaning's "continue" user prompt
    summary_fixed: int  # description-summary prompt around an empty name and description list
    summary_fragment: int  # JSON wrapping added to each description in the summary prompt
    max_section_tokens: int  # LightRAG's cap on the breadcrumb


def render_prompts(language: str, max_total_records: int, max_entity_records: int,
                   summary_length: int) -> dict[str, str]:
    """LightRAG's prompts for an empty chunk, formatted exactly as `extract_entities` (text mode, the
    default) and `_summarize_descriptions` format them: system, user (no section block), section block,
    continue (gleaning), summary."""
    import_lightrag()
    from lightrag.prompt import PROMPTS, resolve_entity_extraction_prompt_profile

    profile = resolve_entity_extraction_prompt_profile({}, False)
    example_context = dict(
        tuple_delimiter=PROMPTS["DEFAULT_TUPLE_DELIMITER"],
        completion_delimiter=PROMPTS["DEFAULT_COMPLETION_DELIMITER"],
        entity_types_guidance=profile["entity_types_guidance"],
        language=language,
    )
    examples = "\n".join(profile["entity_extraction_examples"]).format(**example_context)
    context = dict(example_context, examples=examples, max_total_records=max_total_records,
                   max_entity_records=max_entity_records)
    return {
        "system": PROMPTS["entity_extraction_system_prompt"].format(**context),
        "user": PROMPTS["entity_extraction_user_prompt"].format(**context, input_text="",
                                                                  heading_context_block=""),
        "section": PROMPTS["entity_extraction_section_context"].format(heading_path=""),
        "continue": PROMPTS["entity_continue_extraction_user_prompt"].format(**context, input_text=""),
        "summary": PROMPTS["summarize_entity_descriptions"].format(
            description_type="Entity", description_name="", description_list="",
            summary_length=summary_length, language=language),
    }


def prompt_sizes(encoding: str, language: str, records: int, entities: int, summary_length: int, *,
                 use_disk_cache: bool = True) -> PromptSizes:
    """The rendered prompt sizes for these settings, measured once per LightRAG version and settings.

    Rendering needs `lightrag.prompt`, whose import costs ~0.6 s; the sizes are kept in
    `~/.cache/wikirag/prompt-sizes.json` keyed by a hash of LightRAG's prompt.py and constants.py and the
    settings, so a LightRAG upgrade (or a prompt edit) measures again.
    """
    key = (encoding, language, records, entities, summary_length)
    return _cached_prompt_sizes(*key) if use_disk_cache else _measure_prompt_sizes(*key)


@lru_cache(maxsize=16)
def _cached_prompt_sizes(*key: Any) -> PromptSizes:
    fingerprint = _lightrag_fingerprint()
    cache_file = _cache_dir() / "prompt-sizes.json"
    entry = f"{fingerprint}:{json.dumps(key, ensure_ascii=False)}"
    try:
        stored = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    if isinstance(stored, dict) and isinstance(stored.get(entry), dict):
        try:
            return PromptSizes(**stored[entry])
        except TypeError:
            pass  # written by another wikirag version: measure again
    sizes = _measure_prompt_sizes(*key)
    stored = {k: v for k, v in stored.items() if k.startswith(fingerprint)} if isinstance(stored, dict) else {}
    stored[entry] = asdict(sizes)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_file.parent, prefix=".prompt-sizes-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(stored, out)
        os.replace(tmp, cache_file)
    except OSError:
        pass  # a read-only home only costs the re-measuring
    return sizes


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "wikirag"


def _lightrag_fingerprint() -> str:
    """sha1 of LightRAG's version and prompt/constant sources, found without importing LightRAG."""
    spec = importlib.util.find_spec("lightrag")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("lightrag-hku is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    digest = hashlib.sha1()
    for name in ("_version.py", "prompt.py", "constants.py"):
        try:
            digest.update((folder / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=16)
def _measure_prompt_sizes(encoding: str, language: str, records: int, entities: int,
                          summary_length: int) -> PromptSizes:
    rendered = render_prompts(language, records, entities, summary_length)
    lightrag = import_lightrag()
    from lightrag.constants import DEFAULT_MAX_SECTION_CONTEXT_TOKENS

    enc = get_encoding(encoding)

    def count(text: str) -> int:
        return len(enc.encode_ordinary(text))

    # LightRAG strips every prompt before sending it (sanitize_text_for_encoding); so do we.
    samples = ["Alan Turing designed the British Bombe at Bletchley Park in 1939.",
               "A mathematician who led Hut 8 against naval Enigma.", "Worked with Gordon Welchman."]
    jsonl = "\n".join(json.dumps({"Description": d}, ensure_ascii=False) for d in samples)
    return PromptSizes(
        lightrag_version=getattr(lightrag, "__version__", "unknown"),
        encoding=encoding,
        system=count(rendered["system"].strip()),
        user_fixed=count(rendered["user"].strip()),
        section_fixed=count(rendered["section"]),
        continue_prompt=count(rendered["continue"].strip()),
        summary_fixed=count(rendered["summary"].strip()),
        summary_fragment=math.ceil((count(jsonl) - sum(count(d) for d in samples)) / len(samples)),
        max_section_tokens=DEFAULT_MAX_SECTION_CONTEXT_TOKENS,
    )


def lightrag_content(text: str) -> str:
    """What LightRAG keeps of a document (sanitize_text_for_encoding: strip, HTML unescape; the control
    characters it also drops are too rare to matter for a count)."""
    text = text.strip()
    return html.unescape(text).strip() if "&" in text else text


@lru_cache(maxsize=1)
def _breadcrumb_format() -> tuple[int, str]:
    # `lightrag.chunk_schema` alone (~5 ms: re, unicodedata and lightrag.constants, no .env loading), not
    # import_lightrag's ~0.6 s of lightrag.base that cost-estimate never needs
    from lightrag.chunk_schema import DEFAULT_HEADING_LEVEL_MAX_CHARS, HEADING_BREADCRUMB_SEP

    return DEFAULT_HEADING_LEVEL_MAX_CHARS, HEADING_BREADCRUMB_SEP


def breadcrumb(headings: list[str], max_tokens: int, tokenizer: Any) -> str:
    """The `---Section Context---` path LightRAG builds from a wikirag chunk's headings
    (`format_heading_context`, then `_truncate_section_context`), without importing LightRAG's pipeline
    for the common case of plain, short headings."""
    if not headings:
        return ""
    cap, separator = _breadcrumb_format()
    if all(h.isascii() and h.isprintable() for h in headings):
        levels = [" ".join(h.split()) for h in headings]
        levels = [h if len(h) <= cap else h[: cap - 1].rstrip() + "…" for h in levels if h]
        path = separator.join(levels)
    else:
        from lightrag.chunk_schema import format_heading_context

        from wikirag.markdown.chunking import heading_record

        path = format_heading_context({"heading": heading_record("", headings)})
    if len(path) <= max_tokens:  # a token is at least one character: certainly within the cap
        return path
    import_lightrag()  # lightrag.operate loads lightrag.base: guard its .env first
    from lightrag.operate import _truncate_section_context

    return _truncate_section_context(path, tokenizer, max_tokens)


@cache
def prompt_example_names() -> frozenset[str]:
    """Entity names appearing in LightRAG's installed extraction examples (as written)."""
    import_lightrag()
    from lightrag.prompt import PROMPTS

    names: set[str] = set()
    for example in PROMPTS.get("entity_extraction_examples", []) + PROMPTS.get("entity_extraction_json_examples", []):
        for line in example.splitlines():
            parts = line.split("{tuple_delimiter}")
            if len(parts) >= 2 and parts[0].strip() == "entity":
                names.add(parts[1].strip())
            match = re.search(r'"name":\s*"([^"]+)"', line)
            if match:
                names.add(match.group(1))
    return frozenset(names)
