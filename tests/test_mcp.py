"""`wikirag mcp` driven over real stdio by the official SDK's own client: every tool, and bad arguments
coming back as tool errors while the server lives on."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from tests.storekit import HashEmbedding, copy_vault  # noqa: E402
from wikirag.index.ledger import Ledger  # noqa: E402
from wikirag.index.run import run_index  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_vault"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def built_vault(tmp_path_factory) -> Path:
    vault = copy_vault(SAMPLE, tmp_path_factory.mktemp("mcp") / "vault")
    run_index(load_config(vault), embedding_func=HashEmbedding().func())
    return vault


def _params(vault: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIRAG_")}
    env["PYTHONPATH"] = str(ROOT)
    return StdioServerParameters(command=sys.executable, args=[str(ROOT / "tests" / "mcp_entry.py"), str(vault)],
                                 env=env, cwd=str(ROOT))


@pytest.mark.anyio
async def test_every_tool_over_stdio(built_vault):
    async with stdio_client(_params(built_vault)) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "wikirag"
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"search", "query", "get_note", "neighbors", "status"}
        for tool in tools.values():
            assert tool.annotations.read_only_hint is True and tool.output_schema is not None
        # the output schemas are the library's result dataclasses, field for field (they cannot drift apart)
        from dataclasses import fields

        from wikirag.query.engine import Neighbours, NoteText, StoreStatus
        from wikirag.query.search import SearchHit, SearchResult

        def names(cls) -> set[str]:
            return {f.name for f in fields(cls)}

        schema = tools["search"].output_schema
        assert set(schema["properties"]) == names(SearchResult)
        assert set(schema["$defs"]["Hit"]["properties"]) == names(SearchHit)
        assert "lexical (BM25)" in schema["$defs"]["Hit"]["properties"]["matched_by"]["description"]
        for tool, cls in (("get_note", NoteText), ("neighbors", Neighbours), ("status", StoreStatus)):
            assert set(tools[tool].output_schema["properties"]) == names(cls), tool

        r = await session.call_tool("search", {"query": "Who added the diagonal board to the Bombe?", "limit": 5})
        assert not r.is_error, r.content
        hits = r.structured_content["hits"]
        assert {"people/Gordon Welchman.md", "projects/Bombe.md"} <= {h["path"] for h in hits}
        top = hits[0]
        assert top["obsidian_uri"].startswith("obsidian://open?vault=vault&file=") and top["passages"]
        assert set(top["matched_by"]) <= {"names", "lexical", "lightrag", "anchor"}

        r = await session.call_tool("search", {"query": "diagonal board", "mode": "lexical", "limit": 3})
        assert r.structured_content["hits"][0]["path"] in {"people/Gordon Welchman.md", "projects/Bombe.md"}
        assert r.structured_content["hits"][0]["matched_by"][0] == "lexical"  # no LightRAG in lexical mode:
        assert set(r.structured_content["hits"][0]["matched_by"]) <= {"lexical", "anchor", "names"}

        r = await session.call_tool("query", {"question": "Who designed the Bombe?", "mode": "hybrid"})
        assert not r.is_error, r.content
        out = r.structured_content
        assert out["answer"] is None and "no LLM" in out["no_answer_reason"]
        assert out["sources"] and all(s["obsidian_uri"].startswith("obsidian://") for s in out["sources"])
        relations = [f for f in out["facts"] if f["kind"] == "relation"]
        assert relations and any(f["origin"] == "link" for f in relations)
        assert all(f["origin"] in {"link", "llm", "unknown"} for f in out["facts"])

        r = await session.call_tool("get_note", {"path_or_title": "turing"})  # an alias, any case
        note = r.structured_content
        assert note["path"] == "people/Alan Turing.md" and "Turing" in note["content"]
        assert isinstance(note["properties"], dict) and note["obsidian_uri"].endswith("Alan%20Turing")
        assert note["next_offset"] is None and note["total_chars"] == len(note["content"]) > 1000
        r = await session.call_tool("get_note", {"path_or_title": "turing", "offset": 1000, "max_chars": 1000})
        page = r.structured_content  # a page: the characters from 1000, the rest's offset when there is one
        assert page["content"] == note["content"][1000:2000]
        assert page["next_offset"] == (2000 if note["total_chars"] > 2000 else None)

        r = await session.call_tool("neighbors", {"note": "Bombe", "depth": 2})
        n = r.structured_content
        assert n["path"] == "projects/Bombe.md"
        assert any(link["note"] == "people/Alan Turing.md" and link["origin"] == "link" for link in n["links"])
        assert any(b["note"] == "people/Gordon Welchman.md" for b in n["backlinks"])
        assert n["graph"] and all(g["depth"] == 2 for g in n["graph"])
        r = await session.call_tool("neighbors", {"note": "Bombe", "depth": 2, "limit": 1})
        capped = r.structured_content
        assert len(capped["graph"]) == 1 and capped["graph_total"] == len(n["graph"]) > 1

        r = await session.call_tool("status", {})
        status = r.structured_content
        indexed = Ledger.load(load_config(built_vault).workspace_dir).notes
        assert status["notes"] == len(indexed) and status["lexical_index"] is True
        assert status["indexed"] + status["pending_extraction"] + status["failed"] == len(indexed)
        assert status["vault"] == str(built_vault.resolve()) and status["last_run"]["finished_at"]
        assert status["stale_notes"] == 0 and status["watching"] is False and status["unfinished"] is None

        # bad arguments and unknown notes: error results, the server lives on
        for name, args, needle in [
            ("search", {"query": "x", "limit": 0}, "limit"),
            ("search", {"query": "x", "mode": "bogus"}, "mode"),
            ("search", {}, "query"),
            ("get_note", {"path_or_title": "No such note"}, "no note named"),
            ("neighbors", {"note": "Bombe", "depth": 9}, "depth"),
            ("query", {"question": "x", "mode": "bypass"}, "mode"),
        ]:
            r = await session.call_tool(name, args)
            assert r.is_error, (name, args)
            assert needle in r.content[0].text, r.content[0].text
        huge = await session.call_tool("get_note", {"path_or_title": "y" * 200_000})
        assert huge.is_error and "no note named" in huge.content[0].text
        assert len(huge.content[0].text) < 2_000  # the name is not echoed whole
        r = await session.call_tool("status", {})
        assert not r.is_error


@pytest.mark.anyio
async def test_query_with_an_unreachable_llm_returns_the_context_and_the_reason(built_vault):
    """Not a tool error: the agent gets the retrieved context, `answer_failed` and why (never the key)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    key = "sk-fake-mcp-0123456789abcdef"
    params = _params(built_vault)
    params.env |= {"WIKIRAG_LLM": "openai:gpt-4o-mini", "WIKIRAG_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1",
                   "WIKIRAG_LLM_MAX_RETRIES": "0", "OPENAI_API_KEY": key}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        r = await session.call_tool("query", {"question": "Who designed the Bombe?", "mode": "hybrid"})
        assert not r.is_error, r.content
        out = r.structured_content
        assert out["answer"] is None and out["answer_failed"] is True
        assert "openai:gpt-4o-mini: APIConnectionError" in out["no_answer_reason"]
        assert out["passages"] and out["sources"] and key not in str(r.content)


