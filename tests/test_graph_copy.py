"""The file store's graph loads from a JSON copy beside LightRAG's GraphML (lightrag/graph_copy.py): the copy
must give exactly what networkx's GraphML reader gives, and is never used when it does not match the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import networkx as nx
from typer.testing import CliRunner

from tests.storekit import copy_vault
from wikirag.cli import app
from wikirag.lightrag.graph_copy import copy_path, read_copy, write_copy
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"


def _same(a: nx.Graph, b: nx.Graph) -> None:
    """Equal nodes and edges, in the same order, with values of the same types."""
    assert type(a) is type(b) and a.graph == b.graph
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    assert list(a.edges(data=True)) == list(b.edges(data=True))
    for (_, x), (_, y) in zip(a.nodes(data=True), b.nodes(data=True), strict=True):
        assert {k: type(v) for k, v in x.items()} == {k: type(v) for k, v in y.items()}
    for (_, _, x), (_, _, y) in zip(a.edges(data=True), b.edges(data=True), strict=True):
        assert {k: type(v) for k, v in x.items()} == {k: type(v) for k, v in y.items()}


def _graphml(config) -> str:
    return str(config.workspace_dir / "graph_chunk_entity_relation.graphml")


def test_an_indexed_store_has_a_copy_equal_to_its_graphml_and_queries_read_the_same(tmp_path, fast_embedding,
                                                                                     monkeypatch):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    graphml = _graphml(load_config(vault))
    assert os.path.exists(copy_path(graphml))
    copied = read_copy(graphml)
    assert copied is not None and copied.number_of_nodes() > 40
    _same(nx.read_graphml(graphml), copied)

    ask = ["query", "Who worked with Alan Turing?", "--vault", str(vault), "--context-only", "--json", "-m", "hybrid"]

    def no_graphml(*args, **kwargs):
        raise AssertionError("the GraphML was parsed although its copy matches")

    monkeypatch.setattr(nx, "read_graphml", no_graphml)  # proves the query reads the copy
    with_copy = runner.invoke(app, ask)
    monkeypatch.undo()
    os.unlink(copy_path(graphml))
    without = runner.invoke(app, ask)
    assert with_copy.exit_code == without.exit_code == 0
    assert json.loads(with_copy.stdout) == json.loads(without.stdout)


def test_odd_values_round_trip_exactly_and_lossy_ones_get_no_copy(tmp_path):
    graph = nx.Graph()
    graph.add_node("Zürich\tcafé 暗号 🔐", description="line one\r\nline two\rthree  ", weight=2, ok=True)
    graph.add_node("plain", description="<b>&amp;</b> \"quoted\"", score=0.1 + 0.2)
    graph.add_edge("plain", "Zürich\tcafé 暗号 🔐", weight=1.0, keywords="a,b", source_id="x<SEP>y")
    graph.add_edge("plain", "third", weight=3, description="")
    path = str(tmp_path / "graph.graphml")
    nx.write_graphml(graph, path)
    write_copy(graph, path)
    _same(nx.read_graphml(path), read_copy(path))

    graph.nodes["plain"]["score"] = float("nan")  # GraphML gives NaN back, JSON cannot: no copy at all
    nx.write_graphml(graph, path)
    write_copy(graph, path)
    assert not os.path.exists(copy_path(path)) and read_copy(path) is None


def test_a_copy_that_does_not_match_the_graphml_is_not_read(tmp_path):
    graph = nx.Graph()
    graph.add_edge("a", "b", weight=1.0)
    path = str(tmp_path / "graph.graphml")
    nx.write_graphml(graph, path)
    write_copy(graph, path)
    assert read_copy(path) is not None

    graph.add_edge("b", "c", weight=2.0)  # the GraphML changes (another writer, or a crash before the copy)
    nx.write_graphml(graph, path)
    assert read_copy(path) is None
    Path(copy_path(path)).write_bytes(b"{not json")
    assert read_copy(path) is None


def test_neighbour_order_matches_the_graphml_reader_on_random_graphs(tmp_path):
    """The reader re-adds edges node by node (MultiGraph, then Graph): the copy's order must give the same
    neighbour order for every node, whatever order the nodes and edges were first added in."""
    import random

    for seed in range(5):
        rng = random.Random(seed)
        graph = nx.Graph()
        names = [f"n{i}" for i in range(60)]
        rng.shuffle(names)
        graph.add_nodes_from((n, {"entity_type": rng.choice(["person", "note"])}) for n in names[:40])
        for _ in range(150):
            u, v = rng.choice(names), rng.choice(names)  # unseen names and self-loops too
            graph.add_edge(u, v, weight=float(rng.randint(1, 5)), description=f"{u}-{v}")
        path = str(tmp_path / f"g{seed}.graphml")
        nx.write_graphml(graph, path)
        write_copy(graph, path)
        read, copied = nx.read_graphml(path), read_copy(path)
        _same(read, copied)
        assert all(list(read.adj[n]) == list(copied.adj[n]) for n in read)


def test_without_lxml_no_copy_is_written(tmp_path, monkeypatch):
    """networkx then writes with ElementTree, which turns a \\r in text into \\n on the way back."""
    import sys

    graph = nx.Graph()
    graph.add_node("a", description="x\ry")
    path = str(tmp_path / "graph.graphml")
    nx.write_graphml(graph, path)
    write_copy(graph, path)
    assert os.path.exists(copy_path(path))
    monkeypatch.setitem(sys.modules, "lxml.etree", None)  # import lxml.etree now raises ImportError
    nx.write_graphml(graph, path)
    write_copy(graph, path)
    assert not os.path.exists(copy_path(path))
    assert nx.read_graphml(path).nodes["a"]["description"] == "x\ny"  # what the copy would have got wrong


def test_a_copy_that_cannot_be_written_does_not_fail_the_graphs_commit(tmp_path, caplog):
    graph = nx.Graph()
    graph.add_edge("a", "b", weight=1.0)
    path = str(tmp_path / "graph.graphml")
    nx.write_graphml(graph, path)
    os.mkdir(copy_path(path))  # the copy's name is taken: the rename fails
    write_copy(graph, path)  # logs, does not raise
    assert "copy was not written" in caplog.text
    assert read_copy(path) is None and nx.read_graphml(path).number_of_edges() == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
