"""Which notes need an LLM: the per-note routing policy.

Every note goes one of three ways:

- **inject**: its graph comes straight from its [[links]] and frontmatter (no LLM). Chosen for notes whose
  links already say what the note says, and for empty or near-empty notes (nothing for an LLM to read).
- **extract**: LightRAG's LLM extraction runs on the note, with a hint header naming the note and its
  link targets. Chosen when the note has few links or much prose that no link sentence covers.
- **skip**: left out of the graph. Only by override (frontmatter `wikirag: skip` or `--route`).

The default policy, its thresholds (`[route]` in `wikirag.toml`) and the feature definitions are written
down in docs/cost-model.md. Every decision carries a one-line reason naming the numbers that decided it.
"""

from __future__ import annotations

import fnmatch
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from wikirag.errors import ConfigError
from wikirag.lightrag.tokens import DEFAULT_ENCODING, get_encoding
from wikirag.markdown.payloads import counted_body, mask_payloads
from wikirag.markdown.structure import prose_chars, sections
from wikirag.models import ParsedNote, Resolution, WikiLink
from wikirag.settings import RouteSettings

Route = Literal["inject", "extract", "skip"]
ROUTES: tuple[str, ...] = ("inject", "extract", "skip")
POLICIES: tuple[str, ...] = ("links", "prose")
Outgoing = list[tuple[WikiLink, Resolution]]

_FRONTMATTER_FIELDS = ("type", "description", "tags", "aliases")  # what makes a note self-describing


@dataclass
class NoteFeatures:
    links: int = 0  # body and frontmatter links, embeds included
    resolved_links: int = 0  # links that land on another note or attachment
    distinct_targets: int = 0  # distinct files those links land on
    unresolved_links: int = 0
    words: int = 0
    link_density: float = 0.0  # links per 100 words
    body_tokens: int = 0  # the note body (frontmatter excluded, stripped, payloads cut: counted_body), tiktoken
    prose_tokens: int = 0  # body tokens outside fenced code and heading lines
    covered_tokens: int = 0  # prose tokens inside sentences (or list lines) that hold a link
    uncovered_prose_tokens: int = 0  # prose tokens that no link sentence covers
    frontmatter_completeness: float = 0.0  # share of type, description, tags, aliases present


@dataclass
class RouteDecision:
    route: Route
    reason: str  # one line, naming the numbers that decided it
    features: NoteFeatures = field(default_factory=NoteFeatures)
    source: Literal["policy", "frontmatter", "command line"] = "policy"
    # extract route under the "prose" policy: the 1-based body line spans (heading sections) the LLM reads;
    # empty means the whole note
    sections: list[tuple[int, int]] = field(default_factory=list)


def _prose_chars(body: str) -> int:
    """Characters of the body that are prose (`markdown.structure.prose_chars`: code, comments, math, heading
    lines, link brackets and list or quote markers taken out, whitespace ignored)."""
    return prose_chars(body)


def _nonspace(text: str) -> int:
    return len(text) - text.count(" ")


