"""Where an index lives: LightRAG's file stores, PostgreSQL, or another server LightRAG speaks to.

`[storage]` in wikirag.toml (plus `WIKIRAG_STORAGE_*` env vars and flags) picks the four LightRAG storage
classes and the PostgreSQL connection; secrets come only from env vars. This module turns the choice into:
- `lightrag_storage_kwargs()`: the `kv_storage=` ... `doc_status_storage=` arguments for `LightRAG(...)`;
- `lightrag_environment()`: the env vars LightRAG's server storages read, set for this process while an
  engine is open (LightRAG's SDK reads no `LIGHTRAG_*_STORAGE` variables and takes its connection from
  `POSTGRES_*`, `NEO4J_*`, ... env vars, never from its constructor);
- `ledger_store()` and `writer_lock()`: wikirag's ledger and its one-writer lock, kept with the data
  (a table and an advisory lock in the same database on PostgreSQL; a file and a filelock otherwise);
- `check_storage()`: connection, server version, pgvector and table-creation checks for `wikirag doctor`.

Traps this module handles (lightrag-hku 1.5.7, `lightrag/kg/postgres_impl.py` unless named):
- Every server storage lets an env var override the workspace it was given (`POSTGRES_WORKSPACE`,
  ClientManager.get_config and PGKVStorage.initialize; `NEO4J_WORKSPACE`, `QDRANT_WORKSPACE`, ...): one
  such variable would pour every vault into one workspace. We set them all to "" (read as unset).
- `get_config` also reads `config.ini` from the current folder, and the module loads `.env` from it at
  import: we set every connection variable explicitly and import the storage modules from a neutral folder.
- `POSTGRES_SSL_MODE=require` (or `prefer`) becomes asyncpg `ssl=True`, which asyncpg treats as
  verify-full; we leave it empty and set libpq's `PGSSLMODE`, which asyncpg reads with libpq's meaning.
- The constructor insists `POSTGRES_PASSWORD` exists (lightrag/kg/__init__.py STORAGE_ENV_REQUIREMENTS);
  an empty one is passed as "", which makes asyncpg skip PGPASSWORD and ~/.pgpass.
- A refused connection is retried 10 times with 3-30 s backoff by default (minutes): we ask for fewer.
- The connection pool is process-wide and keeps the settings of the first engine (ClientManager): a second
  engine with other connection settings in the same process is refused here instead of silently sharing.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import logging
import os
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol

from wikirag.errors import ConfigError, StoreLocked, WikiragError

LEDGER_FILENAME = "wikirag_ledger.json"
LOCK_FILENAME = "wikirag.lock"

ROLES = ("kv", "vector", "graph", "doc_status")
ROLE_KWARGS = {"kv": "kv_storage", "vector": "vector_storage", "graph": "graph_storage",
               "doc_status": "doc_status_storage"}

# Short names per role; a full LightRAG class name is accepted too.
ALIASES: dict[str, dict[str, str]] = {
    "kv": {"json": "JsonKVStorage", "file": "JsonKVStorage", "postgres": "PGKVStorage", "redis": "RedisKVStorage",
           "mongo": "MongoKVStorage", "opensearch": "OpenSearchKVStorage"},
    "vector": {"nano": "NanoVectorDBStorage", "file": "NanoVectorDBStorage", "postgres": "PGVectorStorage",
               "qdrant": "QdrantVectorDBStorage", "milvus": "MilvusVectorDBStorage", "mongo": "MongoVectorDBStorage",
               "faiss": "FaissVectorDBStorage", "opensearch": "OpenSearchVectorDBStorage"},
    "graph": {"networkx": "NetworkXStorage", "file": "NetworkXStorage", "postgres": "PGTableGraphStorage",
              "neo4j": "Neo4JStorage", "mongo": "MongoGraphStorage", "memgraph": "MemgraphStorage",
              "opensearch": "OpenSearchGraphStorage"},
    "doc_status": {"json": "JsonDocStatusStorage", "file": "JsonDocStatusStorage", "postgres": "PGDocStatusStorage",
                   "redis": "RedisDocStatusStorage", "mongo": "MongoDocStatusStorage",
                   "opensearch": "OpenSearchDocStatusStorage"},
}
# PGGraphStorage (Apache AGE) is accepted by class name but not offered: PGTableGraphStorage needs no extension.
EXTRA_CLASSES = {"graph": {"PGGraphStorage"}}
PRESETS = {"file": {r: ALIASES[r]["file"] for r in ROLES}, "postgres": {r: ALIASES[r]["postgres"] for r in ROLES}}
BACKENDS = ("file", "postgres", "custom")

# Pass-through backends: the Python package LightRAG's module needs (it pip-installs a missing one at import
# time, so we check first) and the env vars it reads (lightrag/kg/__init__.py STORAGE_ENV_REQUIREMENTS).
REQUIREMENTS: dict[str, tuple[str, str, tuple[str, ...]]] = {  # family -> (import name, pip name, env vars)
    "PG": ("asyncpg", "asyncpg", ()),
    "PGVector": ("pgvector", "pgvector", ()),  # registered on every pool connection (postgres_impl initdb)
    "Redis": ("redis", "redis", ("REDIS_URI",)),
    "Mongo": ("pymongo", "pymongo", ("MONGO_URI", "MONGO_DATABASE")),
    "Neo4J": ("neo4j", "neo4j", ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD")),
    "Memgraph": ("neo4j", "neo4j", ("MEMGRAPH_URI",)),
    "Qdrant": ("qdrant_client", "qdrant-client", ("QDRANT_URL",)),
    "Milvus": ("pymilvus", "pymilvus", ("MILVUS_URI", "MILVUS_DB_NAME")),
    "OpenSearch": ("opensearchpy", "opensearch-py", ("OPENSEARCH_HOSTS",)),
    "Faiss": ("faiss", "faiss-cpu", ()),  # local files, but LightRAG imports faiss without installing it
}
# Env vars with which a LightRAG server storage replaces the workspace it was given.
WORKSPACE_OVERRIDES = ("POSTGRES_WORKSPACE", "NEO4J_WORKSPACE", "MEMGRAPH_WORKSPACE", "QDRANT_WORKSPACE",
                       "MILVUS_WORKSPACE", "MONGODB_WORKSPACE", "REDIS_WORKSPACE", "OPENSEARCH_WORKSPACE")
PASSWORD_VARS = ("WIKIRAG_POSTGRES_PASSWORD", "POSTGRES_PASSWORD", "PGPASSWORD")
DSN_VAR = "WIKIRAG_POSTGRES_DSN"
SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_SECRET_KEYS = {"password", "dsn", "url", "uri", "passwd"}
_CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class StorageSettings:
    # Preset: "file" (LightRAG's JSON/NanoVectorDB/NetworkX files), "postgres" (PGKVStorage, PGVectorStorage,
    # PGTableGraphStorage, PGDocStatusStorage) or "custom" (file classes unless a role names another).
    backend: str = "file"
    kv: str = PRESETS["file"]["kv"]
    vector: str = PRESETS["file"]["vector"]
    graph: str = PRESETS["file"]["graph"]
    doc_status: str = PRESETS["file"]["doc_status"]
    # PostgreSQL connection (host may be a Unix socket folder). The password is never a setting: it comes
    # from WIKIRAG_POSTGRES_PASSWORD, POSTGRES_PASSWORD, PGPASSWORD or the DSN in WIKIRAG_POSTGRES_DSN.
    host: str = "localhost"
    port: int = 5432
    user: str = "postgres"
    database: str = "postgres"
    sslmode: str = ""  # libpq's sslmode; "" leaves PGSSLMODE (default prefer over TCP)
    max_connections: int = 10  # LightRAG's pool size (its own default, 50, is meant for a server)
    connection_retries: int = 3  # LightRAG's default of 10 with 3-30 s backoff takes minutes to give up
    password: str = field(default="", repr=False, compare=False)
    password_source: str = field(default="", compare=False)  # the env var it came from, for doctor

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None,
                     overrides: Mapping[str, Any] | None = None) -> StorageSettings:
        """Settings from `[storage]`, then env, then flags. Precedence, lowest first: defaults, LightRAG's
        own `POSTGRES_HOST/PORT/USER/DATABASE`, the toml section, `WIKIRAG_POSTGRES_DSN`,
        `WIKIRAG_STORAGE_<KEY>`, `overrides` (None values mean "flag not given")."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for key, var in (("host", "POSTGRES_HOST"), ("port", "POSTGRES_PORT"), ("user", "POSTGRES_USER"),
                         ("database", "POSTGRES_DATABASE")):
            if env.get(var):
                values[key] = env[var]
        section = dict(mapping or {})
        secret = sorted(k for k in section if k.lower() in _SECRET_KEYS)
        if secret:
            raise ConfigError(f"[storage] {secret[0]}: secrets never go in wikirag.toml; set "
                              f"WIKIRAG_POSTGRES_PASSWORD (or a DSN in {DSN_VAR}) in the environment")
        values.update(_known(section, "wikirag.toml [storage]"))
        dsn_password = None
        if env.get(DSN_VAR):
            dsn_values, dsn_password = parse_dsn(env[DSN_VAR])
            values.update(dsn_values)
        for f in fields(cls):
            var = f"WIKIRAG_STORAGE_{f.name.upper()}"
            if f.name not in {"password", "password_source"} and env.get(var):
                values[f.name] = env[var]
        values.update(_known({k: v for k, v in (overrides or {}).items() if v is not None}, "command line"))
        settings = _build(values)
        # WIKIRAG_POSTGRES_PASSWORD, then the DSN's, then LightRAG's and libpq's usual variables.
        candidates = [(env.get(PASSWORD_VARS[0]), PASSWORD_VARS[0]), (dsn_password, DSN_VAR),
                      *((env.get(var), var) for var in PASSWORD_VARS[1:])]
        for password, source in candidates:
            if password:
                return replace(settings, password=password, password_source=source)
        return settings

    @property
    def classes(self) -> dict[str, str]:
        return {role: getattr(self, role) for role in ROLES}

    @property
    def uses_postgres(self) -> bool:
        return any(_family(c) == "PG" for c in self.classes.values())

    @property
    def is_file(self) -> bool:
        return self.classes == PRESETS["file"]

    @property
    def target(self) -> str:
        """Where PostgreSQL data lives, for messages: user@host:port/database (no password)."""
        return f"{self.user}@{self.host}:{self.port}/{self.database}"

    def describe(self) -> dict[str, Any]:
        """Everything a user may see (for `--json` and doctor): no password, only where it came from."""
        out: dict[str, Any] = {"backend": self.backend, **self.classes}
        if self.uses_postgres:
            out.update(host=self.host, port=self.port, user=self.user, database=self.database,
                       sslmode=self.sslmode or None, password_from=self.password_source or None)
        return out


