"""Deciding before spending: routing (inject, extract or skip per note), the hint that tells the LLM
what links already say, note signatures, and the cost model (prices, LightRAG's prompt sizes, estimates).
No I/O: callers pass in what was read.

May import: `wikirag.graph`, `wikirag.markdown`, `wikirag.vault` (its data types), `wikirag.lightrag` (prompt
templates and tokenizers), `wikirag.settings`, `wikirag.models`, `wikirag.errors`.
"""
