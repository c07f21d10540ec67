"""The `wikirag` commands. Each only translates: arguments into a library call, its result into a
rendering and an exit code."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from wikirag.cli.common import (
    ConfigOpt,
    ExcludeOpt,
    JsonOpt,
    LLMOpt,
    RouteOpt,
    StoreOpt,
    VaultArg,
    VaultOptionCommand,
    app,
    build_config,
    fail,
    stderr_console,
    vault_path,
)
from wikirag.errors import WikiragError

# `query` when the LLM failed (unreachable, key refused, rate limited, 5xx): the retrieved context was shown
# without an answer, or the answer stopped part way. 1 stays every other error's, 2 Click's usage errors.
ANSWER_FAILED = 3
INDENTED_JSON_NOTES = 2000  # cost-estimate --json indents up to this many notes (for reading by eye)


@app.command()
def stats(
    vault: VaultArg,
    *,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            metavar="GLOB",
            help="Leave out matching paths (repeatable): `drafts/**`, `*.excalidraw.md`, `Templates`.",
        ),
    ] = None,
    store: Annotated[
        Path | None, typer.Option("--store", help="Store folder whose graph to describe (default: VAULT/.wikirag).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Count a vault's notes, words and links, and list hubs, orphans and problems.

    Once the vault is indexed, the graph's figures follow (nodes, edges, types, top entities).
    Read problems go to stderr, one line per file; the run goes on.

    Example:

        wikirag stats ~/Notes --exclude "Templates/**" --json
    """
    from wikirag.cli.render import issue_line, render_graph_stats, render_stats
    from wikirag.index.reads import read_vault
    from wikirag.query.ledger_stats import ledger_graph_stats
    from wikirag.vault.stats import compute_stats

    try:
        config = build_config(vault, store=store, exclude=exclude)  # the toml's `exclude` counts too
        result = compute_stats(read_vault(config)[0])  # through the index's parse cache, when there is one
        graph = ledger_graph_stats(config)  # the ledger, not LightRAG's stores: same figures, no store load
    except WikiragError as exc:
        fail(str(exc))
    err = Console(stderr=True, soft_wrap=True, highlight=False)
    for issue in result.read_issues:
        err.print(issue_line(issue), markup=False)
    if as_json:
        payload = asdict(result)
        payload["graph"] = asdict(graph) if graph else None
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        render_stats(result, Console())
        if graph:
            render_graph_stats(graph, Console())


