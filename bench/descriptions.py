"""What each note's entity is described by (graph.contribution.note_description: the frontmatter `description`,
else the note's opening paragraph), over whole vaults: how many descriptions hold markup rather than prose.

    python bench/descriptions.py VAULT [VAULT ...] [--examples 3]

Per vault it prints the notes read and how many opening paragraphs are empty (the description is then the
note's aliases and tags alone), hold an HTML tag, or open like metadata (`Key: value`, `key:: value`), with a
few examples of each. LightRAG embeds an entity's name and description for local, hybrid and mix retrieval,
so a description made of `<div class="topSpace"></div>` (mathwiki's every note, before it was left out) or
`Date Created: …` puts the vault's notes at one point of the vector space.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikirag.graph.contribution import opening_paragraph
from wikirag.markdown.parse import parse_note

HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?=[\s/>])[^<>\n]*>")
KEY_VALUE = re.compile(r"[^\W\d][\w /()-]{0,40}?::?\s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vaults", nargs="+", type=Path)
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    for root in args.vaults:
        found: dict[str, list[tuple[str, str]]] = {"empty": [], "html": [], "key-value": []}
        notes = 0
        for path in sorted(root.rglob("*.md")):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            name = path.relative_to(root).as_posix()
            opening = opening_paragraph(parse_note(text, name))
            notes += 1
            for kind, hit in (("empty", not opening), ("html", HTML_TAG.search(opening)),
                              ("key-value", KEY_VALUE.match(opening))):
                if hit:
                    found[kind].append((name, opening[:100]))
        print(f"{root}: {notes} notes; " + ", ".join(f"{kind} {len(rows)}" for kind, rows in found.items()))
        for kind, rows in found.items():
            for name, opening in rows[: args.examples]:
                print(f"  {kind:9} {name}: {opening!r}")


if __name__ == "__main__":
    main()
