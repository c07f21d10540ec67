"""Reading the indexed graph back out: figures for `stats`, and GraphML/JSON for `export`.

The graph is read through LightRAG's storage API (`get_all_nodes` / `get_all_edges`), so this works on
every graph backend, not just the default GraphML file.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikirag.errors import ExportRefused, StoreNotFound
from wikirag.lightrag.engine import open_engine
from wikirag.settings import WikiragConfig
from wikirag.storage.fs import atomic_write_bytes
from wikirag.storage.ledger_store import ledger_store

SEP = "<SEP>"
EXPORT_FORMATS = ("graphml", "json")  # each also the file extension that names it


@dataclass
class Graph:
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


@dataclass
class GraphStats:
    nodes: int
    edges: int
    nodes_by_type: dict[str, int] = field(default_factory=dict)
    top_degree: list[tuple[str, int]] = field(default_factory=list)


def _require_store(config: WikiragConfig) -> None:
    if not ledger_store(config.storage, config.workspace_dir, config.workspace).exists():
        raise StoreNotFound.at(config.workspace_dir, config.vault)


async def read_graph(config: WikiragConfig, **engine_kwargs: Any) -> Graph:
    _require_store(config)
    async with open_engine(config, **engine_kwargs) as rag:
        graph = rag.chunk_entity_relation_graph
        nodes = await graph.get_all_nodes()
        edges = await graph.get_all_edges()
    nodes = sorted((_clean(n) for n in nodes), key=lambda n: n["id"])
    edges = [_clean(e) for e in edges]
    for edge in edges:  # the graph is undirected: give each edge one spelling
        edge["source"], edge["target"] = sorted((edge["source"], edge["target"]))
    edges.sort(key=lambda e: (e["source"], e["target"]))
    return Graph(nodes, edges)


def _clean(record: dict[str, Any]) -> dict[str, Any]:
    """Split LightRAG's <SEP>-joined lists so exported files hold real lists; drop timestamps."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key in {"created_at", "truncate"}:
            continue
        if key in {"source_id", "file_path"} and isinstance(value, str):
            out[key] = [v for v in value.split(SEP) if v]
        else:
            out[key] = value
    return out


def graph_stats(graph: Graph, top: int = 10) -> GraphStats:
    degree: Counter[str] = Counter()
    for edge in graph.edges:
        degree[edge["source"]] += 1
        degree[edge["target"]] += 1
    by_type = Counter(str(n.get("entity_type", "unknown")) for n in graph.nodes)
    return GraphStats(
        nodes=len(graph.nodes),
        edges=len(graph.edges),
        nodes_by_type=dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
        top_degree=sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:top],
    )


def json_document(graph: Graph) -> str:
    return json.dumps({"nodes": graph.nodes, "edges": graph.edges}, ensure_ascii=False, indent=2)


_NODE_KEYS = ("entity_type", "description", "source_id", "file_path")
_EDGE_KEYS = ("weight", "description", "keywords", "source_id", "file_path")


def graphml_document(graph: Graph) -> str:
    """GraphML that Gephi and yEd open, written by networkx; lists are joined by ' | '."""
    import networkx as nx

    def value(v: Any) -> Any:
        return " | ".join(v) if isinstance(v, list) else v if isinstance(v, (int, float)) else str(v)

    g = nx.Graph()
    for node in graph.nodes:
        g.add_node(node["id"], **{k: value(node[k]) for k in _NODE_KEYS if k in node})
    for edge in graph.edges:
        attrs = {k: value(edge[k]) for k in _EDGE_KEYS if k in edge}
        if "weight" in attrs:
            attrs["weight"] = float(attrs["weight"])
        g.add_edge(edge["source"], edge["target"], **attrs)
    return "\n".join(nx.generate_graphml(g, encoding="utf-8")) + "\n"


def graph_document(graph: Graph, fmt: str) -> str:
    """The export's text: GraphML or JSON."""
    _check_format(fmt)
    return graphml_document(graph) if fmt == "graphml" else json_document(graph)


def _check_format(fmt: str) -> None:
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use graphml or json")


def export_format(out: Path, fmt: str | None) -> str:
    """The format `export` writes to `out`: `fmt` when given, else the one the file's extension names
    (`.json`, `.graphml`), else GraphML. A format the extension contradicts is refused: GraphML in a .json
    file opens nowhere, and it was written silently."""
    named = out.suffix.lower().removeprefix(".")
    named = named if named in EXPORT_FORMATS and str(out) != "-" else None
    if fmt is None:
        return named or "graphml"
    chosen = fmt.strip().lower()
    if chosen not in EXPORT_FORMATS:
        raise ExportRefused(f"--format {fmt!r}: use graphml or json")
    if named and named != chosen:
        raise ExportRefused(f"--format {chosen} contradicts {out.name}: drop --format, or name the file "
                            f"{out.stem}.{chosen}")
    return chosen


def check_export_path(config: WikiragConfig, out: Path) -> Path:
    """Where the export is written: `out`, or the file a link at `out` points to (written through, the link
    kept). wikirag never writes into the user's notes: it goes outside the vault (or into its store); and it
    replaces only a plain file it may write (not a device such as /dev/full, a pipe or a read-only file)."""
    target, vault = out.resolve(), config.vault.resolve()
    if target.is_relative_to(vault) and not target.is_relative_to(config.store.resolve()):
        raise ExportRefused(f"{out}: inside the vault {config.vault}; wikirag never writes among your notes, "
                            "write the export somewhere else")
    if target.is_dir():
        raise ExportRefused(f"{out}: is a folder; give a file name")
    if not target.parent.is_dir():  # said before the graph is read, not as a traceback after
        raise ExportRefused(f"{out}: {out.parent} is not a folder that exists")
    if target.exists() and not target.is_file():
        raise ExportRefused(f"{out}: not a plain file (a device, pipe or socket); give a file name, or `-o -` "
                            "for standard output")
    if target.is_file() and not os.access(target, os.W_OK):
        raise ExportRefused(f"{out}: read-only; wikirag does not replace it")
    return target


def export_graph(config: WikiragConfig, out: Path, fmt: str, **engine_kwargs: Any) -> Graph:
    """Write the store's graph to `out` as a whole file (a crash leaves the old one), with the permissions a
    new file gets here (or those of the file it replaces)."""
    _check_format(fmt)  # before anything is read
    target = check_export_path(config, out)
    graph, document = export_document(config, fmt, **engine_kwargs)
    try:
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
        atomic_write_bytes(target, document.encode("utf-8"), mode=mode)
    except OSError as exc:  # no permission, a full disk: one line naming the file
        raise ExportRefused(f"{out}: cannot write it ({exc.strerror or exc})") from None
    return graph


def export_document(config: WikiragConfig, fmt: str, **engine_kwargs: Any) -> tuple[Graph, str]:
    """The graph and its export text, for `-o -` (standard output)."""
    _check_format(fmt)
    graph = asyncio.run(read_graph(config, **engine_kwargs))
    return graph, graph_document(graph, fmt)


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it; set back at once
    os.umask(mask)
    return mask


def store_graph_stats(config: WikiragConfig) -> GraphStats | None:
    """Graph figures for `wikirag stats`, or None when the vault has no index yet."""
    if not ledger_store(config.storage, config.workspace_dir, config.workspace).exists():
        return None
    return graph_stats(asyncio.run(read_graph(config)))
