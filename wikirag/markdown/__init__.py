"""One note's text, parsed: the single structure pass over a note's body (`layout`), and what reads
it: links, tags, headings and blocks (`parse`), frontmatter properties (`properties`), chunking
(`chunking`) and the words BM25 indexes (`searchable`). Pure functions of a string: no files, no vault, no LightRAG.

May import: `wikirag.models`, `wikirag.errors`.
"""
