"""Frontmatter ("Properties" in Obsidian): find the block, load its YAML, read the keys wikirag uses.

Obsidian reads frontmatter only when the very first line of the file is `---`; the block ends at the next
line that is `---` (trailing spaces allowed). Without a closing line there is no frontmatter. YAML is
loaded through python-frontmatter's handler (libyaml's safe loader when present). Every failure
becomes a one-line `error`; the block still counts as frontmatter, so its text is never read as body.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

_CLOSE = re.compile(r"^---[ \t]*$", re.MULTILINE)
_OPEN = re.compile(r"---[ \t]*\n")
_SPLIT_LIST = re.compile(r"\s*,\s*")
_SPLIT_TAGS = re.compile(r"[\s,]+")
ROUTES = ("inject", "extract", "skip")
_MAX_NODES = 10_000  # values in one frontmatter block; guards YAML alias bombs
_MAX_DEPTH = 32  # nesting; guards self-referencing anchors


@dataclass
class FrontmatterBlock:
    """The raw block: `text` is the YAML between the fences, `lines` the lines the block takes."""

    text: str
    lines: int


@dataclass
class Properties:
    data: dict = field(default_factory=dict)
    error: str | None = None
    title: str | None = None
    type: str | None = None
    description: str | None = None
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    route_override: str | None = None
    problem: str | None = None  # one line: a value read but not used (the rest of the block is read)


class _TooBig(Exception):
    pass


def split_frontmatter(text: str) -> tuple[FrontmatterBlock | None, str]:
    """Return (block or None, body). `text` has "\\n" line ends."""
    if not text.startswith("---"):
        return None, text
    first = _OPEN.match(text)
    if first is None:
        return None, text
    close = _CLOSE.search(text, first.end())
    if close is None:
        return None, text
    nl = text.find("\n", close.end())
    body = "" if nl < 0 else text[nl + 1 :]
    lines = text.count("\n", 0, close.start()) + 1
    return FrontmatterBlock(text[first.end() : close.start()], lines), body


@cache
def _yaml() -> tuple[Any, Any]:
    """python-frontmatter's YAML handler and the loader it is given, imported with PyYAML on the first block
    loaded: a run whose notes all come from the parse cache never loads YAML."""
    import yaml
    from frontmatter.default_handlers import SafeLoader, YAMLHandler

    class Loader(SafeLoader):  # type: ignore[misc, valid-type]
        """The handler's safe loader (libyaml's when present), where a value shaped like a date that is none
        (`created: 2024-13-45`) stays its text, as Obsidian shows it: PyYAML raised, and the note lost all
        its properties."""

    def timestamp(loader: Any, node: Any) -> Any:
        try:
            return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
        except ValueError:
            return loader.construct_scalar(node)

    def integer(loader: Any, node: Any) -> Any:
        text = loader.construct_scalar(node)
        if _YAML12_INT.match(text):  # 1.2: `017` is 17 (PyYAML's 1.1 read it as octal 15)
            prefix = text[:2].lower()
            try:
                return int(text[2:], 8) if prefix == "0o" else int(text[2:], 16) if prefix == "0x" else int(text)
            except ValueError:  # over Python's 4,300 digits: the text, as a number beyond 64 bits is kept
                return text
        try:  # an explicit `!!int` in another form
            return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
        except ValueError:
            return text

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        # Obsidian's YAML parser rejects a key written twice in one mapping ("Map keys must be unique") and
        # shows the properties as invalid; PyYAML kept the last value silently.
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        problem=f"duplicate key {key_node.value!r}", problem_mark=key_node.start_mark)
                seen.add(key)
        return SafeLoader.construct_mapping(loader, node, deep=deep)

    Loader.construct_mapping = construct_mapping
    Loader.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    Loader.add_constructor("tag:yaml.org,2002:int", integer)
    # Obsidian reads frontmatter as YAML 1.2 (its `yaml` library's core schema): `no`, `on`, `Yes` are text,
    # `1:30` is not 90, and a date stays as written. PyYAML resolves YAML 1.1's implicit types; swap them.
    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _YAML11_TYPES]
        for first, resolvers in SafeLoader.yaml_implicit_resolvers.items()
    }
    for tag, regexp, firsts in _YAML12_TYPES:
        Loader.add_implicit_resolver(tag, regexp, list(firsts))
    return YAMLHandler(), Loader


_YAML11_TYPES = {f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "timestamp")}
_YAML12_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_YAML12_TYPES = [  # the core schema's (yaml.org/spec/1.2.2 10.3.2); int before float, which also matches `17`
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    ("tag:yaml.org,2002:int", _YAML12_INT, "-+0123456789"),
    ("tag:yaml.org,2002:float", re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                           r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), "-+.0123456789"),
]


def load_properties(block: FrontmatterBlock) -> Properties:
    """Load the YAML and read the known keys; never raises."""
    try:
        handler, loader = _yaml()
        raw = handler.load(block.text, Loader=loader)
    except Exception as exc:  # YAML errors, bad dates (ValueError), recursion: all one line
        return Properties(error=_yaml_error(exc))
    if raw is None:
        return Properties()
    if not isinstance(raw, dict):
        return Properties(error=f"frontmatter is a YAML {type(raw).__name__}, not a mapping of keys")
    try:
        data = _json_safe(raw, [0], 0)
    except _TooBig:
        return Properties(error="frontmatter too large or self-referencing (YAML anchors)")
    return _read_known_keys(data)


def _read_known_keys(data: dict) -> Properties:
    by_key: dict[str, list[Any]] = {}
    for key, value in data.items():
        by_key.setdefault(key.strip().lower(), []).append(value)

    def first_text(*names: str) -> str | None:
        for name in names:
            for value in by_key.get(name, ()):
                if isinstance(value, (str, int, float)):  # dates are text as written (YAML 1.2)
                    text = scalar_text(value).strip()
                    if text:
                        return text
        return None

    written = first_text("wikirag")
    route = (written or "").lower()
    problem = None if not written or route in ROUTES else (
        f"frontmatter wikirag: {written!r} ignored; use {', '.join(ROUTES)}")  # a typo'd skip indexed silently
    return Properties(
        data=data,
        title=first_text("title"),
        type=first_text("type"),
        description=first_text("description", "summary"),
        aliases=_strings([*by_key.get("aliases", ()), *by_key.get("alias", ())], _SPLIT_LIST),
        tags=_tags([*by_key.get("tags", ()), *by_key.get("tag", ())]),
        route_override=route if route in ROUTES else None,
        problem=problem,
    )


def scalar_text(value: Any) -> str:
    """A YAML scalar as Obsidian (JavaScript) writes it: `true`, not Python's `True`; `1e3` and `1.0` as 1000 and
    1, not 1000.0 and 1.0 (an alias `1.0` is the name [[1]] finds)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _strings(values: list[Any], splitter: re.Pattern[str]) -> list[str]:
    """Flatten str | list | scalar values into unique non-empty strings. A string value is split (`aliases: A,
    B`); a list's items are kept whole, as Obsidian keeps them (an alias `Smith, John` in a list is one)."""
    out: list[str] = []
    seen: set[str] = set()
    stack = [(value, False) for value in reversed(values)]
    while stack:
        value, in_list = stack.pop()
        if value is None or isinstance(value, dict):
            continue
        if isinstance(value, list):
            stack.extend((item, True) for item in reversed(value))
            continue
        text = scalar_text(value)
        for part in [text] if in_list else splitter.split(text):
            part = part.strip()
            if part and part not in seen:
                seen.add(part)
                out.append(part)
    return out


