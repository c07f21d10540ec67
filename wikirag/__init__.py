"""wikirag: LightRAG graph-RAG indexes built from Obsidian vaults, read exactly as Obsidian reads them."""

__version__ = "0.1.0"
