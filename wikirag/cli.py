"""The `wikirag` command line. It only translates: library calls in, rendering and exit codes out."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from wikirag import __version__
from wikirag.errors import WikiragError
from wikirag.render import issue_line, render_stats
from wikirag.stats import compute_stats
from wikirag.vault import Vault

app = typer.Typer(
    name="wikirag",
    help="Graph RAG over Obsidian vaults: the graph comes from your [[wikilinks]].",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(message: str) -> NoReturn:
    """One line on stderr, exit status 1: how every user error ends."""
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(1)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"wikirag {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Show the version and exit."),
    ] = False,
) -> None:
    """Graph RAG over Obsidian vaults.

    Example:

        wikirag stats ~/Notes
    """


@app.command()
def stats(
    vault: Annotated[Path, typer.Argument(help="The Obsidian vault folder.", show_default=False)],
    *,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            metavar="GLOB",
            help="Leave out matching paths (repeatable): `drafts/**`, `*.excalidraw.md`, `Templates`.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Count a vault's notes, words and links, and list hubs, orphans and problems.

    Read problems go to stderr, one line per file; the run goes on.

    Example:

        wikirag stats ~/Notes --exclude "Templates/**" --json
    """
    try:
        result = compute_stats(Vault.load(vault, exclude or ()))
    except WikiragError as exc:
        fail(str(exc))
    err = Console(stderr=True, soft_wrap=True, highlight=False)
    for issue in result.read_issues:
        err.print(issue_line(issue), markup=False)
    if as_json:
        typer.echo(json.dumps(asdict(result), ensure_ascii=False, indent=2))
    else:
        render_stats(result, Console())


if __name__ == "__main__":
    app()
