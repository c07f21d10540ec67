"""Entity hygiene for LLM-extracted records (LightRAG #1323, #2333): one name per thing, nothing invented.

Applied to what LightRAG's extraction parsed from the LLM's answer, before it becomes ledger fragments:
1. aliases first: a name equal (case-insensitively, NFC) to a note's title or alias becomes that note's
   entity;
2. conservative fuzzy merge (rapidfuzz ratio >= threshold) into an existing entity of the *same type*;
   the threshold is pinned by hard negatives such as "Java"/"JavaScript" and "Paris"/"Parish";
3. grounding: an entity whose name (or, for a note entity, one of its names) is not found in the chunk
   text or the hint is dropped, as are LightRAG's own prompt-example placeholders.
Every merge and drop is recorded so the index report can show it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

FUZZY_THRESHOLD = 92.0
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)
_PLACEHOLDER = re.compile(r"^<[^<>]+>$")


def fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold().strip()


def loose(text: str) -> str:
    """Case- and punctuation-insensitive form for grounding checks."""
    return " " + _PUNCT.sub(" ", fold(text)).strip() + " "


@dataclass
class HygieneLog:
    merges: list[str] = field(default_factory=list)  # "path: 'x' -> 'y' (alias|fuzzy)"
    dropped: list[str] = field(default_factory=list)  # "path: 'x' (not in the text|prompt example)"


class EntityNames:
    """The vault's known entities: canonical names with their types and every name they go by."""

    def __init__(self, threshold: float = FUZZY_THRESHOLD, examples: set[str] | frozenset[str] = frozenset()) -> None:
        self.threshold = threshold
        self.by_name: dict[str, str] = {}  # folded title/alias/name -> canonical
        self.types: dict[str, str] = {}  # canonical -> type
        self.aliases: dict[str, set[str]] = {}  # canonical -> every name it goes by
        # Names from LightRAG's few-shot examples (lightrag.prompts.prompt_example_names): echoes to drop.
        self._examples = {fold(name) for name in examples}

    def add(self, canonical: str, entity_type: str, names: list[str]) -> None:
        self.types.setdefault(canonical, entity_type)
        known = self.aliases.setdefault(canonical, set())
        for name in [canonical, *names]:
            if name:
                self.by_name.setdefault(fold(name), canonical)
                known.add(name)

    def canonical(self, name: str, entity_type: str) -> tuple[str, str | None]:
        """(name to use, how it was merged: None, "alias" or "fuzzy")."""
        exact = self.by_name.get(fold(name))
        if exact is not None:
            return exact, (None if exact == name else "alias")
        same_type = [c for c, t in self.types.items() if fold(t) == fold(entity_type)]
        if same_type:
            match = process.extractOne(fold(name), {c: fold(c) for c in same_type}, scorer=fuzz.ratio,
                                       score_cutoff=self.threshold)
            if match is not None:
                return match[2], "fuzzy"
        return name, None

    def is_example(self, name: str) -> bool:
        return bool(_PLACEHOLDER.match(name.strip())) or fold(name) in self._examples

    def grounded(self, original: str, canonical: str, text: str, hint: str) -> bool:
        haystack = loose(text) + loose(hint)
        candidates = {original, canonical, *self.aliases.get(canonical, ())}
        return any(loose(c).strip() and loose(c) in haystack for c in candidates)
