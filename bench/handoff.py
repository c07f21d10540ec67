"""One edited note re-indexed by `wikirag index` as a new process, alone and beside a running `wikirag watch`
(which then runs it: wikirag/index/handoff.py). Issue 16's figure: ≤1 s at 13,000 notes.

    python bench/handoff.py VAULT [--work DIR] [--storage file|embedded] [--rounds 10]
    python bench/handoff.py --generate 13000 [--work DIR] [--storage embedded]

Works in `--work` (default: a temporary folder, removed at the end): `vault/` is a copy of VAULT (or a
generated zettelkasten, bench/zettel.py), `store/` its index with the default local model, built by a first
`wikirag index` when missing (a kept work folder is reused as it is). Each round appends a sentence with a
word of its own to one note and times `wikirag index VAULT --json` as a new process, from its start to its
exit, as a user's script sees it; then checks that the run indexed the change (`notes_changed`) and, outside
the timing, that `wikirag search` finds the word in that note. Prints wall time and the client's CPU per round
(with what it waited for: on `embedded`, a lone `index` starts and stops the PostgreSQL server), and for the
rounds a watch ran, the CPU of the watch and of the server it started, during the `index` calls. Never touches
the vault you pass.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.zettel import generate  # noqa: E402

WIKIRAG = [sys.executable, "-m", "wikirag.cli"]


def _cli(work: Path, *args: str) -> list[str]:
    return [*WIKIRAG, *args, "--store", str(work / "store"), "--config", str(work / "wikirag.toml")]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a running process and of every process under it, with the children they reaped: the watch
    and, on `embedded`, the PostgreSQL server it started, whose backends write each batch's rows."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in (root, *root.children(recursive=True)):
        with contextlib.suppress(psutil.NoSuchProcess):  # a backend that ended meanwhile
            times = proc.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def _edit_and_index(work: Path, notes: list[Path], round_no: int,
                    watch_pid: int | None = None) -> tuple[float, float, float]:
    """Wall time and client CPU of one round's `index`, and the CPU the watch (`watch_pid`) spent meanwhile."""
    note = notes[(round_no * 97) % len(notes)]
    word = f"handoffword{round_no}x{os.getpid()}"
    with note.open("a", encoding="utf-8") as f:
        f.write(f"\nA sentence about {word}.\n")
    cpu, watch_cpu = _children_cpu(), _tree_cpu(watch_pid) if watch_pid else 0.0
    started = time.perf_counter()
    done = subprocess.run(_cli(work, "index", str(work / "vault"), "--json"), capture_output=True, text=True)
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    watch_cpu = _tree_cpu(watch_pid) - watch_cpu if watch_pid else 0.0
    if done.returncode != 0:
        raise SystemExit(f"index failed: {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    handed = "Run by the wikirag watch" in done.stderr
    if handed != (watch_pid is not None) or report["notes_changed"] < 1:
        raise SystemExit(f"round {round_no}: handed={handed}, notes_changed={report['notes_changed']}")
    found = subprocess.run(_cli(work, "search", word, "--vault", str(work / "vault"), "--json"),
                           capture_output=True, text=True)
    hits = [hit.get("path") for hit in json.loads(found.stdout or "{}").get("hits", [])][:1]
    if hits != [note.relative_to(work / "vault").as_posix()]:
        raise SystemExit(f"round {round_no}: search for {word} found {hits}, not {note.name}")
    return wall, cpu, watch_cpu


def _summary(label: str, samples: list[tuple[float, float, float]]) -> None:
    walls = sorted(w for w, _, _ in samples)
    p95 = walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))]
    print(f"{label}: wall median {statistics.median(walls):.2f} s, p95 {p95:.2f} s, min {walls[0]:.2f} s, "
          f"max {walls[-1]:.2f} s; client CPU median {statistics.median(c for _, c, _ in samples):.2f} s "
          f"({len(samples)} rounds; load {os.getloadavg()[0]:.1f})")


def run(work: Path, rounds: int) -> None:
    notes = sorted((work / "vault").rglob("*.md"))
    first = time.perf_counter()
    built = subprocess.run(_cli(work, "index", str(work / "vault"), "--json"), capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(built.stderr[-1000:])
    print(f"first (or catch-up) index: {time.perf_counter() - first:.1f} s, "
          f"{json.loads(built.stdout)['notes_total']} notes")
    alone = [_edit_and_index(work, notes, i) for i in range(rounds)]
    _summary("index alone, new process", alone)

    watch = subprocess.Popen(_cli(work, "watch", str(work / "vault"), "--json"), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        ready = time.perf_counter()
        if not watch.stdout or not watch.stdout.readline():  # the initial run's report
            raise SystemExit("watch ended before its initial run")
        print(f"watch ready in {time.perf_counter() - ready:.1f} s")
        time.sleep(2)  # its idle work after the initial run (backlinks, the collection the run owed)
        beside = [_edit_and_index(work, notes, rounds + i, watch.pid) for i in range(rounds)]
        _summary("index beside a running watch, new process", beside)
        print(f"  the watch's CPU (with the server it started) during those runs: median "
              f"{statistics.median(w for _, _, w in beside):.2f} s")
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path, nargs="?")
    parser.add_argument("--generate", type=int, metavar="N")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--storage", choices=("file", "embedded"), default="embedded")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    if (args.vault is None) == (args.generate is None):
        parser.error("give a VAULT or --generate N")
    work = args.work or Path(tempfile.mkdtemp(prefix="wikirag-handoff-"))
    try:
        if not (work / "vault").exists():
            if args.generate:
                generate(args.generate, work / "vault")
            else:
                shutil.copytree(args.vault, work / "vault", symlinks=True)
        if not (work / "wikirag.toml").exists():
            (work / "wikirag.toml").write_text(f'[storage]\nbackend = "{args.storage}"\n', encoding="utf-8")
        run(work, args.rounds)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
