"""What a vault holds, as one dataclass: `compute_stats(vault) -> VaultStats`.

`wikirag stats --json` prints `dataclasses.asdict(VaultStats)`, so the field names are the contract.
Counting rules: `links_resolved` counts every link that points at a file (statuses resolved, ambiguous and
self), so `links_total == links_resolved + links_unresolved`. Link density, hubs and orphans look only at
links between different files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wikirag.models import ReadIssue
from wikirag.vault.model import Vault

TOP_HUBS = 10


@dataclass
class Hub:
    path: str
    backlinks: int  # notes linking to it


@dataclass
class DensityBucket:
    label: str  # "0", "1-4", "5+": resolved links from a note to other files
    notes: int
    share: float  # of all notes, 0..1, rounded to 4 places


@dataclass
class FrontmatterProblem:
    path: str
    error: str


@dataclass
class VaultStats:
    vault: str
    notes: int = 0
    attachments: int = 0
    words: int = 0
    tags: int = 0  # distinct tags, frontmatter and inline
    links_total: int = 0  # body and frontmatter links, embeds included
    links_resolved: int = 0  # resolved + ambiguous + self
    links_ambiguous: int = 0  # a shared name, settled by the tie-break
    links_self: int = 0  # [[#Heading]] and links back to the same note
    links_unresolved: int = 0
    links_to_attachments: int = 0
    embeds: int = 0
    frontmatter_links: int = 0
    links_in_code_ignored: int = 0  # link-looking text in code, comments and math
    unresolved_targets: int = 0  # distinct targets of unresolved links
    notes_with_frontmatter: int = 0
    frontmatter_errors: int = 0
    duplicate_name_groups: int = 0
    link_density: list[DensityBucket] = field(default_factory=list)
    top_hubs: list[Hub] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)  # no resolved link in or out
    duplicate_names: list[list[str]] = field(default_factory=list)
    frontmatter_problems: list[FrontmatterProblem] = field(default_factory=list)
    read_issues: list[ReadIssue] = field(default_factory=list)


def compute_stats(vault: Vault, top: int = TOP_HUBS) -> VaultStats:
    """Count notes, words, links and problems; rank hubs by backlinks."""
    s = VaultStats(vault=str(vault.root), notes=len(vault.notes), attachments=len(vault.attachments))
    tags: set[str] = set()
    buckets = [0, 0, 0]
    hubs: list[Hub] = []
    for path, note in sorted(vault.notes.items()):
        s.words += note.words
        tags.update(note.tags)
        s.links_in_code_ignored += note.links_in_code_ignored
        if note.body_line_offset:
            s.notes_with_frontmatter += 1
        if note.frontmatter_error:
            s.frontmatter_errors += 1
            s.frontmatter_problems.append(FrontmatterProblem(path, note.frontmatter_error))
        out_links = 0
        for link, res in vault.outgoing(path):
            s.links_total += 1
            s.embeds += link.embed
            s.frontmatter_links += link.frontmatter_key is not None
            if res.status == "unresolved":
                s.links_unresolved += 1
                continue
            s.links_resolved += 1
            s.links_ambiguous += res.status == "ambiguous"
            s.links_self += res.status == "self"
            s.links_to_attachments += res.is_attachment
            out_links += res.status != "self"
        buckets[0 if out_links == 0 else 1 if out_links < 5 else 2] += 1
        backlinks = len(vault.backlinks(path))
        if backlinks:
            hubs.append(Hub(path, backlinks))
        elif out_links == 0:
            s.orphans.append(path)
    s.tags = len(tags)
    s.unresolved_targets = len(vault.unresolved())
    s.link_density = [
        DensityBucket(label, n, round(n / s.notes, 4) if s.notes else 0.0)
        for label, n in zip(("0", "1-4", "5+"), buckets, strict=True)
    ]
    s.top_hubs = sorted(hubs, key=lambda h: (-h.backlinks, h.path))[:top]
    s.duplicate_names = vault.duplicate_names()
    s.duplicate_name_groups = len(s.duplicate_names)
    s.read_issues = list(vault.issues)
    return s
