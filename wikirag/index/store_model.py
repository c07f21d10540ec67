"""Which embedding model a store's vectors were made with: index, query and doctor all embed with it.

A store keeps the local model it was built with unless a setting names another (settings.follow_store_embedding);
its ledger head records the model's identity (storage.ledger_store.recorded_embedding).
"""

from __future__ import annotations

from wikirag.errors import StoreMismatch
from wikirag.lightrag.embeddings import LOCAL_MODELS, MINILM_DIM
from wikirag.lightrag.engine import embedding_spec
from wikirag.settings import WikiragConfig, follow_store_embedding
from wikirag.storage.ledger_store import recorded_embedding


def adopt_store_embedding(config: WikiragConfig) -> str | None:
    """Read the embedding the store recorded (its ledger head only) and follow it. Returns the recorded
    identity, or None when the workspace has no index yet. A store built with another model or dimension than
    the settings name is refused in one line (StoreMismatch): a reader would embed questions that its vectors
    cannot be compared with (LightRAG's vector store failed with an assertion)."""
    recorded = recorded_embedding(config.storage, config.workspace_dir, config.workspace)
    follow_store_embedding(config, recorded)
    require_store_embedding(config, recorded)
    return recorded


def require_store_embedding(config: WikiragConfig, recorded: str | None) -> None:
    """Raise StoreMismatch when the store's recorded embedding identity is not the configured one."""
    problem = embedding_mismatch(recorded, embedding_spec(config).identity)
    if problem:
        raise StoreMismatch(f"{config.workspace_dir}: {problem}")


def embedding_mismatch(recorded: str | None, current: str) -> str | None:
    """What differs between the embedding identity a store recorded (`provider:model:dim`) and the configured
    one, and how to fix it; None when they agree or the store does not say."""
    if not recorded or recorded == current:
        return None
    model, _, dim = recorded.rpartition(":")
    current_model, _, current_dim = current.rpartition(":")
    said = f"built with embedding {recorded}, this run uses {current}; "
    if model in LOCAL_MODELS and dim != str(MINILM_DIM):  # recorded by a run that failed on a wrong dim
        return said + f"{model} has {MINILM_DIM} dimensions: run `wikirag index --rebuild` to re-embed"
    if model == current_model:
        return (said + f"the store's vectors have {dim} dimensions: set [embedding] dim = {dim} to keep them, "
                f"or run `wikirag index --rebuild` to re-embed with dim = {current_dim}")
    keep = f'[embedding] model = "{model}"' + (f" and dim = {dim}" if dim != current_dim else "")
    return (said + f"run `wikirag index --rebuild` to re-embed, set {keep} to keep the store's model, "
            "or use another --store")
