"""Index a vault into a fresh store, then re-index it unchanged; print throughput and peak memory.

    python bench/index.py VAULT [--store DIR] [--embedding local|hash]
    python bench/index.py --generate 10000 /tmp/bench-vault      # then bench that folder

`--embedding hash` swaps MiniLM for an instant hashing embedding, to measure wikirag and LightRAG's
storage work apart from the ONNX model (which dominates a first index on 2 cores).
Figures: notes/s, chunks, entities, relations, embedding texts and texts/s, seconds, peak RSS; then the
same for a no-change re-index (target for 10,000 notes: <= 5 s with zero embedding calls).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikirag.index.run import run_index
from wikirag.settings import load_config  # noqa: E402


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(vault: Path, store: Path, embedding: str) -> None:
    config = load_config(vault, store=store)
    hashing = None
    if embedding == "hash":
        from tests.storekit import HashEmbedding

        hashing = HashEmbedding()
    kwargs = {"embedding_func": hashing.func()} if hashing is not None else {}
    for label in ("full index", "no-change re-index"):
        started = time.perf_counter()
        before = hashing.texts if hashing is not None else 0
        report = run_index(config, **kwargs)
        seconds = time.perf_counter() - started
        # a given embedding function is not the run's counted embedder: count what the hashing one was asked
        texts = hashing.texts - before if hashing is not None else report.embedding_texts
        print(f"{label}: {report.notes_total} notes in {seconds:.2f} s "
              f"({report.notes_total / seconds:,.0f} notes/s); indexed {report.notes_indexed}, "
              f"chunks {report.chunks}, entities {report.entities}, relations {report.relations}; "
              f"embedded {texts} texts" + (f" ({texts / seconds:,.1f}/s)" if texts else "")
              + f"; peak RSS {_peak_rss_mb():,.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", nargs="?", type=Path)
    parser.add_argument("--store", type=Path, help="store folder (default: a temporary one, removed after)")
    parser.add_argument("--embedding", choices=["local", "hash"], default="local")
    parser.add_argument("--storage", choices=["file", "postgres", "both"],
                        help="run bench/storage.py: the same vault on the file store and/or PostgreSQL, side by side")
    parser.add_argument("--generate", nargs=2, metavar=("N", "DIR"), help="write a synthetic vault and exit")
    args = parser.parse_args()
    if args.generate:
        from bench.scan import generate

        generate(int(args.generate[0]), Path(args.generate[1]))
        return
    if args.vault is None:
        parser.error("give a VAULT (or --generate N DIR)")
    if args.storage:
        from bench.storage import run as run_storage

        run_storage(args.vault, args.storage, args.embedding)
        return
    store = args.store or Path(tempfile.mkdtemp(prefix="wikirag-bench-"))
    try:
        run(args.vault, store, args.embedding)
    finally:
        if args.store is None:
            shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
