"""Save -> queryable latency under `wikirag watch`, for one injected note and for batches of 100 changes.

    python bench/watch_latency.py VAULT [--rounds 10] [--quiet-seconds 0.5] [--embedding local|hash]

Works on a copy of VAULT. A watcher runs in this process; each round writes a note (or 100 notes) and
times until a context query in a separate engine finds the new text's marker entity in the store files,
which is what another process (`wikirag query`) would see. Prints median and p95 seconds.
Target: <= 2 s median for one injected note with local embeddings (the quiet period is part of it).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikirag.index.watch import watch_vault  # noqa: E402
from wikirag.settings import load_config  # noqa: E402


def _graph_has(config, name: str) -> bool:
    """What another process sees: the node in the flushed GraphML file."""
    path = config.workspace_dir / "graph_chunk_entity_relation.graphml"
    try:
        return f'<node id="{name}"' in path.read_text(encoding="utf-8")
    except OSError:
        return False


def _wait(check, timeout: float = 120.0) -> float:
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > timeout:
            raise TimeoutError("the change never became queryable")
        time.sleep(0.02)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--quiet-seconds", type=float, default=0.5)
    parser.add_argument("--embedding", choices=["local", "hash"], default="local")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wikirag-watch-"))
    vault = Path(shutil.copytree(args.vault, work / "vault", ignore=shutil.ignore_patterns(".wikirag")))
    config = load_config(vault, store=work / "store")
    kwargs = {}
    if args.embedding == "hash":
        from tests.storekit import HashEmbedding

        kwargs["embedding_func"] = HashEmbedding().func()
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(watch_vault(
        config, quiet_seconds=args.quiet_seconds, stop=stop, on_initial=lambda r: ready.set(), **kwargs)),
        daemon=True)
    thread.start()
    try:
        ready.wait(600)
        single, batch = [], []
        for i in range(args.rounds):
            name = f"Latency probe {i}"
            (vault / f"{name}.md").write_text(f"# {name}\n\nA probe note linking [[Index]] and marker zq{i}x.\n")
            single.append(_wait(lambda n=name: _graph_has(config, n)))
        for r in range(max(1, args.rounds // 5)):
            for j in range(100):
                (vault / f"Batch {r}-{j}.md").write_text(f"Batch note {r}-{j} links [[Latency probe 0]].\n")
            batch.append(_wait(lambda r=r: _graph_has(config, f"Batch {r}-99")))
    finally:
        stop.set()
        thread.join(60)
        shutil.rmtree(work, ignore_errors=True)
    for label, values in (("one injected note", single), ("a batch of 100 notes", batch)):
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(f"{label}: median {statistics.median(values):.2f} s, p95 {p95:.2f} s over {len(values)} runs "
              f"(quiet period {args.quiet_seconds} s included)")


if __name__ == "__main__":
    main()
