"""The records a note contributes (chunks, entity and relation fragments) and the ids LightRAG gives them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikirag.lightrag.ids import md5_id

DESCRIPTION_CHARS = 600


UNRESOLVED_TYPE = "unresolved"


ATTACHMENT_TYPE = "attachment"




def doc_id_for(path: str) -> str:
    """A note's document id: from its vault path, so identical content in two notes never collides."""
    return md5_id(path, "note-")


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
    # every chunk's id and body lines in note order, a repeated chunk at each of its places (`chunks` keeps
    # one record of identical chunks, with the first place's lines)
    places: list[tuple[str, int, int]] = field(default_factory=list)

