"""The private PostgreSQL behind `backend = "embedded"`: PostgreSQL 16 with pgvector from the `pgserver` wheel,
its data folder `wikirag_pgdata` in the workspace folder, and no listener but a Unix socket there (mode 0700,
trust for the initdb superuser on that socket only: no TCP port, no password, nothing reachable from outside).

We run pgserver's binaries ourselves rather than `pgserver.get_server()`, for three reasons: as root it adds a
system user (useradd) and opens every parent folder to others (chmod); its list of client processes never
forgets one killed with -9, so after such a kill the server is never stopped; and it picks its own socket
folder. We keep its scheme (postmaster.pid says whether a server runs; a list of client processes says when
the last one leaves) and handle those points:
- as root (PostgreSQL refuses to run as root) the server runs as the existing `postgres`, else `nobody`,
  user; a data folder that user cannot reach is an error naming the folder: no permission outside the
  data folder is changed;
- clients are (pid, start time) pairs, and dead ones are dropped whenever the list is read;
- initdb, start, join and stop happen under a file lock beside the data folder; initdb writes into
  `wikirag_pgdata.init` and renames it when complete, so a killed initdb never leaves half a cluster.

Lifetime: the first wikirag process that needs the server starts it (or joins the one running) and records
itself in `wikirag_pgdata.clients`; each process leaves at exit, and the last one stops the server
(SIGINT: the fast, clean shutdown of `pg_ctl stop -m fast`). `index`, `watch`, `mcp` and `query` share one
server. The postmaster is started, and waited for, without pg_ctl (whose 100 ms polls were most of each start
and stop), in a session of its own so the terminal's Ctrl-C never reaches it. A process killed with -9 cannot
leave: the server then runs on until the next wikirag process on this store exits.

Durability: PostgreSQL's defaults stay (fsync, full-page writes, synchronous commit): a crash loses nothing
committed, and the write-ahead ledger in the same database completes an interrupted run.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from wikirag.errors import ConfigError, WikiragError
from wikirag.storage.settings import EMBEDDED_DATABASE, EMBEDDED_PORT, EMBEDDED_USER, StorageSettings

_START_STOP_SECONDS = 60.0
_POLL_SECONDS = 0.005
INSTALL_HINT = "backend = \"embedded\" needs pgserver: pip install 'wikirag[embedded]'"


class EmbeddedServerError(WikiragError):
    """The embedded PostgreSQL could not be created or started; the message says why and where its log is."""


def bin_dir() -> Path:
    """pgserver's PostgreSQL binaries, located without importing pgserver (its import creates folders)."""
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec and spec.submodule_search_locations:
        found = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
        if (found / "pg_ctl").exists():
            return found
    raise ConfigError(INSTALL_HINT)