def _tags(values: list[Any]) -> list[str]:
    out: list[str] = []
    for tag in _strings(values, _SPLIT_TAGS):
        tag = tag.lstrip("#").lower()
        # Obsidian: a tag needs one character besides 0-9 (JavaScript's \d: `#١٢٣` is a tag, as inline), and a list
        # item with a space in it is no tag
        if tag and not (tag.isascii() and tag.isdigit()) and not any(c.isspace() for c in tag) and tag not in out:
            out.append(tag)
    return out


_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1


def _json_safe(value: Any, count: list[int], depth: int) -> Any:
    count[0] += 1
    if count[0] > _MAX_NODES or depth > _MAX_DEPTH:
        raise _TooBig
    if isinstance(value, dict):
        return {_key(k): _json_safe(v, count, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v, count, depth + 1) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _UINT64_MAX:
        return str(value)  # JSON readers (orjson, databases) take 64-bit integers; a 400-digit one stays exact as text
    if isinstance(value, str):
        return no_nul(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, bytes):  # YAML !!binary
        return value.decode("utf-8", "replace")
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, (dt.date, dt.time)):
        return key.isoformat()
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return no_nul(str(key))


def no_nul(text: str) -> str:
    """A NUL written as a YAML escape (`"a\\0b"`, `\\x00`, `\\u0000`) or as `%00` in a link read as U+FFFD, as an
    invalid byte is: the reader removes NUL bytes from the file, and PostgreSQL's text and jsonb cannot hold one
    (the whole index run failed on the embedded backend)."""
    return text.replace("\0", "\ufffd") if "\0" in text else text


def _yaml_error(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).split("\n", 1)[0] or type(exc).__name__
    if isinstance(exc, RecursionError):
        problem = "nested too deeply"
    where = f" at line {mark.line + 2}" if mark is not None else ""  # +1 for the `---`, +1 for 1-based
    return f"invalid YAML{where}: {problem}"