@pytest.mark.anyio
async def test_query_with_a_working_llm_answers(built_vault):
    """The served engine's LightRAG asks the configured LLM (it was opened without one, and every query with an
    LLM failed with "this step needs an LLM")."""
    from tests.fakeapi import FakeAPI

    with FakeAPI() as api:
        params = _params(built_vault)
        params.env |= {"WIKIRAG_LLM": "openai:gpt-4o-mini", "WIKIRAG_LLM_BASE_URL": api.openai_base_url,
                       "OPENAI_API_KEY": "sk-fake-mcp-0123456789abcdef"}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            r = await session.call_tool("query", {"question": "Who designed the Bombe?", "mode": "hybrid"})
        assert not r.is_error, r.content
        assert "fake answer" in r.structured_content["answer"] and not r.structured_content["answer_failed"]


@pytest.mark.anyio
async def test_watch_keeps_the_served_index_following_the_vault(tmp_path):
    """`--watch`: a fresh vault is indexed while serving, and a saved edit becomes searchable."""
    import anyio

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Alpha.md").write_text("# Alpha\n\nThe first note.\n", encoding="utf-8")
    (vault / "Beta.md").write_text("# Beta\n\nLinks to [[Alpha]].\n", encoding="utf-8")
    params = _params(vault)
    params.args.append("--watch")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        status = (await session.call_tool("status", {})).structured_content
        assert status["watching"] is True and status["notes"] == 2
        (vault / "Alpha.md").write_text("# Alpha\n\nA xylophonic melody.\n", encoding="utf-8")
        found = []
        with anyio.move_on_after(300):  # the search itself is the signal; this only ends a stuck watcher's wait
            while not found:
                await anyio.sleep(0.5)
                r = await session.call_tool("search", {"query": "xylophonic", "mode": "lexical"})
                found = [h["path"] for h in r.structured_content["hits"]]
        assert found == ["Alpha.md"]


