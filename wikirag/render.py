"""Rich renderings of wikirag's result dataclasses (only this module and cli.py know about the terminal)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from wikirag.models import ReadIssue
from wikirag.stats import VaultStats

LIST_LIMIT = 10  # rows shown per list; --json has them all


def issue_line(issue: ReadIssue) -> str:
    """One line per problem, naming the file: `daily/x.md: 3 NUL bytes removed`."""
    return f"{issue.path}: {issue.message}"


def render_stats(stats: VaultStats, console: Console) -> None:
    counts = Table.grid(padding=(0, 2))
    counts.add_column(style="bold")
    counts.add_column(justify="right")
    rows = [
        ("notes", stats.notes),
        ("attachments", stats.attachments),
        ("words", stats.words),
        ("tags", stats.tags),
        ("links", stats.links_total),
        ("  resolved", stats.links_resolved),
        ("    ambiguous (tie-broken)", stats.links_ambiguous),
        ("    to the same note", stats.links_self),
        ("    to attachments", stats.links_to_attachments),
        ("  unresolved", stats.links_unresolved),
        ("  embeds", stats.embeds),
        ("  in frontmatter", stats.frontmatter_links),
        ("  ignored in code/comments", stats.links_in_code_ignored),
        ("notes with frontmatter", stats.notes_with_frontmatter),
        ("frontmatter errors", stats.frontmatter_errors),
        ("read issues", len(stats.read_issues)),
    ]
    for label, value in rows:
        counts.add_row(label, f"{value:,}")

    density = Table(box=None)
    density.add_column("links")
    density.add_column("notes", justify="right")
    density.add_column("share", justify="right")
    for bucket in stats.link_density:
        density.add_row(bucket.label, f"{bucket.notes:,}", f"{bucket.share:.0%}")

    parts: list = [counts, "", Text("Resolved links per note", style="bold"), density]
    if stats.top_hubs:
        hubs = Table(box=None)
        hubs.add_column("note")
        hubs.add_column("backlinks", justify="right")
        for hub in stats.top_hubs:
            hubs.add_row(hub.path, str(hub.backlinks))
        parts += ["", Text("Top hubs (by backlinks)", style="bold"), hubs]
    parts += _listing("Orphans (no links in or out)", stats.orphans)
    parts += _listing("Duplicate names", [", ".join(group) for group in stats.duplicate_names])
    parts += _listing("Frontmatter problems", [f"{p.path}: {p.error}" for p in stats.frontmatter_problems])
    console.print(Panel(Group(*parts), title=f"[bold]{stats.vault}[/bold]", expand=False))


def _listing(title: str, items: list[str]) -> list:
    if not items:
        return []
    table = Table(box=None, show_header=False)
    table.add_column(overflow="fold")
    for item in items[:LIST_LIMIT]:
        table.add_row(item)
    if len(items) > LIST_LIMIT:
        table.add_row(f"… and {len(items) - LIST_LIMIT:,} more (see --json)")
    return ["", Text(f"{title}: {len(items):,}", style="bold"), table]