@app.command(cls=VaultOptionCommand)
def query(
    question: Annotated[str, typer.Argument(help="The question.", show_default=False)],
    *,
    # query.retrieve.DEFAULT_MODE (not imported here: it would load the query pipeline for every command)
    mode: Annotated[str, typer.Option("--mode", "-m", help="naive, local, global, hybrid, mix or bypass.")] = "mix",
    vault: Annotated[
        Path | None, typer.Option("--vault", help="Vault (default: found from the current folder upwards).",
                                  parser=vault_path)
    ] = None,
    store: StoreOpt = None,
    config_file: ConfigOpt = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, help="Entities/relations to retrieve.")] = None,
    chunk_top_k: Annotated[int | None, typer.Option("--chunk-top-k", min=1, help="Chunks to retrieve.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1, help="Token budget for the context.")] = None,
    response_type: Annotated[
        str | None, typer.Option("--response-type", help='Answer shape, e.g. "Bullet Points".')
    ] = None,
    stream: Annotated[bool, typer.Option("--stream", help="Print the answer as it arrives.")] = False,
    context_only: Annotated[
        bool, typer.Option("--context-only", help="Retrieve and show context; no LLM answer.")
    ] = False,
    no_fusion: Annotated[
        bool, typer.Option("--no-fusion", help="Rank sources by LightRAG's context alone (no BM25, no names).")
    ] = False,
    llm: LLMOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask the index a question; cites the notes the answer came from.

    Without an LLM the retrieved context (entities, relations, chunks and their notes) is shown
    instead of an answer, with keywords taken from the vault's own names. When the LLM fails
    (unreachable, key refused, rate limited), that context is shown with a warning, exit status 3.

    Example:

        wikirag query "Who designed the Bombe?" -m hybrid
        wikirag query "cipher machines" -m naive --context-only --json
    """
    from wikirag.cli.render_retrieval import render_query_result
    from wikirag.query.retrieve import ask, find_vault

    try:
        root = vault or find_vault(Path.cwd())
        config = build_config(root, store=store, config_file=config_file, llm=llm)
        llm_func = None
        if config.llm.model and not context_only:
            from wikirag.llm.client import make_answer_llm_func

            llm_func = make_answer_llm_func(config.llm)
        on_token = (lambda piece: typer.echo(piece, nl=False)) if stream and llm_func and not as_json else None
        result = ask(config, question, mode=mode, top_k=top_k, chunk_top_k=chunk_top_k,
                     max_total_tokens=max_tokens, response_type=response_type, context_only=context_only,
                     llm_func=llm_func, on_token=on_token, fusion=not no_fusion)
    except WikiragError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(asdict(result), ensure_ascii=False, indent=2, default=str))
    else:
        if on_token:
            typer.echo()
        render_query_result(result, Console(), answer_streamed=on_token is not None)
    if result.answer_failed:
        # on stderr too, so that a script reading stdout (or the JSON) learns it; not twice on one terminal,
        # where "No answer generated: …" already said it (a stream cut part way did not)
        shown = not as_json and result.answer is None and sys.stdout.isatty()
        if not shown:
            typer.echo(f"Warning: {result.no_answer_reason}", err=True)
        raise typer.Exit(ANSWER_FAILED)


@app.command("cost-estimate")
def cost_estimate(
    vault: VaultArg,
    *,
    config_file: ConfigOpt = None,
    exclude: ExcludeOpt = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Price with this model (default: the LLM configured, or gpt-4o-mini).")
    ] = None,
    price_in: Annotated[float | None, typer.Option("--price-in", min=0, help="USD per 1M input tokens.")] = None,
    price_out: Annotated[float | None, typer.Option("--price-out", min=0, help="USD per 1M output tokens.")] = None,
    route: RouteOpt = None,
    top: Annotated[int, typer.Option("--top", min=0, help="How many of the most expensive notes to list.")] = 10,
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="One row per note, for spreadsheets.")] = False,
) -> None:
    """Estimate what indexing would cost in LLM calls, tokens and money, before spending any.

    Compares vanilla LightRAG (every note extracted), wikirag's routed plan, and links only.
    Reads nothing but the vault: no store, no LLM, no network.

    Example:

        wikirag cost-estimate ~/Notes --model gpt-4o-mini
        wikirag cost-estimate ~/Notes --csv > costs.csv
    """
    from wikirag.cli.render import render_cost_estimate
    from wikirag.index.reads import estimate_cost
    from wikirag.plan.results import csv_rows

    try:
        config = build_config(vault, config_file=config_file, exclude=exclude, route=route)
        values = {k: v for k, v in {"model": model, "price_in": price_in, "price_out": price_out}.items()
                  if v is not None}  # a price of 0 is a price (a local model)
        estimate = estimate_cost(config, values)
    except WikiragError as exc:
        fail(str(exc))
    if as_json and estimate.note_count <= INDENTED_JSON_NOTES:
        typer.echo(json.dumps(estimate, default=vars, ensure_ascii=False, indent=2))
    elif as_json:  # megabytes of rows on one line: orjson writes 13,000 notes' in 0.04 s, json 0.28 s
        import orjson

        typer.echo(orjson.dumps(estimate, default=vars))  # UTF-8 bytes, written as they are (no str round trip)
    elif as_csv:
        import csv
        import sys

        header, rows = csv_rows(estimate)
        writer = csv.writer(sys.stdout)
        writer.writerow(header)
        writer.writerows(rows)
    else:
        render_cost_estimate(estimate, Console(), top=top)


@app.command(cls=VaultOptionCommand)
def export(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.", show_default=False)],
    *,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="graphml (Gephi, yEd) or json (default: the file's extension, else graphml).",
                     show_default=False),
    ] = None,
    vault: Annotated[Path | None, typer.Option("--vault", help="Vault (default: found upwards).",
                                               parser=vault_path)] = None,
    store: StoreOpt = None,
) -> None:
    """Write the indexed graph to a file (`-o -`: to standard output).

    Example:

        wikirag export --vault ~/Notes -o notes.graphml
        wikirag export --format json -o - | jq '.nodes | length'
    """
    from wikirag.query.export import export_document, export_format, export_graph
    from wikirag.query.retrieve import find_vault

    try:
        fmt = export_format(output, fmt)
        config = build_config(vault or find_vault(Path.cwd()), store=store)
        if str(output) == "-":
            graph, document = export_document(config, fmt)
            typer.echo(document, nl=False)
            stderr_console().print(f"wrote {len(graph.nodes)} nodes and {len(graph.edges)} edges to standard output")
            return
        graph = export_graph(config, output, fmt)
    except WikiragError as exc:
        fail(str(exc))
    typer.echo(f"wrote {len(graph.nodes)} nodes and {len(graph.edges)} edges to {output}")


@app.command()
def doctor(
    vault: VaultArg = Path("."),
    *,
    store: StoreOpt = None,
    config_file: ConfigOpt = None,
    llm: LLMOpt = None,
    check_llm: Annotated[bool, typer.Option("--check-llm", help="Make one tiny LLM call.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check the setup end to end: vault, tokenizer files, embedding model, store, LLM.

    Example:

        wikirag doctor ~/Notes --check-llm
    """
    from wikirag.cli.doctor import run_doctor
    from wikirag.cli.render import render_doctor

    try:
        config = build_config(vault, store=store, config_file=config_file, llm=llm)
        report = run_doctor(config, check_llm_call=check_llm)
    except WikiragError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(asdict(report), ensure_ascii=False, indent=2))
    else:
        render_doctor(report, Console())
    if not report.ok:
        raise typer.Exit(1)