def _known(values: Mapping[str, Any], origin: str) -> dict[str, Any]:
    allowed = {f.name for f in fields(StorageSettings)} - {"password", "password_source"}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ConfigError(f"{origin}: unknown key [storage] {unknown[0]}")
    return dict(values)


def _build(values: dict[str, Any]) -> StorageSettings:
    backend = str(values.get("backend", "file")).strip().lower()
    if backend not in BACKENDS:
        raise ConfigError(f"[storage] backend {backend!r}: use one of {', '.join(BACKENDS)}")
    classes = dict(PRESETS["postgres" if backend == "postgres" else "file"])
    for role in ROLES:
        if values.get(role):
            classes[role] = resolve_class(role, str(values[role]))
    if backend != "custom" and classes != PRESETS[backend]:
        backend = "custom"
    numbers = {}
    for key in ("port", "max_connections", "connection_retries"):
        if key in values:
            try:
                numbers[key] = int(values[key])
            except (TypeError, ValueError):
                raise ConfigError(f"[storage] {key}: expected a whole number, got {values[key]!r}") from None
    sslmode = str(values.get("sslmode", "") or "").strip().lower()
    if sslmode and sslmode not in SSLMODES:
        raise ConfigError(f"[storage] sslmode {sslmode!r}: use one of {', '.join(SSLMODES)}")
    text = {k: str(values[k]) for k in ("host", "user", "database") if values.get(k)}
    return StorageSettings(backend=backend, **classes, **text, **numbers, sslmode=sslmode)


