"""The PostgreSQL connection wikirag opens itself (ledger, lock, doctor): connecting with the configured
settings, one-line explanations of connection failures, and doctor's storage checks. Passwords never reach a
message.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from wikirag.errors import ConfigError, WikiragError
from wikirag.storage.server_env import server_env_problem, server_storages
from wikirag.storage.settings import CONNECT_TIMEOUT_S, REQUIREMENTS, StorageSettings, missing_packages, storage_family


class StorageUnreachable(WikiragError):
    """The storage server cannot be reached or refuses us; the message says why in plain words."""


def connect(settings: StorageSettings, *, autocommit: bool = False, start: bool = True) -> Any:
    """A psycopg connection with the same settings LightRAG's pool uses (and no ~/.pgpass, which LightRAG's
    pool cannot read either). Raises StorageUnreachable with a plain-words reason. On the embedded backend
    the private server is started (or joined) first unless `start` is False."""
    if settings.embedded and start:
        from wikirag.storage.embedded import ensure_server

        if importlib.util.find_spec("psycopg") is None:
            _import_psycopg()  # its one-line error, before a server starts that no client would stop
        with _meanwhile(ensure_server, settings):  # the server starts on the other core while psycopg loads
            psycopg = _import_psycopg()
    else:
        psycopg = _import_psycopg()
    params: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "user": settings.user, "dbname": settings.database,
        "password": settings.password, "connect_timeout": CONNECT_TIMEOUT_S, "application_name": "wikirag",
        "passfile": os.path.join(os.devnull, "none"),  # a path that cannot exist: ~/.pgpass is not read
    }
    if settings.sslmode:
        params["sslmode"] = settings.sslmode
    try:
        return psycopg.connect(autocommit=autocommit, **params)
    except psycopg.OperationalError as exc:
        raise StorageUnreachable(explain_connect_error(settings, exc)) from None


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConfigError("PostgreSQL storage needs wikirag's postgres extra: pip install 'wikirag[postgres]'") \
            from None
    return psycopg


@contextlib.contextmanager
def _meanwhile(work: Any, *args: Any) -> Iterator[None]:
    """Run `work(*args)` in a thread while the block runs; wait for it after, and raise what it raised. Only
    where it is worth a thread: a first start in a process that has not loaded psycopg (0.2-0.4 s)."""
    if "psycopg" in sys.modules:
        work(*args)
        yield
        return
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work(*args)
        except BaseException as exc:  # noqa: BLE001  (handed to the caller's thread below)
            failed.append(exc)

    thread = threading.Thread(target=run, name="wikirag-server-start")
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if failed:
        raise failed[0]


def explain_connect_error(settings: StorageSettings, exc: BaseException) -> str:
    """One line a person can act on, from a driver's connection error. Never includes the password."""
    where = f"PostgreSQL at {settings.host}:{settings.port}"
    state = getattr(exc, "sqlstate", None) or ""
    text = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    low = str(exc).lower()
    if state == "28P01" or "password authentication failed" in low:
        how = (f"the password from {settings.password_source} was not accepted" if settings.password_source
               else "no password is set (WIKIRAG_POSTGRES_PASSWORD)")
        return f"{where} refused user {settings.user!r}: {how}, or the user does not exist"
    if "no password supplied" in low or "password is required" in low:
        return f"{where} wants a password for {settings.user!r}: set WIKIRAG_POSTGRES_PASSWORD"
    if state == "3D000" or ("database" in low and "does not exist" in low):
        return (f"{where} has no database {settings.database!r}: create it (createdb {settings.database}) "
                "or set [storage] database")
    if "role" in low and "does not exist" in low:
        return f"{where} has no user {settings.user!r}: create it or set [storage] user"
    if state == "28000" or "no pg_hba.conf entry" in low:
        return f"{where} does not allow {settings.user!r} to connect from here (pg_hba.conf): {text}"
    refused = isinstance(exc, ConnectionRefusedError) or "connection refused" in low or "connect call failed" in low
    if refused or ("no such file or directory" in low and settings.host.startswith("/")):
        return f"{where} refused the connection: is the server running, and are host and port right?"
    if "could not translate host name" in low or "name or service not known" in low:
        return f"{where}: unknown host name {settings.host!r}"
    if "timeout" in low or "timed out" in low:
        return f"{where} did not answer within {CONNECT_TIMEOUT_S} s (firewall, wrong host or port?)"
    if "ssl" in low:
        return f"{where}: SSL problem with sslmode={settings.sslmode or 'prefer'}: {text}"
    return f"{where}: cannot connect: {text}"


def storage_unreachable(settings: StorageSettings, exc: BaseException) -> StorageUnreachable | None:
    """For an error out of LightRAG's `initialize_storages()`: a StorageUnreachable in plain words when it is
    a connection or login failure (asyncpg or socket), else None (re-raise the original)."""
    state = str(getattr(exc, "sqlstate", "") or "")
    connection = isinstance(exc, (OSError, ConnectionError, TimeoutError)) or state[:2] in {"08", "28", "3D"}
    if not connection:
        with contextlib.suppress(ImportError):
            import asyncpg

            connection = isinstance(exc, (asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
                                          asyncpg.InvalidAuthorizationSpecificationError,
                                          asyncpg.InvalidCatalogNameError))
    return StorageUnreachable(explain_connect_error(settings, exc)) if connection else None


