"""Direct graph injection: a note's links and frontmatter become LightRAG records, with no LLM.

Two halves:
- `note_contribution()` (sync, pure) turns one parsed note into chunks plus entity and relation
  *fragments*: what this note says about each entity and each link.
- `StoreWriter` (async) writes merged records into LightRAG's own storages (graph, vector DBs, chunk
  KV, and the entity/relation chunk trackers LightRAG's merges read).

Why not `LightRAG.ainsert_custom_kg`? In 1.5.x it overwrites an existing entity instead of merging,
keeps one source chunk per entity, writes no recovery anchors, and flushes every store after each call.
wikirag instead owns the whole derivation: every entity and relation is the deterministic merge of the
fragments all current notes contribute (kept in the ledger), so an edit, a rename or a delete re-derives
exactly the records it touches and the store always equals a fresh index of the vault.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from wikirag.markdown.chunking import chunk_text, heading_record
from wikirag.models import ParsedNote, Resolution, WikiLink

SEP = "<SEP>"  # lightrag.constants.GRAPH_FIELD_SEP
DESCRIPTION_CHARS = 600
UNRESOLVED_TYPE = "unresolved"
ATTACHMENT_TYPE = "attachment"


def md5_id(text: str, prefix: str) -> str:
    from lightrag.utils import compute_mdhash_id

    return compute_mdhash_id(text, prefix=prefix)


# Characters XML 1.0 cannot carry: LightRAG's GraphML store refuses them, and a note can hold any byte.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """Text as the stores can hold it: control characters dropped (tabs and newlines kept)."""
    return _NOT_XML.sub("", text)


def doc_id_for(path: str) -> str:
    """A note's document id: from its vault path, so identical content in two notes never collides."""
    return md5_id(path, "note-")


# Names made only of these characters (no '&', quotes, markup, CJK or full-width forms, not all digits)
# come out of LightRAG's normaliser unchanged (property-tested); it costs ~0.4 ms a call, which a
# 10,000-note vault would pay on every run.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 .,_()+:/!?-]*")
_NUMERIC = re.compile(r"[\d.]+")


@lru_cache(maxsize=65536)
def normalize_name(name: str) -> str:
    """LightRAG's own entity-name normalisation (extraction applies it too, so names meet)."""
    if _PLAIN_NAME.fullmatch(name) and "  " not in name and name == name.strip() and not _NUMERIC.fullmatch(name):
        return name
    from lightrag.utils import normalize_entity_name

    return normalize_entity_name(xml_safe(name))


@dataclass
class ChunkRecord:
    id: str
    content: str
    tokens: int
    order: int
    heading: dict | None
    start_line: int
    end_line: int


@dataclass
class EntityFragment:
    name: str
    type: str | None
    description: str
    chunk_ids: list[str]
    file_path: str
    rank: int  # 0: the note's own entity; 1: a mention through a link (merge order)


@dataclass
class RelationFragment:
    src: str
    tgt: str
    description: str
    keywords: list[str]
    chunk_ids: list[str]
    file_path: str
    occurrences: int


@dataclass
class NoteContribution:
    path: str
    doc_id: str
    entity: str
    chunks: list[ChunkRecord] = field(default_factory=list)
    entities: list[EntityFragment] = field(default_factory=list)
    relations: list[RelationFragment] = field(default_factory=list)


# --- naming ---------------------------------------------------------------------------------------


def note_entity_names(notes: dict[str, ParsedNote]) -> dict[str, str]:
    """One canonical entity name per note: its title, qualified by folder when titles collide.

    Titles are compared case-insensitively after LightRAG's normalisation, because LightRAG would keep
    "Enigma" and "enigma" apart while a reader (and Obsidian's resolver) treats them as one name.
    """
    base: dict[str, str] = {}
    for path, note in notes.items():
        title = note.title.strip() or note.name
        base[path] = normalize_name(title) or normalize_name(f"Note {title}") or "Untitled note"
    groups: dict[str, list[str]] = {}
    for path, name in base.items():
        groups.setdefault(name.casefold(), []).append(path)
    names: dict[str, str] = {}
    for paths in groups.values():
        if len(paths) == 1:
            names[paths[0]] = base[paths[0]]
            continue
        for path in paths:
            folder = path.rsplit("/", 1)[0] if "/" in path else "/"
            names[path] = f"{base[path]} ({folder})"
        qualified = [names[p].casefold() for p in paths]
        if len(set(qualified)) < len(qualified):  # same title, same folder, different case
            for path in paths:
                names[path] = f"{base[path]} ({path.removesuffix('.md')})"
    return names