def resolve_class(role: str, name: str) -> str:
    """A LightRAG storage class for `role` from a short name ("postgres", "neo4j") or a class name."""
    aliases = ALIASES[role]
    if name.lower() in aliases:
        return aliases[name.lower()]
    if name in aliases.values() or name in EXTRA_CLASSES.get(role, set()):
        return name
    raise ConfigError(f"[storage] {role} = {name!r}: use one of {', '.join(sorted(set(aliases)))} "
                      f"or a LightRAG class ({', '.join(sorted(set(aliases.values())))})")


def _family(class_name: str) -> str:
    for family in REQUIREMENTS:
        if family != "PGVector" and class_name.startswith(family):
            return family
    return "file"


def missing_packages(settings: StorageSettings) -> list[str]:
    """pip names of the drivers these storages need and this Python lacks. LightRAG's modules would
    pip-install them at import time; we say so instead."""
    import importlib.util

    families = {_family(c) for c in settings.classes.values()} - {"file"}
    if settings.vector == "PGVectorStorage":
        families.add("PGVector")
    if "PG" in families:
        families.add("psycopg")
    needed = [("psycopg", "psycopg[binary]") if f == "psycopg" else REQUIREMENTS[f][:2] for f in sorted(families)]
    return sorted({pip for module, pip in needed if importlib.util.find_spec(module) is None})


