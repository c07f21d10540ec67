"""The chunks each scenario would send to the LLM, computed as LightRAG and wikirag chunk them: LightRAG's
fixed-token chunks for vanilla, wikirag's heading-aware chunks with their section breadcrumb for the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wikirag.lightrag.prompts import (
    PromptSizes,
    breadcrumb,
)
from wikirag.lightrag.tokens import get_encoding
from wikirag.markdown.chunking import chunk_text, first_heading, heading_path
from wikirag.markdown.payloads import counted_body
from wikirag.plan.cost_settings import CostSettings


@dataclass
class PlannedChunk:
    text: str
    tokens: int
    breadcrumb: str = ""  # LightRAG's section path for the chunk ("" when it has no heading)
    names: list[list[str]] | None = None  # sentence_names(text), when already known


class _Encoder:
    """encode/decode as wikirag's LightRAG tokenizer does (special-token text encoded as plain text), without
    importing lightrag.utils (half a second) just to wrap tiktoken."""

    def __init__(self, enc: Any) -> None:
        self.encode, self.decode = enc.encode_ordinary, enc.decode


class ChunkPlanner:
    """Cuts documents into chunks the way each scenario's LightRAG will, counting tokens only once where
    it can: a document well inside one chunk is one chunk without running the chunker."""

    def __init__(self, s: CostSettings, sizes: PromptSizes) -> None:
        self.s, self.sizes = s, sizes
        self.enc = get_encoding(s.encoding)
        self.tokenizer = _Encoder(self.enc)

    def crumb(self, headings: list[str]) -> str:
        if not self.s.section_context or not headings:
            return ""
        return breadcrumb(headings, self.sizes.max_section_tokens, self.tokenizer)

    def wikirag(self, body: str, approx_tokens: int, title: str = "") -> list[PlannedChunk]:
        """wikirag's chunks (`inject.note_contribution`: chunk_text on the body, each chunk's heading path
        under the note title), which the pipeline hands to LightRAG's extraction. `approx_tokens` counts the body
        as chunk_text shows it (markdown.payloads.counted_body)."""
        content = counted_body(body)
        if not content:
            return []
        size = self.s.chunk_token_size
        # chunk_text packs paragraph blocks, paying ~1 token per join; BPE can differ by a token or two at
        # each block edge. Far enough below the size, the whole text is certainly one chunk.
        blocks = content.count("\n\n") + content.count("\n#") + 1
        if approx_tokens + 3 * blocks + 8 <= 0.9 * size:
            first = first_heading(content)
            return [PlannedChunk(content, approx_tokens, self.crumb(heading_path(title, [first] if first else [])))]
        chunks: dict[str, PlannedChunk] = {}  # note_contribution keeps one of identical chunks (same id)
        for c in chunk_text(body, self.tokenizer, size, self.s.chunk_overlap_token_size):
            if c.content not in chunks:
                chunks[c.content] = PlannedChunk(c.content, c.tokens, self.crumb(heading_path(title, c.headings)))
        return list(chunks.values())

    def vanilla(self, content: str, approx_tokens: int) -> list[PlannedChunk]:
        """LightRAG's default chunking_by_token_size: fixed windows of `size` tokens, stride size-overlap."""
        if not content:
            return []
        size, overlap = self.s.vanilla_chunk_token_size, self.s.vanilla_chunk_overlap_token_size
        if approx_tokens + 4 <= size:
            return [PlannedChunk(content, approx_tokens)]
        ids = self.enc.encode_ordinary(content)
        if len(ids) <= size:
            return [PlannedChunk(content, len(ids))]
        return [PlannedChunk(self.enc.decode(ids[start : start + size]), min(size, len(ids) - start))
                for start in range(0, len(ids), size - overlap)]