def unresolved_name(link: WikiLink) -> str:
    """The entity name for a link that points at no note: the last path part, without `.md`."""
    target = link.target.rstrip("/").rsplit("/", 1)[-1]
    if target.lower().endswith(".md"):
        target = target[:-3]
    return normalize_name(target) or normalize_name(f"Note {target}") or ""


def attachment_name(path: str) -> str:
    return normalize_name(path.rsplit("/", 1)[-1]) or path


# --- one note -> records -------------------------------------------------------------------------

_WIKILINK_TEXT = re.compile(r"!?\[\[([^\]|]*)(?:\|([^\]]*))?\]\]")
_MD_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def plain_text(text: str) -> str:
    """Flatten link syntax to the words a reader sees."""
    text = _WIKILINK_TEXT.sub(lambda m: (m.group(2) or m.group(1).split("#")[0] or m.group(1)).strip(), text)
    return _MD_LINK_TEXT.sub(lambda m: m.group(1), text).strip()


def opening_paragraph(note: ParsedNote) -> str:
    """The first prose paragraph of the body: no headings, code, tables, embeds-only lines."""
    in_fence = False
    paragraph: list[str] = []
    for line in note.body.split("\n"):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            if paragraph:
                break
            continue
        if in_fence:
            continue
        if not stripped:
            if paragraph:
                break
            continue
        if stripped.startswith(("#", "|", "![[", ">", "%%", "<!--", "---")) and not paragraph:
            continue
        paragraph.append(stripped)
    return _clip(plain_text(" ".join(paragraph)), DESCRIPTION_CHARS)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def note_type(note: ParsedNote, default: str) -> str:
    """Frontmatter `type`, else the top folder in the singular ("people" stays a folder name), else
    the default."""
    if note.type:
        return str(note.type).strip().lower() or default
    if "/" in note.path:
        return note.path.split("/", 1)[0].strip().lower() or default
    return default


def note_description(note: ParsedNote) -> str:
    parts = []
    summary = (note.description or "").strip() or opening_paragraph(note)
    if summary:
        parts.append(_clip(summary, DESCRIPTION_CHARS))
    if note.aliases:
        parts.append("Also known as: " + ", ".join(note.aliases) + ".")
    if note.tags:
        parts.append("Tags: " + ", ".join("#" + t for t in note.tags) + ".")
    return "\n".join(parts) or f"Note {note.path} (no text yet)."


def _chunks_for_line(chunks: list[ChunkRecord], body_line: int) -> list[str]:
    hits = [c.id for c in chunks if c.start_line <= body_line <= c.end_line]
    if hits:
        return hits
    return [chunks[0].id] if chunks else []  # frontmatter links belong to the note's first chunk


def _link_description(src: str, tgt: str, link: WikiLink) -> str:
    context = plain_text(link.context) if link.context else ""
    label = plain_text(link.raw)
    if context and context != label and len(context.split()) > len(label.split()) + 1:
        return context
    where = f"frontmatter property '{link.frontmatter_key}'" if link.frontmatter_key else (
        "section '" + " > ".join(link.section) + "'" if link.section else "body"
    )
    verb = "embeds" if link.embed else "refers to"
    return f"{src} {verb} {tgt} in its {where}."