def parse_dsn(dsn: str) -> tuple[dict[str, Any], str | None]:
    """`postgresql://user:password@host:port/database?sslmode=...&host=/socket/dir` -> (settings, password)."""
    parts = urllib.parse.urlsplit(dsn)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ConfigError(f"{DSN_VAR}: expected postgresql://user:password@host:port/database")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{DSN_VAR}: the port is not a number") from None
    query = dict(urllib.parse.parse_qsl(parts.query))
    values: dict[str, Any] = {}
    host = urllib.parse.unquote(parts.hostname or "") or query.get("host", "")
    if host:
        values["host"] = host
    if port:
        values["port"] = port
    if parts.username:
        values["user"] = urllib.parse.unquote(parts.username)
    if parts.path.strip("/"):
        values["database"] = urllib.parse.unquote(parts.path.strip("/"))
    if query.get("sslmode"):
        values["sslmode"] = query["sslmode"]
    password = urllib.parse.unquote(parts.password) if parts.password else query.get("password")
    return values, password


def lightrag_storage_kwargs(settings: StorageSettings) -> dict[str, str]:
    """`LightRAG(**lightrag_storage_kwargs(settings))`: the four storage class names."""
    return {ROLE_KWARGS[role]: name for role, name in settings.classes.items()}


def lightrag_env_vars(settings: StorageSettings) -> dict[str, str]:
    """The env vars LightRAG's storages read for these settings. Holds the password: never log it."""
    env = dict.fromkeys(WORKSPACE_OVERRIDES, "")
    if settings.uses_postgres:
        env.update({
            "POSTGRES_HOST": settings.host,
            "POSTGRES_PORT": str(settings.port),
            "POSTGRES_USER": settings.user,
            "POSTGRES_PASSWORD": settings.password,
            "POSTGRES_DATABASE": settings.database,
            "POSTGRES_MAX_CONNECTIONS": str(settings.max_connections),
            "POSTGRES_CONNECTION_RETRIES": str(max(1, settings.connection_retries)),
            "POSTGRES_CONNECTION_RETRY_BACKOFF": "1.0",
            "POSTGRES_CONNECTION_RETRY_BACKOFF_MAX": "5.0",
            "POSTGRES_SSL_MODE": "",  # see the module docstring: PGSSLMODE keeps libpq's meaning
        })
        if settings.sslmode:
            env["PGSSLMODE"] = settings.sslmode
    return env


_env_lock = threading.Lock()
_env_state: dict[str, Any] = {"count": 0, "vars": None, "saved": {}}


