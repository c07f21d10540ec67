"""The vault as Obsidian sees it: scanning and defensive reading of files, ignore rules, link
resolution (Obsidian's shortest-path rules), the in-memory Vault model kept current file by file, vault
statistics, and the garbage collector's pauses around big loads (`memory`).

May import: `wikirag.markdown`, `wikirag.models`, `wikirag.errors`. Nothing above it (no plan, index,
LightRAG or CLI).
"""
