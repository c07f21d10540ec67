"""Readers of a store whose `wikirag index --rebuild` was cut short (index/rebuild.py): during its wipe, or after
it while the notes were being written again (embedded with a new model, say, when the embedding API went down).
`search` and `query` said "no index here" for the first, and for the second answered from the few notes written
so far as if the index were whole. Both are one line now, naming `wikirag index`, which finishes the rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, copy_vault
from tests.test_index import rebuild_killed_mid_wipe
from wikirag.cli import app
from wikirag.errors import EmbeddingFailed
from wikirag.index.rebuild import REBUILD_MARKER
from wikirag.index.run import run_index
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
READERS = (["search", "Bombe"], ["search", "Bombe", "--mode", "lexical"],
           ["query", "Who built the Bombe?", "--context-only"])


@pytest.fixture
def indexed(tmp_path: Path, fast_embedding):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    assert CliRunner().invoke(app, ["index", str(vault)]).exit_code == 0
    return vault, load_config(vault)


def _failing_after(calls: int):
    from lightrag.utils import EmbeddingFunc

    inner, made = HashEmbedding(), []

    async def embed(texts, **_):
        made.append(texts)
        if len(made) > calls:
            raise EmbeddingFailed("embedding with hash-test failed: ConnectError: the server went away")
        return await inner(texts)

    return EmbeddingFunc(embedding_dim=384, func=embed, model_name="hash-test")


def _refused_in_one_line(vault: Path, config) -> None:
    for command in [*READERS, ["mcp"]]:  # mcp without --watch: before it serves
        where = [str(vault)] if command == ["mcp"] else ["--vault", str(vault)]
        result = CliRunner().invoke(app, [*command, *where])
        assert result.exit_code == 1, (command, result.output)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert lines == [f"Error: {config.workspace_dir}: a `wikirag index --rebuild` was cut short, so the index "
                         f"is incomplete; run `wikirag index {config.vault}` to finish it"], (command, result.output)


def _finished_by_the_next_index(vault: Path, config) -> None:
    assert CliRunner().invoke(app, ["index", str(vault)]).exit_code == 0
    assert not (config.workspace_dir / REBUILD_MARKER).exists()
    for command in READERS:
        result = CliRunner().invoke(app, [*command, "--vault", str(vault)])
        assert result.exit_code == 0 and "Bombe" in result.output, (command, result.output)


def test_readers_of_a_rebuild_cut_short_in_its_wipe_are_told_to_run_index(indexed, monkeypatch):
    vault, config = indexed
    rebuild_killed_mid_wipe(config, vault, monkeypatch)
    _refused_in_one_line(vault, config)
    _finished_by_the_next_index(vault, config)


def test_readers_of_a_rebuild_cut_short_while_it_wrote_are_told_to_run_index(indexed):
    vault, config = indexed
    with pytest.raises(EmbeddingFailed):
        run_index(config, rebuild=True, embedding_func=_failing_after(3))
    _refused_in_one_line(vault, config)
    _finished_by_the_next_index(vault, config)


def test_a_rebuild_that_finishes_leaves_no_marker_and_readers_read(indexed):
    vault, config = indexed
    assert CliRunner().invoke(app, ["index", str(vault), "--rebuild"]).exit_code == 0
    assert not (config.workspace_dir / REBUILD_MARKER).exists()
    result = CliRunner().invoke(app, ["search", "Bombe", "--vault", str(vault)])
    assert result.exit_code == 0 and "Bombe" in result.output, result.output


def test_readers_of_a_rebuild_still_running_are_told_to_wait(indexed, tmp_path):
    """The marker names the process writing it: while that process runs, a reader is told the rebuild is running
    (not that it was cut short, which would send the user to start a second writer); once it is gone, cut short."""
    import json
    import socket
    import subprocess
    import sys

    vault, config = indexed
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    marker = config.workspace_dir / REBUILD_MARKER
    try:
        marker.write_text(json.dumps({"wiped": True, "pid": writer.pid, "host": socket.gethostname()}))
        result = CliRunner().invoke(app, ["search", "Bombe", "--vault", str(vault)])
        assert result.exit_code == 1 and result.output.strip().count("\n") == 0, result.output
        assert f"a `wikirag index --rebuild` is running (process {writer.pid})" in result.output, result.output
    finally:
        writer.kill()
        writer.wait()
    result = CliRunner().invoke(app, ["search", "Bombe", "--vault", str(vault)])
    assert result.exit_code == 1 and "was cut short" in result.output, result.output
    marker.write_text(json.dumps({"wiped": True, "pid": writer.pid, "host": "another-machine"}))
    result = CliRunner().invoke(app, ["search", "Bombe", "--vault", str(vault)])
    assert result.exit_code == 1 and "was cut short" in result.output, result.output