@contextlib.contextmanager
def lightrag_environment(settings: StorageSettings) -> Iterator[None]:
    """Set LightRAG's storage env vars for this process while an engine is open; restore them when the
    last engine closes.

    Nested or concurrent engines share the variables (a file-store engine beside a PostgreSQL one is fine);
    different PostgreSQL connection settings in one process are refused, because LightRAG's pool is
    process-wide and would silently keep the first."""
    wanted = lightrag_env_vars(settings)
    with _env_lock:
        active: dict[str, str] = _env_state["vars"] or {}
        if any(active.get(k, v) != v for k, v in wanted.items()):
            raise ConfigError("this process already has an engine open on other storage settings; "
                              "LightRAG shares one connection pool per process: close it first")
        saved: dict[str, str | None] = _env_state["saved"]
        for key, value in wanted.items():
            if key not in active:
                saved[key] = os.environ.get(key)
                os.environ[key] = value
        _env_state["vars"] = {**active, **wanted}
        _env_state["count"] += 1
    quiet = _ExpectedNoise()
    logging.getLogger("lightrag").addFilter(quiet)
    try:
        import_storage_modules(settings)
        yield
    finally:
        logging.getLogger("lightrag").removeFilter(quiet)
        with _env_lock:
            _env_state["count"] -= 1
            if _env_state["count"] == 0:
                for key, value in _env_state["saved"].items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
                _env_state["vars"], _env_state["saved"] = None, {}


class _ExpectedNoise(logging.Filter):
    """Drops two LightRAG log lines that are expected under wikirag: the ERROR per missing table when a
    database is first used (PostgreSQLDB.check_tables probes with SELECT, then creates the table), and the
    WARNING that a new workspace's vector table is empty (wikirag checks the embedding model itself)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        probe = message.startswith('PostgreSQL database, error:relation "lightrag_') and "does not exist" in message
        return not (probe or "Ensure it is caused by new workspace setup" in message)


def import_storage_modules(settings: StorageSettings) -> None:
    """Import LightRAG's modules for these storages from a neutral folder: several (postgres_impl,
    neo4j_impl, networkx_impl) call `load_dotenv(".env")` at import, which would read the user's cwd."""
    import importlib
    import sys

    missing = missing_packages(settings)
    if missing:
        raise ConfigError(f"storage {settings.backend} needs {', '.join(missing)}: pip install {' '.join(missing)}")
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as neutral:
        os.chdir(neutral)
        try:
            from lightrag.kg import STORAGES

            for name in settings.classes.values():
                module = "lightrag" + STORAGES[name]
                if module not in sys.modules:
                    importlib.import_module(module)
        finally:
            os.chdir(here)


# --- the ledger, kept with the data ------------------------------------------------------------------


class LedgerStore(Protocol):
    """Where wikirag's ledger document lives. `save` replaces it whole and atomically: a reader or a crash
    sees the old or the new document, never a mix."""

    location: str  # for messages: a file path, or user@host:port/database#workspace

    def exists(self) -> bool: ...

    def load(self) -> dict | None: ...

    def save(self, data: dict) -> None: ...

    def delete(self) -> None: ...


class FileLedgerStore:
    """The ledger as `wikirag_ledger.json` in the workspace folder: temp file, fsync, rename."""

    def __init__(self, workspace_dir: Path) -> None:
        self.path = Path(workspace_dir) / LEDGER_FILENAME
        self.location = str(self.path)

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> dict | None:
        if not self.path.exists():
            return None
        return json.loads(self.path.read_text(encoding="utf-8"))

    def save(self, data: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(data, ensure_ascii=False))

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


# What a store folder may hold that wikirag or LightRAG wrote, by name: LightRAG's KV, vector and graph files,
# wikirag's own JSON files, and the temp files of interrupted atomic writes. `--rebuild` deletes these and
# nothing else, so a store pointed at the wrong folder can never take a user's file with it.
STORE_FILE_PATTERNS = (
    "kv_store_*.json", "vdb_*.json", "graph_chunk_entity_relation.graphml", "wikirag_*.json",
    ".kv_store_*.tmp", ".vdb_*.tmp", ".wikirag_*.tmp",
)


def is_store_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink() and any(fnmatch.fnmatchcase(path.name, p)
                                                           for p in STORE_FILE_PATTERNS)


