"""`wikirag doctor`: check the whole setup end to end and say what is missing in plain words.

Each check returns data (name, status, detail); the CLI renders it. Nothing here prints, and no check
shows a secret: the LLM check names the key variable it looked for, never its value.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from wikirag.cli.render import counted
from wikirag.errors import ConfigError, StoreMismatch, VaultNotFound
from wikirag.index.ledger import Ledger
from wikirag.index.rebuild import REBUILDING, rebuild_pending, rebuild_unfinished, rebuilding_writer
from wikirag.index.store_model import adopt_store_embedding, embedding_mismatch, targets_mismatch
from wikirag.lightrag.engine import embedding_spec
from wikirag.settings import WikiragConfig
from wikirag.storage.ledger_store import ledger_store
from wikirag.storage.postgres import StorageUnreachable, check_storage
from wikirag.storage.settings import scale_advice
from wikirag.storage.workspace import other_workspaces, workspace_name

if TYPE_CHECKING:
    from wikirag.vault.model import Vault

Status = Literal["ok", "warn", "fail", "skip"]


@dataclass
class Check:
    name: str
    status: Status
    detail: str


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)


def _vault(config: WikiragConfig) -> tuple[Check, Vault | None]:
    from wikirag.vault.model import Vault

    if not config.vault.is_dir():
        return Check("vault", "fail", str(VaultNotFound.at(config.vault))), None
    started = time.perf_counter()
    vault = Vault.load(config.vault, exclude=config.exclude, store=config.store, templates=config.index.templates)
    seconds = time.perf_counter() - started
    problems = len(vault.issues) + sum(1 for n in vault.notes.values() if n.frontmatter_error)
    status: Status = "warn" if problems else "ok"
    detail = (f"{counted(len(vault.notes), 'note')}, {counted(len(vault.attachments), 'attachment')} read in "
              f"{seconds:.2f} s")
    if problems:
        detail += f"; {counted(problems, 'file')} with problems (`wikirag stats` lists them)"
    templates = [f"{folder}/" for folder in vault.rules.templates if (config.vault / folder).is_dir()]
    if templates:  # Obsidian shows their notes: say once why they are not counted
        detail += (f"; template folder{'s' * (len(templates) > 1)} {', '.join(templates)} left out "
                   "(`[index] templates = true` in wikirag.toml reads templates too)")
    advice = scale_advice(config.storage, len(vault.notes))
    if advice:
        status, detail = "warn", f"{detail}; {advice}"
    return Check("vault", status, detail), vault


def _tokenizer(config: WikiragConfig) -> Check:
    from wikirag.lightrag.tokens import _ENCODINGS, cache_path, seed_tiktoken_cache

    try:
        cache = seed_tiktoken_cache()
        for name, (_, sha256) in _ENCODINGS.items():
            data = cache_path(name, cache).read_bytes()
            if hashlib.sha256(data).hexdigest() != sha256:
                return Check("tokenizer", "fail", f"{name} in {cache} does not match tiktoken's pinned sha256")
    except (OSError, RuntimeError) as exc:
        return Check("tokenizer", "fail", f"tokenizer files unavailable: {exc}")
    return Check("tokenizer", "ok", f"cl100k_base and o200k_base offline in {cache} (sha256 verified); "
                                    f"chunking uses {config.index.encoding}")


# The local models are English (all-MiniLM-L6-v2). Where this share of a vault's letters is Chinese, Japanese
# or Korean, its vectors place little: on oldwinter-cards (Chinese) LightRAG's own order found 1 note in 26.
CJK_WARN_SHARE = 0.3
_LANGUAGE_SAMPLE = 500  # notes read for the share: enough for a percentage, cheap at any vault size


def _language_note(vault: Vault | None) -> str:
    """What to say when the vault is largely CJK text and the local English model embeds it; "" otherwise."""
    from wikirag.index.lexical import cjk_letter_share

    if vault is None or not vault.notes:
        return ""
    paths = sorted(vault.notes, key=lambda p: hashlib.sha1(p.encode("utf-8", "surrogatepass")).hexdigest())
    share = cjk_letter_share(vault.notes[p].body for p in paths[:_LANGUAGE_SAMPLE])
    if share < CJK_WARN_SHARE:
        return ""
    return (f"; {share:.0%} of the notes' letters are Chinese, Japanese or Korean and this model is English: "
            "LightRAG's own vector retrieval finds little in them. `search`, the cited sources and naive or mix "
            "answers also read BM25, which does; for the graph modes set a multilingual model under [embedding] "
            "(e.g. model = \"ollama:bge-m3\", dim = 1024) and run `wikirag index --rebuild`")


def _embedding(config: WikiragConfig, vault: Vault | None = None) -> Check:
    try:
        spec = embedding_spec(config)
    except ConfigError as exc:  # a local model with another dim than its own
        return Check("embedding", "fail", str(exc))
    if spec.provider != "local":
        return Check("embedding", "skip", f"{spec.identity}: an API model, checked when used")
    try:
        from wikirag.lightrag.embeddings import shared_minilm

        started = time.perf_counter()
        vector = shared_minilm(spec.model).embed(["wikirag doctor checks the embedding model."])
        seconds = time.perf_counter() - started
    except Exception as exc:  # a broken install shows up here, in words
        return Check("embedding", "fail", f"the offline model {spec.model} could not run: {exc}")
    if vector.shape[1] != spec.dim:
        return Check("embedding", "fail", f"MiniLM gives {vector.shape[1]} dimensions, config says {spec.dim}")
    detail = f"{spec.model} offline, {spec.dim} dims, first vector in {seconds:.2f} s"
    language = _language_note(vault)
    return Check("embedding", "warn" if language else "ok", detail + language)


def _store(config: WikiragConfig) -> Check:
    store = ledger_store(config.storage, config.workspace_dir, config.workspace)
    if rebuild_pending(config) is not None:  # before the ledger: the wipe may have deleted it already
        return Check("store", "warn", f"{store.location}: a `wikirag index --rebuild` was cut short; the next "
                     "`wikirag index` finishes it (or `wikirag watch`, before it opens the store)")
    if rebuild_unfinished(config):  # the wipe done, the notes not all written again: readers are refused
        return Check("store", "warn", f"{store.location}: a `wikirag index --rebuild` was cut short while it wrote "
                     "the notes again; the next `wikirag index` (or `wikirag watch`) finishes it")
    try:
        if not store.exists():
            return Check("store", "warn", f"{store.location}: no index yet; run `wikirag index {config.vault}`")
        ledger = Ledger.load(store)
    except StorageUnreachable as exc:
        return Check("store", "fail", str(exc))
    except (ValueError, OSError) as exc:
        return Check("store", "fail", f"{store.location}: unreadable ledger: {exc}")
    if ledger.meta.get(REBUILDING) is not None:  # one on another machine using this database
        return Check("store", "warn", f"{store.location}: a `wikirag index --rebuild`{rebuilding_writer(ledger.meta)} "
                     "has not written every note again; readers are refused until it ends, or until a "
                     "`wikirag index` finishes it")
    try:
        problem = embedding_mismatch(ledger.meta.get("embedding"), embedding_spec(config).identity)
    except ConfigError:
        problem = None  # the embedding check says what is wrong with the setting
    problem = problem or targets_mismatch(ledger.meta.get("servers"), config.storage)  # index and watch refuse it
    if problem:
        return Check("store", "fail", problem)
    pending = sum(1 for e in ledger.notes.values() if e.status == "pending_extraction")
    unwritten = len(ledger.pending.chunk_notes & set(ledger.notes))  # listed by a run that stopped before writing
    detail = f"{counted(len(ledger.notes) - unwritten, 'note')} indexed in {store.location}"
    if pending:
        detail += f"; {counted(pending, 'note')} wait{'s' if pending == 1 else ''} for LLM extraction"
    if not ledger.pending.empty():
        left = f"{counted(unwritten, 'note')} unwritten" if unwritten else "writes unfinished"
        return Check("store", "warn", f"{detail}; an interrupted run left {left}: the next `wikirag index` "
                     "completes them")
    return Check("store", "ok", detail)


def _llm(config: WikiragConfig, call: bool) -> Check:
    if not config.llm.model:
        return Check("llm", "skip", "no LLM configured: notes are indexed from their links; set WIKIRAG_LLM "
                                    "(e.g. openai:gpt-4o-mini) for extraction and answers")
    from wikirag.errors import ConfigError
    from wikirag.llm.check import check_llm
    from wikirag.llm.spec import describe_llm

    try:
        info = describe_llm(config.llm)
    except ConfigError as exc:
        return Check("llm", "fail", str(exc))
    where = info.get("base_url_host") or "the provider's default endpoint"
    key = info.get("key_env")
    key_note = ""
    if key:
        key_note = f"; {key} is {'set' if info.get('key_set') else 'NOT set'}"
    if not call:
        return Check("llm", "ok", f"{config.llm.model} at {where}{key_note} (add --check-llm to make one call)")
    result = check_llm(config.llm)
    if not result.ok:
        error = (result.error or "").removesuffix(".")  # "Connection error." ends mid-line, before key_note
        return Check("llm", "fail", f"{config.llm.model} at {where}: {error}{key_note}")
    return Check("llm", "ok", f"{config.llm.model} answered in {result.latency_s:.2f} s{key_note}")


def _adopt_store_model(config: WikiragConfig) -> None:
    """Follow the local model the store was built with (its ledger head), as `index` and `query` do."""
    # the store and embedding checks then say what is wrong
    with contextlib.suppress(StorageUnreachable, StoreMismatch, ConfigError, ValueError, OSError):
        adopt_store_embedding(config)


def run_doctor(config: WikiragConfig, *, check_llm_call: bool = False) -> DoctorReport:
    report = DoctorReport()
    vault_check, vault = _vault(config)
    report.checks.append(vault_check)
    report.checks.append(_tokenizer(config))
    storage = [Check(name, status, detail) for name, status, detail in check_storage(config.storage)]
    if all(c.status != "fail" for c in storage):
        _adopt_store_model(config)  # check the model index and query will use, not today's default
    report.checks.append(_embedding(config, vault))
    if config.storage.backend not in ("file", "embedded") and config.workspace == workspace_name(config.vault):
        # On a shared server every vault folder called "Notes" would land in one workspace.
        storage.append(Check("workspace", "warn", f"{config.workspace!r} is the vault folder's name; on a shared "
                                                  "server set `workspace` in wikirag.toml to a unique name"))
    if others := other_workspaces(config.vault, config.store, config.workspace):
        storage.append(Check("workspace", "warn", f"{config.store} also holds the index of {', '.join(others)}, "
                             f"which this vault ({config.workspace}) does not use: an index from before the vault "
                             "folder was renamed? Delete its folder to free the space"))
    report.checks += storage
    if all(c.status != "fail" for c in storage):
        report.checks.append(_store(config))
    report.checks.append(_llm(config, check_llm_call))
    if os.environ.get("ENTITY_TYPES") is not None:
        report.checks.append(Check("environment", "fail", "ENTITY_TYPES is set; LightRAG 1.5 refuses to start"))
    return report
