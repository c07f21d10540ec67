"""Rich renderings of wikirag's result dataclasses (only the cli folder knows about the terminal); what `query`
and `search` print is in cli.render_retrieval."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text as RichText

if TYPE_CHECKING:  # annotations only: a command loads just what it renders
    from wikirag.cli.doctor import DoctorReport
    from wikirag.index.report import IndexReport
    from wikirag.index.watch import BatchReport
    from wikirag.models import ReadIssue
    from wikirag.plan.results import CostEstimate
    from wikirag.query.export import GraphStats
    from wikirag.vault.stats import VaultStats

LIST_LIMIT = 10  # rows shown per list; --json has them all

# Characters a terminal obeys rather than shows: C0 and C1 controls, DEL, and the bidirectional embeddings,
# overrides and isolates (U+202E in a note reversed the rest of its line; a newline in a file name broke a
# table row), and the line and paragraph separators (U+2028, U+2029: a line break to some terminals and viewers).
# Shown as escapes; newlines in a passage are kept, newlines in a name are not.
_OBEYED = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}
_OBEYED.update({c: f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]})
_OBEYED_IN_BLOCK = {c: v for c, v in _OBEYED.items() if chr(c) not in "\n\t"}
# In a name (not in a passage): the characters that show as nothing, so that two names looking alike (`Note`,
# `No\u200bte`) read apart: zero-width space, word joiner and BOM, the direction marks. Not the zero-width
# (non-)joiners U+200C/U+200D, which Persian and Indic names and emoji sequences need.
_OBEYED.update({c: f"\\u{c:04x}" for c in (0x200B, 0x200E, 0x200F, 0x061C, 0x2060, 0xFEFF)})


def counted(count: int, noun: str) -> str:
    """A count and its noun, agreeing: "1 note", "2 notes", "1,200 notes"."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def shown(text: str, *, block: bool = False) -> str:
    """`text` as the terminal should show it: controls escaped (newlines and tabs kept in a `block`)."""
    return text.translate(_OBEYED_IN_BLOCK if block else _OBEYED)


def Text(text: str = "", *args: object, **kwargs: object) -> RichText:  # noqa: N802  (stands in for rich's Text)
    """rich's Text of one line a vault has a say in (a name, a path, a problem): never console markup,
    controls shown, not obeyed. A passage keeps its newlines: RichText(shown(text, block=True))."""
    return RichText(shown(text), *args, **kwargs)  # type: ignore[arg-type]


def issue_line(issue: ReadIssue) -> str:
    """One line per problem, naming the file: `daily/x.md: 3 NUL bytes removed` (controls shown, not obeyed)."""
    return shown(f"{issue.path}: {issue.message}")


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
            hubs.add_row(Text(hub.path), str(hub.backlinks))
        parts += ["", Text("Top hubs (by backlinks)", style="bold"), hubs]
    parts += _listing("Orphans (no links in or out)", stats.orphans)
    parts += _listing("Duplicate names", [", ".join(group) for group in stats.duplicate_names])
    parts += _listing("Frontmatter problems", [f"{p.path}: {p.error}" for p in stats.frontmatter_problems])
    console.print(Panel(Group(*parts), title=Text(str(stats.vault), style="bold"), expand=False))


def _listing(title: str, items: list[str]) -> list:
    if not items:
        return []
    table = Table(box=None, show_header=False)
    table.add_column(overflow="fold")
    for item in items[:LIST_LIMIT]:
        table.add_row(Text(item))  # file names are text, never console markup (`x[/]y.md`)
    if len(items) > LIST_LIMIT:
        table.add_row(f"… and {len(items) - LIST_LIMIT:,} more (see --json)")
    return ["", Text(f"{title}: {len(items):,}", style="bold"), table]


# --- index ---------------------------------------------------------------------------------------


