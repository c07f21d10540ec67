"""The same vault on the file store and on PostgreSQL, side by side: full index, no-change re-index,
an edit of 1% of the notes, and one query, with the time of each.

    python bench/storage.py VAULT [--storage file|postgres|both] [--embedding hash|local]

PostgreSQL comes from `WIKIRAG_STORAGE_*` / `WIKIRAG_POSTGRES_*` env vars when `WIKIRAG_STORAGE_BACKEND` is
set (a real server: the figures then include the network), else from a private server started for the run
(tests/pgserver_fixture.py: pgserver's PostgreSQL 16 + pgvector, fsync off). The workspace is dropped from
the database before and after. `bench/index.py --storage` calls `run()` here.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikirag.index.run import run_index
from wikirag.lightrag.storages import lightrag_environment, lightrag_storage_kwargs
from wikirag.settings import load_config  # noqa: E402
from wikirag.storage.ledger_store import drop_workspace
from wikirag.storage.settings import StorageSettings


def _embedding(kind: str):
    if kind == "hash":
        from tests.storekit import HashEmbedding

        return {"embedding_func": HashEmbedding().func()}
    return {}


def _touch_one_percent(vault: Path, seed: int = 3) -> int:
    notes = sorted(vault.rglob("*.md"))
    picked = random.Random(seed).sample(notes, max(1, len(notes) // 100))
    for path in picked:
        path.write_text(path.read_text(encoding="utf-8") + "\nEdited for the benchmark.\n", encoding="utf-8")
    return len(picked)


def _one(label: str, vault: Path, store: Path, embedding: str, settings: StorageSettings | None) -> dict[str, float]:
    from wikirag.query.retrieve import ask

    work = store / "vault"
    shutil.copytree(vault, work, ignore=shutil.ignore_patterns(".wikirag"))
    config = load_config(work, store=store / "store")
    kwargs = _embedding(embedding)
    if settings is not None:
        kwargs["storages"] = lightrag_storage_kwargs(settings)
        drop_workspace(settings, config.workspace)
    figures: dict[str, float] = {}
    env = lightrag_environment(settings) if settings is not None else _nothing()
    with env:
        for step in ("full index", "no-change re-index", "1% edited"):
            if step == "1% edited":
                _touch_one_percent(work)
            started = time.perf_counter()
            report = run_index(config, **kwargs)
            figures[step] = time.perf_counter() - started
            print(f"{label:>8} {step:>19}: {figures[step]:7.2f} s  ({report.notes_indexed} notes indexed, "
                  f"{report.chunks} chunks, {report.entities} entities, {report.relations} relations)")
        started = time.perf_counter()
        result = ask(config, "Which notes link to the most others?", mode="hybrid", **kwargs)
        figures["query"] = time.perf_counter() - started
        print(f"{label:>8} {'hybrid query':>19}: {figures['query']:7.2f} s  ({len(result.entities)} entities, "
              f"{len(result.chunks)} chunks)")
    if settings is not None:
        drop_workspace(settings, config.workspace)
    return figures


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def run(vault: Path, storage: str = "both", embedding: str = "hash") -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    server = None
    root = Path(tempfile.mkdtemp(prefix="wikirag-bench-storage-"))
    try:
        if storage in {"file", "both"}:
            results["file"] = _one("file", vault, root / "file", embedding, None)
        if storage in {"postgres", "both"}:
            if os.environ.get("WIKIRAG_STORAGE_BACKEND"):
                settings = StorageSettings.from_mapping({})
            else:
                from tests.pgserver_fixture import start_private_server

                server = start_private_server()
                print(f"private {server.version} ({server.source}) started in {server.start_seconds:.2f} s")
                settings = StorageSettings.from_mapping({}, environ=server.env())
            results["postgres"] = _one("postgres", vault, root / "pg", embedding, settings)
        if len(results) == 2:
            pg, files = results["postgres"], results["file"]
            print("postgres / file: " + ", ".join(f"{step} x{pg[step] / max(files[step], 1e-9):.1f}" for step in files))
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path)
    parser.add_argument("--storage", choices=["file", "postgres", "both"], default="both")
    parser.add_argument("--embedding", choices=["hash", "local"], default="hash")
    args = parser.parse_args()
    run(args.vault, args.storage, args.embedding)


if __name__ == "__main__":
    main()
