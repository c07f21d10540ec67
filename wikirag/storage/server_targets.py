"""The one spelling of a server a pass-through LightRAG storage writes to, with no credentials: what the
"nothing changed" key and the index's ledger compare (storage/settings.py `server_targets` reads the variables)."""

from __future__ import annotations

import re

# Of these, the ones that name a database on the server rather than the server.
DATABASE_VARS = frozenset({"MONGO_DATABASE", "NEO4J_DATABASE", "MEMGRAPH_DATABASE", "MILVUS_DB_NAME"})


def target_form(var: str, value: str) -> str:
    """The one spelling of a TARGET_VARS value, credentials cut (idempotent: a recorded form may be passed
    again)."""
    return value.strip() if var in DATABASE_VARS else _without_credentials(value)


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")  # RFC 3986: no ':' or '@', so never part of a password


def _without_credentials(value: str) -> str:
    """A URI (or a comma-separated list of hosts or URIs) with everything up to its last `@` cut, then its
    `?query` and `#fragment`: a password may hold any of / , ? # :// unescaped, and must not survive in part. An
    `@` in a query loses the host too, which only makes the target less particular. What only spells the same
    server another way is made one form (the index's ledger compares them): schemes and a URI's hosts in lower
    case, no trailing `/`, no spaces or empty items in a list."""
    scheme = _SCHEME.match(value.strip())
    rest = value.strip()[scheme.end():] if scheme else value.strip()
    rest = rest.rpartition("@")[2].split("?", 1)[0].split("#", 1)[0]
    items = [_one_form(item.strip(), uri=scheme is not None) for item in rest.split(",") if item.strip()]
    return (scheme.group(1).lower() + "://" if scheme else "") + ",".join(items)


def _one_form(item: str, *, uri: bool) -> str:
    """One host[:port][/path] of a target (or a whole URI, in a list of them), in one spelling. A host is
    lowered only in a URI: without a scheme it may be a file path (a Milvus Lite database)."""
    scheme = _SCHEME.match(item)
    if scheme:
        item, uri = item[scheme.end():], True
    host, slash, path = item.partition("/")
    return ((scheme.group(1).lower() + "://" if scheme else "") + (host.lower() if uri else host)
            + (slash + path.rstrip("/") if path.rstrip("/") else ""))
