"""Which embedding model a store's vectors were made with: index, query and doctor all embed with it.

A store keeps the local model it was built with unless a setting names another (settings.follow_store_embedding);
its ledger head records the model's identity (storage.ledger_store.recorded_embedding).
"""

from __future__ import annotations

from wikirag.settings import WikiragConfig, follow_store_embedding
from wikirag.storage.ledger_store import recorded_embedding


def adopt_store_embedding(config: WikiragConfig) -> str | None:
    """Read the embedding the store recorded (its ledger head only) and follow it. Returns the recorded
    identity, or None when the workspace has no index yet."""
    recorded = recorded_embedding(config.storage, config.workspace_dir, config.workspace)
    follow_store_embedding(config, recorded)
    return recorded
