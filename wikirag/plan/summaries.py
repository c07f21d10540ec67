"""wikirag's description summaries, estimated: what index/summaries.py sends to the LLM on a fresh index.

wikirag merges every entity's and relation's fragments itself and, with an LLM configured, has LightRAG
summarise a record once per run when its distinct descriptions reach LightRAG's triggers
(`force_llm_summary_on_merge` fragments or `summary_max_tokens` tokens). So the model collects, per record,
the descriptions a fresh index ends with, then replays LightRAG's summary loop once on each list:

- from every indexed note, as graph/contribution.py derives them without an LLM: its own description (one
  fragment of its entity), the sentence around each link (one relation fragment per distinct sentence) and,
  for a link to no note, that sentence again as a mention of the unresolved entity;
- from every chunk sent to extraction (once per distinct prompt: a repeat is answered from LightRAG's cache
  with the same descriptions), one fragment per entity and relation the LLM is assumed to name
  (plan/mentions.py), of `description_tokens` each, names mapped onto the notes' entity names and aliases.

Texts are counted only for records with two or more fragments: the others never reach the LLM.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wikirag.graph.contribution import link_description, link_targets, note_description
from wikirag.graph.merge import relation_key
from wikirag.graph.naming import note_entity_names, unresolved_names
from wikirag.graph.records import UNRESOLVED_TYPE
from wikirag.lightrag.ids import normalize_name
from wikirag.lightrag.prompts import PromptSizes
from wikirag.plan.cost_settings import CostSettings
from wikirag.plan.memo import EstimateMemo
from wikirag.plan.mentions import cap_mentions
from wikirag.plan.merges import summary_call, summary_rounds
from wikirag.plan.results import ScenarioCost

_Key = str | tuple[str, str]


class SummaryModel:
    """Descriptions per record for the wikirag scenario; `cost()` prices the summaries they call for."""

    def __init__(self, vault: Any, s: CostSettings, sizes: PromptSizes, enc: Any,
                 memo: EstimateMemo | None = None) -> None:
        self.vault, self.s, self.sizes, self.enc = vault, s, sizes, enc
        self.memo = memo or EstimateMemo()  # names and link descriptions: the same in every pass of a vault
        self.names, self.unresolved, self.by_name = self.memo.shared("summary names", lambda: _vault_names(vault))
        self.counts = self.memo.token_counts(enc)
        self.texts: dict[_Key, dict[str, None]] = {}  # record -> distinct descriptions (a dict keeps order)
        self.own: dict[str, str] = {}  # entity -> path of the note whose description it carries (read lazily)
        self.extracted: dict[_Key, int] = {}  # record -> descriptions from extraction
        self.unresolved_targets: set[str] = set()
        self._notes_key: tuple[str, ...] | None = None  # the notes `notes` collected, when it did
        self._chunk_records: dict[int, tuple[list[list[str]], list[_Key]]] = self.memo.shared(
            ("chunk records", s.max_entity_records, s.max_total_records), dict)  # id(names) -> (names, records)

    def notes(self, paths: list[str]) -> None:
        """The indexed notes' own descriptions and their links' sentences, in `paths` order (once per set of
        notes: the passes of an estimate that index the same notes share them, read-only)."""
        self._notes_key = tuple(paths)
        self.texts, self.own, self.unresolved_targets = self.memo.shared(
            ("summary notes", self._notes_key), lambda: self._collect(paths))

    def _collect(self, paths: list[str]) -> tuple[dict[_Key, dict[str, None]], dict[str, str], set[str]]:
        texts: dict[_Key, dict[str, None]] = {}
        own: dict[str, str] = {}
        unresolved_targets: set[str] = set()
        for path in paths:
            own.setdefault(self.names[path], path)
            for key, text, unresolved in self.memo.shared(("summary note", path), lambda p=path: self._link_texts(p)):
                texts.setdefault(key, {})[text] = None
                if unresolved is not None:
                    texts.setdefault(unresolved, {})[text] = None
                    unresolved_targets.add(unresolved)
        return texts, own, unresolved_targets

    def _link_texts(self, path: str) -> list[tuple[_Key, str, str | None]]:
        """(relation, its link's description, the unresolved target it first mentions or None) per link."""
        note = self.vault.notes[path]
        me = self.names[path]
        out = []
        seen: set[str] = set()
        for link, target, target_type in link_targets(note, self.vault.outgoing(path), self.names, self.unresolved):
            first = target_type == UNRESOLVED_TYPE and target not in seen  # the first mention in this note
            out.append((relation_key(me, target), link_description(me, target, link), target if first else None))
            seen.add(target)
        return out

    def chunk(self, entities: Iterable[str], relations: Iterable[tuple[str, str]]) -> None:
        """One extraction prompt's assumed records (a distinct prompt: a cached repeat adds nothing)."""
        extracted = self.extracted
        for key in self._record_keys(entities, relations):
            extracted[key] = extracted.get(key, 0) + 1

    def chunk_names(self, names: list[list[str]]) -> None:
        """`chunk` of the records `names` (a prompt's sentence names, plan.mentions) make. The names lists of
        notes and packs are shared by the passes of an estimate: each list's records are worked out once."""
        s = self.s
        found = self._chunk_records.get(id(names))
        if found is None or found[0] is not names:  # held with the list, so its id stays its own
            found = self._chunk_records[id(names)] = (names, self._record_keys(
                *cap_mentions(names, s.max_entity_records, s.max_total_records)))
        extracted = self.extracted
        for key in found[1]:
            extracted[key] = extracted.get(key, 0) + 1

    def _record_keys(self, entities: Iterable[str], relations: Iterable[tuple[str, str]]) -> list[_Key]:
        """The records `chunk` counts for these entities and relations, in its order."""
        out: list[_Key] = [self._canonical(name) for name in entities]
        for a, b in relations:
            a, b = self._canonical(a), self._canonical(b)
            if a != b:
                out.append(relation_key(a, b))
        return out

    def _canonical(self, name: str) -> str:
        clean = normalize_name(name)
        return self.by_name.get(clean.casefold(), clean)

    def cost(self) -> ScenarioCost:
        """The summary calls and tokens of a fresh index with an LLM (no extraction: those are counted apart).
        A record's calls depend only on its descriptions and extracted count: the passes of an estimate that
        index the same notes (`notes`) share them, and the sum over the records as the notes alone describe
        them; a pass adds what extraction changes, record by record it names."""
        s = self.s
        key = ("summary calls", self._notes_key, id(self.counts), self.sizes, s.description_tokens,
               s.force_llm_summary_on_merge, s.summary_max_tokens, s.summary_context_size,
               s.summary_length_recommended)
        shared: dict[tuple[_Key, int], tuple[int, int, int]] = (
            self.memo.shared(key, dict) if self._notes_key is not None else {})
        if self._notes_key is not None:
            calls, tokens_in, tokens_out = self.memo.shared(("summary base", key), lambda: self._base(shared))
        else:
            calls, tokens_in, tokens_out = self._base(shared)
        for record, extracted in self.extracted.items():  # any order: every figure summed here is an int
            now = self._calls(shared, record, extracted)
            was = self._calls(shared, record, 0) if record in self.texts else (0, 0, 0)  # in the base already
            calls += now[0] - was[0]
            tokens_in += now[1] - was[1]
            tokens_out += now[2] - was[2]
        cost = ScenarioCost(summary_calls=calls, llm_calls=calls, summary_input_tokens=tokens_in,
                            input_tokens=tokens_in, output_tokens=tokens_out)
        return cost

    def _base(self, shared: dict[tuple[_Key, int], tuple[int, int, int]]) -> tuple[int, int, int]:
        """The summary calls of the records the notes describe, as if extraction named none of them."""
        calls = tokens_in = tokens_out = 0
        for record in self.texts:
            found = self._calls(shared, record, 0)
            calls += found[0]
            tokens_in += found[1]
            tokens_out += found[2]
        return calls, tokens_in, tokens_out

    def _calls(self, shared: dict[tuple[_Key, int], tuple[int, int, int]], record: _Key,
               extracted: int) -> tuple[int, int, int]:
        found = shared.get((record, extracted))
        if found is None:
            found = shared[(record, extracted)] = self._record_calls(record, extracted)
        return found

    def _record_calls(self, key: _Key, extracted: int) -> tuple[int, int, int]:
        """One record's summary (calls, input tokens, output tokens)."""
        s, d = self.s, self.s.description_tokens
        texts = list(self.texts.get(key, {}))
        if isinstance(key, str) and key in self.own:
            texts.insert(0, note_description(self.vault.notes[self.own[key]]))
        elif key in self.unresolved_targets and texts:  # graph.merge leads with what the vault lacks
            texts[0] = f"{key} has no note in the vault yet; it is mentioned in: " + texts[0]
        n = len(texts) + extracted
        if n < 2:
            return 0, 0, 0
        sizes = [float(self._tokens(t)) for t in texts] + [d] * extracted
        if n < s.force_llm_summary_on_merge and sum(sizes) < s.summary_max_tokens:
            return 0, 0, 0
        rounds, _n, _tokens = summary_rounds(sizes, s)
        name = f"({key[0]}, {key[1]})" if isinstance(key, tuple) else key
        name_tokens = self._tokens(name)
        calls = tokens_in = tokens_out = 0
        for group_n, group_tokens in rounds:
            summary_in, summary_out = summary_call(group_n, group_tokens, name_tokens, self.sizes, s)
            calls += 1
            tokens_in += summary_in
            tokens_out += summary_out
        return calls, tokens_in, tokens_out

    def _tokens(self, text: str) -> int:
        return self.counts[text]


def _vault_names(vault: Any) -> tuple[_Names, dict[str, str], dict[str, str]]:
    """Entity names by path, unresolved names, and entity names by casefolded name or alias."""
    names = _Names(note_entity_names(vault.notes))
    by_name: dict[str, str] = {}
    for path, note in vault.notes.items():
        for alias in (*note.aliases, names[path]):
            by_name.setdefault(normalize_name(str(alias)).casefold(), names[path])
    return names, unresolved_names(vault, names), by_name


class _Names(dict):
    """Entity names by note path; a link into notes the estimate was not given (a subset of the vault) gets
    its file name."""

    def __missing__(self, path: str) -> str:
        return normalize_name(path.rsplit("/", 1)[-1].removesuffix(".md")) or path


