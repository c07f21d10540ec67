"""Does a crash or Ctrl-C at any moment of a run leave a store that the next run completes? A crash-point sweep.

    python bench/crash_sweep.py VAULT [--backend file|embedded] [--points 30] [--scenarios edits,rebuild,watch,first]
                                      [--signals kill,int] [--edits 24] [--batch-size 5] [--embedding hash|local]

Works on copies of the vault in a temporary folder (never on yours). It indexes a copy (the *base*), makes
`--edits` edits of it (tests/vault_edits.py: text, links, titles, aliases, new notes, twins, deletions, renames,
attachments added and removed, frontmatter routes), and indexes the edited vault from scratch as the reference.
Then, for each scenario, it times one uninterrupted run and, at `--points` moments spread evenly over that time,
starts the same run again on a fresh copy and sends it SIGKILL (`kill`) or SIGINT (`int`, a Ctrl-C), after which
- `wikirag index` runs to completion (exit 0),
- the store equals the reference, record for record (tests/storekit.py `snapshot`; on the embedded backend the
  database read as tests/test_embedded.py does, against the file store's reference),
- `wikirag query ... --context-only` answers (exit 0), and a further `wikirag index` finds nothing to do.

Scenarios: `edits` (an incremental `wikirag index` of the edited vault over the base's store), `rebuild`
(`wikirag index --rebuild` of it), `first` (the first index of the edited vault into an empty store), `watch`
(`wikirag watch` on the base, the edits made once its first report is out, killed while it indexes them).

Every command is the real CLI (`python -m wikirag.cli`'s `main`) in a new process. With `--embedding hash` (the
default) it runs with the tests' instant hashing embedding swapped in for the local model: the sweep is about
what the runs write, not the vectors' quality, and it keeps a run's time in its writes. Prints one line per
point and a summary; exits 1 when any point failed. Failed points' folders are kept under the work folder.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.storekit import snapshot  # noqa: E402
from tests.vault_edits import random_edit  # noqa: E402
from wikirag.settings import load_config  # noqa: E402

# The real CLI in a new process; with the hashing embedding in place of the local model (as the tests'
# fast_embedding fixture swaps it), and the local model never loaded in the background.
_CLI = """
import sys
sys.path.insert(0, {root!r})
if {hash!r}:
    from tests.storekit import HashEmbedding
    from wikirag.lightrag import engine
    engine.make_embedding_func = lambda spec, counter, base_url=None: HashEmbedding().func()
    engine.preload_local_model = lambda model: None
import os
if os.environ.get("WIKIRAG_CRASH_TRACE"):
    from bench.crash_points import install
    install()