@pytest.mark.anyio
async def test_watch_finishes_a_rebuild_cut_short_with_the_settings_new_model(tmp_path, monkeypatch):
    """The embedding model changed in the settings, then `index --rebuild` was killed before it deleted the
    ledger: `mcp --watch` refused to start (the old ledger's model against the settings', "run `wikirag index
    --rebuild`"), though the watch it runs finishes the marked rebuild with the settings' model."""
    import anyio

    from wikirag.index import rebuild
    from wikirag.index.run import index_vault
    from wikirag.storage.ledger_store import recorded_meta

    other = "local:all-MiniLM-L6-v2-onnx-int8"  # the default model's float twin: another identity, 384 wide
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    await index_vault(load_config(vault), embedding_func=HashEmbedding().func())
    monkeypatch.setenv("WIKIRAG_EMBEDDING", other)
    config = load_config(vault)
    assert recorded_meta(config.storage, config.workspace_dir, config.workspace)["embedding"] != f"{other}:384"

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed before the ledger was deleted")

    with monkeypatch.context() as patched:
        patched.setattr(rebuild, "wipe_store_files", killed)
        with pytest.raises(KeyboardInterrupt):
            await index_vault(config, rebuild=True, embedding_func=HashEmbedding().func())
    assert (config.workspace_dir / rebuild.REBUILD_MARKER).exists()
    params = _params(vault)
    params.args.append("--watch")
    params.env["WIKIRAG_EMBEDDING"] = other
    with anyio.fail_after(300):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            status = (await session.call_tool("status", {})).structured_content
    assert status["watching"] is True and status["notes"] > 40
    assert recorded_meta(config.storage, config.workspace_dir, config.workspace)["embedding"] == f"{other}:384"
    assert not (config.workspace_dir / rebuild.REBUILD_MARKER).exists()


def test_mcp_watch_beside_another_writer_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from wikirag.cli import app
    from wikirag.index.run import StoreLock

    vault = copy_vault(Path(__file__).resolve().parent.parent / "sample_vault", tmp_path / "vault")
    config = load_config(vault, store=tmp_path / "store")
    with StoreLock(config):  # an `index` or `watch` writing the store
        result = CliRunner().invoke(app, ["mcp", str(vault), "--store", str(tmp_path / "store"), "--watch"])
    assert result.exit_code == 1 and "another wikirag process" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_mcp_watch_logs_what_each_batch_did(capsys):
    from wikirag.cli.mcp_server import _log_batch
    from wikirag.index.watch import BatchReport

    counts = dict(paths_touched=20, notes_changed=1, notes_deleted=0, notes_new=19, entities_written=0,
                  entities_deleted=0, relations_written=0, relations_deleted=0, chunks_written=0, chunks_deleted=0,
                  entities=0, relations=0, seconds=0.1)
    _log_batch(BatchReport(batch=3, **counts, issues=["a.md: 2 NUL bytes removed"]))
    _log_batch(BatchReport(batch=4, **counts, error="OSError: disk full"))
    assert capsys.readouterr().err.splitlines() == [
        "wikirag watch: batch 3: +19 new ~1 changed -0 deleted", "wikirag watch: a.md: 2 NUL bytes removed",
        "wikirag watch: batch 4 failed, retrying with backoff: OSError: disk full"]