def render_index_report(report: IndexReport, console: Console) -> None:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("notes in vault", report.notes_total),
        ("  new", report.notes_new),
        ("  changed (text or link targets)", report.notes_changed),
        ("  unchanged", report.notes_unchanged),
        ("  deleted", report.notes_deleted),
        ("  skipped (wikirag: skip / --route)", report.notes_skipped),
        ("  failed to read", report.notes_failed),
        ("indexed this run", report.notes_indexed),
        ("  injected from links", report.notes_injected),
        ("  LLM-extracted", report.notes_extracted),
        ("pending LLM extraction", report.notes_pending_extraction),
        *([("  left by --budget", report.notes_over_budget),
           ("estimated spend (list price)", f"${report.estimated_usd:,.4f} of ${report.budget_usd:,.2f}")]
          if report.budget_usd is not None else []),
        ("entities", report.entities),
        ("relations", report.relations),
        ("chunks", report.chunks),
        ("embeddings computed", report.embedding_texts),
        ("LLM calls", report.llm_calls),
        ("LLM input / output tokens", f"{report.llm_input_tokens:,} / {report.llm_output_tokens:,}"),
        ("  input read from the prompt cache", report.llm_cached_input_tokens),
        *([("  input written into the prompt cache", report.llm_cache_write_input_tokens)]
          if report.llm_cache_write_input_tokens else []),
        *([("  answered by the batch API", report.llm_batch_requests)] if report.llm_batch_requests else []),
        *([("descriptions summarised by the LLM", report.descriptions_summarised)]
          if report.descriptions_summarised else []),
        ("seconds", f"{report.seconds:.2f}"),
    ]
    for label, value in rows:
        table.add_row(label, f"{value:,}" if isinstance(value, int) else value)
    title = "dry run: nothing written" if report.dry_run else f"indexed into {report.store}"
    parts: list = [table]
    if report.recovered_pending:
        parts += ["", Text("Completed the writes of an interrupted earlier run.", style="yellow")]
    if report.interrupted:
        parts += ["", Text("Stopped early (Ctrl-C or SIGTERM) between note batches: the store is whole, and the "
                           "notes not reached wait for the next `wikirag index`.", style="yellow")]
    parts += _listing("Problems", report.issues)
    parts += _listing("LLM names merged into known entities", report.entity_merges)
    parts += _listing("LLM entities dropped (not in the text)", report.entities_dropped)
    if report.notes_pending_extraction and not report.dry_run:
        one = report.notes_pending_extraction == 1
        waiting = (f"{counted(report.notes_pending_extraction, 'note')} {'is' if one else 'are'} indexed from "
                   f"{'its' if one else 'their'} links and wait{'s' if one else ''} for LLM extraction")
        if report.llm_unavailable:
            then = ": run `wikirag index` again once the LLM can be reached (`wikirag doctor --check-llm` tests it)."
        elif report.notes_over_budget:
            then = ", some beyond --budget: `wikirag index` again (with a larger --budget) extracts them."
        elif report.llm_failures:
            then = ", which failed for some of them (Problems above): `wikirag index` again retries them."
        else:
            then = (": set WIKIRAG_LLM and run `wikirag index` again (`wikirag cost-estimate` shows the bill "
                    "first).")
        parts += ["", Text(waiting + then, style="dim")]
    console.print(Panel(Group(*parts), title=Text(str(report.vault), style="bold") + Text(f" — {title}"), expand=False))


# --- graph, doctor, watch ------------------------------------------------------------------------


def render_graph_stats(graph: GraphStats, console: Console) -> None:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("nodes", f"{graph.nodes:,}")
    table.add_row("edges", f"{graph.edges:,}")
    for kind, count in list(graph.nodes_by_type.items())[:LIST_LIMIT]:
        table.add_row(Text(f"  {kind}"), f"{count:,}")  # a type comes from frontmatter: text, not markup
    top = Table(box=None)
    top.add_column("entity")
    top.add_column("degree", justify="right")
    for name, degree in graph.top_degree:
        top.add_row(Text(name), str(degree))
    console.print(Panel(Group(table, "", Text("Top entities by degree", style="bold"), top),
                        title="[bold]index graph[/bold]", expand=False))


_MARKS = {"ok": "[green]ok[/green]", "warn": "[yellow]warn[/yellow]", "fail": "[red]FAIL[/red]", "skip": "[dim]–[/dim]"}


def render_doctor(report: DoctorReport, console: Console) -> None:
    table = Table(box=None)
    table.add_column("check")
    table.add_column("")
    table.add_column("detail", overflow="fold")
    for check in report.checks:
        table.add_row(check.name, _MARKS[check.status], Text(check.detail))
    console.print(table)


def watch_lines(batch: BatchReport) -> list[str]:
    """What a batch prints under the status line: its failure, if any, then its files' problems."""
    failed = [f"batch {batch.batch} failed, retrying with backoff: {batch.error}"] if batch.error else []
    return [shown(line) for line in failed + batch.issues]


def watch_start_line(report: IndexReport) -> str:
    """What `watch` says once its first run is done: what it indexed, or that nothing had changed."""
    notes = counted(report.notes_total, "note")
    if not (report.notes_indexed or report.notes_deleted):
        return f"nothing changed in {notes} since the last run; watching for changes"
    return f"indexed {report.notes_indexed:,} of {notes} in {report.seconds:.2f} s; watching for changes"