from wikirag.cli import main
sys.argv = ["wikirag", *sys.argv[1:]]
main()
"""

EDIT_KINDS = ("text", "link", "title", "alias", "new resolving", "new twin", "delete", "rename", "attachment added",
              "attachment removed", "route")


@dataclass
class Sweep:
    vault: Path
    work: Path
    backend: str
    embedding: str
    batch_size: int
    edits: int
    seed: int
    question: str
    failures: list[str] = field(default_factory=list)

    # --- commands -------------------------------------------------------------------------------------------

    def env(self, backend: str | None = None, **extra: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "WIKIRAG_STORAGE_BACKEND": backend or self.backend,
               "WIKIRAG_INDEX_BATCH_SIZE": str(self.batch_size), "COLUMNS": "120", **extra}
        for name in ("WIKIRAG_CRASH_TRACE", "WIKIRAG_CRASH_AT", "WIKIRAG_CRASH_SIGNAL"):
            if name not in extra:
                env.pop(name, None)  # only the run under test is stopped at a write point
        return env

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-c", _CLI.format(root=str(ROOT), hash=self.embedding == "hash"), *args]

    def cli(self, *args: str, backend: str | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(*args), env=self.env(backend), capture_output=True, text=True,
                              timeout=timeout)

    def popen(self, *args: str, **extra: str) -> subprocess.Popen:
        return subprocess.Popen(self.command(*args), env=self.env(**extra), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    # --- folders --------------------------------------------------------------------------------------------

    @property
    def run_vault(self) -> Path:
        """Every run works on this path (the workspace is named after the vault's folder, and the embedded
        server's data folder lives in the store): templates are copied here, with owners and times (`cp -a`:
        as root the data folder belongs to the server's user)."""
        return self.work / "run" / "vault"

    def restore(self, template: str) -> None:
        shutil.rmtree(self.work / "run", ignore_errors=True)
        (self.work / "run").mkdir()
        subprocess.run(["cp", "-a", str(self.work / template), str(self.run_vault)], check=True)

    def keep(self, template: str) -> None:
        """Save the run folder as a template (the embedded server has stopped: its last client left)."""
        shutil.rmtree(self.work / template, ignore_errors=True)
        subprocess.run(["cp", "-a", str(self.run_vault), str(self.work / template)], check=True)

    def edit(self, vault: Path) -> None:
        """The same edits every time (a seeded generator over the same files), every kind at least once."""
        rng = random.Random(self.seed)
        for step in range(self.edits):
            random_edit(rng, vault, step, (EDIT_KINDS[step],) if step < len(EDIT_KINDS) else EDIT_KINDS)

    # --- setup ----------------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Templates `base` (indexed vault), `edited` (its edits, over the base's store), `empty` (edited vault,
        no store), and the reference: a fresh file-store index of the edited vault."""
        self.work.mkdir(parents=True, exist_ok=True)
        self.work.chmod(0o755)  # as root the embedded server runs as `postgres`, which must reach the store
        shutil.rmtree(self.work / "run", ignore_errors=True)
        self.run_vault.parent.mkdir(parents=True)
        shutil.copytree(self.vault, self.run_vault, ignore=shutil.ignore_patterns(".wikirag", ".obsidian"))
        self.check_ok(self.cli("index", str(self.run_vault), "--json"), "base index")
        self.keep("base")
        self.edit(self.run_vault)
        self.keep("edited")
        shutil.rmtree(self.run_vault / ".wikirag")
        self.keep("empty")
        self.check_ok(self.cli("index", str(self.run_vault), "--json", backend="file"), "reference index")
        self.reference = snapshot(load_config(self.run_vault, environ={"WIKIRAG_STORAGE_BACKEND": "file"}))
        self.edited_files = vault_files(self.run_vault)

    @staticmethod
    def check_ok(done: subprocess.CompletedProcess, what: str) -> None:
        if done.returncode != 0:
            raise SystemExit(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")

    # --- one point ------------------------------------------------------------------------------------------

    def run_point(self, scenario: str, sig: int | None, at: float | None = None, write: int | None = None) -> Ran:
        """Run the scenario's command on a fresh copy and stop it: `at` seconds in, or just before its `write`-th
        write point (bench/crash_points.py), with `sig`; uninterrupted when `sig` is None."""
        trace = self.work / "trace"
        trace.unlink(missing_ok=True)
        extra = {"WIKIRAG_CRASH_TRACE": str(trace)}
        if write is not None and sig is not None:
            extra |= {"WIKIRAG_CRASH_AT": str(write), "WIKIRAG_CRASH_SIGNAL": "INT" if sig == signal.SIGINT else "KILL"}
        if scenario == "watch":
            self.restore("base")
            proc = self.popen("watch", str(self.run_vault), "--json", "--quiet-seconds", "0.3", **extra)
            if not proc.stdout.readline():  # the initial run's report: the store is in step with the base
                proc.kill()
                return Ran(f"watch did not start: {last_line(proc.communicate()[1])}", 0.0, trace)
            before = len(trace_lines(trace))
            self.edit(self.run_vault)
        else:
            self.restore({"edits": "edited", "rebuild": "edited", "first": "empty"}[scenario])
            args = ["index", str(self.run_vault), "--json"] + (["--rebuild"] if scenario == "rebuild" else [])
            proc = self.popen(*args, **extra)
            before = 0
        started = time.perf_counter()
        signalled = False
        if sig is not None and at is not None:
            while time.perf_counter() < started + at and proc.poll() is None:
                time.sleep(min(0.005, max(0.0, started + at - time.perf_counter())))
            if proc.poll() is None:
                proc.send_signal(sig)
                signalled = True
        elif write is not None:
            signalled = True  # the process signals itself, if it gets that far
        last_write = self.stop_watch_when_quiet(proc, trace) if scenario == "watch" else None
        try:
            proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return Ran("hung", time.perf_counter() - started, trace, before)
        elapsed = (last_write or time.perf_counter()) - started  # a watcher's run ends with its last write
        lines = trace_lines(trace)
        if write is not None and len(lines) < write or sig is not None and not signalled:
            how = "finished first"
        elif proc.returncode == -signal.SIGKILL:
            how = "killed"
        else:
            how = f"exit {proc.returncode}"
        return Ran(how, elapsed, trace, before)

    @staticmethod
    def stop_watch_when_quiet(proc: subprocess.Popen, trace: Path) -> float:
        """A watcher runs until stopped: once it has reported a batch and then written nothing for 3 s, it gets a
        Ctrl-C (a signalled one ends by itself). Returns when it last wrote."""
        os.set_blocking(proc.stdout.fileno(), False)
        reported, seen, quiet_since = False, -1, time.perf_counter()
        deadline = quiet_since + 600
        while proc.poll() is None and time.perf_counter() < deadline:
            reported = bool(proc.stdout.readline()) or reported
            count = len(trace_lines(trace))
            if count != seen:
                seen, quiet_since = count, time.perf_counter()
            if reported and time.perf_counter() - quiet_since >= 3.0:
                break
            time.sleep(0.05)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        return quiet_since

    def complete_and_check(self) -> list[str]:
        """The promise: the next `wikirag index` completes, equals the reference, and queries answer."""
        problems = []
        done = self.cli("index", str(self.run_vault), "--json")
        if done.returncode != 0:
            return [f"next index exit {done.returncode}: {last_line(done.stderr)}"]
        if vault_files(self.run_vault) != self.edited_files:
            problems.append("the vault differs from the edited template (the sweep's own fault)")
        got, want = self.read_store()
        if got != want:
            problems.append("store differs: " + describe_difference(got, want))
        asked = self.cli("query", self.question, "--vault", str(self.run_vault), "--context-only")
        if asked.returncode != 0 or not asked.stdout.strip():
            problems.append(f"query exit {asked.returncode}: {last_line(asked.stderr)}")
        again = self.cli("index", str(self.run_vault), "--json")
        if again.returncode != 0:
            problems.append(f"a further index exit {again.returncode}: {last_line(again.stderr)}")
        else:
            report = json.loads(again.stdout)
            if report["notes_indexed"] or report["notes_deleted"]:
                problems.append(f"a further index still had work: {report['notes_indexed']} indexed, "
                                f"{report['notes_deleted']} deleted")
        return problems

    def read_store(self) -> tuple[dict, dict]:
        config = load_config(self.run_vault, environ={"WIKIRAG_STORAGE_BACKEND": self.backend})
        if self.backend == "file":
            return snapshot(config), self.reference
        from tests.test_embedded import _embedded_snapshot
        from tests.test_postgres import _as_pg
        from wikirag.storage import embedded

        try:
            return _embedded_snapshot(config), _as_pg(self.reference)
        finally:
            embedded.leave_all()  # this process joined the server to read it: the last client stops it

    # --- a scenario -----------------------------------------------------------------------------------------

    def scenario(self, name: str, signals: list[str], points: int, mode: str) -> dict[str, int]:
        """Time (and count the write points of) one uninterrupted run, then stop it at `points` places spread over
        its time (`mode` "time") or its write points ("write") with each signal, checking the next run each time."""
        ran = self.run_point(name, None)
        problems = self.complete_and_check()
        writes = len(trace_lines(ran.trace)) - ran.before
        print(f"{name}: uninterrupted run {ran.seconds:.2f} s, {writes} write points ({ran.how})"
              f"{'; ' + '; '.join(problems) if problems else ''}", flush=True)
        if problems:
            self.failures.append(f"{name} uninterrupted: {'; '.join(problems)}")
        figures = {"points": 0, "failed": 0, "after the end": 0}
        count = points if points > 0 else writes
        for sig_name in signals:
            sig = {"kill": signal.SIGKILL, "int": signal.SIGINT}[sig_name]
            for i in range(count):
                if mode == "time":
                    at, write = ran.seconds * (i + 0.5) / count, None
                    where = f"at {at:6.2f} s"
                else:
                    at, write = None, ran.before + 1 + i * writes // count
                    where = f"write {write:4}"
                stopped = self.run_point(name, sig, at, write)
                if stopped.how == "finished first":
                    figures["after the end"] += 1
                problems = [stopped.how] if stopped.how.startswith(("hung", "watch did not")) else []
                problems += self.complete_and_check()
                figures["points"] += 1
                status = "ok" if not problems else "FAIL " + "; ".join(problems)
                print(f"  {name} {sig_name:4} {i + 1:3}/{count} {where} ({stopped.stopped_at(write):28}): "
                      f"{stopped.how:14} {status}", flush=True)
                if problems:
                    figures["failed"] += 1
                    self.failures.append(f"{name} {sig_name} {where} ({stopped.stopped_at(write)}, {stopped.how}): "
                                         f"{'; '.join(problems)}")
                    kept = self.work / f"failed-{name}-{sig_name}-{i + 1}"
                    if sum(1 for _ in self.work.glob("failed-*")) < 6:
                        subprocess.run(["cp", "-a", str(self.run_vault), str(kept)], check=False)
        return figures


@dataclass
class Ran:
    how: str  # "killed", "exit 130", "finished first", ...
    seconds: float
    trace: Path
    before: int = 0  # write points before the run under test began (watch's first run)

    def stopped_at(self, write: int | None) -> str:
        """The write point the run was stopped at: the `write`-th, or the last it reached."""
        lines = trace_lines(self.trace)
        if write is not None and len(lines) >= write:
            return lines[write - 1]
        return lines[-1] if lines else "none"


def trace_lines(trace: Path) -> list[str]:
    try:
        return trace.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def vault_files(vault: Path) -> dict[str, bytes]:
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*"))
            if p.is_file() and ".wikirag" not in p.relative_to(vault).parts}


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def describe_difference(got: dict, want: dict) -> str:
    """Which parts of two snapshots differ, with a few keys of each."""
    parts = []
    for part in sorted(set(got) | set(want)):
        a, b = got.get(part), want.get(part)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            extra, missing = sorted(set(a) - set(b), key=str), sorted(set(b) - set(a), key=str)
            changed = sorted((k for k in set(a) & set(b) if a[k] != b[k]), key=str)
            parts.append(f"{part}: {len(extra)} extra {extra[:3]}, {len(missing)} missing {missing[:3]}, "
                         f"{len(changed)} changed {changed[:3]}")
        else:
            parts.append(f"{part}: {str(a)[:120]} != {str(b)[:120]}")
    return " | ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--backend", choices=["file", "embedded"], default="file")
    parser.add_argument("--points", type=int, default=30,
                        help="signal points per scenario and signal (0 with --at write: every write point)")
    parser.add_argument("--at", choices=["time", "write"], default="time",
                        help="spread the points over the run's time, or over its write points")
    parser.add_argument("--scenarios", default="edits,rebuild,watch,first")
    parser.add_argument("--signals", default="kill,int")
    parser.add_argument("--edits", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=5, help="notes per write-ahead batch ([index] batch_size)")
    parser.add_argument("--embedding", choices=["hash", "local"], default="hash")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--question", default=None, help="for the query check (default: about the first note)")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a new one under /tmp)")
    args = parser.parse_args()
    if not args.vault.is_dir():
        print(f"{args.vault}: not a folder", file=sys.stderr)
        return 2
    first_note = sorted(p for p in args.vault.rglob("*.md") if ".wikirag" not in p.parts)[0]
    work = args.work or Path(tempfile.mkdtemp(prefix=f"wikirag-crash-{args.backend}-"))
    sweep = Sweep(args.vault.resolve(), work, args.backend, args.embedding, args.batch_size, args.edits, args.seed,
                  args.question or f"What is {first_note.stem}?")
    started = time.perf_counter()
    sweep.prepare()
    print(f"{args.vault} on {args.backend}, {args.embedding} embedding, batch size {args.batch_size}, "
          f"{args.edits} edits, points spread over {args.at}; work folder {work}", flush=True)
    totals = {}
    for name in args.scenarios.split(","):
        totals[name] = sweep.scenario(name, args.signals.split(","), args.points, args.at)
    print(f"\n{'scenario':10} {'points':>6} {'failed':>6} {'after the end':>14}")
    for name, figures in totals.items():
        print(f"{name:10} {figures['points']:6} {figures['failed']:6} {figures['after the end']:14}")
    print(f"{len(sweep.failures)} failures in {time.perf_counter() - started:.0f} s")
    for failure in sweep.failures:
        print("  " + failure)
    if not sweep.failures:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if sweep.failures else 0


if __name__ == "__main__":
    sys.exit(main())
