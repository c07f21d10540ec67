"""Which workspace a vault with no `workspace` set takes (storage.workspace.vault_workspace): a renamed vault takes
the one index in its own store, and no vault takes another vault's from a store outside it."""

import json
import os
import socket

import pytest

from wikirag.settings import load_config
from wikirag.storage.fs import VAULT_RECORD
from wikirag.storage.workspace import record_vault


def _index_of(store, name, *files):
    folder = store / name
    folder.mkdir(parents=True)
    for file in files or ("wikirag_index.sqlite",):
        (folder / file).write_bytes(b"")
    return folder


def test_a_store_outside_the_vault_named_by_a_config_file_lends_no_workspace(tmp_path):
    """`--config shared.toml` with `store = "/srv/wikirag"` for several vaults: the second vault took the first's
    index (the only one there), and its run would have deleted the first vault's notes from it."""
    shared = tmp_path / "shared"
    _index_of(shared, "first")
    config = tmp_path / "shared.toml"
    config.write_text(f'store = "{shared.as_posix()}"\n')
    second = tmp_path / "second"
    second.mkdir()
    assert load_config(second, config_file=config).workspace == "second"


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_store_linked_out_of_the_vault_lends_no_workspace(tmp_path):
    """`VAULT/.wikirag` a link to a folder several vaults' stores share: it is none of this vault's own."""
    _index_of(tmp_path / "elsewhere", "first")
    vault = tmp_path / "second"
    vault.mkdir()
    (vault / ".wikirag").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert load_config(vault).workspace == "second"


def test_a_renamed_vault_keeps_a_workspace_whose_rebuild_was_cut_short(tmp_path):
    """A `--rebuild` cut short after its wipe (file store) leaves its marker, the vector cache and the LLM cache,
    and no ledger yet: the renamed vault built a new workspace beside it, re-embedding and asking the LLM again."""
    vault = tmp_path / "Renamed"
    vault.mkdir()
    folder = _index_of(vault / ".wikirag", "Notes", "wikirag.lock", "wikirag_rebuild.json", "wikirag_vectors.sqlite",
                       "kv_store_llm_response_cache.json")
    record_vault(folder, tmp_path / "Notes")  # written before the rename, and kept by the rebuild's wipe
    assert load_config(vault).workspace == "Notes"


def test_a_folder_of_no_index_is_not_taken(tmp_path):
    vault = tmp_path / "Renamed"
    vault.mkdir()
    (vault / ".wikirag" / "Notes").mkdir(parents=True)
    (vault / ".wikirag" / "Notes" / "wikirag.lock").write_bytes(b"")
    assert load_config(vault).workspace == "Renamed"


def _renamed_with(tmp_path, **record):
    """A vault renamed from "Notes" to "Renamed", its store's one index recorded as `record` says."""
    vault = tmp_path / "Renamed"
    vault.mkdir()
    folder = _index_of(vault / ".wikirag", "Notes")
    if record:
        (folder / VAULT_RECORD).write_text(json.dumps(record), encoding="utf-8")
    return vault


def test_a_renamed_vault_takes_the_index_recorded_for_its_old_path_on_this_machine(tmp_path):
    vault = _renamed_with(tmp_path, host=socket.gethostname(), path=str(tmp_path / "Notes"))
    assert load_config(vault).workspace == "Notes"


@pytest.mark.parametrize("case", ["older wikirag", "another machine", "old folder still there", "unreadable"])
def test_an_index_not_recorded_for_this_vault_at_a_path_now_gone_is_not_taken(tmp_path, case):
    here, old = socket.gethostname(), tmp_path / "Notes"
    old.mkdir()
    record = {"older wikirag": {},  # written before the record was: whose it is is unknown
              "another machine": {"host": "another-machine", "path": "/nowhere/Notes"},  # a store synced from it
              "old folder still there": {"host": here, "path": str(old)},  # a copy of the vault, not a rename
              "unreadable": {"host": here, "path": 3}}[case]
    assert load_config(_renamed_with(tmp_path, **record)).workspace == "Renamed"


def test_an_index_run_records_its_vault(tmp_path):
    vault = tmp_path / "Notes"
    vault.mkdir()
    folder = tmp_path / "Notes" / ".wikirag" / "Notes"
    folder.mkdir(parents=True)
    record_vault(folder, vault)
    recorded = json.loads((folder / VAULT_RECORD).read_text())
    assert recorded == {"host": socket.gethostname(), "path": str(vault.resolve())}
