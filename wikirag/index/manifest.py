"""The "nothing changed" shortcut: file sizes and modification times as of the last completed run.

Finding changes normally means reading and hashing every note. When every note and attachment still has
the size and nanosecond mtime recorded after the last completed run, the configuration is the same and
the store has no unfinished writes, nothing can have changed, and `wikirag index` answers from the
manifest without reading a note (the way git trusts its index's stat data). Files modified within two
seconds before the manifest was written are "racy" (a later edit in the same clock tick would keep the
mtime) and never trusted. Any writing run deletes the manifest before its first write, so a crash
leaves none behind. It is one document in the workspace's `wikirag_index.sqlite`.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from wikirag.storage.sqlite_store import connect_index_db, get_doc, put_doc
from wikirag.vault.read import ScanResult

MANIFEST_FILENAME = "wikirag_manifest.json"  # where versions before the SQLite store kept it
MANIFEST_VERSION = 1
RACY_NS = 2_000_000_000


def stat_signature(scan: ScanResult) -> dict[str, Any]:
    return {
        "notes": {n.path: [n.size, n.mtime_ns] for n in scan.notes},
        "attachments": sorted(scan.attachments),
        "issues": sorted(f"{i.path}: {i.message}" for i in scan.issues),
    }


def load_unchanged(workspace_dir: Path, key: str, current: dict[str, Any]) -> dict[str, Any] | None:
    """The recorded report figures when nothing changed since the last completed run, else None. `current` is
    the scan's `stat_signature` (computed once per run: it is also what `save_manifest` records)."""
    try:
        conn = connect_index_db(workspace_dir, create=False)
        if conn is None:
            return None
        try:
            data = get_doc(conn, "manifest", fast=True)
        finally:
            conn.close()
    except (sqlite3.Error, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("version") != MANIFEST_VERSION or data.get("key") != key:
        return None
    if current != data.get("files"):
        return None
    newest = max((mtime for _, mtime in current["notes"].values()), default=0)
    if newest >= data.get("written_ns", 0) - RACY_NS:
        return None
    return data.get("report")


def save_manifest(workspace_dir: Path, key: str, files: dict[str, Any], report: dict[str, Any]) -> None:
    """Record `files` (the run's `stat_signature`) and the report figures after a completed run."""
    data = {"version": MANIFEST_VERSION, "key": key, "written_ns": time.time_ns(), "files": files,
            "report": report}
    conn = connect_index_db(workspace_dir)
    try:
        put_doc(conn, "manifest", data, fast=True)
    finally:
        conn.close()


def drop_manifest(workspace_dir: Path) -> None:
    (workspace_dir / MANIFEST_FILENAME).unlink(missing_ok=True)
    conn = connect_index_db(workspace_dir, create=False)
    if conn is not None:
        try:
            conn.execute("DELETE FROM docs WHERE name = 'manifest'")
        finally:
            conn.close()