def wipe_store_files(workspace_dir: Path) -> list[Path]:
    """Delete the files wikirag and LightRAG keep in a workspace folder; return what else is there (kept)."""
    kept = []
    if not workspace_dir.is_dir():
        return kept
    for child in sorted(workspace_dir.iterdir()):
        if is_store_file(child):
            child.unlink()
        elif child.name != LOCK_FILENAME:
            kept.append(child)
    return kept


def atomic_write_text(path: Path, text: str) -> None:
    """Write a file so that readers and crashes only ever see the old or the new whole content."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable (POSIX; not possible on Windows)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


_LEDGER_DDL = """
CREATE TABLE IF NOT EXISTS wikirag_ledger (
    workspace  text PRIMARY KEY,
    data       jsonb NOT NULL,
    revision   bigint NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS wikirag_ledger_notes (
    workspace  text NOT NULL REFERENCES wikirag_ledger (workspace) ON DELETE CASCADE,
    path       text NOT NULL,
    digest     text NOT NULL,  -- sha1 of the entry's canonical JSON: what save compares
    entry      jsonb NOT NULL,
    PRIMARY KEY (workspace, path)
);
"""


class LedgerConflict(WikiragError):
    """The ledger in the database changed since this process read it (another writer)."""


class PostgresLedgerStore:
    """The ledger in the index's own database: a head row per workspace in `wikirag_ledger` (everything
    but the notes, with a revision number) and one `wikirag_ledger_notes` row per note.

    `save` writes, in one transaction, only the notes whose digest differs from the last document this
    object loaded or saved, and bumps the revision; a revision that moved underneath (a writer that did not hold
    the lock) raises LedgerConflict and changes nothing. Either the whole new document is committed or
    none of it, like the file's rename. The document's `notes` key maps note path -> entry dict."""

    def __init__(self, settings: StorageSettings, workspace: str) -> None:
        self.settings, self.workspace = settings, workspace
        self.location = f"{settings.target}#{workspace}"
        self._known: dict[str, str] | None = None  # digest of each note last loaded or saved, by path
        self._revision: int | None = None

    def exists(self) -> bool:
        with connect(self.settings) as conn:
            return _ledger_tables_exist(conn) and conn.execute(
                "SELECT 1 FROM wikirag_ledger WHERE workspace = %s", (self.workspace,)).fetchone() is not None

    def load(self) -> dict | None:
        """The document, or None when this workspace has none (reading creates no table)."""
        with connect(self.settings) as conn:
            head = None
            if _ledger_tables_exist(conn):
                head = conn.execute("SELECT data, revision FROM wikirag_ledger WHERE workspace = %s",
                                    (self.workspace,)).fetchone()
            if head is None:
                self._known, self._revision = {}, 0
                return None
            rows = conn.execute('SELECT path, digest, entry FROM wikirag_ledger_notes WHERE workspace = %s '
                                'ORDER BY path COLLATE "C"', (self.workspace,)).fetchall()
        data, self._revision = dict(head[0]), head[1]
        data["notes"] = {path: entry for path, _, entry in rows}
        self._known = {path: digest for path, digest, _ in rows}
        return data

    def save(self, data: dict) -> None:
        from psycopg.types.json import Jsonb

        notes = data.get("notes", {})
        head = {k: v for k, v in data.items() if k != "notes"}
        encoded = {p: _encode(e) for p, e in notes.items()}
        known = self._known
        with connect(self.settings) as conn, conn.transaction():
            _ensure_ledger_tables(conn)
            row = conn.execute("SELECT revision FROM wikirag_ledger WHERE workspace = %s FOR UPDATE",
                               (self.workspace,)).fetchone()
            current = row[0] if row else 0
            if known is None or current != self._revision:
                if known is not None:
                    raise LedgerConflict(f"{self.location}: the ledger changed since this run read it "
                                         "(another wikirag wrote this workspace); run the command again")
                known = None  # never loaded: rewrite every note
            conn.execute("INSERT INTO wikirag_ledger (workspace, data, revision) VALUES (%s, %s, 1) "
                         "ON CONFLICT (workspace) DO UPDATE SET data = EXCLUDED.data, "
                         "revision = wikirag_ledger.revision + 1, updated_at = now()",
                         (self.workspace, Jsonb(head)))
            if known is None:
                conn.execute("DELETE FROM wikirag_ledger_notes WHERE workspace = %s", (self.workspace,))
                known = {}
            gone = [p for p in known if p not in notes]
            changed = [(self.workspace, p, digest, text) for p, (digest, text) in encoded.items()
                       if known.get(p) != digest]
            if gone:
                conn.execute("DELETE FROM wikirag_ledger_notes WHERE workspace = %s AND path = ANY(%s)",
                             (self.workspace, gone))
            if changed:
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO wikirag_ledger_notes (workspace, path, digest, entry) "
                                    "VALUES (%s, %s, %s, %s::jsonb) ON CONFLICT (workspace, path) "
                                    "DO UPDATE SET digest = EXCLUDED.digest, entry = EXCLUDED.entry", changed)
        self._revision = current + 1
        self._known = {p: digest for p, (digest, _) in encoded.items()}

    def delete(self) -> None:
        with connect(self.settings) as conn, conn.transaction():
            if _ledger_tables_exist(conn):
                conn.execute("DELETE FROM wikirag_ledger WHERE workspace = %s", (self.workspace,))
        self._known, self._revision = {}, 0


def _encode(entry: Any) -> tuple[str, str]:
    text = json.dumps(entry, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).hexdigest(), text


def _ledger_tables_exist(conn: Any) -> bool:
    return conn.execute("SELECT to_regclass('wikirag_ledger') IS NOT NULL "
                        "AND to_regclass('wikirag_ledger_notes') IS NOT NULL").fetchone()[0]


def _ensure_ledger_tables(conn: Any) -> None:
    if not _ledger_tables_exist(conn):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('wikirag:schema'))")
            conn.execute(_LEDGER_DDL)


def ledger_store(settings: StorageSettings, workspace_dir: Path, workspace: str) -> LedgerStore:
    """The ledger beside the data: in PostgreSQL when any storage is there, else the workspace folder.
    (With only other servers, e.g. Neo4j + Qdrant, the ledger stays a local file: one indexing machine.)"""
    if settings.uses_postgres:
        return PostgresLedgerStore(settings, workspace)
    return FileLedgerStore(workspace_dir)


def drop_workspace(settings: StorageSettings, workspace: str) -> int:
    """Delete every row of `workspace` from LightRAG's and wikirag's tables (for `index --rebuild`), in one
    transaction; other workspaces are untouched. Covers vector tables of every embedding model. Returns
    the number of rows deleted."""
    with connect(settings) as conn, conn.transaction():
        tables = [r[0] for r in conn.execute(
            "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND c.column_name = 'workspace' "
            "AND t.table_type = 'BASE TABLE' "
            "AND (c.table_name LIKE 'lightrag\\_%%' OR c.table_name LIKE 'wikirag\\_ledger%%') "
            "ORDER BY (c.table_name = 'lightrag_graph_nodes'), (c.table_name = 'wikirag_ledger'), c.table_name"
        ).fetchall()]
        deleted = 0
        for table in tables:
            cur = conn.execute(f'DELETE FROM "{table}" WHERE workspace = %s', (workspace,))
            deleted += cur.rowcount
    return deleted


# --- one writer per workspace -------------------------------------------------------------------------


class FileWriterLock:
    """A filelock in the workspace folder: one writer per workspace on this machine."""

    def __init__(self, workspace_dir: Path) -> None:
        from filelock import FileLock

        Path(workspace_dir).mkdir(parents=True, exist_ok=True)
        self._path = Path(workspace_dir) / LOCK_FILENAME
        self._lock = FileLock(str(self._path), timeout=0)

    def __enter__(self) -> FileWriterLock:
        from filelock import Timeout

        try:
            self._lock.acquire()
        except Timeout:
            raise StoreLocked(
                f"{self._path.parent}: another wikirag process (index or watch) is writing this store"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class PostgresWriterLock:
    """`pg_try_advisory_lock(hashtext('wikirag:' || workspace))` on a connection of its own, held while the
    context is open: one writer per workspace across every machine using the database. The server
    releases it if the holder's connection dies, so a crashed writer never leaves a stale lock.
    (LightRAG's pool runs pg_advisory_unlock_all() when it recycles a connection: hence our own one.)"""

    def __init__(self, settings: StorageSettings, workspace: str) -> None:
        self.settings, self.workspace = settings, workspace
        self._conn: Any = None

    def __enter__(self) -> PostgresWriterLock:
        conn = connect(self.settings, autocommit=True)
        try:
            got = conn.execute("SELECT pg_try_advisory_lock(hashtext('wikirag:' || %s))",
                               (self.workspace,)).fetchone()[0]
        except BaseException:
            conn.close()
            raise
        if not got:
            conn.close()
            raise StoreLocked(f"{self.settings.target}: another wikirag process (index or watch) is writing "
                              f"workspace {self.workspace!r}")
        self._conn = conn
        return self

    def __exit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a dead connection has released the lock already
                conn.execute("SELECT pg_advisory_unlock(hashtext('wikirag:' || %s))", (self.workspace,))
            conn.close()


def writer_lock(settings: StorageSettings, workspace_dir: Path, workspace: str) -> FileWriterLock | PostgresWriterLock:
    """The lock that keeps a second `index`/`watch` off this workspace, wherever its data lives."""
    if settings.uses_postgres:
        return PostgresWriterLock(settings, workspace)
    return FileWriterLock(workspace_dir)


# --- connections and doctor ----------------------------------------------------------------------------


class StorageUnreachable(WikiragError):
    """The storage server cannot be reached or refuses us; the message says why in plain words."""


def connect(settings: StorageSettings, *, autocommit: bool = False) -> Any:
    """A psycopg connection with the same settings LightRAG's pool uses (and no ~/.pgpass, which LightRAG's
    pool cannot read either). Raises StorageUnreachable with a plain-words reason."""
    try:
        import psycopg
    except ImportError:
        raise ConfigError("PostgreSQL storage needs wikirag's postgres extra: pip install 'wikirag[postgres]'") \
            from None
    params: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "user": settings.user, "dbname": settings.database,
        "password": settings.password, "connect_timeout": _CONNECT_TIMEOUT_S, "application_name": "wikirag",
        "passfile": os.path.join(os.devnull, "none"),  # a path that cannot exist: ~/.pgpass is not read
    }
    if settings.sslmode:
        params["sslmode"] = settings.sslmode
    try:
        return psycopg.connect(autocommit=autocommit, **params)
    except psycopg.OperationalError as exc:
        raise StorageUnreachable(explain_connect_error(settings, exc)) from None


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
        return f"{where} did not answer within {_CONNECT_TIMEOUT_S} s (firewall, wrong host or port?)"
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
    servers = sorted({c for c in settings.classes.values() if _family(c) not in {"file", "PG", "Faiss"}})
    for name in servers:
        env_vars = REQUIREMENTS[_family(name)][2]
        unset = [v for v in env_vars if v not in os.environ]
        if unset:
            checks.append((name, "fail", f"set {', '.join(unset)} in the environment (read by LightRAG)"))
        else:
            checks.append((name, "ok", f"{', '.join(env_vars)} set; the connection is checked when used"))
    if not settings.uses_postgres:
        if servers:
            checks.append(("ledger", "warn", "no PostgreSQL storage: the ledger and the writer lock stay local "
                                             "files, so only this machine may index this workspace"))
        return checks
    if "psycopg[binary]" in missing:
        return checks
    return checks + _check_postgres(settings, workspace)


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


__all__ = [
    "ALIASES", "BACKENDS", "FileLedgerStore", "FileWriterLock", "LEDGER_FILENAME", "LOCK_FILENAME", "LedgerConflict",
    "LedgerStore", "PostgresLedgerStore", "PostgresWriterLock", "StorageSettings", "StorageUnreachable",
    "atomic_write_text", "check_storage", "connect", "drop_workspace", "explain_connect_error",
    "import_storage_modules", "ledger_store", "lightrag_env_vars", "lightrag_environment", "lightrag_storage_kwargs",
    "missing_packages", "parse_dsn", "resolve_class", "storage_unreachable", "writer_lock",
]