def watch_status(batch: BatchReport | None, vault: str, pending: int) -> Text:
    if batch is None:
        return Text(f"watching {vault} — waiting for changes", style="dim")
    return Text(
        f"watching {vault} — batch {batch.batch}: {counted(batch.paths_touched, 'path')}, "
        f"+{batch.notes_new} new ~{batch.notes_changed} changed -{batch.notes_deleted} deleted; "
        f"entities +{batch.entities_written}/-{batch.entities_deleted}, relations "
        f"+{batch.relations_written}/-{batch.relations_deleted} in {batch.seconds:.2f} s"
        + (f"; {counted(pending, 'pending event')}" if pending else "")
    )


# --- cost-estimate -------------------------------------------------------------------------------


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:,.4f}"


def render_cost_estimate(estimate: CostEstimate, console: Console, top: int = 10) -> None:
    price = estimate.price
    scenarios = Table(title=f"{counted(estimate.note_count, 'note')} · {estimate.model} "
                            f"(${price.input}/M in, ${price.output}/M out; "
                            f"{'your prices' if price.source == 'command line' else estimate.prices_as_of})",
                      title_justify="left", box=None)
    for column in ("scenario", "LLM calls", "input tokens", "output tokens", "USD", "USD, prompt cached"):
        scenarios.add_column(column, justify="left" if column == "scenario" else "right")
    labels = {"vanilla": "vanilla LightRAG (every note)", "wikirag": "wikirag (routed plan)",
              "structure_only": "structure only (links)"}
    for key, label in labels.items():
        s = estimate.scenarios[key]
        scenarios.add_row(label, f"{s.llm_calls:,}", f"{s.input_tokens:,}", f"{s.output_tokens:,}", _usd(s.usd),
                          _usd(s.usd_cached))
    console.print(scenarios)
    summaries = estimate.summaries
    if summaries.summary_calls:
        console.print(f"wikirag includes {summaries.summary_calls:,} description-summary calls "
                      f"({summaries.input_tokens:,} input tokens, {_usd(summaries.usd)}): entities and relations "
                      "whose descriptions reach LightRAG's summary triggers, once each per run")
    vanilla, routed = estimate.scenarios["vanilla"], estimate.scenarios["wikirag"]
    if vanilla.usd > 0:
        console.print(Text(f"wikirag saves {1 - routed.usd / vanilla.usd:.0%} of vanilla's cost "
                           f"({1 - routed.input_tokens / max(vanilla.input_tokens, 1):.0%} of its input tokens); "
                           f"embedding: {routed.embedding_tokens:,} tokens", style="bold"))
    if estimate.alternatives:
        others = Table(title="One setting away (wikirag plan)", title_justify="left", box=None)
        for column in ("setting", "extract", "LLM calls", "input tokens", "USD", "vs configured"):
            others.add_column(column, justify="left" if column == "setting" else "right")
        others.add_row("as configured", f"{estimate.routes.get('extract', 0):,}", f"{routed.llm_calls:,}",
                       f"{routed.input_tokens:,}", _usd(routed.usd), "")
        for alt in estimate.alternatives:
            w = alt.wikirag
            change = f"{w.input_tokens / routed.input_tokens:.2f}×" if routed.input_tokens else "—"
            others.add_row(escape(alt.setting), f"{alt.routes.get('extract', 0):,}", f"{w.llm_calls:,}",
                           f"{w.input_tokens:,}", _usd(w.usd), change)
        console.print(others)
    routes = estimate.routes
    console.print(f"routes: inject {routes.get('inject', 0):,} · extract {routes.get('extract', 0):,} · "
                  f"skip {routes.get('skip', 0):,}")
    if estimate.files_skipped:  # said where the bill is read: these are not in it
        console.print(Group(*_listing("Files left out, not priced",
                                      estimate.files_skipped)))
    folders = Table(title="By folder", title_justify="left", box=None)
    for column in ("folder", "notes", "inject", "extract", "skip", "wikirag USD", "vanilla USD"):
        folders.add_column(column, justify="left" if column == "folder" else "right")
    for f in sorted(estimate.folders, key=lambda f: -f.vanilla_usd)[:LIST_LIMIT * 2]:
        folders.add_row(Text(f.folder or "/"), f"{f.notes:,}", f"{f.inject:,}", f"{f.extract:,}", f"{f.skip:,}",
                        _usd(f.wikirag_usd), _usd(f.vanilla_usd))
    console.print(folders)
    notes = Table(title=f"Most expensive notes (wikirag plan, top {top})", title_justify="left", box=None)
    for column in ("note", "route", "chunks", "input tokens", "USD", "reason"):
        notes.add_column(column, justify="right" if column in {"chunks", "input tokens", "USD"} else "left",
                         overflow="fold")
    for c in estimate.top_notes(top):
        notes.add_row(Text(c.path), c.route, str(c.chunks), f"{c.input_tokens:,}", _usd(c.usd), Text(c.reason))
    if top:  # --top 0: no list, not an empty table
        console.print(notes)
