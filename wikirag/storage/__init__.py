"""Where wikirag keeps its own state beside LightRAG's: backend settings, the ledger stores (a file
in the workspace folder, or rows in PostgreSQL), the one-writer lock, and file-system helpers (atomic writes,
the by-name store wipe).

May import: `wikirag.settings`, `wikirag.errors`.
"""
