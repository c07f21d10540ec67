"""The indexing run: the write-ahead ledger, the stat manifest and parse cache, applying batches of
note contributions to the store, LLM extraction with hints and hygiene, and `watch`.

May import every stage below it (vault, markdown, graph, plan, lightrag, llm, storage, settings); never
`wikirag.query` or `wikirag.cli`.
"""
