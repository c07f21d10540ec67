"""Big-vault figures (issue 16): first index, one-change re-index, a note that resolves many links, watch
save -> queryable, cost-estimate and stats, cold and warm query, store size.

    python bench/scale.py --generate 13000 [--embedding hash]     # the zettelkasten shape (bench/zettel.py)
    python bench/scale.py VAULT [--embedding local|hash] [--storage file|postgres|embedded] [--rounds 10] [--edits 8]

Works on a copy of the vault (never edits yours) and a temporary store. `--embedding local` (default) is
the offline MiniLM; `hash` an instant hashing embedding, for the pipeline's own figures. `--storage
postgres` puts the index in a private PostgreSQL (pgvector) started for the run (tests/pgserver_fixture.py);
`--storage embedded` uses wikirag's own embedded backend (the server in the store folder, storage/embedded.py).
Each figure prints wall time, CPU seconds (this process, or the child for fresh processes, plus the
PostgreSQL server's processes when there is one) and the 1-minute load average: the machine may be shared.
Index figures are timed inside this process (imports done); `cost-estimate`, `stats` and the cold query are
whole `python -m wikirag.cli` / fresh-interpreter runs, start-up included, as a user would see them.
Watch latency: from writing a note to the end of the batch that flushed it (what another process then
reads), quiet period included.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.zettel import generate, missing_name  # noqa: E402
from wikirag.index.run import run_index  # noqa: E402
from wikirag.index.watch import watch_vault  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


SERVER_DATA: list[Path] = []  # the data folder of the PostgreSQL server this run uses, if any


def _server_cpu() -> float:
    """CPU seconds of this run's PostgreSQL server so far: the postmaster, its live backends and (in the
    postmaster's children_* times) the backends that have ended. Other servers on the machine are left out."""
    if not SERVER_DATA:
        return 0.0
    import psutil

    try:
        master = psutil.Process(int((SERVER_DATA[0] / "postmaster.pid").read_text().split()[0]))
        total = sum(master.cpu_times()[:4])
        for child in master.children():
            total += sum(child.cpu_times()[:2])
    except (OSError, ValueError, psutil.Error):
        return 0.0
    return total


class Cpu:
    """CPU seconds spent between start and `str()`: this process, its finished children, the server."""

    def __init__(self) -> None:
        self.start = self._now()

    @staticmethod
    def _now() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + _server_cpu()

    def __str__(self) -> str:
        return f"CPU {self._now() - self.start:.1f} s, load {os.getloadavg()[0]:.1f}"


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _spread(seconds: list[float]) -> str:
    return (f"{statistics.median(seconds):8.2f} s  median of {len(seconds)} "
            f"({min(seconds):.2f}–{max(seconds):.2f} s)")