def note_features(
    note: ParsedNote,
    outgoing: Outgoing,
    body_tokens: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> NoteFeatures:
    """The routing features of one note. Give `body_tokens` when already counted (the cost model does);
    otherwise `count_tokens` (default: o200k_base) counts the body.

    Token figures below the body level are shares of `body_tokens` by characters: counting each link
    sentence separately would triple the tokenizer's work for a figure that only feeds a threshold.
    """
    if body_tokens is None:
        counter = count_tokens or _default_counter()
        body_tokens = counter(counted_body(note.body))
    return _with_tokens(_char_features(note, outgoing), body_tokens)


@dataclass
class _Chars:
    features: NoteFeatures  # everything but the token figures
    body_chars: int
    prose_chars: int
    covered_chars: int


CharFigures = tuple[int, int, int]  # body, prose and link-sentence characters: the note's text alone decides them


def char_figures(note: ParsedNote, links: Iterable[WikiLink] | None = None) -> CharFigures:
    """The character counts routing reads that depend on the note's text only (not on where its links land),
    so a caller may keep them per note digest (index.parsecache) and skip the structure pass next time."""
    body = mask_payloads(note.body, keep_lines=True)  # a pasted image's base64 is no prose (markdown.payloads)
    body_chars = _nonspace(body) - body.count("\n") - body.count("\t")
    prose = _prose_chars(body) if body else 0
    links = note.links if links is None else links
    contexts = {link.context for link in links if link.frontmatter_key is None and link.context}
    return body_chars, prose, min(prose, sum(_nonspace(c) for c in contexts))


def _char_features(note: ParsedNote, outgoing: Outgoing, figures: CharFigures | None = None) -> _Chars:
    resolved = [r for _, r in outgoing if r.path is not None and r.status in ("resolved", "ambiguous")]
    body_chars, prose_chars, covered_chars = figures or char_figures(note, (link for link, _ in outgoing))
    present = sum(1 for key in _FRONTMATTER_FIELDS if _has(note, key))
    features = NoteFeatures(
        links=len(outgoing),
        resolved_links=len(resolved),
        distinct_targets=len({r.path for r in resolved if r.path != note.path}),
        unresolved_links=sum(1 for _, r in outgoing if r.status == "unresolved"),
        words=note.words,
        link_density=round(100 * len(outgoing) / note.words, 2) if note.words else 0.0,
        frontmatter_completeness=round(present / len(_FRONTMATTER_FIELDS), 2),
    )
    return _Chars(features, body_chars, prose_chars, covered_chars)


def _with_tokens(chars: _Chars, body_tokens: int) -> NoteFeatures:
    f = chars.features
    f.body_tokens = body_tokens
    f.prose_tokens = round(body_tokens * chars.prose_chars / chars.body_chars) if chars.body_chars > 0 else 0
    f.covered_tokens = round(f.prose_tokens * chars.covered_chars / chars.prose_chars) if chars.prose_chars else 0
    f.uncovered_prose_tokens = f.prose_tokens - f.covered_tokens
    return f


def _has(note: ParsedNote, key: str) -> bool:
    value = getattr(note, key, None)
    return bool(value.strip()) if isinstance(value, str) else bool(value)


def _default_counter() -> Callable[[str], int]:
    enc = get_encoding(DEFAULT_ENCODING)
    return lambda text: len(enc.encode(text, disallowed_special=()))


def route_note(
    note: ParsedNote,
    outgoing: Outgoing,
    settings: RouteSettings | None = None,
    override: str | None = None,
    *,
    features: NoteFeatures | None = None,
) -> RouteDecision:
    """Route one note. `override` (from the command line) beats the note's frontmatter `wikirag:` key,
    which beats the policy. An invalid frontmatter value is ignored and named in the reason."""
    settings = settings or RouteSettings()
    f = features or note_features(note, outgoing)
    if override is not None:
        if override not in ROUTES:
            raise ConfigError(f"--route {override!r}: choose one of {', '.join(ROUTES)}")
        return RouteDecision(override, f"--route {override} on the command line", f, "command line")  # type: ignore[arg-type]
    ignored = ""
    wanted = (note.route_override or "").strip().lower()
    if wanted in ROUTES:
        return RouteDecision(wanted, f"frontmatter says wikirag: {wanted}", f, "frontmatter")  # type: ignore[arg-type]
    if wanted:
        ignored = f" (frontmatter wikirag: {note.route_override!r} ignored: not inject, extract or skip)"

    if settings.policy not in POLICIES:
        raise ConfigError(f"[route] policy {settings.policy!r}: choose one of {', '.join(POLICIES)}")
    if f.prose_tokens < settings.min_prose_tokens:
        what = "empty" if f.prose_tokens == 0 else f"near-empty ({f.prose_tokens} prose tokens)"
        return RouteDecision("inject", f"{what}: nothing for an LLM to read, links only{ignored}", f)
    if f.resolved_links < settings.min_resolved_links:
        why = f"{f.resolved_links} resolved links (<{settings.min_resolved_links})"
        return RouteDecision("extract", f"{why}: LLM extraction with link hints{ignored}", f)
    if settings.policy == "links":
        return RouteDecision(
            "inject", f"{f.resolved_links} resolved links to {f.distinct_targets} notes "
            f"(≥{settings.min_resolved_links}): the links say what it is about; its prose is chunked and embedded"
            f"{ignored}", f)
    if f.uncovered_prose_tokens <= settings.max_uncovered_tokens:
        return RouteDecision(
            "inject",
            f"{f.resolved_links} resolved links to {f.distinct_targets} notes, "
            f"{f.uncovered_prose_tokens} prose tokens outside link sentences (≤{settings.max_uncovered_tokens})"
            f"{ignored}",
            f,
        )
    spans, total = uncovered_sections(note, outgoing, f, settings)
    why = f"{f.uncovered_prose_tokens} prose tokens outside link sentences (>{settings.max_uncovered_tokens})"
    if not spans:
        return RouteDecision("inject", f"{why}, but no section holds {settings.min_prose_tokens} of them{ignored}", f)
    if len(spans) == total:
        return RouteDecision("extract", f"{why}: LLM extraction with link hints{ignored}", f)
    return RouteDecision("extract", f"{why}: {len(spans)} of {total} sections to LLM extraction{ignored}", f,
                         sections=spans)


def uncovered_sections(note: ParsedNote, outgoing: Outgoing, f: NoteFeatures,
                       settings: RouteSettings) -> tuple[list[tuple[int, int]], int]:
    """The heading sections whose prose no link sentence covers (at least `min_prose_tokens` of prose outside
    link sentences, and more than half of the section's prose), as body line spans; and how many sections
    the note has."""
    body = mask_payloads(note.body, keep_lines=True)  # as char_figures reads it; its lines are the note's
    parts = sections(body)
    if not parts:
        return [], 0
    body_chars = _nonspace(body) - body.count("\n") - body.count("\t")
    per_token = f.body_tokens / body_chars if body_chars > 0 else 0.0
    contexts: list[set[str]] = [set() for _ in parts]
    starts = [p.start_line for p in parts]
    for link, _ in outgoing:
        if link.frontmatter_key is not None or not link.context:
            continue
        line = link.line - note.body_line_offset
        k = max(0, bisect_right(starts, line) - 1)
        contexts[k].add(link.context)
    spans = []
    for part, found in zip(parts, contexts, strict=True):
        covered = min(part.prose_chars, sum(_nonspace(c) for c in found))
        uncovered = part.prose_chars - covered
        if uncovered * per_token >= settings.min_prose_tokens and uncovered > covered:
            spans.append((part.start_line, part.end_line))
    return spans, len(parts)


def parse_route_overrides(values: Iterable[str]) -> list[tuple[str, str]]:
    """`--route` values: `ROUTE` (every note) or `GLOB=ROUTE` (notes whose path matches, fnmatch-style,
    e.g. `daily/*=skip`). Later values win. Returns (glob, route) pairs; "*" for a bare route."""
    out = []
    for value in values:
        glob, _, route = value.rpartition("=")
        route = route.strip().lower()
        if route not in ROUTES:
            raise ConfigError(f"--route {value!r}: the route must be one of {', '.join(ROUTES)}")
        out.append((glob.strip() or "*", route))
    return out


def override_for(path: str, overrides: list[tuple[str, str]]) -> str | None:
    found = None
    for glob, route in overrides:
        if glob == "*" or fnmatch.fnmatchcase(path, glob):
            found = route
    return found


def route_vault(
    vault: Any,
    settings: RouteSettings | None = None,
    overrides: Iterable[str] = (),
    *,
    encoding: str = DEFAULT_ENCODING,
    body_tokens: Mapping[str, int] | None = None,
    figures: dict[str, CharFigures] | None = None,
    features: dict[str, NoteFeatures] | None = None,
) -> dict[str, RouteDecision]:
    """Route every note of a `Vault` (anything with `.notes` and `.outgoing(path)`), in path order.

    `body_tokens` (path -> tokens of the note body) skips the counting when the caller already has it.
    `figures` (path -> `char_figures`, valid for the notes' current text) skips the structure pass of the
    notes it holds; the figures of the other notes are added to it. `features` (path -> the note's routing
    features, which no route setting changes) does the same for another routing of the same vault and body
    tokens (cost-estimate routes under both policies): decisions share the features they read, never changed.
    """
    settings = settings or RouteSettings()
    parsed = parse_route_overrides(overrides)
    paths = sorted(vault.notes)
    if body_tokens is None:
        enc = get_encoding(encoding)
        # one thread: tiktoken's batch API was slower here (2 cores, thousands of short notes)
        body_tokens = {p: len(enc.encode_ordinary(counted_body(vault.notes[p].body))) for p in paths}
    outgoing = {p: vault.outgoing(p) for p in paths}
    figures = {} if figures is None else figures
    known = {} if features is None else features
    for p in paths:
        if p not in known:
            if p not in figures:
                figures[p] = char_figures(vault.notes[p])
            known[p] = _with_tokens(_char_features(vault.notes[p], outgoing[p], figures[p]), body_tokens[p])
    decisions = {}
    for path in paths:
        decisions[path] = route_note(vault.notes[path], outgoing[path], settings, override_for(path, parsed),
                                     features=known[path])
    return decisions
