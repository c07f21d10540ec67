"""One configuration object, read from defaults < `wikirag.toml` < `WIKIRAG_*` env vars < CLI flags.

Every key is documented in docs/configuration.md. The toml file lives in the vault root (or is given with
`--config`); keys are flat within their section, e.g.

    [index]
    chunk_token_size = 1200
    [embedding]
    model = "local:all-MiniLM-L6-v2-int8-dynamic"

Env vars name the section and key: `WIKIRAG_INDEX_CHUNK_TOKEN_SIZE=400`, plus the short forms
`WIKIRAG_STORE`, `WIKIRAG_LLM`, `WIKIRAG_LLM_BASE_URL`, `WIKIRAG_EMBEDDING`. Secrets never live here:
API keys are read by the provider SDKs from their usual variables (OPENAI_API_KEY, ...).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from wikirag.errors import ConfigError
from wikirag.storage.settings import StorageSettings, check_store_location
from wikirag.storage.workspace import check_workspace_name, vault_workspace

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_FILENAME = "wikirag.toml"
STORE_DIRNAME = ".wikirag"


@dataclass
class IndexSettings:
    # Chunks are cut at headings and paragraphs, at most this many tokens (tiktoken, `encoding`). LightRAG's
    # own defaults: an extract-routed note then never costs more LLM calls than vanilla LightRAG, and on
    # the sample vault's question set recall@5 was 0.81 against 0.76 with 600-token chunks (the embedder
    # averages 256-piece windows, so long chunks are not truncated).
    chunk_token_size: int = 1200
    chunk_overlap_token_size: int = 100
    encoding: str = "o200k_base"
    # Default entity type for a note with no frontmatter `type` and no folder.
    default_note_type: str = "note"
    # Notes per storage flush: LightRAG's file stores rewrite whole files on every flush.
    batch_size: int = 500
    # LightRAG's gleaning pass (a second "what did you miss?" call per chunk) for extract-routed notes.
    # Off: the hint already names what the links say, and gleaning re-sends the whole prompt plus the first
    # answer (about half of extraction's input tokens). 1 is LightRAG's own default.
    gleaning: int = 0
    # Extract-routed notes (or sections) of at most this many tokens share one extraction call with their
    # folder neighbours, packed up to `chunk_token_size`; 0 sends each note on its own, as LightRAG would.
    pack_max_tokens: int = 300
    # Read the template folders of Obsidian's Templates plugin and Templater too (vault/ignore.py leaves them out).
    templates: bool = False


@dataclass
class EmbeddingSettings:
    # "local:<name>" (offline MiniLM), "openai:<model>", "ollama:<model>". The default runs MiniLM's weights on
    # int8 kernels (lightrag/minilm_int8.py): ~2x less CPU per text than "local:all-MiniLM-L6-v2-onnx-int8"
    # (the same weights in float arithmetic), recall@5 within 0.012 on the three question sets
    model: str = "local:all-MiniLM-L6-v2-int8-dynamic"
    dim: int = 384
    base_url: str | None = None


# The longest wait between two LLM attempts (a server's Retry-After is capped here too).
RETRY_MAX_WAIT_S = 30.0


HOSTED_LLM_CONCURRENCY = 16
LOCAL_LLM_CONCURRENCY = 4
LOCAL_LLM_PROVIDERS = ("ollama", "vllm", "llamacpp", "llama.cpp", "lmstudio")
_LOCAL_HOST = re.compile(r"^(localhost|127\.|::1$|0\.0\.0\.0|10\.|192\.168\.|host\.docker\.internal)")


@dataclass
class LLMSettings:
    # "provider:model", e.g. "openai:gpt-4o-mini", "ollama:qwen2.5:7b", "anthropic:claude-3-5-haiku-latest";
    # empty means no LLM: every note is injected from its links and frontmatter.
    model: str = ""
    base_url: str | None = None
    # Requests in flight at once; 0: 16 for hosted APIs, 4 for Ollama and local servers.
    concurrency: int = 0
    timeout_s: float = 120.0
    max_retries: int = 4
    # `index --batch`: seconds between two looks at the provider's batch (it may take up to 24 hours).
    batch_poll_s: float = 30.0

    def effective_concurrency(self) -> int:
        """`concurrency`, or for 0 a number suited to the provider: hosted APIs serve many requests at once
        (their rate limits pause wikirag's whole pool), while Ollama or a local server on a laptop's GPU
        gains nothing from a longer queue."""
        if self.concurrency >= 1:
            return self.concurrency
        provider = self.model.partition(":")[0].strip().lower()
        host = urlsplit(self.base_url).hostname or "" if self.base_url else ""
        local = provider in LOCAL_LLM_PROVIDERS or bool(host and _LOCAL_HOST.match(host))
        return LOCAL_LLM_CONCURRENCY if local or not self.model else HOSTED_LLM_CONCURRENCY


@dataclass
class RouteSettings:
    # "links": a note with at least `min_resolved_links` resolved links is injected whatever its prose (the
    # prose is still chunked and embedded). "prose": it is injected only when at most `max_uncovered_tokens`
    # of its prose lie outside its link sentences; otherwise the heading sections that no link sentence
    # covers go to LLM extraction (the pre-0.x default, with whole notes).
    policy: str = "links"
    # A note is injected when it has at least this many resolved links ...
    min_resolved_links: int = 5
    # ... and (policy "prose") at most this many prose tokens outside the sentences that hold its links.
    max_uncovered_tokens: int = 150
    # A note with fewer prose tokens than this is injected whatever its links (nothing to extract).
    min_prose_tokens: int = 20

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> RouteSettings:
        """Settings from the `[route]` table of wikirag.toml; unknown keys are a ConfigError."""
        return settings_from_mapping(cls, values or {}, "route")


def _number_kind(f: Any) -> type | None:
    """bool, int or float for a field that holds one, `int | None` too (its annotation is a string here)."""
    if isinstance(f.default, (bool, int, float)) and f.default is not None:
        return type(f.default)
    first = str(f.type).split("|")[0].strip()
    return {"bool": bool, "int": int, "float": float}.get(first)


def settings_from_mapping(cls: Any, values: Mapping[str, Any], section: str) -> Any:
    """A settings dataclass from one toml table, numbers coerced to the defaults' types; unknown keys are a
    ConfigError."""
    known = {f.name: f for f in fields(cls)}
    out = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"[{section}] {key}: unknown key (known: {', '.join(sorted(known))})")
        kind = _number_kind(known[key])
        if kind is None or isinstance(value, bool):
            if kind is None and str(known[key].type).startswith("str") and not isinstance(value, str):
                raise ConfigError(f"[{section}] {key}: expected text, got {value!r}")  # `model = 3` failed later
            out[key] = value
            continue
        if kind is bool:  # only a string (an environment variable) gets here
            out[key] = value.strip().lower() in {"1", "true", "yes", "on"} if isinstance(value, str) else value
            continue
        try:  # nan, inf (1e400) and a count of 2.5 stop here: they broke the estimate later, or became 2
            number = float(value) if isinstance(value, float) else kind(value)
            out[key] = kind(number) if math.isfinite(number) and (kind is float or number == int(number)) else None
        except (TypeError, ValueError):
            out[key] = None
        if out[key] is None:
            raise ConfigError(f"[{section}] {key}: expected a {'whole ' * (kind is int)}number ≥ 0, got {value!r}")
        if out[key] < 0:  # every number here is a count, a threshold or a ratio
            raise ConfigError(f"[{section}] {key} = {value!r}: must be a number ≥ 0")
    return cls(**out)


@dataclass
class WikiragConfig:
    vault: Path
    store: Path
    workspace: str
    exclude: list[str] = field(default_factory=list)
    index: IndexSettings = field(default_factory=IndexSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    route: RouteSettings = field(default_factory=RouteSettings)
    route_overrides: list[str] = field(default_factory=list)  # `--route` values: ROUTE or GLOB=ROUTE
    # Where the index lives (storage.py): LightRAG's files, PostgreSQL, or other servers. No secrets inside.
    storage: StorageSettings = field(default_factory=StorageSettings)
    # Sections read by their own modules ([cost], [storage]), kept as written.
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Whether a setting (toml, environment, flag) named the embedding model; if none did, a store keeps the
    # local model it was built with (index.store_model.follow_store_embedding).
    embedding_model_given: bool = True
    # Whether a setting named `[embedding] dim`: only then is the width asked of an OpenAI model (`dimensions`),
    # so a model whose width nobody set is called as before.
    embedding_dim_given: bool = False

    @property
    def workspace_dir(self) -> Path:
        return self.store / self.workspace


_TOP_KEYS = {"store", "workspace", "exclude"}
_OWN_MODULE_SECTIONS = {"route", "storage", "cost"}  # read by routing.py, storage, cost.py
_SECTIONS = {"index": IndexSettings, "embedding": EmbeddingSettings, "llm": LLMSettings}
_SHORT_ENV = {"WIKIRAG_LLM": ("llm", "model"), "WIKIRAG_LLM_BASE_URL": ("llm", "base_url"),
              "WIKIRAG_EMBEDDING": ("embedding", "model")}
TOKEN_ENCODINGS = ("o200k_base", "cl100k_base")  # the tiktoken tables wikirag ships (lightrag.tokens)


def _coerce(value: Any, current: Any, key: str, text: bool = False) -> Any:
    """Turn env/flag strings into the type of the default they replace (a TOML 400.0 where a whole number goes
    into that number). Refused: a number or list where text goes (`model = 3` broke the command reading it), a
    fraction where a whole number goes, and below 0, nan or inf (each number here is a count, a size or seconds)."""
    if text and value is not None and not isinstance(value, str):
        raise ConfigError(f"{key}: expected text, got {value!r}")
    if isinstance(current, (bool, int, float)) and not isinstance(value, (str, int, float)):
        raise ConfigError(f"{key}: expected {type(current).__name__}, got {value!r}")
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        if not isinstance(current, bool) or isinstance(value, bool):  # text, or a TOML true or false
            return value
        return str(value).strip().lower() in {"1", "true", "yes", "on"}  # an environment variable's text, or 1
    try:
        number = float(value) if isinstance(current, float) or isinstance(value, float) else int(value)
    except ValueError:
        raise ConfigError(f"{key}: expected a number, got {value!r}") from None
    if isinstance(current, int) and not float(number).is_integer():
        raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    if not 0 <= number < math.inf:
        raise ConfigError(f"{key} = {value!r}: must be a number ≥ 0")
    return int(number) if isinstance(current, int) else number


def _apply(section_obj: Any, values: dict[str, Any], origin: str, section: str) -> Any:
    known = {f.name: str(f.type).startswith("str") for f in fields(section_obj)}  # name -> whether it holds text
    changes = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{origin}: unknown key [{section}] {key} (known: {', '.join(sorted(known))})")
        changes[key] = _coerce(value, getattr(section_obj, key), f"{origin} [{section}] {key}", known[key])
    return replace(section_obj, **changes)


def load_config(
    vault: Path,
    *,
    store: Path | None = None,
    config_file: Path | None = None,
    exclude: list[str] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    route_overrides: list[str] | None = None,
    environ: dict[str, str] | None = None,
) -> WikiragConfig:
    """Build the config for `vault`. `overrides` are CLI flags as {section: {key: value}}; None values
    mean "flag not given"."""
    env = os.environ if environ is None else environ
    vault = Path(vault)
    file_values: dict[str, Any] = {}
    path = config_file or (vault / CONFIG_FILENAME)
    if config_file is not None and not config_file.exists():
        raise ConfigError(f"{config_file}: config file not found")
    if path.exists():
        if not path.is_file():
            raise ConfigError(f"{path}: the config is a folder, not a TOML file")
        try:
            file_values = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # Notepad writes a BOM
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the config ({exc.strerror})") from None

    sections = {name: cls() for name, cls in _SECTIONS.items()}
    named: set[tuple[str, str]] = set()  # (section, key) that some source (toml, env, flag) set
    top = {k: v for k, v in file_values.items() if not isinstance(v, dict)}
    for key in top.keys() - _TOP_KEYS:  # a typo ("exlude") silently did nothing
        raise ConfigError(f"{path}: unknown key {key!r} (top-level keys: {', '.join(sorted(_TOP_KEYS))}; "
                          "the rest go under [index], [embedding], [llm], [route], [storage] or [cost])")
    for name, values in file_values.items():
        if isinstance(values, dict):
            if name not in sections:
                if name in _OWN_MODULE_SECTIONS:
                    continue
                raise ConfigError(f"{path}: unknown section [{name}]")
            sections[name] = _apply(sections[name], values, str(path), name)
            named.update((name, key) for key in values)

    # Env: WIKIRAG_<SECTION>_<KEY>, and the documented short forms.
    for name, obj in sections.items():
        env_values = {}
        for f in fields(obj):
            var = f"WIKIRAG_{name}_{f.name}".upper()
            if var in env:
                env_values[f.name] = env[var]
        sections[name] = _apply(obj, env_values, "environment", name)
        named.update((name, key) for key in env_values)
    for var, (section, key) in _SHORT_ENV.items():
        if env.get(var):
            sections[section] = _apply(sections[section], {key: env[var]}, "environment", section)
            named.add((section, key))

    for name in ("route", "cost"):  # read by their own modules (routing, cost): the variables join the toml table
        prefix = f"WIKIRAG_{name.upper()}_"
        from_env = {var[len(prefix):].lower(): value for var, value in env.items() if var.startswith(prefix)}
        if from_env:
            file_values[name] = {**file_values.get(name, {}), **from_env}

    for name, values in (overrides or {}).items():
        if name == "storage":
            continue  # read by StorageSettings.from_mapping below
        given = {k: v for k, v in values.items() if v is not None}
        sections[name] = _apply(sections[name], given, "command line", name)
        named.update((name, key) for key in given)

    if store is not None:
        store_path, store_origin = Path(store), "--store"
    elif env.get("WIKIRAG_STORE"):
        store_path, store_origin = Path(env["WIKIRAG_STORE"]), "WIKIRAG_STORE"
    elif top.get("store"):
        store_path, store_origin = vault / str(top["store"]), str(path)
    else:
        store_path, store_origin = vault / STORE_DIRNAME, "default store"
    if top.get("workspace"):
        workspace = check_workspace_name(str(top["workspace"]), str(path))
    elif env.get("WIKIRAG_WORKSPACE"):
        workspace = check_workspace_name(env["WIKIRAG_WORKSPACE"], "WIKIRAG_WORKSPACE")
    else:
        workspace = vault_workspace(vault, store_path, own_store=store_origin not in ("--store", "WIKIRAG_STORE"))
    check_store_location(vault, store_path, workspace, store_origin,
                         vault_file=store_origin == str(path) and config_file is None)
    excludes = _patterns(top.get("exclude", []), path) + _valid(list(exclude or []), "--exclude")
    index = sections["index"]
    if index.chunk_token_size < 1 or not 0 <= index.chunk_overlap_token_size < index.chunk_token_size:
        raise ConfigError(f"[index] chunk_token_size = {index.chunk_token_size}, chunk_overlap_token_size = "
                          f"{index.chunk_overlap_token_size}: the size must be at least 1 and the overlap from 0 "
                          "to less than the size")
    for key in ("batch_size", "gleaning", "pack_max_tokens"):
        value, least = getattr(index, key), 1 if key == "batch_size" else 0
        if value < least:
            raise ConfigError(f"[index] {key} = {value}: must be at least {least}")
    if index.encoding not in TOKEN_ENCODINGS:
        raise ConfigError(f"[index] encoding = {index.encoding!r}: use one of {', '.join(TOKEN_ENCODINGS)}")
    if sections["embedding"].dim < 1:  # 0 made LightRAG's vector store divide by zero and the run hang
        raise ConfigError(f"[embedding] dim = {sections['embedding'].dim}: must be at least 1 (the model's "
                          "vector size, 384 for the local model)")
    return WikiragConfig(
        vault=vault,
        store=store_path,
        workspace=workspace,
        exclude=excludes,
        index=index,
        embedding=sections["embedding"],
        llm=sections["llm"],
        route=RouteSettings.from_mapping(file_values.get("route")),
        route_overrides=list(route_overrides or []),
        storage=StorageSettings.from_mapping(file_values.get("storage"), env, (overrides or {}).get("storage"))
        .embedded_in(store_path / workspace),  # the embedded server's data folder: inside the workspace folder
        sections={k: v for k, v in file_values.items() if k in _OWN_MODULE_SECTIONS and isinstance(v, dict)},
        embedding_model_given=("embedding", "model") in named,
        embedding_dim_given=("embedding", "dim") in named,
    )


def _patterns(value: Any, origin: Path) -> list[str]:
    """`exclude` as a list of patterns; one string is one pattern (a string read as a list of its characters made
    "drafts/**" leave out every note, through its "*")."""
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{origin}: exclude = {value!r}: give a list of path patterns, e.g. [\"drafts/**\"]")
    return _valid(list(values), f"{origin}: exclude")


def _valid(patterns: list[str], origin: str) -> list[str]:
    """The patterns, each one .gitignore can read (`!` alone, a trailing `\\` or `[z-a]` raised from the scan)."""
    for pattern in (p for p in patterns if p.strip()):
        from pathspec import GitIgnoreSpec  # loaded only where patterns are given

        try:
            GitIgnoreSpec.from_lines([pattern.strip()])
        except (ValueError, re.error) as exc:
            raise ConfigError(f"{origin} {pattern!r}: not a valid .gitignore pattern ({exc})") from None
    return patterns


def read_price_files(user_file: str | Path | None = None) -> list[tuple[dict[str, Any], str]]:
    """The shipped price table (wikirag/data/prices.toml), then a user's price file, as parsed toml with
    where each came from (plan/prices.py merges them)."""
    from importlib import resources

    shipped = resources.files("wikirag").joinpath("data/prices.toml").read_text(encoding="utf-8")
    tables = [(tomllib.loads(shipped), "shipped table")]
    if user_file is not None:
        path = Path(user_file)
        try:
            tables.append((tomllib.loads(path.read_text(encoding="utf-8-sig")), str(path)))
        except FileNotFoundError:
            raise ConfigError(f"{path}: price file not found") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return tables
