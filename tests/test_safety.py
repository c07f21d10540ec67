"""Hostile locations never cost a user a file: workspace names, store folders, `--rebuild`, `export -o`.

Every hostile value here is relative to a temporary store, or an absolute path to a temporary sibling
folder, so that even a regression deletes only inside pytest's temporary tree, never outside it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikirag.cli import app
from wikirag.settings import load_config

runner = CliRunner()


def tree(root: Path) -> dict[str, str]:
    """Every file under `root` with a digest of its bytes: what must survive a refused run."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A vault with notes, `.obsidian/` and a toml; a deep store; an unrelated sibling folder with a file."""
    vault = tmp_path / "vault"
    (vault / "people").mkdir(parents=True)
    (vault / "people" / "Ada.md").write_text("# Ada\nWrote about [[Engines]].\n", encoding="utf-8")
    (vault / "Engines.md").write_text("Engines are [[Ada]]'s subject.\n", encoding="utf-8")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("unrelated", encoding="utf-8")
    store = tmp_path / "s1" / "s2" / "store"
    store.mkdir(parents=True)
    (tmp_path / "s1" / "s2" / "sibling.txt").write_text("next to the store", encoding="utf-8")
    return {"root": tmp_path, "vault": vault, "store": store, "outside": outside}


HOSTILE_WORKSPACES = ["..", "../..", ".", "a/../..", "../outside", "a/b", "", "x\ny"]


