"""`wikirag index --rebuild`: empty this workspace wherever its index lives, in an order that a rebuild cut short
(Ctrl-C, a crash, a server that stops answering) cannot turn into a store claiming records it lost.

1. the "nothing changed" manifest, so that no run ends on it;
2. a marker in the workspace folder (`wikirag_rebuild.json`): a rebuild is under way, and what it keeps;
3. the workspace's PostgreSQL rows, ledger included, in one transaction (storage.ledger_store.drop_workspace);
4. wikirag's and LightRAG's files, wikirag's index database (the ledger on files) first (storage.fs);
5. the workspace on the servers LightRAG's storages are passed through to (lightrag.server_drop);
6. what the rebuild carries (a submitted batch) into the new ledger's head;
7. the marker says the wipe is done (`{"wiped": true}`); it goes when a run (this one, or the next `index` or
   `watch` after it was cut short) has written every note again (`finish_rebuild`, index.run). With the ledger
   on PostgreSQL, the new ledger's head says so too (`rebuilding`), for readers on other machines.

The ledger goes before the servers are emptied: a ledger that outlived them would say every note is written.
A run that finds the marker was cut short somewhere in 3-6: `index` does the whole wipe again before it reads
anything (each step is harmless to repeat) and then indexes every note, so the servers never keep what the
earlier index wrote beside the rebuilt one. `watch` does the same before it opens LightRAG's storages. A run
that finds the wipe done goes on as any run does, from the new ledger. Readers (`search`, `query`, `mcp`) are
refused in one line while either marker is there (`refuse_unfinished`): the index holds some notes or none.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from typing import Any

from wikirag.errors import StoreMismatch
from wikirag.index.ledger import Ledger
from wikirag.index.manifest import drop_manifest
from wikirag.lightrag.server_drop import drop_server_storages
from wikirag.settings import WikiragConfig
from wikirag.storage.fs import LLM_CACHE_FILES, atomic_write_text, wipe_store_files
from wikirag.storage.ledger_store import LLM_CACHE_TABLES, drop_workspace, ledger_store

REBUILD_MARKER = "wikirag_rebuild.json"
# The ledger head's key saying a rebuild's wipe is done and its notes are not all written again: the local
# marker's `{"wiped": true}` where readers on other machines find it, when the ledger lives on PostgreSQL
REBUILDING = "rebuilding"


def rebuild_pending(config: WikiragConfig) -> dict[str, Any] | None:
    """What a rebuild cut short recorded (`keep_llm_cache`, `carried`), or None when none is under way. A marker
    that cannot be read still says a rebuild is under way: keep the LLM cache, carry nothing."""
    if not rebuild_unfinished(config):
        return None
    recorded = _recorded(config)
    if recorded.get("wiped") is True:  # the wipe was done: what is left is writing the notes, as any run does
        return None
    carried = recorded.get("carried")
    return {"keep_llm_cache": recorded.get("keep_llm_cache") is not False,
            "carried": carried if isinstance(carried, dict) else {}}


def rebuild_unfinished(config: WikiragConfig) -> bool:
    """Whether a rebuild was cut short, in its wipe or while the notes were written again."""
    return (config.workspace_dir / REBUILD_MARKER).is_file()


def _recorded(config: WikiragConfig) -> dict[str, Any]:
    """The marker's record; {} when it cannot be read (or is gone)."""
    try:
        recorded = json.loads((config.workspace_dir / REBUILD_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def refuse_unfinished(config: WikiragConfig) -> None:
    """For a reader: an index whose rebuild was cut short, or is still running, holds some of the vault's notes,
    or none. Which of the two: whether the process the marker names still runs on this machine."""
    if not rebuild_unfinished(config):
        return
    writer = _running_writer(config)
    if writer is not None:
        raise StoreMismatch(f"{config.workspace_dir}: a `wikirag index --rebuild` is running (process {writer}), "
                            "so the index is incomplete until it ends; try again then")
    raise StoreMismatch(f"{config.workspace_dir}: a `wikirag index --rebuild` was cut short, so the index is "
                        f"incomplete; run `wikirag index {config.vault}` to finish it")


def refuse_rebuilding(config: WikiragConfig, meta: dict[str, Any] | None) -> None:
    """For a reader, given its ledger head's meta: a rebuild (on any machine using the same database) whose notes
    are not all written again. The local marker (`refuse_unfinished`) says more on the machine that rebuilds."""
    if (meta or {}).get(REBUILDING) is None:
        return
    where = rebuilding_writer(meta)
    raise StoreMismatch(f"{config.workspace_dir}: a `wikirag index --rebuild`{where} has not written every note "
                        f"again, so the index is incomplete; wait for it to end, or if it was cut short run "
                        f"`wikirag index {config.vault}` to finish it")


def rebuilding_writer(meta: dict[str, Any] | None) -> str:
    """" on HOST (process PID)": which writer the shared ledger says is rebuilding ("" when it names none)."""
    writer = (meta or {}).get(REBUILDING)
    return f" on {writer.get('host')} (process {writer.get('pid')})" if isinstance(writer, dict) else ""


def _writer() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname()}


def _marker(**recorded: Any) -> str:
    """The marker's text: what the rebuild records, and which process on which machine writes it."""
    return json.dumps({**recorded, **_writer()})


def _running_writer(config: WikiragConfig) -> int | None:
    """The process that wrote the marker, when it runs on this machine still (POSIX: a signal 0 only asks; on
    Windows os.kill would end it). A process since ended whose number was taken again reads as running: the
    message then says "running" for a rebuild cut short, which `wikirag index` still finishes."""
    recorded = _recorded(config)
    pid = recorded.get("pid")
    if (os.name != "posix" or not isinstance(pid, int) or pid <= 0 or pid == os.getpid()
            or recorded.get("host") != socket.gethostname()):  # this process's own rebuild has ended: it reads
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:  # PermissionError: it runs, as another user
        return pid
    return pid


def finish_rebuild(config: WikiragConfig, ledger: Ledger | None = None) -> None:
    """A run wrote every note (nothing waits in the ledger): a rebuild whose wipe was done is finished, here
    and, when the run's `ledger` says so, for readers on other machines."""
    if ledger is not None and ledger.meta.pop(REBUILDING, None) is not None:
        ledger.save()
    if rebuild_unfinished(config) and rebuild_pending(config) is None:
        (config.workspace_dir / REBUILD_MARKER).unlink(missing_ok=True)


def refuse_while_pending(config: WikiragConfig) -> None:
    """For a run given LightRAG's storages already open (a `watch` batch): their loaded data would outlive the
    wipe. `watch` itself finishes a rebuild cut short before it opens them."""
    if rebuild_pending(config) is not None:
        raise StoreMismatch(f"{config.workspace_dir}: a `wikirag index --rebuild` was cut short; run `wikirag "
                            "index` to finish it first")


async def wipe_workspace(config: WikiragConfig, *, keep_llm_cache: bool, embedding_func: Any = None) -> dict[str, Any]:
    """Delete this workspace's index everywhere (the module docstring's steps), by name and by workspace only.
    `keep_llm_cache`: LightRAG's LLM cache (and the journal of answers not yet in it) stays, so re-deriving the
    same chunks with the same model and hints asks the provider nothing (its keys name both); so does a batch a
    stopped run submitted (index/batching.py), whose answers land in that cache: returned as the ledger meta for
    the new ledger. A rebuild cut short is finished with what it recorded: the LLM cache dropped if either run
    asked for it, the batch it carried. `embedding_func`: the one the run will write with, when a caller gives one
    (a server's vector collection is named for the model)."""
    pending = rebuild_pending(config)
    if pending is not None:
        keep_llm_cache = keep_llm_cache and pending["keep_llm_cache"]
        carried = pending["carried"]
    else:
        carried = _carried(config) if keep_llm_cache else {}
    if not keep_llm_cache:
        carried = {}
    drop_manifest(config.workspace_dir)  # first: a wipe cut short must not leave "nothing changed" behind
    config.workspace_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(config.workspace_dir / REBUILD_MARKER, _marker(keep_llm_cache=keep_llm_cache, carried=carried))
    if config.storage.uses_postgres:  # every LightRAG and ledger row of this workspace
        drop_workspace(config.storage, config.workspace, keep=LLM_CACHE_TABLES if keep_llm_cache else ())
    wipe_store_files(config.workspace_dir, keep=(*(LLM_CACHE_FILES if keep_llm_cache else ()), REBUILD_MARKER))
    await drop_server_storages(config, keep_llm_cache=keep_llm_cache, embedding_func=embedding_func)
    head = {**carried, **({REBUILDING: _writer()} if config.storage.uses_postgres else {})}
    if head:  # before the marker goes: a kill between the two would lose a batch paid for (its notes asked again)
        _carry_over(config, head)
    atomic_write_text(config.workspace_dir / REBUILD_MARKER, _marker(wiped=True))
    return carried


def _carry_over(config: WikiragConfig, carried: dict[str, Any]) -> None:
    """Write what the rebuild carries into the new (empty) ledger's head, where the run would put it only at its
    first save. A ledger with no note in it: the next run, rebuild or not, writes every note."""
    ledger = Ledger.load(ledger_store(config.storage, config.workspace_dir, config.workspace))
    ledger.meta.update(carried)
    ledger.save()


def _carried(config: WikiragConfig) -> dict[str, Any]:
    """A batch a stopped run submitted, from the ledger head only (cheap at any vault size)."""
    batch = None
    with contextlib.suppress(Exception):  # a store too damaged to read, the reason for many a rebuild
        batch = ((ledger_store(config.storage, config.workspace_dir, config.workspace).head() or {})
                 .get("meta") or {}).get("batch")
    return {"batch": batch} if batch else {}
