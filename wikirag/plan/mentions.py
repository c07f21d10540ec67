"""What an LLM will name in a chunk, estimated without one: runs of capitalised words per sentence, capped
as LightRAG caps its records. The cost model uses it for output tokens and description merges.
"""

from __future__ import annotations

import itertools
import re

# Which entities and relations an LLM extracts cannot be known offline. The model: entities are proper-noun
# phrases (runs of capitalised words, leading function words dropped, a lone capitalised word that opens a
# sentence ignored); relations join entities named next to each other in one sentence. Sentences end at a newline
# or ". ". It matters for how often one entity recurs across chunks, which is what triggers LightRAG's
# description-summary calls, and for the number of vectors embedded.
_CAPS = "A-ZÀ-ÖØ-ÞĀ-Ž"


_FUNCTION_WORDS = frozenset((
    "A An And As At But By For From He Her His How I If In Is It Its My No Not Of On Or Our See She So "
    "That The Their Then There These They This Those To We What When Where Which Who Why With You Your "
    "After Also Before Both Each Every Here Many Most One Some Such Was Were Will"
).split())


_CAPITALISED_RUN = re.compile(rf"[{_CAPS}][\w'’-]*(?: [{_CAPS}][\w'’-]*)*")


_OPENING = re.compile(r"[\s>*_#\-+\[\]\"'“‘(|!:0-9.)]*")  # list markers, quotes, brackets before a 1st word


def sentence_names(text: str) -> list[list[str]]:
    """The proper-noun phrases of each sentence of `text` that names any."""
    out = []
    for line in text.split("\n"):
        if not line or line.islower():
            continue
        for sentence in line.split(". ") if ". " in line else (line,):
            names: dict[str, None] = {}  # ordered, no repeats; `in` a list made 20,000 names in a sentence take 6 s
            opening = -1
            for m in _CAPITALISED_RUN.finditer(sentence):
                start = m.start()
                if start and (sentence[start - 1].isalnum() or sentence[start - 1] in "_'’"):
                    continue  # inside a word ("iPhone")
                run = m.group()
                if " " not in run:
                    if run in _FUNCTION_WORDS:
                        continue
                    if opening < 0:
                        opening = _OPENING.match(sentence).end()
                    if start == opening:
                        continue  # a lone capitalised word opening a sentence ("During", "Turing")
                    name = run
                else:
                    words = run.split(" ")
                    k = 0
                    while k < len(words) and words[k] in _FUNCTION_WORDS:
                        k += 1
                    if k == len(words):
                        continue
                    name = " ".join(words[k:]) if k else run
                name = name.rstrip("'’-")
                if len(name) > 1:
                    names[name] = None
            if names:
                out.append(list(names))
    return out


def cap_mentions(sentences: list[list[str]], max_entities: int = 40, max_records: int = 100
                 ) -> tuple[list[str], list[tuple[str, str]]]:
    """(entities, relations) as one extraction answer would list them, capped like LightRAG's prompt caps
    them: at most `max_entities` entities and `max_records` rows in all."""
    entities: dict[str, None] = {}
    relations: dict[tuple[str, str], None] = {}
    for names in sentences:
        for name in names:
            if name not in entities and len(entities) < max_entities:
                entities[name] = None
        if len(names) < 2:
            continue
        kept = [n for n in names if n in entities]
        for a, b in itertools.pairwise(kept):  # neighbours in the sentence, as a model relates them
            relations[(a, b) if a < b else (b, a)] = None
    room = max(0, max_records - len(entities))
    return list(entities), list(relations)[:room]


def chunk_mentions(text: str, max_entities: int = 40, max_records: int = 100
                   ) -> tuple[list[str], list[tuple[str, str]]]:
    """The entities and relations the model expects an LLM to extract from one chunk."""
    return cap_mentions(sentence_names(text), max_entities, max_records)

