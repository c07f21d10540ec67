"""A fast-loading copy of the file store's graph, beside LightRAG's GraphML.

LightRAG's NetworkXStorage keeps the graph as GraphML, and networkx parses it slowly: about 3.5 s of a 5 s cold
query at 13,000 notes, paid again by every `wikirag index` run that opens the store. After LightRAG writes the
GraphML (`write_nx_graph`), wikirag writes the same nodes and edges as JSON beside it
(`wikirag_<graphml name>.json`), stamped with the GraphML's size, mtime, ctime and inode. `load_nx_graph` reads the
copy when its stamp still matches the GraphML, else the GraphML: the GraphML stays LightRAG's file of record,
and a copy that is stale, damaged or missing only costs the slow path.

The copy must give exactly the graph networkx's reader would: the same nodes, edges and attribute values (and
types), in the same order, down to each node's neighbour order, which LightRAG's lookups follow. Nodes and
edges are stored in the graph's own iteration order, and re-adding them in that order gives what the reader's
MultiGraph-then-Graph build gives (tested against it on random graphs). It is only written when the GraphML
round trip is lossless for the values at hand:
networkx writes with lxml (the ElementTree writer turns a `\\r` in text into `\\n`), and every value is a
string, a bool, a 64-bit integer or a finite float (tests/test_graph_copy.py compares both loaders). The stamp
is taken after the GraphML is in place; two processes writing one file store at once (which LightRAG's file
store does not support: one of them loses its writes) could leave a copy stamped with the other's file.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
from pathlib import Path
from typing import Any

from wikirag.storage.fs import atomic_write_bytes

COPY_VERSION = 2  # 2: the stamp holds the GraphML's ctime too, as strings
_INT64 = (-(2**63), 2**63 - 1)
_READER_GRAPH = ("node_default", "edge_default")  # graph attributes networkx's reader always sets, empty here
_install_lock = threading.Lock()
log = logging.getLogger("wikirag")


def copy_path(graphml: str) -> str:
    folder, name = os.path.split(graphml)
    return os.path.join(folder, f"wikirag_{name}.json")


def _stamp(path: str) -> list[str] | None:
    """Size, mtime, ctime and inode: a GraphML replaced by any writer (a new file, renamed into place) differs in
    one of them; ctime cannot be set back by `cp -p` or `rsync`. Strings: an inode may not fit 64 bits."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [str(st.st_size), str(st.st_mtime_ns), str(st.st_ctime_ns), str(st.st_ino)]


def _plain(value: Any) -> bool:
    """A value the GraphML round trip gives back unchanged, and JSON too."""
    if isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return _INT64[0] <= value <= _INT64[1]
    return type(value) is float and math.isfinite(value)


def _writes_with_lxml() -> bool:
    """networkx's `write_graphml` falls back to its ElementTree writer without lxml, and that one turns a `\r` in
    text into `\n` on the way back: then the copy could not be exact."""
    try:
        import lxml.etree  # noqa: F401
    except ImportError:
        return False
    return True


def write_copy(graph: Any, graphml: str) -> None:
    """Write the copy of `graph`, just written to `graphml`; remove any old copy when it cannot be exact. Never
    raises: the GraphML is already committed, and without a copy the next load only takes longer."""
    target = copy_path(graphml)
    try:
        payload = _payload(graph, graphml)
        if payload is None:
            _remove(target)
        else:
            # no fsync: a torn or lost copy only costs the slow path (LightRAG does not fsync its GraphML either)
            atomic_write_bytes(Path(target), payload, durable=False)
    except Exception as exc:  # noqa: BLE001  (a full disk, a permission, a locked file on Windows)
        log.warning("%s: the graph's fast-loading copy was not written (%s); the GraphML is read instead", target, exc)
        with contextlib.suppress(OSError):
            _remove(target)


def _payload(graph: Any, graphml: str) -> bytes | None:
    import networkx as nx
    import orjson

    stamp = _stamp(graphml)
    nodes = [[node, data] for node, data in graph.nodes(data=True)]
    edges = [[u, v, data] for u, v, data in graph.edges(data=True)]  # re-added in this order: same adjacency
    lossless = (
        _writes_with_lxml()
        and type(graph) is nx.Graph
        and stamp is not None
        and all(k in _READER_GRAPH and v == {} for k, v in graph.graph.items())  # no key defaults to write
        and all(isinstance(n, str) and all(isinstance(k, str) and _plain(v) for k, v in d.items()) for n, d in nodes)
        and all(all(isinstance(k, str) and _plain(v) for k, v in d.items()) for _, _, d in edges)
    )
    if not lossless:
        return None
    return orjson.dumps({"version": COPY_VERSION, "stamp": stamp, "nodes": nodes, "edges": edges})


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
        graph = nx.Graph(**{key: {} for key in _READER_GRAPH})
        graph.add_nodes_from((node, attrs) for node, attrs in data["nodes"] if isinstance(attrs, dict))
        graph.add_edges_from((u, v, attrs) for u, v, attrs in data["edges"] if isinstance(attrs, dict))
    except (KeyError, TypeError, ValueError):
        return None
    if graph.number_of_nodes() != len(data["nodes"]) or graph.number_of_edges() != len(data["edges"]):
        return None  # a malformed entry was left out: not the graph that was written
    return graph


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def install() -> None:
    """Route NetworkXStorage's GraphML load and write through the copy (once per process)."""
    from lightrag.kg.networkx_impl import NetworkXStorage

    with _install_lock:
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
