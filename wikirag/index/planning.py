"""What a run will do, from the vault and the ledger alone (no LightRAG): each note's entity name, route and
*signature* (a hash of its bytes, its name, what each of its links resolves to and, for extraction, the
model and hint), compared with the ledger's to sort notes into new, changed, unchanged and deleted. This is
how a new note named X turns other notes' unresolved [[X]] into edges without touching their files.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from wikirag.graph.contribution import note_type
from wikirag.graph.hygiene import EntityNames
from wikirag.graph.naming import attachment_name, note_entity_names, unresolved_name, unresolved_names
from wikirag.index.derived import Derived
from wikirag.index.ledger import Ledger
from wikirag.lightrag.prompts import prompt_example_names
from wikirag.lightrag.tokens import get_encoding
from wikirag.markdown.payloads import counted_body
from wikirag.models import ParsedNote
from wikirag.plan.hints import note_hint
from wikirag.plan.routing import RouteDecision, route_vault
from wikirag.settings import WikiragConfig
from wikirag.vault.model import Vault
from wikirag.vault.read import lies_in

DERIVATION_VERSION = 8  # bump when note_contribution's output changes for the same input
# 5: a note's description passes over paragraphs of HTML tags alone and leaves tags out
#    and a pasted image's data URI (markdown.payloads) is cut to a stand-in in chunks: such notes are chunked again
# 6: an Excalidraw drawing's chunk holds its stand-in alone, not an empty line for each line of the drawing
# 7: a base64 run broken into lines (a PEM block, MIME's 76-character lines) is cut to a stand-in in chunks
# 8: a note with no body that declares a title, aliases or a description has them as its chunk (name_card)


@dataclass
class Plan:
    """What a run will do, computed from the vault and the ledger alone (no LightRAG)."""

    vault: Vault
    names: dict[str, str]
    unresolved: dict[str, str]
    signatures: dict[str, str]
    decisions: dict[str, RouteDecision] = field(default_factory=dict)
    hints: dict[str, str] = field(default_factory=dict)  # extract-routed notes only
    llm_model: str = ""  # "" when no LLM is configured: extract-routed notes wait as pending
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    deferred: set[str] = field(default_factory=set)  # extract-routed notes left pending by --budget
    body_tokens: dict[str, int] = field(default_factory=dict)
    figures: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # routing's, per note (parsecache)
    names_digest: str = ""  # every note's names, types and aliases: what name hygiene depends on

    def extracting(self, path: str) -> bool:
        return bool(self.llm_model) and self.decisions[path].route == "extract" and path not in self.deferred

    @property
    def to_process(self) -> list[str]:
        return sorted(self.new + self.changed)


def note_signature(vault: Vault, path: str, names: dict[str, str], unresolved: dict[str, str],
               config: WikiragConfig, extraction: list[str]) -> str:
    """A hash of everything the note's records derive from; `extraction` is [] for injected notes."""
    targets = []
    for link, resolution in vault.outgoing(path):
        if resolution.path and resolution.is_attachment:
            targets.append("a:" + attachment_name(resolution.path))
        elif resolution.path:
            targets.append("n:" + names[resolution.path])
        else:
            targets.append("u:" + unresolved.get(unresolved_name(link).casefold(), ""))
    payload = [
        DERIVATION_VERSION,
        vault.digests[path],
        names[path],
        config.index.chunk_token_size,
        config.index.chunk_overlap_token_size,
        config.index.encoding,
        config.index.default_note_type,
        targets,
        extraction,
    ]
    return stable_digest(payload)