def server_version() -> str:
    out = subprocess.run([str(bin_dir() / "postgres"), "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip().replace("postgres (PostgreSQL) ", "PostgreSQL ")


_joined: dict[str, StorageSettings] = {}  # data folder -> settings, for the servers this process has joined


_guard = threading.Lock()
_postmasters: dict[int, subprocess.Popen] = {}  # pid -> the servers this process started (its children)


def ensure_server(settings: StorageSettings) -> None:
    """Make sure the embedded server for these settings runs and this process is one of its clients (it
    leaves at exit). Cheap after the first call in a process."""
    key = settings.data_dir
    if os.name == "nt":
        raise ConfigError("backend = \"embedded\" runs PostgreSQL on a Unix socket: Linux and macOS only")
    if not key:
        raise ConfigError("embedded storage without a data folder (load_config places it in the workspace folder)")
    if key in _joined:
        return
    with _guard:
        if key in _joined:
            return
        _Server(settings).join()
        if not _joined:
            atexit.register(leave_all)
        _joined[key] = settings


def leave(settings: StorageSettings) -> bool:
    """This process stops using the server; the last client stops it. Returns True when it stopped it."""
    with _guard:
        if _joined.pop(settings.data_dir, None) is None:
            return False
        if not _joined:
            atexit.unregister(leave_all)
        return _Server(settings).leave()


def leave_all() -> None:
    for settings in list(_joined.values()):
        leave(settings)


def status(settings: StorageSettings) -> dict[str, Any]:
    """For doctor: whether the data folder exists, its size, the server's pid and live clients."""
    server = _Server(settings)
    out: dict[str, Any] = {"data_dir": str(server.data), "exists": (server.data / "PG_VERSION").exists()}
    if out["exists"]:
        out["bytes"] = sum(p.stat().st_size for p in server.data.rglob("*") if p.is_file() and not p.is_symlink())
        out["pid"] = server.running_pid()
        out["clients"] = len(server.read_clients())
    return out


class _Server:
    def __init__(self, settings: StorageSettings) -> None:
        self.settings = settings
        self.data = Path(settings.data_dir)
        self.workspace = self.data.parent
        self.socket_dir = Path(settings.host)
        self.lock_path = self.workspace / f"{self.data.name}.lock"
        self.clients_path = self.workspace / f"{self.data.name}.clients"

    # --- start and join ---------------------------------------------------------------------------------

    def join(self) -> None:
        from filelock import FileLock

        self.workspace.mkdir(parents=True, exist_ok=True)
        run_as = _run_as()
        with FileLock(str(self.lock_path), timeout=120):
            if not (self.data / "PG_VERSION").exists():
                self._initdb(run_as)
            if (pid := self.running_pid()) is not None and not self._socket_here():
                self._moved(pid)
            if self.running_pid() is None:
                self._start(run_as)
            self._ensure_database()
            clients = self.read_clients()
            clients.append(_me())
            self._write_clients(clients)

    def _initdb(self, run_as: _RunAs) -> None:
        """initdb into a side folder, renamed into place when complete: a kill never leaves half a cluster."""
        staging = self.workspace / f"{self.data.name}.init"
        shutil.rmtree(staging, ignore_errors=True)  # ours by name: a previous initdb that did not finish
        if self.data.exists():  # no PG_VERSION: never a working cluster (initdb renames whole)
            raise EmbeddedServerError(f"{self.data} exists but holds no PostgreSQL cluster; move it away")
        staging.mkdir(mode=0o700)
        run_as.own(staging)
        run_as.check_reachable(staging)
        self._pg("initdb", "-D", str(staging), "-U", EMBEDDED_USER, "--auth=trust", "-E", "UTF8",
                 "--no-locale", "--no-instructions", run_as=run_as, timeout=300)
        (staging / "pg_hba.conf").write_text("# wikirag: the initdb superuser, on the private socket only\n"
                                             "local all all trust\n")
        with (staging / "postgresql.conf").open("a") as conf:
            conf.write("\ninclude_if_exists = 'wikirag.conf'  # written by wikirag at each start\n")
        run_as.own(staging / "pg_hba.conf")
        os.replace(staging, self.data)

    def _start(self, run_as: _RunAs) -> None:
        for pid, child in list(_postmasters.items()):  # servers of ours that another client stopped: reap them
            if child.poll() is not None:
                del _postmasters[pid]
        if self.socket_dir != self.data:
            _private_dir(self.socket_dir, run_as)
        socket_dir = str(self.socket_dir).replace("'", "''")
        (self.data / "wikirag.conf").write_text(
            "# written by wikirag at each start (storage/embedded.py): a Unix socket only, nothing on TCP\n"
            "listen_addresses = ''\n"
            f"port = {EMBEDDED_PORT}\n"
            f"unix_socket_directories = '{socket_dir}'\n"
            "unix_socket_permissions = 0700\n"
            "max_connections = 100\n")
        run_as.own(self.data / "wikirag.conf")
        log = self.data / "server.log"
        # The postmaster is started and waited for here rather than by `pg_ctl start -w`, which polls
        # every 100 ms: the server is ready in 40-70 ms, and every command that starts it paid the rest.
        # Opened without following a link and given to the server's user by descriptor: as root, a link
        # planted in the data folder (the server user's) must not make us open or chown another file.
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise EmbeddedServerError(f"{log}: cannot open the embedded server's log ({exc.strerror}); "
                                      "if it is a link, remove it") from None
        try:
            if run_as.user:
                os.fchown(fd, run_as.uid, run_as.gid)  # the server's file, as pg_ctl left it
            launched = time.time()
            postmaster = subprocess.Popen(
                [str(bin_dir() / "postgres"), "-D", str(self.data)], stdin=subprocess.DEVNULL, stdout=fd,
                stderr=subprocess.STDOUT, env=_server_env(), start_new_session=True,  # Ctrl-C here must not stop it
                **run_as.kwargs)
        finally:
            os.close(fd)
        _postmasters[postmaster.pid] = postmaster  # ours to reap, even if it is not ready in time
        deadline = time.monotonic() + _START_STOP_SECONDS
        while not self._ready(postmaster.pid, launched):
            if postmaster.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
                why = "did not start" if postmaster.returncode is not None else \
                    f"was not ready in {_START_STOP_SECONDS:.0f} s"
                raise EmbeddedServerError(f"embedded PostgreSQL in {self.data}: the server {why}; "
                                          f"{' / '.join(tail)} (log: {log})")
            time.sleep(_POLL_SECONDS)

    def _ensure_database(self) -> None:
        from dataclasses import replace

        from wikirag.storage.postgres import connect

        with connect(replace(self.settings, database="postgres"), autocommit=True, start=False) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)).fetchone():
                return
            conn.execute(f"CREATE DATABASE {EMBEDDED_DATABASE}")
        with connect(self.settings, autocommit=True, start=False) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def _socket_here(self) -> bool:
        return (self.socket_dir / f".s.PGSQL.{EMBEDDED_PORT}").exists()

    def _moved(self, pid: int) -> None:
        """A server started before its folder moved (the vault renamed), its socket in the temp folder under the
        old path's name: every connection was refused, and its clients cannot stop it. Stopped when none is left."""
        if clients := [str(int(c[0])) for c in self.read_clients()]:
            raise EmbeddedServerError(f"embedded PostgreSQL in {self.data} (process {pid}) was started before its "
                                      f"folder moved; end the wikirag processes {', '.join(clients)} using it")
        self._stop()

    # --- leave and stop ---------------------------------------------------------------------------------

    def leave(self) -> bool:
        from filelock import FileLock

        try:
            with FileLock(str(self.lock_path), timeout=120):
                me = _me()
                clients = [c for c in self.read_clients() if c != me]
                self._write_clients(clients)
                if clients or self.running_pid() is None:
                    return False
                self._stop()
                return True
        except (OSError, WikiragError, subprocess.TimeoutExpired):  # at exit: never fail a finished command
            return False

    def _stop(self) -> None:
        """A fast shutdown (what `pg_ctl stop -m fast` sends), waited for here: pg_ctl's 100 ms polls were
        most of a stop that takes 20-30 ms after a small write."""
        pid = self.running_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + _START_STOP_SECONDS
        while _alive(pid) and (self.data / "postmaster.pid").exists():
            if time.monotonic() > deadline:
                raise EmbeddedServerError(f"embedded PostgreSQL in {self.data}: the server did not stop in "
                                          f"{_START_STOP_SECONDS:.0f} s")
            time.sleep(_POLL_SECONDS)
        child = _postmasters.pop(pid, None)
        if child is not None:  # started by this process: reap it, rather than leave a zombie until we exit
            child.wait(_START_STOP_SECONDS)

    # --- state ------------------------------------------------------------------------------------------

    def running_pid(self) -> int | None:
        """The postmaster's pid when a server runs on this data folder (postmaster.pid names a live process)."""
        try:
            first = (self.data / "postmaster.pid").read_text().splitlines()[0]
            pid = int(first)
        except (OSError, ValueError, IndexError):
            return None
        return pid if _alive(pid) else None

    def _ready(self, pid: int, launched: float) -> bool:
        """postmaster.pid names `pid`, says "ready", and was written by a server started after `launched`: a
        file left by a server killed with -9 also says "ready", and its pid can come round again (pg_ctl
        checks the start time the same way)."""
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
            return int(lines[0]) == pid and lines[7].strip() == "ready" and int(lines[2]) >= launched - 2
        except (OSError, ValueError, IndexError):  # not there yet, or being written line by line
            return False

    def read_clients(self) -> list[list[float]]:
        """Live clients as [pid, start time]; a dead process (or a reused pid) is dropped."""
        try:
            entries = json.loads(self.clients_path.read_text())
        except (OSError, ValueError):
            return []
        return [[int(e[0]), float(e[1])] for e in entries if isinstance(e, list) and len(e) == 2
                and _started_at(int(e[0])) == float(e[1])]

    def _write_clients(self, clients: list[list[float]]) -> None:
        from wikirag.storage.fs import atomic_write_text

        atomic_write_text(self.clients_path, json.dumps(clients))

    def _pg(self, program: str, *args: str, run_as: _RunAs, timeout: float) -> None:
        command = [str(bin_dir() / program), *args]
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_server_env(),
                                 **run_as.kwargs)
        except subprocess.TimeoutExpired:
            raise EmbeddedServerError(f"embedded PostgreSQL in {self.data}: {program} did not finish in "
                                      f"{timeout:.0f} s") from None
        if out.returncode:
            detail = (out.stderr or out.stdout).strip().splitlines()
            raise EmbeddedServerError(f"embedded PostgreSQL in {self.data}: {program} failed: "
                                      f"{detail[-1] if detail else out.returncode}")


