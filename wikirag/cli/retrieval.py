"""`wikirag search` and `wikirag mcp`: the everyday retrieval commands. Heavy modules load inside the
commands, so `wikirag --help` and a lexical search start fast."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from wikirag.cli.common import (
    ConfigOpt,
    JsonOpt,
    LLMOpt,
    StoreOpt,
    VaultOptionCommand,
    app,
    build_config,
    fail,
    vault_path,
)
from wikirag.errors import VaultNotFound, WikiragError


@app.command(cls=VaultOptionCommand)
def search(
    text: Annotated[str, typer.Argument(metavar="QUERY", help="Keywords or a question.", show_default=False)],
    *,
    vault: Annotated[
        Path | None, typer.Option("--vault", help="Vault (default: found from the current folder upwards).",
                                  parser=vault_path)
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100, help="How many notes.")] = 10,
    mode: Annotated[
        str, typer.Option("--mode", "-m", help="naive, mix, hybrid, local, global (LightRAG + BM25) or lexical.")
    ] = "naive",
    store: StoreOpt = None,
    config_file: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find notes: ranked notes with their best passages. No LLM call.

    BM25 over the notes' text, the notes named in the query (titles, aliases) and LightRAG's
    retrieval in the chosen mode (default naive: vector search over chunks, which loads no graph),
    fused by reciprocal rank. `--mode lexical` skips the embedding model: the fastest start.

    Example:

        wikirag search "diagonal board" --vault ~/Notes
        wikirag search "who broke Enigma" -m lexical --json
    """
    import asyncio

    from wikirag.query.engine import WarmEngine
    from wikirag.query.retrieve import find_vault

    chosen = mode.strip().lower()

    async def run() -> object:
        async with WarmEngine(config, graph=chosen not in ("naive", "lexical")) as engine:
            return await engine.search(text, limit=limit, mode=chosen)

    try:
        root = (vault.expanduser() if vault else None) or find_vault(Path.cwd())
        config = build_config(root, store=store, config_file=config_file)
        result = asyncio.run(run())
    except WikiragError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(asdict(result), ensure_ascii=False, indent=2))
        return
    from wikirag.cli.render_retrieval import render_search_result

    render_search_result(result)


@app.command()
def mcp(
    vault: Annotated[
        Path | None,
        typer.Argument(metavar="[VAULT]", help="The vault (default: found from the current folder upwards).",
                       show_default=False, parser=vault_path),
    ] = None,
    *,
    watch: Annotated[bool, typer.Option("--watch", help="Keep the index following the vault while serving.")] = False,
    store: StoreOpt = None,
    config_file: ConfigOpt = None,
    llm: LLMOpt = None,
) -> None:
    """Serve the vault's index to AI agents over MCP (stdio): search, query, get_note, neighbors, status.

    Example:

        wikirag mcp ~/Notes --watch

    Claude Desktop (claude_desktop_config.json; give absolute paths):

        {"mcpServers": {"wikirag": {"command": "/abs/path/wikirag",
                                    "args": ["mcp", "/Users/me/Notes"]}}}

    Claude Code:

        claude mcp add --scope user wikirag -- wikirag mcp ~/Notes
    """
    from wikirag.query.retrieve import find_vault

    try:
        root = (vault.expanduser() if vault else None) or find_vault(Path.cwd())
        config = build_config(root.resolve(), store=store.expanduser() if store else None,
                              config_file=config_file, llm=llm)
        llm_func = None
        if config.llm.model:
            from wikirag.llm.client import make_answer_llm_func

            llm_func = make_answer_llm_func(config.llm)
        if not watch:
            from wikirag.index.rebuild import refuse_unfinished
            from wikirag.storage.ledger_store import ledger_store

            refuse_unfinished(config)  # a rebuild cut short: its ledger may be gone, or hold some notes
            if not ledger_store(config.storage, config.workspace_dir, config.workspace).exists():
                VaultNotFound.unless_folder(config.vault)  # a mistyped vault is said to be missing
                fail(f"{config.workspace_dir}: no index here; run `wikirag index {config.vault}` first "
                     "(or start with --watch to index while serving)")
        else:  # another writer (index, watch, mcp --watch): said now in one line, not from inside the server
            from wikirag.index.run import StoreLock

            with StoreLock(config):
                pass
        from wikirag.index.store_model import adopt_store_embedding

        # A store built with another embedding, or (--watch writes) whose ledger was written to other servers:
        # one line now, not from inside the server. Without --watch it serves what the servers hold.
        adopt_store_embedding(config, writer=watch)
        from wikirag.cli.mcp_server import serve_stdio

        serve_stdio(config, watch=watch, llm_func=llm_func)
    except WikiragError as exc:
        fail(str(exc))