def stable_digest(payload: Any) -> str:
    return hashlib.sha1(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def entity_names_table(vault: Vault, names: dict[str, str], default_type: str) -> EntityNames:
    """Every note entity with its type and aliases: what LLM-extracted names are matched against."""
    table = EntityNames(examples=prompt_example_names())
    for path in sorted(vault.notes):
        note = vault.notes[path]
        table.add(names[path], note_type(note, default_type), [note.title, *note.aliases])
    return table


def plan_index(config: WikiragConfig, ledger: Ledger, vault: Vault | None = None,
               cache: dict[str, tuple[str, ParsedNote, int]] | None = None, scan: Any = None,
               previous: Plan | None = None, derived: Derived | None = None) -> Plan:
    """What a run will do. `cache` (parsecache) spares re-reading, re-parsing and re-counting unchanged
    notes; `scan` is the run's scan_vault result, so the vault is walked once. `previous` is the last plan
    of the same in-memory vault (`watch`): notes the vault has not touched since keep their token counts
    and routing decisions. `derived` (index.derived, with no `vault` given) does the same from the rows an
    earlier run saved: a note whose resolutions it restores is not touched and keeps its decision (and
    signature)."""
    cache = cache or {}
    vault = vault or Vault.load(config.vault, exclude=config.exclude,
                                parsed={p: (d, n) for p, (d, n, _) in cache.items()},
                                trusted=getattr(cache, "stats", None), scan=scan, restore=derived, store=config.store,
                                templates=config.index.templates)
    touched = vault.take_touched()
    if previous is not None and previous.vault is not vault:
        previous = None
    if previous is not None:
        cache = {p: (vault.digests[p], None, n) for p, n in previous.body_tokens.items()
                 if p not in touched and p in vault.digests}
    encoder = get_encoding(config.index.encoding)
    body_tokens = {  # counted as routing counts them
        p: cached[2] if (cached := cache.get(p)) and cached[0] == vault.digests[p]
        else len(encoder.encode_ordinary(counted_body(note.body)))
        for p, note in vault.notes.items()
    }
    names = note_entity_names(vault.notes)
    unresolved = unresolved_names(vault, names)
    if previous is None and derived is not None and derived.restored:
        previous = derived.previous(vault, names, unresolved, config.llm.model)
    figures: dict[str, tuple[int, int, int]] = {}
    if previous is not None:  # the figures of the notes routed again are recorded (parsecache)
        again = sorted(p for p in vault.notes if p in touched or p not in previous.decisions)
        decisions = {p: d for p, d in previous.decisions.items() if p in vault.notes and p not in touched}
        decisions.update(route_vault(_Part(vault, again), config.route, config.route_overrides,
                                     encoding=config.index.encoding, body_tokens=body_tokens, figures=figures))
        decisions = dict(sorted(decisions.items()))
    else:  # the character figures of notes whose text the cache knows are not measured again
        figures = cache.valid_figures(vault.digests) if hasattr(cache, "valid_figures") else {}
        decisions = route_vault(vault, config.route, config.route_overrides, encoding=config.index.encoding,
                                body_tokens=body_tokens, figures=figures)
    plan = Plan(vault, names, unresolved, {}, decisions, llm_model=config.llm.model, body_tokens=body_tokens,
                figures=figures)
    default_type = config.index.default_note_type
    if plan.llm_model:  # hygiene depends on every note's names and types, kept apart from the signatures
        plan.names_digest = stable_digest(sorted(
            (names[p], note_type(n, default_type), sorted(n.aliases)) for p, n in vault.notes.items()))
    # Without an LLM a signature reads only the note, its links and the names: when no name changed, an
    # untouched note keeps its signature (with one, hints read linked notes' text: always recompute).
    reuse = (previous is not None and not plan.llm_model
             and previous.names == names and previous.unresolved == unresolved)
    for path in sorted(vault.notes):
        decision = decisions[path]
        if decision.route == "skip":
            plan.skipped.append(path)
            continue
        extraction: list[str] = []
        if decision.route == "extract":
            if plan.llm_model:  # the hint matters (and costs time to build) only when an LLM will read it
                note = vault.notes[path]
                plan.hints[path] = note_hint(note, vault.outgoing(path), names, vault.notes,
                                             note_type(note, default_type))
                # The vault's names are not in it: a new note or an edited alias re-applies name hygiene to the
                # kept raw output (apply.run_plan), it does not re-extract every note.
                extraction = [plan.llm_model, config.index.gleaning, stable_digest(plan.hints[path]),
                              decision.sections, config.index.pack_max_tokens]
            else:
                extraction = ["pending"]
        if reuse and path not in touched and path in previous.signatures:
            plan.signatures[path] = previous.signatures[path]  # same bytes, links, names: same signature
        else:
            plan.signatures[path] = note_signature(vault, path, names, unresolved, config, extraction)
    for path, signature in sorted(plan.signatures.items()):
        entry = ledger.notes.summary(path)  # signature and status only: no row is decoded here
        if entry is None:
            plan.new.append(path)
        elif entry.signature != signature or entry.status == "extracting" or (
            entry.status == "pending_extraction" and plan.extracting(path)
        ):
            plan.changed.append(path)
        else:
            plan.unchanged.append(path)
    # A note in a folder the scan could not list is not gone (its parse-cache row, if any, kept it above)
    plan.deleted = sorted(p for p in set(ledger.notes) - set(plan.signatures) if not lies_in(p, vault.unreadable))
    return plan


class _Part:
    """Some notes of a vault, for routing only them (routing reads `.notes` and `.outgoing`)."""

    def __init__(self, vault: Vault, paths: list[str]) -> None:
        self.root = vault.root
        self.notes = {p: vault.notes[p] for p in paths}
        self.outgoing = vault.outgoing
