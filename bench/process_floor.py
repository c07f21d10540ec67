"""The fixed part of a `wikirag index` process that finds a change, before it does any of the change's work.

    python bench/process_floor.py VAULT --store DIR [--config wikirag.toml] [--runs 5] [--no-model]

Each run is a new process that does what every such `wikirag index` does whatever changed: import wikirag
and LightRAG, scan the vault's stat data, start (or join) the store's server and read its ledger head, open
LightRAG's storages for writing, load the local embedding model (beside the rest, as `index` does;
`--no-model` leaves it out), close, and exit through the same handlers (the embedded server's stop). It
plans nothing, writes nothing and embeds nothing, so it reads a built store without changing it. Prints each
phase's end (seconds since the process started) for the median run, and the wall time of every run as
measured from outside. Issue 16's target for one edited note as a new process is 1 s: this is its floor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One run, in its own interpreter; prints its phase marks as JSON on stderr's last line.
_RUN = r"""
import time
T0 = time.perf_counter()
import asyncio, atexit, json, os, sys
sys.path.insert(0, {root!r})
import wikirag.cli  # noqa: F401  (what the command imports first)
import wikirag.index.run as run
from pathlib import Path
from wikirag.settings import load_config

marks = []
def mark(name):
    marks.append((name, round(time.perf_counter() - T0, 3)))

mark("imports")
config = load_config(Path({vault!r}), store=Path({store!r}), config_file={config_file!r} and Path({config_file!r}))
scan = run.scan_vault(config.vault, config.exclude, config.store, config.index.templates)
run.stat_signature(scan)
mark("scan")
run.adopt_store_embedding(config)
mark("server and ledger head")
if {model!r}:
    run.preload_embedder(config)

async def main():
    async with run.open_store_engine(config):
        mark("storages open")

asyncio.run(main())
sys.modules["wikirag.lightrag"].release_threads()
mark("model loaded" if {model!r} else "closed")
atexit._run_exitfuncs()
mark("exit handlers")
sys.stderr.write(json.dumps(marks) + "\n")
sys.stderr.flush()
os._exit(0)
"""


def one_run(vault: Path, store: Path, config_file: Path | None, model: bool) -> tuple[float, list]:
    code = _RUN.format(root=str(ROOT), vault=str(vault), store=str(store),
                       config_file=str(config_file) if config_file else None, model=model)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"a run failed: {done.stderr.strip().splitlines()[-1:]}")
    return wall, json.loads(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--store", type=Path, required=True, help="a store `wikirag index` has built")
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-model", action="store_true", help="leave the embedding model out")
    args = parser.parse_args()
    runs = [one_run(args.vault, args.store, args.config, not args.no_model) for _ in range(args.runs)]
    walls = [wall for wall, _ in runs]
    median = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    print(f"{args.runs} runs, wall s: " + ", ".join(f"{w:.2f}" for w in walls)
          + f"; median {statistics.median(walls):.2f} s")
    print("median run, each phase's end (s since the interpreter started):")
    for name, at in median[1]:
        print(f"  {at:6.3f}  {name}")


if __name__ == "__main__":
    main()
