"""The commands that write the store: `index` once, `watch` to follow the vault. Like the rest of the CLI they
only translate: arguments into a library call (index.run, index.watch), progress and results into rendering."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

from wikirag.cli.common import (
    ConfigOpt,
    ExcludeOpt,
    JsonOpt,
    LLMOpt,
    RouteOpt,
    StoreOpt,
    VaultArg,
    app,
    build_config,
    fail,
    run_by_watch,
    stderr_console,
    stop_between_batches,
)
from wikirag.errors import VaultNotFound, WikiragError

# Written to a log or a pipe (no progress bar there), a progress line at most this often
LOG_EVERY_SECONDS = 15.0


@app.command()
def index(
    vault: VaultArg,
    *,
    store: StoreOpt = None,
    config_file: ConfigOpt = None,
    exclude: ExcludeOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="Drop this vault's index and build it again (LLM answers paid for are kept).",
    )] = False,
    drop_llm_cache: Annotated[bool, typer.Option(
        "--drop-llm-cache", help="With --rebuild: drop LightRAG's LLM cache too; extraction is asked anew.",
    )] = False,
    route: RouteOpt = None,
    llm: LLMOpt = None,
    llm_concurrency: Annotated[int | None, typer.Option("--llm-concurrency", help="LLM requests in flight.")] = None,
    budget: Annotated[
        float | None,
        typer.Option("--budget", metavar="USD", help="Extract only while the estimate fits; the rest wait."),
    ] = None,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Send extraction through the provider's batch API (OpenAI, Anthropic): about half "
        "price, answered within 24 h. Re-run after an interruption to pick up the same batch.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Index a vault into LightRAG: links and frontmatter become the graph, no LLM needed.

    Runs are incremental: only new, changed and deleted notes (and notes whose links now point
    elsewhere) are touched. With an LLM configured, notes routed to extraction go through LightRAG's
    extraction with their links as a hint; without one they wait as "pending extraction".

    Example:

        wikirag index ~/Notes
        wikirag index ~/Notes --dry-run --json
        wikirag index ~/Notes --llm openai:gpt-4o-mini --batch
    """
    from wikirag.cli.render import render_index_report
    from wikirag.storage.settings import scale_advice

    if drop_llm_cache and not rebuild:
        fail("--drop-llm-cache goes with --rebuild (an incremental run keeps every answer it can reuse)")
    try:
        config = build_config(vault, store=store, config_file=config_file, exclude=exclude, llm=llm,
                         llm_concurrency=llm_concurrency, route=route)
        # A watch writing this store runs a plain `index` itself (index/handoff.py); else it runs here.
        report = None if dry_run or rebuild or batch or budget is not None else run_by_watch(config)
        if report is None:
            from wikirag.index.run import run_index
            with stop_between_batches() as stop:
                if as_json:
                    report = run_index(config, dry_run=dry_run, rebuild=rebuild, budget_usd=budget, batch=batch,
                                       drop_llm_cache=drop_llm_cache, should_stop=stop.is_set)
                else:
                    console = stderr_console()
                    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), console=console, transient=True,
                                  disable=not console.is_terminal) as bar:  # no stray blank line in a log
                        task = bar.add_task("scanning", total=None)

                        logged = [time.monotonic()]  # a run shorter than that prints no progress line

                        def progress(stage: str, done: int, total: int) -> None:
                            bar.update(task, description=stage, completed=done, total=total)
                            if not console.is_terminal and time.monotonic() - logged[0] >= LOG_EVERY_SECONDS:
                                logged[0] = time.monotonic()  # a log or a pipe: a plain line now and then
                                console.print(f"[{done}/{total}] {stage}", markup=False, highlight=False)

                        report = run_index(config, dry_run=dry_run, rebuild=rebuild, progress=progress,
                                           budget_usd=budget, batch=batch, drop_llm_cache=drop_llm_cache,
                                           should_stop=stop.is_set)
    except WikiragError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(asdict(report), ensure_ascii=False, indent=2))
    else:
        render_index_report(report, Console())
    advice = scale_advice(config.storage, report.notes_total)
    if advice:
        stderr_console().print(advice, markup=False)
    if report.interrupted:
        raise typer.Exit(130)  # stopped early, as scripts expect of Ctrl-C; the store is whole


@app.command()
def watch(
    vault: VaultArg,
    *,
    store: StoreOpt = None,
    config_file: ConfigOpt = None,
    exclude: ExcludeOpt = None,
    quiet_seconds: Annotated[
        float, typer.Option("--quiet-seconds", help="Wait this long after the last change before indexing.")
    ] = 1.0,
    llm: LLMOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per batch, for scripts.")] = False,
) -> None:
    """Index, then follow the vault's changes until Ctrl-C (edits, new notes, renames, deletions).

    Example:

        wikirag watch ~/Notes
        wikirag watch ~/Notes --json | jq .notes_changed
    """
    import asyncio

    from wikirag.cli.render import watch_lines, watch_start_line, watch_status
    from wikirag.index.signals import stop_on_signals
    from wikirag.index.watch import watch_vault

    try:
        config = build_config(vault, store=store, config_file=config_file, exclude=exclude, llm=llm)
        VaultNotFound.unless_folder(config.vault)  # before the status line starts
        with stop_on_signals() as stop:  # SIGTERM and Ctrl-C: finish or stop between batches, exit 0
            if as_json:
                def emit(item: object) -> None:
                    typer.echo(json.dumps(asdict(item), ensure_ascii=False))

                asyncio.run(watch_vault(config, quiet_seconds=quiet_seconds, on_batch=emit, on_initial=emit,
                                        on_notice=lambda m: stderr_console().print(m, style="yellow", markup=False),
                                        stop=stop))
            else:
                console = Console(stderr=True)
                with Live(watch_status(None, str(vault), 0), console=console, refresh_per_second=4,
                          transient=True) as live:  # the status line goes when watch stops
                    asyncio.run(watch_vault(
                        config, quiet_seconds=quiet_seconds, stop=stop,
                        on_initial=lambda r: console.print(watch_start_line(r), markup=False),
                        on_batch=lambda b: (live.update(watch_status(b, str(vault), 0)),
                                            [console.print(line, markup=False) for line in watch_lines(b)]),
                        on_notice=lambda m: console.print(m, style="yellow", markup=False),
                    ))
        stderr_console().print("stopped; the next start catches up with anything changed meanwhile")
    except KeyboardInterrupt:  # a second Ctrl-C while stopping
        stderr_console().print("stopped; the next start catches up with anything changed meanwhile")
    except WikiragError as exc:
        fail(str(exc))
