"""What the ledger stores per note, as the row stores see it: the row's text and digest, and the few fields a
run reads of every note without decoding its row (`RowSummary`). The stores extract those fields with the
database's own JSON functions, so a run that changes one note decodes that note's row, not 13,000."""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple


class RowSummary(NamedTuple):
    digest: str  # sha1 of the stored row: what derived files (names and links tables) compare
    signature: str
    status: str
    chunk_digest: str
    chunks: int  # how many chunk ids the note has


def encode_row(entry: dict[str, Any]) -> tuple[str, str]:
    """(digest, text) of a ledger row: canonical JSON, so equal entries have equal digests."""
    text = json.dumps(entry, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).hexdigest(), text


def whole_document(store: Any) -> dict | None:
    """A row store's whole ledger document (head + `notes`, in path order), from its `load_summaries` and
    `fetch`; None when it holds no ledger."""
    found = store.load_summaries()
    if found is None:
        return None
    head, rows = found
    fetched = store.fetch(list(rows))
    return {**head, "notes": {path: fetched[path] for path in rows if path in fetched}}


def relation_key_text(a: str, b: str) -> str:
    """A relation's (src, tgt) as one string the stores match in SQL; unit separator between the two."""
    return f"{a}\x1f{b}"
