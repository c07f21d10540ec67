"""Entity hygiene for LLM-extracted records (LightRAG #1323, #2333): one name per thing, nothing invented.

Applied to what LightRAG's extraction parsed from the LLM's answer, before it becomes ledger fragments:
1. aliases first: a name equal (case-insensitively, NFC) to a note's title or alias becomes that note's
   entity;
2. conservative fuzzy merge (rapidfuzz ratio >= threshold) into an existing entity of the *same type*,
   types compared on one vocabulary (`fold_type`: a folder's "people" and an LLM's "Person" are one type,
   "organisation" is "organization"); the threshold is pinned by hard negatives such as "Java"/"JavaScript"
   and "Paris"/"Parish";
3. grounding: an entity whose name (or, for a note entity, one of its names) is not found in the chunk
   text or the hint is dropped; a name from LightRAG's own prompt examples ("Tokyo", "Noah Carter") is
   dropped only then, so a note really about Tokyo keeps Tokyo. Placeholders (`<entity_name>`) always go.
Every merge and drop is recorded so the index report can show it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

FUZZY_THRESHOLD = 92.0
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)
_PLACEHOLDER = re.compile(r"^<[^<>]+>$")


def fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold().strip()


@functools.lru_cache(maxsize=4096)
def loose(text: str) -> str:
    """Case- and punctuation-insensitive form for grounding checks. Cached: attribution asks it of the same
    note text once per extracted record, and concurrent extraction makes that CPU the bottleneck."""
    return " " + _PUNCT.sub(" ", fold(text)).strip() + " "


# Plurals and spellings that folder names and LLMs use for the same type (LightRAG's own types as targets).
_IRREGULAR = {"people": "person", "persons": "person", "children": "child", "men": "man", "women": "woman",
              "data": "data", "media": "media", "series": "series", "species": "species", "analysis": "analysis"}
_SYNONYMS = {
    "place": "location", "city": "location", "country": "location", "region": "location", "town": "location",
    "company": "organization", "institution": "organization", "org": "organization", "agency": "organization",
    "tool": "artifact", "software": "artifact", "device": "artifact", "book": "content", "article": "content",
    "paper": "content", "film": "content", "idea": "concept", "theory": "concept", "principle": "concept",
    "technique": "method", "algorithm": "method", "procedure": "method", "meeting": "event",
    "incident": "event", "human": "person", "character": "person",
}


def fold_type(entity_type: str) -> str:
    """One spelling per entity type: case, British -ise/-isation, plurals and common synonyms folded."""
    t = re.sub(r"[\s_-]+", "", fold(entity_type or ""))
    t = t.replace("isation", "ization").replace("ised", "ized")
    if t in _IRREGULAR:
        t = _IRREGULAR[t]
    elif t.endswith("ies") and len(t) > 4:
        t = t[:-3] + "y"
    elif t.endswith(("sses", "xes", "ches", "shes")):
        t = t[:-2]
    elif t.endswith("s") and not t.endswith(("ss", "us", "is")) and len(t) > 3:
        t = t[:-1]
    return _SYNONYMS.get(t, t)


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
        self._by_type: dict[str, dict[str, str]] = {}  # folded type -> {canonical: folded name}
        # Names from LightRAG's few-shot examples (lightrag.prompts.prompt_example_names): echoes to drop.
        self._examples = {fold(name) for name in examples}

    def add(self, canonical: str, entity_type: str, names: list[str]) -> None:
        if canonical not in self.types:
            self.types[canonical] = entity_type
            self._by_type.setdefault(fold_type(entity_type), {})[canonical] = fold(canonical)
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
        same_type = self._by_type.get(fold_type(entity_type))
        if same_type:
            match = process.extractOne(fold(name), same_type, scorer=fuzz.ratio, score_cutoff=self.threshold)
            if match is not None:
                return match[2], "fuzzy"
        return name, None

    def is_placeholder(self, name: str) -> bool:
        return bool(_PLACEHOLDER.match(name.strip()))

    def is_example(self, name: str) -> bool:
        """A name from LightRAG's few-shot examples: dropped only when the text does not ground it."""
        return fold(name) in self._examples

    def grounded(self, original: str, canonical: str, text: str, hint: str) -> bool:
        haystack = loose(text) + loose(hint)
        candidates = {original, canonical, *self.aliases.get(canonical, ())}
        return any(loose(c).strip() and loose(c) in haystack for c in candidates)
