"""What `query` and `search` print: an answer or LightRAG's context, the cited sources, ranked notes with their
passages (the shared helpers are cli.render's)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text as RichText

from wikirag.cli.render import LIST_LIMIT, Text, shown

if TYPE_CHECKING:  # annotations only
    from wikirag.query.retrieve import QueryResult
    from wikirag.query.search import SearchResult


def render_query_result(result: QueryResult, console: Console, *, answer_streamed: bool = False) -> None:
    for note in result.notes:
        console.print(Text(note, style="yellow"))
    if result.answer is not None and not answer_streamed:
        from rich.markdown import Markdown  # markdown-it behind it: only an answer pays for the import

        console.print(Markdown(result.answer))
    elif result.answer is None:
        console.print(Text(f"No answer generated: {result.no_answer_reason}.", style="yellow"))
        console.print(Text(f"keywords — high level: {', '.join(result.keywords['high_level'])}; "
                           f"low level: {', '.join(result.keywords['low_level'])}", style="dim"))
        _render_context(result, console)
    if result.sources:
        sources = Table(title="Sources", box=None, title_justify="left", title_style="bold")
        sources.add_column("note")
        sources.add_column("title")
        sources.add_column("open in Obsidian", overflow="fold")
        for source in result.sources:
            sources.add_row(Text(source.path), Text(source.title), Text(source.obsidian_uri))
        console.print(sources)
    if result.answer is not None and (result.entities or result.relations):
        names = ", ".join(e["entity_name"] for e in result.entities[:LIST_LIMIT])
        console.print(Text(f"carried by entities: {names}", style="dim"))


def _render_context(result: QueryResult, console: Console) -> None:
    if not (result.entities or result.relations or result.chunks):
        console.print(Text("LightRAG retrieved nothing for this question.", style="yellow"))
    if result.entities:
        entities = Table(title="Entities", box=None, title_justify="left", title_style="bold")
        entities.add_column("#", justify="right")
        entities.add_column("entity")
        entities.add_column("type")
        entities.add_column("description", overflow="fold", max_width=70)
        for rank, entity in enumerate(result.entities[:LIST_LIMIT], start=1):
            entities.add_row(str(rank), Text(entity["entity_name"]), Text(str(entity.get("entity_type", ""))),
                             Text(_first_line(entity.get("description", ""))))
        console.print(entities)
    if result.relations:
        relations = Table(title="Relations", box=None, title_justify="left", title_style="bold")
        relations.add_column("#", justify="right")
        relations.add_column("between")
        relations.add_column("description", overflow="fold", max_width=70)
        for rank, rel in enumerate(result.relations[:LIST_LIMIT], start=1):
            relations.add_row(str(rank), Text(f"{rel['src_id']} — {rel['tgt_id']}"),
                              Text(_first_line(rel.get("description", ""))))
        console.print(relations)
    for rank, chunk in enumerate(result.chunks[:5], start=1):
        text = chunk.get("content", "")
        if len(text) > 600:
            text = text[:600].rsplit(" ", 1)[0] + " …"
        passage = RichText(shown(text, block=True))  # a passage keeps its lines
        console.print(Panel(passage, title=Text(f"{rank}. {chunk.get('file_path', '')}"), title_align="left",
                            expand=False))
    if len(result.chunks) > 5:
        console.print(Text(f"… and {len(result.chunks) - 5} more chunks (see --json)", style="dim"))


def _first_line(text: str, limit: int = 160) -> str:
    line = str(text).strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def render_search_result(result: SearchResult, console: Console | None = None) -> None:
    console = console or Console()
    for note in result.notes:
        console.print(Text(note, style="yellow"))
    if not result.hits:
        console.print(Text(f"No note matches {result.query!r}.", style="yellow"))
        return
    for rank, hit in enumerate(result.hits, start=1):
        crumbs = hit.heading.split(" > ") if hit.heading else []
        if crumbs and crumbs[0] == hit.title:  # the breadcrumb opens with the title shown before it
            crumbs = crumbs[1:]
        where = "".join(f" › {c}" for c in crumbs)
        head = RichText.assemble((shown(hit.title), "bold cyan"), (shown(where), "cyan"),
                                 (f"  {shown(hit.path)}", "dim"), (f"  [{', '.join(hit.matched_by)}]", "dim"))
        for i, line in enumerate(head.wrap(console, max(20, console.width - 4))):  # a long title: hanging indent
            console.print(RichText.assemble((f"{rank:>2}. " if i == 0 else "    ", "bold"), line))
        for passage in hit.passages:  # indented on every wrapped line, not only the first
            lines = _indented(shown(" ".join(passage.split())), console.width)
            console.print(RichText(lines), overflow="fold")
        console.print(RichText(_indented(hit.obsidian_uri, console.width), style="dim"), overflow="fold")


def _indented(text: str, width: int) -> str:
    """`text` wrapped to `width` with every line indented by four (no trailing spaces, unlike a padded box)."""
    return textwrap.fill(text, max(20, width), initial_indent="    ", subsequent_indent="    ",
                         break_on_hyphens=False)
