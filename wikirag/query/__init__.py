"""Reading the index back: retrieval in LightRAG's modes with sources cited as notes, keyword
derivation from the vault's own names, and graph export.

May import: `wikirag.lightrag`, `wikirag.index` (the ledger), `wikirag.storage`, `wikirag.vault`,
`wikirag.settings`, `wikirag.models`, `wikirag.errors`.
"""