def _cli(*args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started, cpu = time.perf_counter(), Cpu()
    subprocess.run([sys.executable, "-m", "wikirag.cli", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, check=True)
    return f"{time.perf_counter() - started:8.2f} s  ({cpu})"


_COLD_QUERY = """
import sys, time
started = time.perf_counter()
sys.path.insert(0, {root!r})
from pathlib import Path
from wikirag.settings import load_config
from wikirag.query.retrieve import ask
kwargs = {{}}
if {hash!r}:
    from tests.storekit import HashEmbedding
    kwargs["embedding_func"] = HashEmbedding().func()
config = load_config(Path({vault!r}), store=Path({store!r}))
{call}
print(time.perf_counter() - started)
import atexit, os  # end as the `wikirag` command does (wikirag.cli.main): exit handlers, then no teardown
atexit._run_exitfuncs()
sys.stdout.flush()
os._exit(0)
"""
_QUERY_CALL = ('ask(config, "How do notes on attention and memory connect?", mode="hybrid", context_only=True, '
               '**kwargs)')
_INDEX_CALL = "from wikirag.index.run import run_index; run_index(config, **kwargs)"


class Run:
    def __init__(self, vault: Path, store: Path, embedding: str, env: dict[str, str]) -> None:
        self.vault, self.store, self.embedding = vault, store, embedding
        self.config = load_config(vault, store=store, environ={**os.environ, **env})
        self.kwargs: dict = {}
        self.hash = None
        if embedding == "hash":
            from tests.storekit import HashEmbedding

            self.hash = HashEmbedding()  # counts what it embeds (the report counts the default embedder only)
            self.kwargs["embedding_func"] = self.hash.func()

    def index(self, label: str) -> dict:
        before = self.hash.texts if self.hash else 0
        started, cpu = time.perf_counter(), Cpu()
        report = run_index(self.config, **self.kwargs)
        seconds = time.perf_counter() - started
        texts = self.hash.texts - before if self.hash else report.embedding_texts
        extra = f", {texts / seconds:,.0f} texts/s" if texts else ""
        print(f"{label:<34} {seconds:8.2f} s  ({report.notes_indexed} notes indexed, "
              f"{texts} texts embedded{extra}; peak RSS {_rss_mb():,.0f} MB; {cpu})", flush=True)

    def watch(self, rounds: int, quiet: float) -> list[float]:
        done: list[tuple[float, int]] = []
        stop, ready = threading.Event(), threading.Event()

        def on_batch(batch) -> None:
            done.append((time.perf_counter(), batch.notes_changed + batch.notes_new))

        def runner() -> None:
            asyncio.run(watch_vault(self.config, quiet_seconds=quiet, stop=stop, on_initial=lambda r: ready.set(),
                                    on_batch=on_batch, poll_seconds=0.05, **self.kwargs))

        thread = threading.Thread(target=runner, daemon=True)
        thread.start()
        latencies: list[float] = []
        try:
            if not ready.wait(1800):
                raise TimeoutError("watch did not start")
            notes = sorted(self.vault.rglob("*.md"))
            for i in range(rounds):
                before = len(done)
                path = notes[(i * 997) % len(notes)]
                written = time.perf_counter()
                path.write_text(path.read_text(encoding="utf-8") + f"\nWatch edit {i}.\n", encoding="utf-8")
                while len(done) == before:
                    if time.perf_counter() - written > 300:
                        raise TimeoutError("the save never became queryable")
                    time.sleep(0.005)
                latencies.append(done[-1][0] - written)
                time.sleep(0.2)
        finally:
            stop.set()
            thread.join(120)
        return latencies

    def edits(self, note: Path, count: int, *, fresh: bool) -> list[float]:
        """Wall seconds of `count` runs, each after one more line was appended to `note`."""
        seconds = []
        for i in range(count):
            note.write_text(note.read_text(encoding="utf-8") + f"\nEdit {i} of {count}.\n", encoding="utf-8")
            started = time.perf_counter()
            if fresh:
                self.fresh_process(_INDEX_CALL)
            else:
                run_index(self.config, **self.kwargs)
            seconds.append(time.perf_counter() - started)
        return seconds

    def fresh_process(self, call: str) -> str:
        """Wall time of a new interpreter that imports wikirag and makes `call` (what a CLI run costs)."""
        script = _COLD_QUERY.format(root=str(ROOT), hash=self.embedding == "hash", vault=str(self.vault),
                                    store=str(self.store), call=call)
        started, cpu = time.perf_counter(), Cpu()
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        return f"{time.perf_counter() - started:8.2f} s  ({cpu})"

    def warm_query(self) -> str:
        """Context-only hybrid queries against a store already open (`WarmEngine`, what `wikirag mcp` keeps),
        after one to warm up: the median of five questions, and the CPU of all five."""
        from wikirag.query.engine import WarmEngine

        async def go() -> str:
            async with WarmEngine(self.config, **self.kwargs) as engine:
                await engine.query("warm up", mode="hybrid", context_only=True)
                cpu, seconds = Cpu(), []
                for question in _WARM_QUESTIONS:
                    started = time.perf_counter()
                    await engine.query(question, mode="hybrid", context_only=True)
                    seconds.append(time.perf_counter() - started)
                return f"{statistics.median(seconds):8.2f} s  median of {len(seconds)} (all five: {cpu})"

        return asyncio.run(go())


_WARM_QUESTIONS = ("How do notes on attention and memory connect?", "What is the feedback loop of a habit?",
                   "reading and writing index cards", "Which evidence supports the claim?",
                   "How does structure help thinking?")


def run(vault: Path, embedding: str, storage: str, rounds: int, quiet: float, edits: int = 0) -> None:
    work = Path(tempfile.mkdtemp(prefix="wikirag-scale-"))
    work.chmod(0o755)  # as root the embedded server runs as another user, who must reach its data folder
    server = None
    env: dict[str, str] = {}
    try:
        copy = Path(shutil.copytree(vault, work / "vault", ignore=shutil.ignore_patterns(".wikirag", ".obsidian")))
        if storage == "postgres":
            from tests.pgserver_fixture import start_private_server

            server = start_private_server()
            env = server.env()
            os.environ.update(env)
            print(f"private {server.version} ({server.source}) started in {server.start_seconds:.2f} s")
            SERVER_DATA.append(server.pgdata)
        elif storage == "embedded":
            env = {"WIKIRAG_STORAGE_BACKEND": "embedded"}
            os.environ.update(env)  # fresh processes (edit, cold query) use it too
        notes = sum(1 for _ in copy.rglob("*.md"))
        files = sum(1 for p in copy.rglob("*") if p.is_file())
        print(f"vault: {notes} notes, {files - notes} other files; embedding {embedding}; storage {storage}")
        r = Run(copy, copy / ".wikirag", embedding, env)  # the default place: cost-estimate and stats find it
        if storage == "embedded":
            SERVER_DATA.append(Path(r.config.storage.data_dir))
        r.index("first index")
        r.index("no-change re-index")
        edited = sorted(copy.rglob("*.md"))[len(sorted(copy.rglob("*.md"))) // 2]
        edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
        r.index("one edited note (in-process)")
        edited.write_text(edited.read_text(encoding="utf-8") + "\nAnd another.\n", encoding="utf-8")
        print(f"{'one edited note (fresh process)':<34} {r.fresh_process(_INDEX_CALL)}  "
              "(interpreter start and imports included)", flush=True)
        if edits:  # the same note again and again: the spread a single sample hides
            print(f"{f'  {edits} more edits, in-process':<34} {_spread(r.edits(edited, edits, fresh=False))}")
            print(f"{f'  {edits} more edits, fresh process':<34} {_spread(r.edits(edited, edits, fresh=True))}",
                  flush=True)
        waiting = sum(f.read_text(encoding="utf-8").count(f"[[{missing_name(0)}]]") for f in copy.rglob("*.md"))
        (copy / f"{missing_name(0)}.md").write_text(f"# {missing_name(0)}\n\nIt finally exists.\n", encoding="utf-8")
        r.index(f"new note resolving {waiting} links")
        cpu = Cpu()
        latencies = r.watch(rounds, quiet)
        print(f"{'watch save -> queryable':<34} p50 {statistics.median(latencies):.2f} s, p95 "
              f"{_p(latencies, 0.95):.2f} s over {len(latencies)} saves (quiet period {quiet} s included; "
              f"whole watch run {cpu})")
        if storage == "file":
            print(f"{'cost-estimate (CLI, cold)':<34} {_cli('cost-estimate', str(copy), '--json')}")
            print(f"{'stats (CLI, cold)':<34} {_cli('stats', str(copy), '--json')}")
        print(f"{'query, cold process':<34} {r.fresh_process(_QUERY_CALL)}")
        print(f"{'query, warm':<34} {r.warm_query()}")
        if storage == "embedded":
            from wikirag.storage.embedded import leave_all

            leave_all()  # the server stops: the next query starts it, and stops it when it exits
            print(f"{'query, cold process, server down':<34} {r.fresh_process(_QUERY_CALL)}")
        print(f"{'store on disk':<34} {_size_mb(copy / '.wikirag'):8.1f} MB" + (
            " (local files only; the rows are in PostgreSQL)" if storage == "postgres" else ""))
    finally:
        if server is not None:
            server.stop()
        if storage == "embedded":
            from wikirag.storage.embedded import leave_all

            leave_all()  # this process was the server's last client: it stops
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", nargs="?", type=Path)
    parser.add_argument("--generate", type=int, metavar="N", help="bench a generated N-note zettelkasten")
    parser.add_argument("--embedding", choices=["local", "hash"], default="local")
    parser.add_argument("--storage", choices=["file", "postgres", "embedded"], default="file")
    parser.add_argument("--rounds", type=int, default=10, help="watch saves to time")
    parser.add_argument("--quiet-seconds", type=float, default=0.5)
    parser.add_argument("--edits", type=int, default=0, help="time this many more one-note edits, in-process and "
                        "in fresh processes (median and range)")
    args = parser.parse_args()
    if args.generate:
        folder = Path(tempfile.mkdtemp(prefix="wikirag-zettel-"))
        try:
            print(generate(args.generate, folder / "vault"))
            run(folder / "vault", args.embedding, args.storage, args.rounds, args.quiet_seconds, args.edits)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    elif args.vault:
        run(args.vault, args.embedding, args.storage, args.rounds, args.quiet_seconds, args.edits)
    else:
        parser.error("give a VAULT or --generate N")


if __name__ == "__main__":
    main()
