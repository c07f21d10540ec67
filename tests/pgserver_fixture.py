"""A private, throw-away PostgreSQL server for the storage tests and `bench/index.py --storage postgres`.

Binaries, first that starts wins: the `pgserver` wheel's build (PostgreSQL 16 with pgvector), then Debian's
`/usr/lib/postgresql/*/bin` (no pgvector: tests that need vectors skip). We run initdb and pg_ctl ourselves
rather than `pgserver.get_server()`, to listen on TCP (as users' servers do) with password authentication
for one role, and, when run as root, to run the server as the existing `postgres` (or `nobody`) user
instead of letting pgserver add a system user.

Roles and databases made here:
- `postgres`: superuser, trusted (no password);
- `wikirag`, password `wikirag-test-pw` over TCP (scram): owns database `wikirag`, where `vector` is
  installed by the superuser, the way an administrator would set up a team's database.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

APP_USER, APP_PASSWORD, APP_DATABASE = "wikirag", "wikirag-test-pw", "wikirag"


class ServerUnavailable(RuntimeError):
    """No PostgreSQL could be started here; the message lists why for each candidate."""


@dataclass
class PrivateServer:
    source: str  # "pgserver" or "debian"
    version: str
    bin_dir: Path
    root: Path
    port: int
    has_vector: bool
    start_seconds: float
    run_as: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"

    @property
    def pgdata(self) -> Path:
        return self.root / "pgdata"

    def env(self) -> dict[str, str]:
        """WIKIRAG_* variables that point wikirag at the app database as the password role."""
        return {
            "WIKIRAG_STORAGE_BACKEND": "postgres",
            "WIKIRAG_STORAGE_HOST": self.host,
            "WIKIRAG_STORAGE_PORT": str(self.port),
            "WIKIRAG_STORAGE_USER": APP_USER,
            "WIKIRAG_STORAGE_DATABASE": APP_DATABASE,
            "WIKIRAG_POSTGRES_PASSWORD": APP_PASSWORD,
        }

    def psql(self, sql: str, database: str = "postgres") -> str:
        out = subprocess.run(
            [*self.run_as, str(self.bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", str(self.pgdata), "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql],
            capture_output=True, text=True, timeout=60)
        if out.returncode:
            raise RuntimeError(out.stderr.strip())
        return out.stdout.strip()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            subprocess.run([*self.run_as, str(self.bin_dir / "pg_ctl"), "-D", str(self.pgdata), "-m", "immediate",
                            "-w", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


def candidate_bin_dirs() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    import importlib.util

    spec = importlib.util.find_spec("pgserver")  # located, not imported: its import has side effects
    if spec and spec.submodule_search_locations:
        bin_dir = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
        if (bin_dir / "initdb").exists():
            found.append(("pgserver", bin_dir))
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name)
                    if p.parent.name.isdigit() else 0, reverse=True)
    found += [("debian", p) for p in debian if (p / "initdb").exists()]
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> tuple[list[str], str | None]:
    """PostgreSQL refuses to run as root: use an unprivileged user that already exists."""
    if os.geteuid() != 0:
        return [], None
    import pwd

    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"], user
    raise ServerUnavailable("running as root and neither a 'postgres' nor a 'nobody' user exists")


def start_private_server() -> PrivateServer:
    """Start the first candidate that works; raise ServerUnavailable listing every failure."""
    reasons = []
    candidates = candidate_bin_dirs()
    if not candidates:
        raise ServerUnavailable("no PostgreSQL binaries: pip install pgserver (ships PostgreSQL 16 + pgvector)")
    for source, bin_dir in candidates:
        try:
            return _start(source, bin_dir)
        except Exception as exc:  # try the next candidate, report all
            reasons.append(f"{source} ({bin_dir}): {str(exc).strip().splitlines()[-1] if str(exc).strip() else exc!r}")
    raise ServerUnavailable("; ".join(reasons))


def _start(source: str, bin_dir: Path) -> PrivateServer:
    started = time.perf_counter()
    run_as, user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="wikirag-pg-"))  # short path: the socket lives here too
    try:
        root.chmod(0o755)
        pgdata = root / "pgdata"
        pgdata.mkdir()
        if user:
            shutil.chown(pgdata, user=user)
        subprocess.run([*run_as, str(bin_dir / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust",
                        "-E", "UTF8", "--no-locale", "--no-sync"], check=True, capture_output=True, text=True,
                       timeout=120)
        (pgdata / "pg_hba.conf").write_text(
            "local all all trust\n"
            "host all postgres 127.0.0.1/32 trust\n"
            "host all all 127.0.0.1/32 scram-sha-256\n"
        )
        port = _free_port()
        options = (f"-h 127.0.0.1 -p {port} -k {pgdata} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=200")
        subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "server.log"),
                        "-o", options, "-w", "-t", "60", "start"], check=True, capture_output=True, text=True,
                       timeout=90)
        version = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True,
                                 text=True).stdout.strip()
        server = PrivateServer(source, version, bin_dir, root, port, False, 0.0, run_as)
        server.psql(f"CREATE ROLE {APP_USER} LOGIN PASSWORD '{APP_PASSWORD}'")
        server.psql(f"CREATE DATABASE {APP_DATABASE} OWNER {APP_USER}")
        try:
            server.psql("CREATE EXTENSION vector", database=APP_DATABASE)
            server.has_vector = True
        except RuntimeError:
            server.has_vector = False
        server.start_seconds = round(time.perf_counter() - started, 2)
        return server
    except subprocess.CalledProcessError as exc:
        log = root / "pgdata" / "server.log"
        detail = (exc.stderr or "") + (log.read_text(errors="replace")[-500:] if log.exists() else "")
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(detail.strip() or str(exc)) from None
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
