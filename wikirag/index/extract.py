"""LLM extraction for extract-routed notes: LightRAG's own extraction, hinted, attributed per note, cleaned,
kept as fragments.

LightRAG's extraction step (`operate.extract_entities`, through lightrag/extraction.py) is used as is: its
prompts, its output parser, its LLM cache keyed by the model. What it returns per extraction unit (a stored
chunk, an uncovered section, or a pack of small notes: index/units.py) is not merged into the graph by
LightRAG. It is attributed to the notes the unit holds: an entity belongs to each note whose text (or
hint, which names the note and its links) grounds it, a relation to a note that grounds both ends, and
what no note grounds is dropped. Each note keeps these *raw* records in the ledger; name hygiene
(graph/hygiene.py) turns them into entity/relation fragments, merged with the note's link structure by the
same code that merges injected notes. Because the raw records are kept, a change of the vault's names
(a new note, an edited alias) re-applies hygiene without an LLM call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikirag.graph.hygiene import EntityNames, HygieneLog, loose
from wikirag.graph.records import ChunkRecord, EntityFragment, RelationFragment
from wikirag.lightrag.ids import xml_safe

EXTRACTED_RANK = 2


@dataclass
class Extraction:
    entities: list[EntityFragment] = field(default_factory=list)
    relations: list[RelationFragment] = field(default_factory=list)


@dataclass
class Member:
    """One note's share of a unit: the text it brought, its own hint, the stored chunks records may cite."""

    path: str
    text: str
    hint: str
    chunks: list[ChunkRecord]


def raw_records(results: list[tuple[dict, dict]]) -> tuple[list[dict], list[dict]]:
    """LightRAG's parsed output, flattened: entity and relation records with their unit id (`source_id`)."""
    nodes: list[dict] = []
    edges: list[dict] = []
    for maybe_nodes, maybe_edges in results:
        for name, records in sorted(maybe_nodes.items()):
            for r in records:
                nodes.append({"name": str(name), "type": str(r.get("entity_type") or "unknown").lower(),
                              "description": str(r.get("description", "")), "unit": r.get("source_id", "")})
        for (src, tgt), records in sorted(maybe_edges.items()):
            for r in records:
                edges.append({"src": str(src), "tgt": str(tgt), "keywords": str(r.get("keywords", "")),
                              "description": str(r.get("description", "")), "unit": r.get("source_id", "")})
    return nodes, edges


def _cite(chunks: list[ChunkRecord], names: list[str], unit: str) -> str:
    """The member's stored chunk a record came from: the unit itself when the unit is one of its chunks (the
    LLM read exactly that text), else the first chunk that holds every name, else one name, else the first."""
    if any(c.id == unit for c in chunks):
        return unit
    wanted = [w for w in (loose(n) for n in names) if w.strip()]
    texts = [(c.id, loose(c.content)) for c in chunks]
    for test in (all, any):
        for chunk_id, text in texts:
            if wanted and test(w in text for w in wanted):
                return chunk_id
    return chunks[0].id if chunks else ""


def attribute(nodes: list[dict], edges: list[dict], member: Member, unit_keys: set[str],
              names: EntityNames, shared: bool = True) -> dict[str, list]:
    """The raw records of the units in `unit_keys` that belong to this member (in a `shared` unit, a pack:
    those grounded in its text or names, by the name as written or, through the vault's names, by the
    entity it names; alone, all of them, for `clean` to judge and report), each citing the member's own
    stored chunk. This is what the ledger keeps as the note's raw extraction output."""
    text = member.text + "\n" + member.hint

    def grounded(name: str) -> bool:
        if not shared:
            return True
        canonical, _how = names.canonical(name, "")
        return names.grounded(name, canonical, text, "")

    kept_nodes, kept_edges = [], []
    ok: dict[str, bool] = {}
    for r in nodes:
        if r["unit"] in unit_keys and ok.setdefault(r["name"], grounded(r["name"])):
            cited = _cite(member.chunks, [r["name"]], r["unit"])
            kept_nodes.append([r["name"], r["type"], r["description"], cited])
    for r in edges:
        if r["unit"] not in unit_keys:
            continue
        if ok.setdefault(r["src"], grounded(r["src"])) and ok.setdefault(r["tgt"], grounded(r["tgt"])):
            kept_edges.append([r["src"], r["tgt"], r["keywords"], r["description"],
                               _cite(member.chunks, [r["src"], r["tgt"]], r["unit"])])
    return {"entities": kept_nodes, "relations": kept_edges}


def clean(raw: dict[str, list], text: str, hint: str, names: EntityNames, path: str,
          log: HygieneLog) -> Extraction:
    """Name hygiene on a note's raw records: example echoes and ungrounded names dropped, names mapped to
    the vault's entities. Cheap (no LLM): re-run whenever the vault's names change."""
    out = Extraction()
    kept: dict[str, str] = {}  # extracted name -> canonical name, for grounded entities only
    for name, entity_type, description, chunk_id in raw.get("entities", []):
        if names.is_placeholder(name):
            log.dropped.append(f"{path}: {name!r} (prompt placeholder)")
            continue
        canonical, how = names.canonical(name, entity_type)
        if not names.grounded(name, canonical, text, hint):
            # A prompt example ("Tokyo") is an echo only when the text does not name it.
            why = "LightRAG prompt example" if names.is_example(name) else "not found in the text"
            log.dropped.append(f"{path}: {name!r} ({why})")
            continue
        if how:
            log.merges.append(f"{path}: {name!r} -> {canonical!r} ({how})")
        kept[name] = canonical
        out.entities.append(EntityFragment(canonical, xml_safe(entity_type), xml_safe(description),
                                           [chunk_id] if chunk_id else [], path, EXTRACTED_RANK))
    for src, tgt, keywords, description, chunk_id in raw.get("relations", []):
        ends = []
        for end in (src, tgt):
            canonical = kept.get(end)
            if canonical is None:
                canonical, _how = names.canonical(end, "")
                if names.is_placeholder(end) or not names.grounded(end, canonical, text, hint):
                    break
                # an endpoint the LLM named only in a relation still needs a node
                out.entities.append(EntityFragment(canonical, None, "", [chunk_id] if chunk_id else [], path,
                                                   EXTRACTED_RANK))
            ends.append(canonical)
        if len(ends) != 2 or ends[0] == ends[1]:
            continue
        words = [xml_safe(k.strip()) for k in keywords.split(",") if k.strip()]
        out.relations.append(RelationFragment(ends[0], ends[1], xml_safe(description), words,
                                              [chunk_id] if chunk_id else [], path, 1))
    return out