StorageCheck = tuple[str, str, str]  # (name, status: ok | warn | fail | skip, detail)


def check_storage(settings: StorageSettings, workspace: str | None = None) -> list[StorageCheck]:
    """Doctor checks for the configured storages, in plain words; no check shows a secret."""
    checks: list[StorageCheck] = [("storage", "ok", ", ".join(f"{r}={c}" for r, c in settings.classes.items()))]
    missing = missing_packages(settings)
    if missing:
        checks.append(("packages", "fail", f"missing {', '.join(missing)}: pip install {' '.join(missing)}"))
    servers = server_storages(settings)
    for name in servers:
        env_vars = REQUIREMENTS[storage_family(name)][2]
        problem = server_env_problem(name)  # the line index, query, search and watch refuse with
        if problem:
            checks.append((name, "fail", problem))
        else:
            checks.append((name, "ok", f"{', '.join(env_vars)} set; the connection is checked when used"))
    if not settings.uses_postgres:
        if servers:
            checks.append(("ledger", "warn", "no PostgreSQL storage: the ledger and the writer lock stay local "
                                             "files, so only this machine may index this workspace"))
        return checks
    if "psycopg[binary]" in missing:
        return checks
    if settings.embedded:
        if "pgserver" in missing:
            return checks
        checks.append(_check_embedded(settings))
        if checks[-1][1] != "ok" or "not created yet" in checks[-1][2]:
            return checks  # doctor creates no cluster: the first index does
    return checks + _check_postgres(settings, workspace)


def _check_embedded(settings: StorageSettings) -> StorageCheck:
    """The embedded server, in plain words: its version, data folder, size and who is using it."""
    from wikirag.storage.embedded import server_version, status

    try:
        version, state = server_version(), status(settings)
    except (OSError, WikiragError) as exc:
        return ("embedded", "fail", f"{settings.target}: {exc}")
    if not state["exists"]:
        return ("embedded", "ok", f"{version} from pgserver; data folder {state['data_dir']} not created yet "
                                  "(the first index creates it)")
    running = (f"running (pid {state['pid']}, {state['clients']} wikirag process(es) using it)" if state["pid"]
               else "stopped (the next command starts it)")
    return ("embedded", "ok", f"{version} from pgserver; data folder {state['data_dir']}, "
                              f"{state['bytes'] / 1e6:,.0f} MB; {running}")


def _check_postgres(settings: StorageSettings, workspace: str | None) -> list[StorageCheck]:
    checks: list[StorageCheck] = []
    try:
        conn = connect(settings, autocommit=True)
    except (StorageUnreachable, ConfigError) as exc:
        return [("postgres", "fail", str(exc))]
    with conn:
        version_num = int(conn.execute("SHOW server_version_num").fetchone()[0])
        version = conn.execute("SHOW server_version").fetchone()[0]
        ssl = conn.pgconn.ssl_in_use
        checks.append(("postgres", "ok" if version_num >= 130000 else "warn",
                       f"PostgreSQL {version} at {settings.target} ({'SSL' if ssl else 'no SSL'})"
                       + ("" if version_num >= 130000 else "; versions before 13 are untested")))
        if settings.vector == "PGVectorStorage":
            checks.append(_check_vector(conn, settings))
        checks.append(_check_create_table(conn, settings))
        if workspace:
            row = None
            if conn.execute("SELECT to_regclass('wikirag_ledger_notes') IS NOT NULL").fetchone()[0]:
                row = conn.execute(
                    "SELECT (SELECT count(*) FROM wikirag_ledger_notes n WHERE n.workspace = l.workspace), "
                    "l.updated_at FROM wikirag_ledger l WHERE l.workspace = %s", (workspace,)).fetchone()
            if row:
                checks.append(("ledger", "ok", f"workspace {workspace!r}: {row[0]} notes, last written "
                                               f"{row[1]:%Y-%m-%d %H:%M %Z}"))
            else:
                checks.append(("ledger", "warn", f"workspace {workspace!r} has no index in {settings.database} yet"))
    return checks


def _check_vector(conn: Any, settings: StorageSettings) -> StorageCheck:
    row = conn.execute("SELECT default_version, installed_version FROM pg_available_extensions "
                       "WHERE name = 'vector'").fetchone()
    if row is None:
        return ("pgvector", "fail", f"the server at {settings.host} has no pgvector extension; install it there "
                                    "(e.g. the postgresql-NN-pgvector package or a pgvector image), or choose "
                                    "another vector storage")
    if row[1]:
        return ("pgvector", "ok", f"vector {row[1]} installed in {settings.database}")
    try:
        with conn.transaction():  # CREATE EXTENSION is transactional: try it, then roll back
            conn.execute("CREATE EXTENSION vector")
            raise _Rollback
    except _Rollback:
        return ("pgvector", "ok", f"vector {row[0]} available; created in {settings.database} on first index")
    except Exception:
        return ("pgvector", "fail", f"vector {row[0]} is available but not installed in {settings.database}, and "
                                    f"{settings.user!r} may not install it: ask an administrator to run "
                                    f"CREATE EXTENSION vector; in {settings.database}")