def note_contribution(
    note: ParsedNote,
    outgoing: Iterable[tuple[WikiLink, Resolution]],
    names: dict[str, str],
    unresolved_names: dict[str, str],
    tokenizer: Any,
    *,
    chunk_size: int,
    chunk_overlap: int,
    default_type: str,
) -> NoteContribution:
    """Everything one note puts into the graph. `names` maps note paths to entity names;
    `unresolved_names` maps a casefolded unresolved target to its canonical entity name."""
    doc_id = doc_id_for(note.path)
    me = names[note.path]
    chunks = [
        ChunkRecord(
            id=md5_id(f"{doc_id}:{c.content}", "chunk-"),
            content=xml_safe(c.content),
            tokens=c.tokens,
            order=c.order,
            heading=heading_record(note.title, c.headings),
            start_line=c.start_line,
            end_line=c.end_line,
        )
        for c in chunk_text(note.body, tokenizer, chunk_size, chunk_overlap)
    ]
    # Identical chunk text twice in one note gives one id: keep the first, LightRAG keys by id.
    seen: set[str] = set()
    chunks = [c for c in chunks if not (c.id in seen or seen.add(c.id))]
    contribution = NoteContribution(note.path, doc_id, me, chunks)
    contribution.entities.append(
        EntityFragment(me, xml_safe(note_type(note, default_type)), xml_safe(note_description(note)),
                       [c.id for c in chunks], note.path, 0)
    )

    by_target: dict[str, RelationFragment] = {}
    target_types: dict[str, str | None] = {}
    for link, resolution in outgoing:
        if resolution.status == "self" or (resolution.path == note.path):
            continue
        if resolution.path and resolution.is_attachment:
            target, target_type = attachment_name(resolution.path), ATTACHMENT_TYPE
        elif resolution.path:
            target, target_type = names[resolution.path], None
        else:
            key = unresolved_name(link).casefold()
            target = unresolved_names.get(key, "")
            target_type = UNRESOLVED_TYPE
        if not target or target == me:
            continue
        body_line = link.line - note.body_line_offset
        chunk_ids = _chunks_for_line(chunks, body_line)  # frontmatter lines (<= 0) fall to the first chunk
        keywords = [xml_safe(k) for k in (*link.section, *(["embed"] if link.embed else []),
                                          *([link.heading.replace("#", " > ")] if link.heading else []),
                                          *note.tags)]
        fragment = by_target.get(target)
        description = xml_safe(_link_description(me, target, link))
        if fragment is None:
            by_target[target] = RelationFragment(me, target, description, keywords, chunk_ids, note.path, 1)
            target_types[target] = target_type
            continue
        fragment.occurrences += 1
        if description not in fragment.description.split("\n"):
            fragment.description += "\n" + description
        fragment.keywords += [k for k in keywords if k not in fragment.keywords]
        fragment.chunk_ids += [c for c in chunk_ids if c not in fragment.chunk_ids]

    for target, relation in sorted(by_target.items()):
        contribution.relations.append(relation)
        mention = relation.description.split("\n")[0] if target_types[target] == UNRESOLVED_TYPE else ""
        contribution.entities.append(
            EntityFragment(target, target_types[target], mention, relation.chunk_ids, note.path, 1)
        )
    return contribution


# --- merging fragments into records --------------------------------------------------------------


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
    return list(seen)


_TYPE_PRIORITY = {0: 0, 2: 1, 1: 2}  # fragment rank -> whose type wins


def merge_entity(name: str, fragments: list[EntityFragment]) -> dict[str, Any]:
    """The graph node for `name` from every fragment that mentions it, independent of input order."""
    ordered = sorted(fragments, key=lambda f: (f.rank, f.file_path))
    # Type priority: the note's own frontmatter/folder type, then an LLM's reading of the text, then
    # what a link alone can say (unresolved, attachment).
    typed = sorted((f for f in ordered if f.type), key=lambda f: (_TYPE_PRIORITY.get(f.rank, 3), f.file_path))
    entity_type = typed[0].type if typed else "unknown"
    descriptions = _unique(f.description for f in ordered)
    if entity_type == UNRESOLVED_TYPE and descriptions:
        descriptions = [f"{name} has no note in the vault yet; it is mentioned in: " + descriptions[0],
                        *descriptions[1:]]
    return {
        "entity_id": name,
        "entity_type": entity_type,
        "description": "\n".join(descriptions) or name,
        "source_id": SEP.join(sorted({c for f in ordered for c in f.chunk_ids})),
        "file_path": SEP.join(sorted({f.file_path for f in ordered})),
    }


def relation_key(src: str, tgt: str) -> tuple[str, str]:
    a, b = sorted((src, tgt))
    return a, b


def merge_relation(key: tuple[str, str], fragments: list[RelationFragment]) -> dict[str, Any]:
    ordered = sorted(fragments, key=lambda f: (f.file_path, f.src))
    chunk_ids = sorted({c for f in ordered for c in f.chunk_ids})
    return {
        "src_id": key[0],
        "tgt_id": key[1],
        "description": "\n".join(_unique(d for f in ordered for d in f.description.split("\n"))),
        "keywords": ", ".join(_unique(k for f in ordered for k in f.keywords)) or "link",
        "source_id": SEP.join(chunk_ids),
        # LightRAG requires weight >= distinct source chunks; each link occurrence counts once.
        "weight": float(max(len(chunk_ids), sum(f.occurrences for f in ordered), 1)),
        "file_path": SEP.join(sorted({f.file_path for f in ordered})),
    }


