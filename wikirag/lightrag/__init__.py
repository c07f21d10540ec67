"""The single seam to LightRAG: every `import lightrag` in wikirag is in this folder. It applies the
`.env` guard before LightRAG loads, sets up the engine (storages, tokenizer, embedding), writes records into
LightRAG's own storages, renders its prompts for the cost model, and wraps its query API.

May import: `wikirag.graph` (record types), `wikirag.markdown` (chunking), `wikirag.llm`, `wikirag.storage`,
`wikirag.settings`, `wikirag.models`, `wikirag.errors`.
"""