def _refused(result, *words: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().count("\n") == 0, result.output
    for word in words:
        assert word in result.output, result.output


@pytest.mark.parametrize("source", ["toml", "env"])
@pytest.mark.parametrize("name", HOSTILE_WORKSPACES + ["ABSOLUTE"])
def test_a_hostile_workspace_name_is_refused_and_deletes_nothing(world, source, name):
    if name == "ABSOLUTE":
        name = str(world["outside"])
    env = {"WIKIRAG_EMBEDDING": "hash"}  # mistyped as in the report: a later configuration failure
    if source == "toml":
        if not name:
            pytest.skip("an empty toml workspace means 'not set'")
        (world["vault"] / "wikirag.toml").write_text(f"workspace = {name!r}\n".replace("'", '"'), encoding="utf-8")
    else:
        env["WIKIRAG_WORKSPACE"] = name
    before = tree(world["root"])
    result = runner.invoke(app, ["index", str(world["vault"]), "--store", str(world["store"]), "--rebuild"], env=env)
    if source == "env" and not name:
        # An empty variable is unset: the default workspace, and then the mistyped embedding is refused.
        _refused(result, "hash")
    else:
        _refused(result, "workspace")
    assert tree(world["root"]) == before


@pytest.mark.parametrize("store", [".", "..", "sub", "sub/.hidden/..", "../outside", "ABSOLUTE"])
def test_a_vault_toml_store_outside_a_hidden_vault_folder_is_refused(world, store):
    if store == "ABSOLUTE":
        store = str(world["outside"])
    (world["vault"] / "sub" / "vault").mkdir(parents=True)
    (world["vault"] / "sub" / "vault" / "Note.md").write_text("a note where a store would wipe\n")
    (world["vault"] / "wikirag.toml").write_text(f'store = "{store}"\n', encoding="utf-8")
    before = tree(world["root"])
    result = runner.invoke(app, ["index", str(world["vault"]), "--rebuild"], env={"WIKIRAG_EMBEDDING": "hash"})
    _refused(result, "store")
    assert tree(world["root"]) == before


@pytest.mark.parametrize("where", ["vault", "parent", "visible-subfolder"])
def test_a_store_flag_on_or_around_the_vault_is_refused(world, where):
    store = {"vault": world["vault"], "parent": world["root"], "visible-subfolder": world["vault"] / "people"}[where]
    before = tree(world["root"])
    result = runner.invoke(app, ["index", str(world["vault"]), "--store", str(store), "--rebuild"],
                           env={"WIKIRAG_EMBEDDING": "hash"})
    _refused(result, "store")
    assert tree(world["root"]) == before


def test_a_vault_toml_may_name_a_hidden_store_inside_the_vault(world):
    (world["vault"] / "wikirag.toml").write_text('store = ".index"\nworkspace = "mine"\n', encoding="utf-8")
    config = load_config(world["vault"], environ={})
    assert config.workspace_dir == world["vault"] / ".index" / "mine"


def test_a_bad_setting_fails_before_rebuild_deletes_anything(world, fast_embedding):
    vault = world["vault"]
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    before = tree(world["root"])
    for env in ({"WIKIRAG_EMBEDDING": "hash"}, {"WIKIRAG_EMBEDDING": "nope:model"}, {"WIKIRAG_LLM": "nonsense"}):
        result = runner.invoke(app, ["index", str(vault), "--rebuild"], env=env)
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert tree(world["root"]) == before, env


def test_rebuild_deletes_only_the_files_wikirag_and_lightrag_write(world, fast_embedding):
    vault = world["vault"]
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    workspace_dir = load_config(vault).workspace_dir
    (workspace_dir / "my notes.md").write_text("the user put this here", encoding="utf-8")
    (workspace_dir / "folder").mkdir()
    (workspace_dir / "folder" / "x.txt").write_text("and this", encoding="utf-8")
    (workspace_dir / "vdb_chunks.json.bak").write_text("not a name LightRAG writes", encoding="utf-8")
    result = runner.invoke(app, ["index", str(vault), "--rebuild", "--json"])
    assert result.exit_code == 0, result.output
    assert (workspace_dir / "my notes.md").read_text(encoding="utf-8") == "the user put this here"
    assert (workspace_dir / "folder" / "x.txt").exists()
    assert (workspace_dir / "vdb_chunks.json.bak").exists()
    assert (workspace_dir / "wikirag_index.sqlite").exists()  # rebuilt


def test_export_never_writes_into_the_vault(world, fast_embedding):
    vault = world["vault"]
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    before = tree(vault)
    for target in (vault / "Engines.md", vault / "graph.graphml", vault / "people"):
        result = runner.invoke(app, ["export", "--vault", str(vault), "-o", str(target)])
        _refused(result, str(target))
    assert tree(vault) == before
    out = world["outside"] / "graph.graphml"
    result = runner.invoke(app, ["export", "--vault", str(vault), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists()



def test_rebuild_keeps_the_llm_cache_unless_told_to_drop_it(world, fast_embedding):
    """Paid answers survive `--rebuild` (the same prompts hit them again); `--drop-llm-cache` asks anew."""
    vault = world["vault"]
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    workspace_dir = load_config(vault).workspace_dir
    cache = workspace_dir / "kv_store_llm_response_cache.json"
    journal = workspace_dir / "wikirag_llm_journal.jsonl"
    answer = {"default:extract:0f": {"return": "paid for", "cache_type": "extract", "original_prompt": "p"}}
    cache.write_text(json.dumps(answer), encoding="utf-8")
    journal.write_text(json.dumps(answer) + "\n", encoding="utf-8")  # as a crash leaves it
    assert runner.invoke(app, ["index", str(vault), "--rebuild"]).exit_code == 0
    kept = json.loads(cache.read_text(encoding="utf-8"))  # the journal replayed into it, then emptied
    assert kept["default:extract:0f"]["return"] == "paid for" and not journal.exists()
    result = runner.invoke(app, ["index", str(vault), "--drop-llm-cache"])
    assert result.exit_code == 1 and "--drop-llm-cache goes with --rebuild" in result.output
    assert runner.invoke(app, ["index", str(vault), "--rebuild", "--drop-llm-cache"]).exit_code == 0
    assert "paid for" not in (cache.read_text(encoding="utf-8") if cache.exists() else "")
