"""Packs in a cost estimate: small extract-routed notes share one extraction call per pack
(plan/packing.py, as the pipeline packs them); each member's row shows its share of its pack by tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wikirag.graph.contribution import note_type
from wikirag.lightrag.prompts import lightrag_content
from wikirag.plan.chunk_plans import ChunkPlanner, PlannedChunk
from wikirag.plan.cost_settings import CostSettings
from wikirag.plan.memo import EstimateMemo
from wikirag.plan.packing import TITLE_PREFIX, PackItem, pack_hint_parts, pack_items
from wikirag.plan.results import NoteCost, ScenarioCost
from wikirag.plan.scenarios import Scenario


def pack_costs(run: Scenario, packable: dict[str, PackItem], vault: Any, titles: Mapping[str, str],
               rows: dict[str, NoteCost], planner: ChunkPlanner, s: CostSettings,
               memo: EstimateMemo | None = None, member_shares: bool = True) -> list[ScenarioCost]:
    """Small extract-routed notes share one call per pack (plan/packing.py, as the pipeline packs them); a
    note left alone pays its own. Each member's row shows its share of the pack by tokens."""
    memo = memo or EstimateMemo()
    counts = memo.token_counts(planner.enc)
    packs, alone = pack_items(packable.values(), s.chunk_token_size, s.pack_max_tokens)
    out = []
    for item in alone:
        row = rows[item.path]
        note = vault.notes[item.path]
        plan = memo.plan(planner, ("alone", item.path, item.text), item.text, item.tokens, note.title)
        cost, _ = run.document(item.path, item.text, plan, row.hint_tokens)
        cost.chunks = row.chunks
        _fill_row(row, cost)
    for pack in packs:
        content = pack.content()
        key = ("pack", content)
        tokens = memo.hint(key, "tokens", lambda p=pack: counts.join(p.texts()))
        hint = 0
        if s.hint:
            hint = memo.hint(key, s.default_note_type, lambda p=pack: counts.concat(_pack_hint(p, vault, titles, s)))
        names = memo.shared((key, "names"), lambda p=pack: pack_names(p, vault, memo))
        chunk = PlannedChunk(content, tokens, names=names)
        cost, _ = run.document(pack.paths[0], content, [chunk], hint)
        cost.chunks, cost.notes = 0, len(pack.members)  # the stored chunks stay per note (counted on the rows)
        out.append(cost)
        total = sum(m.tokens for m in pack.members) or 1
        for member in pack.members:
            row = rows[member.path]
            if not member_shares:  # the totals read only these two
                row.pack, row.hint_tokens = len(pack.members), hint
                continue
            share = _share(cost, member.tokens / total)
            share.chunks = row.wikirag.chunks
            share.notes = 1
            row.pack = len(pack.members)
            row.hint_tokens = hint
            _fill_row(row, share)
    return out


def pack_names(pack: Any, vault: Any, memo: EstimateMemo) -> list[list[str]]:
    """sentence_names(pack.content()), member by member (its lines are theirs): a member's title line, then
    its text, whose names the note's own estimate found already when the text is the whole body."""
    out: list[list[str]] = []
    for m in pack.members:
        out += memo.names(("title", m.title), f"{TITLE_PREFIX}{m.title.strip()}")
        text = m.text.strip()
        out += memo.names(m.path if text == lightrag_content(vault.notes[m.path].body) else ("text", text), text)
    return out


def _pack_hint(pack: Any, vault: Any, titles: Mapping[str, str], s: CostSettings) -> list[str]:
    members = []
    for path in pack.paths:
        note = vault.notes[path]
        targets = sorted({titles[r.path] for _l, r in vault.outgoing(path)
                          if r.path and not r.is_attachment and r.path != path and r.path in titles})
        members.append((titles[path], note_type(note, s.default_note_type), list(note.aliases), targets))
    return pack_hint_parts(members)


def _share(cost: ScenarioCost, part: float) -> ScenarioCost:
    share = ScenarioCost()  # every field set below: its __dict__ is replaced whole (37,000 shares at 13k notes)
    share.__dict__.update({name: value * part if isinstance(value, float) else round(value * part)
                           for name, value in vars(cost).items()})
    return share


def _fill_row(row: NoteCost, cost: ScenarioCost) -> None:
    row.wikirag = cost
    row.llm_calls, row.input_tokens, row.output_tokens, row.usd = (cost.llm_calls, cost.input_tokens,
                                                                   cost.output_tokens, cost.usd)
