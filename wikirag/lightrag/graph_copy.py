"""A fast-loading copy of the file store's graph, beside LightRAG's GraphML.

LightRAG's NetworkXStorage keeps the graph as GraphML, and networkx parses it slowly: about 3.5 s of a 5 s cold
query at 13,000 notes, paid again by every `wikirag index` run that opens the store. After LightRAG writes the
GraphML (`write_nx_graph`), wikirag writes the same nodes and edges as JSON beside it
(`wikirag_<graphml name>.json`), stamped with the GraphML's size, mtime and inode. `load_nx_graph` reads the
copy when its stamp still matches the GraphML, else the GraphML: the GraphML stays LightRAG's file of record,
and a copy that is stale, damaged or missing only costs the slow path.

The copy must give exactly the graph networkx's reader would: the same nodes, edges and attribute values (and
types), in the same order, down to each node's neighbour order, which LightRAG's lookups follow. Nodes and
edges are stored in the graph's own iteration order, and re-adding them in that order gives what the reader's
MultiGraph-then-Graph build gives (tested against it on random graphs). It is only written when the GraphML
round trip is lossless for the values at hand:
networkx writes with lxml (the ElementTree writer turns a `\\r` in text into `\\n`), and every value is a
string, a bool, a 64-bit integer or a finite float (tests/test_graph_copy.py compares both loaders).
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any

COPY_VERSION = 1
_INT64 = (-(2**63), 2**63 - 1)
_READER_GRAPH = {"node_default": {}, "edge_default": {}}  # the graph attributes networkx's reader always sets


def copy_path(graphml: str) -> str:
    folder, name = os.path.split(graphml)
    return os.path.join(folder, f"wikirag_{name}.json")


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _plain(value: Any) -> bool:
    """A value the GraphML round trip gives back unchanged, and JSON too."""
    if isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return _INT64[0] <= value <= _INT64[1]
    return type(value) is float and math.isfinite(value)


def write_copy(graph: Any, graphml: str) -> None:
    """Write the copy of `graph`, just written to `graphml`; remove any old copy when it cannot be exact."""
    import networkx as nx
    import orjson

    from wikirag.storage.fs import atomic_write_bytes

    target = copy_path(graphml)
    stamp = _stamp(graphml)
    nodes = [[node, data] for node, data in graph.nodes(data=True)]
    edges = [[u, v, data] for u, v, data in graph.edges(data=True)]  # re-added in this order: same adjacency
    lossless = (
        nx.write_graphml is nx.readwrite.graphml.write_graphml_lxml
        and type(graph) is nx.Graph
        and stamp is not None
        and all(k in _READER_GRAPH and v == {} for k, v in graph.graph.items())  # no key defaults to write
        and all(isinstance(n, str) and all(isinstance(k, str) and _plain(v) for k, v in d.items()) for n, d in nodes)
        and all(all(isinstance(k, str) and _plain(v) for k, v in d.items()) for _, _, d in edges)
    )
    if not lossless:
        _remove(target)
        return
    try:
        payload = orjson.dumps({"version": COPY_VERSION, "stamp": stamp, "nodes": nodes, "edges": edges})
    except TypeError:
        _remove(target)
        return
    from pathlib import Path

    atomic_write_bytes(Path(target), payload)


def read_copy(graphml: str) -> Any | None:
    """The graph from the copy, or None when there is no copy that matches the GraphML as it is now."""
    import networkx as nx
    import orjson

    stamp = _stamp(graphml)
    try:
        with open(copy_path(graphml), "rb") as handle:
            data = orjson.loads(handle.read())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != COPY_VERSION or stamp is None or data.get("stamp") != stamp:
        return None
    try:
        graph = nx.Graph(node_default={}, edge_default={})
        graph.add_nodes_from((node, attrs) for node, attrs in data["nodes"])
        graph.add_edges_from((u, v, attrs) for u, v, attrs in data["edges"])
    except (KeyError, TypeError, ValueError):
        return None
    return graph


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def install() -> None:
    """Route NetworkXStorage's GraphML load and write through the copy (once per process)."""
    from lightrag.kg.networkx_impl import NetworkXStorage

    if getattr(NetworkXStorage.load_nx_graph, "wikirag_copy", False):
        return
    load_graphml, write_graphml = NetworkXStorage.load_nx_graph, NetworkXStorage.write_nx_graph

    def load_nx_graph(file_name: str) -> Any:
        graph = read_copy(file_name)
        return graph if graph is not None else load_graphml(file_name)

    def write_nx_graph(graph: Any, file_name: str, workspace: str = "_") -> None:
        write_graphml(graph, file_name, workspace)
        write_copy(graph, file_name)

    load_nx_graph.wikirag_copy = True  # type: ignore[attr-defined]
    NetworkXStorage.load_nx_graph = staticmethod(load_nx_graph)
    NetworkXStorage.write_nx_graph = staticmethod(write_nx_graph)
