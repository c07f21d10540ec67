"""What every command shares: the Typer app, the one-line failure, the shared options and the config they
build. Command modules register on `app`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from typer.core import TyperCommand

from wikirag import __version__
from wikirag.settings import WikiragConfig, load_config

if TYPE_CHECKING:
    from wikirag.index.report import IndexReport

app = typer.Typer(
    name="wikirag",
    help="Graph RAG over Obsidian vaults: the graph comes from your \\[\\[wikilinks]].",
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


class VaultOptionCommand(TyperCommand):
    """A command that takes its vault as `--vault`: a folder given as an extra argument (`wikirag query Bombe
    ~/Notes`, as `index ~/Notes` takes it) gets a hint after click's "unexpected extra argument"."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        given = list(args)  # the parser consumes the list
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:  # click's UsageError, known by its message: Typer 0.28 carries its own click
            message = getattr(exc, "message", None)
            if isinstance(message, str) and message.startswith("Got unexpected extra argument"):
                extras = f" {message[message.find(' (') + 2:-1]} "  # click names them in parentheses
                folder = next((a for a in given if f" {a} " in extras and Path(a).expanduser().is_dir()), None)
                if folder is not None:
                    exc.message = f"{message}; pass the vault with --vault {folder}"  # type: ignore[attr-defined]
            raise


def vault_path(value: str | Path) -> Path:
    """A vault named on the command line. An empty one (`wikirag index "$VAULT"` with VAULT unset) would be the
    current folder to Path(""): refused, so a script does not index wherever it runs. A command's own default
    (doctor's Path(".")) comes through here as a Path, already meant."""
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter("the vault path is empty")
    return Path(value)


VaultArg = Annotated[Path, typer.Argument(metavar="VAULT", help="The Obsidian vault folder.", show_default=False,
                                          parser=vault_path)]


RouteOpt = Annotated[
    list[str] | None,
    typer.Option("--route", metavar="[GLOB=]ROUTE", help="Force inject|extract|skip (repeatable)."),
]


StoreOpt = Annotated[
    Path | None, typer.Option("--store", help="Store folder (default: VAULT/.wikirag; env WIKIRAG_STORE).")
]


ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Config file (default: VAULT/wikirag.toml).")]


ExcludeOpt = Annotated[
    list[str] | None, typer.Option("--exclude", metavar="GLOB", help="Leave out matching paths (repeatable).")
]


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


LLMOpt = Annotated[
    str | None, typer.Option("--llm", metavar="PROVIDER:MODEL", help="LLM, e.g. openai:gpt-4o-mini (env WIKIRAG_LLM).")
]


def build_config(vault: Path, *, store: Path | None = None, config_file: Path | None = None,
            exclude: list[str] | None = None, llm: str | None = None, llm_concurrency: int | None = None,
            route: list[str] | None = None) -> WikiragConfig:
    return load_config(
        vault, store=store, config_file=config_file, exclude=exclude,
        overrides={"llm": {"model": llm, "concurrency": llm_concurrency}}, route_overrides=route,
    )


def stderr_console() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def run_by_watch(config: WikiragConfig) -> IndexReport | None:
    """The report of this `index` when the wikirag watch writing the store ran it (index/handoff.py), else
    None: no watch is listening, and the run happens here."""
    from wikirag.index.handoff import hand_to_watch

    try:
        handed = hand_to_watch(config)
    except KeyboardInterrupt:
        typer.echo("\nstopped waiting; the watch finishes the run", err=True)
        raise typer.Exit(130) from None
    if handed is not None:
        stderr_console().print(f"Run by the wikirag watch writing this store (pid {handed.pid}).")
    return handed.report if handed is not None else None


@contextlib.contextmanager
def stop_between_batches() -> Iterator[threading.Event]:
    """Ctrl-C during `index`: the first asks the run to stop after the note batch in flight, where the store
    and its ledger agree; a second ends the process at once, which the write-ahead ledger survives as it does
    a kill (the next run completes the writes). Before, a second Ctrl-C could leave the process waiting for
    ever on tasks LightRAG never let finish. SIGTERM (systemd, `docker stop`, `timeout`) ends it at once too:
    a supervisor gives a few seconds, and a batch in flight (500 notes, or an LLM call in its retries) may
    take minutes."""
    import signal

    from wikirag.index.signals import stop_on_signals

    def first() -> None:
        sys.stderr.write("\nstopping after the notes in progress (Ctrl-C again to stop at once)\n")
        sys.stderr.flush()

    def again(signum: int) -> None:
        sys.stderr.write("\nstopped at once; the next `wikirag index` completes this run's writes\n")
        sys.stderr.flush()
        embedded = sys.modules.get("wikirag.storage.embedded")
        if embedded is not None:
            with contextlib.suppress(Exception):
                embedded.leave_all()  # the private server stops when no other process uses it
        os._exit(128 + signum)  # 130 for Ctrl-C, 143 for SIGTERM, as a shell reports them

    with stop_on_signals(again=again, first=first, at_once=(signal.SIGTERM,)) as stop:
        yield stop
