"""What a note says as graph records, with no I/O: entity naming, one note's contribution (chunks,
entity and relation fragments from its links and frontmatter), the deterministic merge of fragments into
records, and name hygiene for what an LLM extracted.

May import: `wikirag.markdown`, `wikirag.models`, `wikirag.errors`. No files, no LightRAG.
"""