# --- writing into LightRAG's storages ------------------------------------------------------------


class StoreWriter:
    """Applies chunk, entity and relation changes to an open LightRAG instance's storages."""

    def __init__(self, rag: Any) -> None:
        self.rag = rag

    async def upsert_chunks(self, path: str, doc_id: str, chunks: list[ChunkRecord]) -> None:
        if not chunks:
            return
        records = {}
        for c in chunks:
            record = {
                "content": c.content,
                "tokens": c.tokens,
                "chunk_order_index": c.order,
                "full_doc_id": doc_id,
                "file_path": path,
            }
            if c.heading:
                record["heading"] = c.heading
            records[c.id] = record
        await self.rag.text_chunks.upsert(records)
        await self.rag.chunks_vdb.upsert(records)

    async def delete_chunks(self, chunk_ids: list[str]) -> None:
        if chunk_ids:
            await self.rag.text_chunks.delete(chunk_ids)
            await self.rag.chunks_vdb.delete(chunk_ids)

    async def upsert_entities(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        import time

        now = int(time.time())
        graph = self.rag.chunk_entity_relation_graph
        await graph.upsert_nodes_batch([(r["entity_id"], {**r, "created_at": now}) for r in records])
        await self.rag.entities_vdb.upsert({
            md5_id(r["entity_id"], "ent-"): {
                "entity_name": r["entity_id"],
                "entity_type": r["entity_type"],
                "content": f"{r['entity_id']}\n{r['description']}",
                "source_id": r["source_id"],
                "description": r["description"],
                "file_path": r["file_path"],
            }
            for r in records
        })
        trackers = {
            r["entity_id"]: {"chunk_ids": ids, "count": len(ids)}
            for r in records
            if (ids := [c for c in r["source_id"].split(SEP) if c])
        }
        if trackers and self.rag.entity_chunks is not None:
            await self.rag.entity_chunks.upsert(trackers)

    async def delete_entities(self, names: list[str]) -> None:
        if not names:
            return
        await self.rag.chunk_entity_relation_graph.remove_nodes(names)
        await self.rag.entities_vdb.delete([md5_id(n, "ent-") for n in names])
        if self.rag.entity_chunks is not None:
            await self.rag.entity_chunks.delete(names)

    async def upsert_relations(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        import time

        from lightrag.utils import make_relation_chunk_key

        now = int(time.time())
        fields = ("weight", "description", "keywords", "source_id", "file_path")
        await self.rag.chunk_entity_relation_graph.upsert_edges_batch([
            (r["src_id"], r["tgt_id"], {**{k: r[k] for k in fields}, "created_at": now}) for r in records
        ])
        await self.rag.relationships_vdb.upsert({
            md5_id(r["src_id"] + r["tgt_id"], "rel-"): {
                "src_id": r["src_id"],
                "tgt_id": r["tgt_id"],
                "source_id": r["source_id"],
                "content": f"{r['keywords']}\t{r['src_id']}\n{r['tgt_id']}\n{r['description']}",
                "keywords": r["keywords"],
                "description": r["description"],
                "weight": r["weight"],
                "file_path": r["file_path"],
            }
            for r in records
        })
        trackers = {
            make_relation_chunk_key(r["src_id"], r["tgt_id"]): {"chunk_ids": ids, "count": len(ids)}
            for r in records
            if (ids := [c for c in r["source_id"].split(SEP) if c])
        }
        if trackers and self.rag.relation_chunks is not None:
            await self.rag.relation_chunks.upsert(trackers)

    async def delete_relations(self, keys: list[tuple[str, str]]) -> None:
        if not keys:
            return
        from lightrag.utils import make_relation_chunk_key, make_relation_vdb_ids

        await self.rag.chunk_entity_relation_graph.remove_edges(keys)
        await self.rag.relationships_vdb.delete([i for a, b in keys for i in make_relation_vdb_ids(a, b)])
        if self.rag.relation_chunks is not None:
            await self.rag.relation_chunks.delete([make_relation_chunk_key(a, b) for a, b in keys])

    async def flush(self) -> None:
        """Persist every storage (LightRAG's file stores write whole files here; embeddings run here)."""
        rag = self.rag
        for storage in (rag.text_chunks, rag.chunks_vdb, rag.entities_vdb, rag.relationships_vdb,
                        rag.entity_chunks, rag.relation_chunks, rag.chunk_entity_relation_graph):
            if storage is not None:
                await storage.index_done_callback()
