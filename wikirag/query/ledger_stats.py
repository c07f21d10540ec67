"""`wikirag stats`' graph figures from the ledger, the record every store entity and relation is derived from.

Opening LightRAG's stores to count nodes and edges means, on the file store, parsing all of them (≈11 s for
13,000 notes); the ledger (rows in SQLite or PostgreSQL) gives the same figures (tests/test_ledger_store.py).
"""

from __future__ import annotations

from collections import Counter

from wikirag.graph.merge import merge_entity
from wikirag.index.ledger import Ledger
from wikirag.query.export import GraphStats
from wikirag.settings import WikiragConfig
from wikirag.storage.ledger_store import ledger_store


def ledger_graph_stats(config: WikiragConfig) -> GraphStats | None:
    """The graph figures of the vault's index, from its ledger; None when the vault has no index yet."""
    store = ledger_store(config.storage, config.workspace_dir, config.workspace)
    if not store.exists():
        return None
    ledger = Ledger.load(store)
    entities, relations = ledger.entity_index(), ledger.relation_index()
    names = set(entities) | {n for key in relations for n in key}  # an endpoint without a record is a node too
    by_type = Counter(merge_entity(n, entities[n])["entity_type"] if n in entities else "UNKNOWN" for n in names)
    degree: Counter[str] = Counter()
    for a, b in relations:
        degree[a] += 1
        degree[b] += 1
    return GraphStats(nodes=len(names), edges=len(relations),
                      nodes_by_type=dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
                      top_degree=sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:10])
