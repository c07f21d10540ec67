"""What a store was built with and where it was written: index, query and doctor all embed with its embedding
model, and a writer writes only where its ledger says the data is.

A store keeps the local model it was built with unless a setting names another (follow_store_embedding);
its ledger head records the model's identity (storage.ledger_store.recorded_embedding) and the other servers its
storages were written to (StorageSettings.servers: NEO4J_URI, QDRANT_URL, ..., never a credential).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from wikirag.errors import StoreMismatch
from wikirag.index.rebuild import rebuild_pending, refuse_rebuilding, refuse_unfinished
from wikirag.lightrag.embeddings import LOCAL_MODELS, MINILM_DIM
from wikirag.lightrag.engine import embedding_spec
from wikirag.settings import WikiragConfig
from wikirag.storage.ledger_store import recorded_meta
from wikirag.storage.server_targets import DATABASE_VARS, target_form
from wikirag.storage.settings import TARGET_VARS, StorageSettings, storage_family


def adopt_store_embedding(config: WikiragConfig, *, writer: bool = False) -> str | None:
    """Read the embedding the store recorded (its ledger head only) and follow it. Returns the recorded
    identity, or None when the workspace has no index yet. A store built with another model or dimension than
    the settings name is refused in one line (StoreMismatch): a reader would embed questions that its vectors
    cannot be compared with (LightRAG's vector store failed with an assertion). A `writer` (index, watch) is
    also refused a store whose servers are not the ones the settings name (require_store_targets), from the
    same read: readers are not, they find what the servers hold. A writer finds nothing to follow or refuse
    while a `--rebuild` cut short is marked (index.rebuild): it finishes that wipe first and writes with the
    settings' model, as the rebuild asked, over a ledger that may still name the old one. A reader is refused
    a store whose rebuild was cut short (index.rebuild.refuse_unfinished): it holds some notes, or none."""
    if writer and rebuild_pending(config) is not None:
        return None
    if not writer:
        refuse_unfinished(config)
    meta = recorded_meta(config.storage, config.workspace_dir, config.workspace)
    if not writer:
        refuse_rebuilding(config, meta)  # one on another machine, with the ledger on PostgreSQL
    if writer and meta is not None:
        require_store_targets(config, meta.get("servers"))
    recorded = None if meta is None else meta.get("embedding") or ""
    follow_store_embedding(config, recorded)
    require_store_embedding(config, recorded)
    return recorded


def require_store_targets(config: WikiragConfig, recorded: Any) -> None:
    """Raise StoreMismatch when the ledger was written against other servers than the settings name: its
    notes are on those, so a run against these would find every note written and write nothing to them."""
    problem = targets_mismatch(recorded, config.storage)
    if problem:
        raise StoreMismatch(f"{config.workspace_dir}: {problem}")


def targets_mismatch(recorded: Any, settings: StorageSettings) -> str | None:
    """The first server or database that differs between what a ledger recorded (`{variable: target}`) and
    what `settings` name now, and how to fix it; None when they agree, or when the ledger records none (an
    older wikirag wrote it: the next write records the current ones)."""
    if not isinstance(recorded, Mapping):
        return None
    current = dict(settings.servers)
    for family in sorted(TARGET_VARS):
        roles = [role for role, name in settings.classes.items() if storage_family(name) == family]
        label = family.lower()
        for var in TARGET_VARS[family]:
            old = target_form(var, recorded[var]) if isinstance(recorded.get(var), str) and recorded[var] else None
            new = current.get(var)
            if old == new:
                continue
            what, place = (f"{label} database", "database") if var in DATABASE_VARS else (label, "server")
            if old and new:
                return (f"the index's {_listed(roles)} {_was(roles)} written to {what} {old}; {var} now names {new}: "
                        f"run `wikirag index --rebuild` to fill the new {place}, or point {var} back")
            if old and roles:
                return (f"the index's {_listed(roles)} {_was(roles)} written to {what} {old}; {var} is now unset "
                        f"(LightRAG's default): run `wikirag index --rebuild` to fill that, or set {var} back")
            if old:
                return (f"the index was written to {what} {old} ({var}); no storage uses {label} now: run "
                        "`wikirag index --rebuild` to fill the storages in use, or go back to the earlier [storage]")
            goes = "goes" if len(roles) == 1 else "go"
            return (f"the index was written without {var}; its {_listed(roles)} now {goes} to {what} {new}: "
                    f"run `wikirag index --rebuild` to fill the {place}, or go back to the earlier settings")
    return None


def _listed(roles: list[str]) -> str:
    """'graph', 'kv and doc_status', 'kv, vector and doc_status'."""
    return roles[0] if len(roles) == 1 else f"{', '.join(roles[:-1])} and {roles[-1]}"


def _was(roles: list[str]) -> str:
    return "was" if len(roles) == 1 else "were"


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


def follow_store_embedding(config: WikiragConfig, recorded: str | None) -> None:
    """Use the local model a store was built with (`recorded`, its identity `local:<model>:<dim>`) when no
    setting names a model. The default model changed once (MiniLM in float, then on int8 kernels): a store
    built before must keep answering queries and taking edits with its own model, not stop every run with a
    model-mismatch error or, worse, embed questions with another model than its vectors. A model named in a
    setting is never overridden (a mismatch then stays an error that says how to rebuild)."""
    if config.embedding_model_given or not recorded or not recorded.startswith("local:"):
        return
    model, _, dim = recorded.rpartition(":")
    if model != config.embedding.model and dim.isdigit():
        config.embedding = replace(config.embedding, model=model, dim=int(dim))
