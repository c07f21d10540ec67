"""A cache of parsed notes (and their body token counts) in the store, keyed by each file's digest.

A no-change `wikirag index` still reads and hashes every note (that is how changes are found), but it
need not parse them again: parse_note is pure, so a note whose bytes have the same digest parses the same.
JSON, not pickle: a store folder can travel with a synced vault, and loading it must never run code.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from wikirag.models import Heading, ParsedNote, WikiLink
from wikirag.storage.fs import atomic_write_text

CACHE_FILENAME = "wikirag_parsed.json"
CACHE_VERSION = 1


def _note_from_dict(data: dict) -> ParsedNote:
    data = dict(data)
    data["headings"] = [Heading(**h) for h in data["headings"]]
    data["links"] = [WikiLink(**{**link, "section": tuple(link["section"])}) for link in data["links"]]
    return ParsedNote(**data)


def load_parse_cache(workspace_dir: Path, encoding: str) -> dict[str, tuple[str, ParsedNote, int]]:
    """path -> (digest, parsed note, body tokens in `encoding`); empty when missing, stale or unreadable."""
    path = workspace_dir / CACHE_FILENAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != CACHE_VERSION or data.get("encoding") != encoding:
            return {}
        return {p: (d, _note_from_dict(n), t) for p, (d, n, t) in data["notes"].items()}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def save_parse_cache(workspace_dir: Path, encoding: str, notes: dict[str, ParsedNote], digests: dict[str, str],
                     body_tokens: dict[str, int]) -> None:
    workspace_dir.mkdir(parents=True, exist_ok=True)
    data = {"version": CACHE_VERSION, "encoding": encoding,
            "notes": {p: [digests[p], asdict(n), body_tokens[p]] for p, n in notes.items() if p in body_tokens}}
    atomic_write_text(workspace_dir / CACHE_FILENAME, json.dumps(data, ensure_ascii=False))
