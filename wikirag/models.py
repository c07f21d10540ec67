"""Plain data structures shared by the vault model, the index pipeline and the CLI.

Everything here is a dataclass of plain values so that `dataclasses.asdict()` gives the JSON contract
that `--json` prints and that golden tests compare. Paths are vault-relative POSIX strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

LinkKind = Literal["wikilink", "markdown"]
ResolutionStatus = Literal["resolved", "ambiguous", "unresolved", "self"]


@dataclass(frozen=True)
class WikiLink:
    """One link as written in a note, before resolution.

    `target` is the link path as written (trimmed, URL-decoded for Markdown links, no `#...`); it is ""
    for a same-note link such as `[[#Heading]]`. `heading` holds nested headings joined by "#"
    (`[[A#H1#H2]]` -> "H1#H2"); `block` is the id after `#^`.
    """

    raw: str
    target: str
    heading: str | None = None
    block: str | None = None
    label: str | None = None
    embed: bool = False
    kind: LinkKind = "wikilink"
    line: int = 0  # 1-based line in the file (frontmatter lines included)
    section: tuple[str, ...] = ()  # heading path the link sits under, outermost first
    context: str = ""  # the sentence (or line) around the link, Markdown link syntax flattened
    frontmatter_key: str | None = None  # set when the link was written in frontmatter


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int


@dataclass
class ParsedNote:
    """A note as Obsidian reads it. Produced by `parse.parse_note(text, path)`, which is pure."""

    path: str  # vault-relative POSIX path, e.g. "people/Ada Lovelace.md"
    name: str  # file name without ".md"
    title: str  # frontmatter title, else `name`
    type: str | None = None
    description: str | None = None  # frontmatter description/summary
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # lower-cased, no leading "#", frontmatter + inline
    frontmatter: dict = field(default_factory=dict)  # every key, JSON-safe values
    frontmatter_error: str | None = None  # one line: why the YAML block, or a value in it, was ignored
    body: str = ""  # text after the frontmatter, newlines normalised to "\n"
    body_line_offset: int = 0  # lines taken by the frontmatter block (body line 1 = file line offset+1)
    headings: list[Heading] = field(default_factory=list)
    block_ids: list[str] = field(default_factory=list)
    links: list[WikiLink] = field(default_factory=list)
    links_in_code_ignored: int = 0  # link-looking text inside code/comments, counted not linked
    words: int = 0
    route_override: str | None = None  # frontmatter `wikirag: inject|extract|skip`


@dataclass(frozen=True)
class Resolution:
    """Where a link points. `path` is set unless `status` is "unresolved" ("ambiguous" carries the tie-break's
    choice, with every same-name file in `candidates`)."""

    status: ResolutionStatus
    path: str | None = None
    candidates: tuple[str, ...] = ()  # the notes that shared the name when a tie-break chose one
    is_attachment: bool = False


@dataclass
class ReadIssue:
    """A problem met while reading a file; the run goes on. `message` is one line naming the problem."""

    path: str
    message: str
    skipped: bool = False  # True when the file was left out of the vault model