def _check_create_table(conn: Any, settings: StorageSettings) -> StorageCheck:
    try:
        with conn.transaction():
            conn.execute("CREATE TABLE wikirag_doctor_probe (x int)")
            raise _Rollback
    except _Rollback:
        return ("tables", "ok", f"{settings.user!r} may create tables in {settings.database}")
    except Exception as exc:
        exists = conn.execute("SELECT to_regclass('lightrag_doc_chunks') IS NOT NULL").fetchone()[0]
        if exists:
            return ("tables", "warn", f"{settings.user!r} may not create tables, but LightRAG's exist already; "
                                      "a new embedding model needs new vector tables")
        return ("tables", "fail", f"{settings.user!r} may not create tables in {settings.database} "
                                  f"({str(exc).splitlines()[0]}): GRANT CREATE ON SCHEMA public TO {settings.user}")


class _Rollback(Exception):
    """Raised inside a probe transaction to undo it."""



def tend_changed_tables(settings: StorageSettings) -> list[str]:
    """Do now what autovacuum would do soon to the index's tables (LightRAG's and the ledger's) whose rows changed
    past its default thresholds: ANALYZE those with more than 50 rows + 10 % changed since their last
    statistics, and on the embedded server VACUUM those with more than 1,000 rows + 20 % inserted (or 50 + 20 %
    dead) since their last vacuum. Returns the tables tended.

    Why: autovacuum looks once a minute, and an embedded server stops when its last wikirag process exits, so
    after a first index its tables often had neither. Without statistics LightRAG's graph queries plan as if the
    tables were empty: at 13,000 notes a warm hybrid query took 0.40 s instead of 0.25 s, the degree lookups
    reading every edge of the workspace. Without a vacuum no page is marked all-visible, so the row counts
    LightRAG takes each time it opens its vector storages read every row (23-33 ms each at 13,000 notes;
    4-13 ms as index-only scans after). A server of your own keeps autovacuum running, with your per-table
    settings: there only the statistics are refreshed early, as before."""
    with connect(settings, autocommit=True) as conn:
        inserted = "n_ins_since_vacuum" if conn.info.server_version >= 130000 else "0"  # PostgreSQL 13 counts inserts
        rows = conn.execute(
            f"SELECT relname, {inserted} > 1000 + 0.2 * n_live_tup OR n_dead_tup > 50 + 0.2 * n_live_tup, "
            "n_mod_since_analyze > 50 + 0.1 * n_live_tup FROM pg_stat_user_tables "
            "WHERE schemaname = current_schema() AND (relname LIKE 'lightrag\\_%%' OR relname LIKE 'wikirag\\_%%') "
            "ORDER BY relname").fetchall()
        tended = []
        for name, vacuum, analyze in rows:
            vacuum = vacuum and settings.embedded
            table = '"{}"'.format(name.replace('"', '""'))
            if vacuum:
                conn.execute(f"VACUUM (ANALYZE) {table}" if analyze else f"VACUUM {table}")
            elif analyze:
                conn.execute(f"ANALYZE {table}")
            if vacuum or analyze:
                tended.append(name)
    return tended


def keep_vectors_inline(settings: StorageSettings) -> list[str]:
    """Store LightRAG's vectors inside their rows (column storage MAIN) rather than out of line; returns the
    vector tables changed (once each: the catalog says so afterwards).

    Why: pgvector's type defaults to storage EXTERNAL, and a row of a 384-dimension vector (1.5 KB) beside its
    text passes PostgreSQL's 2 KB threshold, so every vector went to the TOAST table. LightRAG's vector queries
    are exact scans (docs/storage.md), and each row's distance then fetched its vector from TOAST: at 13,000
    notes the relation scan read 145,000 buffers and took 320 ms; inline, 8,700 and 46 ms. With MAIN the text
    is moved out first, and PostgreSQL moves a MAIN value out only when the row would not fit a page (an
    8 KB vector of 2,000 dimensions). The embedded server's tables are rewritten at once (one UPDATE and a
    VACUUM FULL: seconds at 13,000 notes); on a server of yours only rows written from now on are inline
    (docs/storage.md has the statement that rewrites the rest)."""
    with connect(settings, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
            "AND c.relname LIKE 'lightrag\\_vdb\\_%%' AND a.attname = 'content_vector' AND NOT a.attisdropped "
            "AND a.attstorage <> 'm' ORDER BY c.relname").fetchall()
        for (name,) in rows:
            table = '"{}"'.format(name.replace('"', '""'))
            with conn.transaction():
                conn.execute(f"ALTER TABLE {table} ALTER COLUMN content_vector SET STORAGE MAIN")
                rewritten = 0
                if settings.embedded:
                    rewritten = conn.execute(
                        f"UPDATE {table} SET content_vector = content_vector::real[]::vector").rowcount
            if rewritten:
                conn.execute(f"VACUUM (FULL, ANALYZE) {table}")
    return [name for (name,) in rows]
