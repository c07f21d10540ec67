"""Which workspace a vault with no `workspace` set takes (storage.workspace.vault_workspace): a renamed vault takes
the one index in its own store, and no vault takes another vault's from a store outside it."""

import os

import pytest

from wikirag.settings import load_config


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
    _index_of(vault / ".wikirag", "Notes", "wikirag.lock", "wikirag_rebuild.json", "wikirag_vectors.sqlite",
              "kv_store_llm_response_cache.json")
    assert load_config(vault).workspace == "Notes"


def test_a_folder_of_no_index_is_not_taken(tmp_path):
    vault = tmp_path / "Renamed"
    vault.mkdir()
    (vault / ".wikirag" / "Notes").mkdir(parents=True)
    (vault / ".wikirag" / "Notes" / "wikirag.lock").write_bytes(b"")
    assert load_config(vault).workspace == "Renamed"