def _server_env() -> dict[str, str]:
    """This environment for PostgreSQL's programs, without PGDATA, PGPORT, ...: those are not ours to pass."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def _me() -> list[float]:
    return [os.getpid(), _started_at(os.getpid()) or 0.0]


def _started_at(pid: int) -> float | None:
    """A process's start time (telling a reused pid apart), or None when it is gone."""
    import psutil

    try:
        return round(psutil.Process(pid).create_time(), 2)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class _RunAs:
    """Who runs PostgreSQL's programs: this user, or as root an unprivileged existing user."""

    def __init__(self, user: str | None = None) -> None:
        self.user = user
        self.kwargs: dict[str, Any] = {}
        if user:
            import pwd

            entry = pwd.getpwnam(user)
            self.uid, self.gid = entry.pw_uid, entry.pw_gid
            self.kwargs = {"user": self.uid, "group": self.gid, "extra_groups": []}

    def own(self, path: Path) -> None:
        if self.user:
            os.chown(path, self.uid, self.gid)

    def check_reachable(self, path: Path) -> None:
        """As root: the server's user must be able to enter every folder above its data folder."""
        if not self.user:
            return
        for parent in path.parents:
            st = parent.stat()
            if not (st.st_mode & 0o001 or (st.st_uid == self.uid and st.st_mode & 0o100)):
                raise EmbeddedServerError(
                    f"PostgreSQL refuses to run as root, so wikirag runs it as user {self.user!r}, who cannot enter "
                    f"{parent}: allow it (chmod o+x), use a store elsewhere (--store), or run wikirag as a normal user")


def _run_as() -> _RunAs:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return _RunAs()
    import pwd

    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return _RunAs(user)
    raise EmbeddedServerError("running as root, and neither a 'postgres' nor a 'nobody' user exists to run "
                              "PostgreSQL as; run wikirag as a normal user")


def _private_dir(path: Path, run_as: _RunAs) -> None:
    """The socket folder outside the data folder: ours alone (0700, not a link, owned by the server's user)."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
        run_as.own(path)
    st = path.lstat()
    owner = run_as.uid if run_as.user else os.getuid()
    if not path.is_dir() or path.is_symlink() or st.st_uid != owner or st.st_mode & 0o077:
        raise EmbeddedServerError(f"{path} (the embedded PostgreSQL's socket folder) is not a private folder of "
                                  "this user; remove it")
