"""The template folders of Obsidian's Templates plugin and of Templater are left out of the index (vault/ignore.py):
their `{{date}}` and `<% tp.… %>` links became entities and their boilerplate chunks. `[index] templates = true`
reads them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.storekit import HashEmbedding, ledger_doc, snapshot
from wikirag.cli.doctor import _vault
from wikirag.index.run import run_index
from wikirag.settings import load_config
from wikirag.vault.read import scan_vault

TEMPLATES_JSON = ".obsidian/templates.json"
TEMPLATER_JSON = ".obsidian/plugins/templater-obsidian/data.json"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "Templates/Daily.md", "# [[{{date}}]]\n\nWritten by [[<% tp.file.title %>]] in "
                                      "[[<% tp.date.now(\"YYYY\") %>]]. Back to [[Home]].\n")
    write(root, "Templates/Meeting/Agenda.md", "Agenda for [[{{title}}]].\n")
    write(root, "Home.md", "Home of the vault: each day starts from [[Daily]], then [[Project]].\n")
    write(root, "Project.md", "A project, planned at [[Home]].\n")
    write(root, "Templatesque.md", "A note whose name starts like the folder: [[Project]].\n")
    return root


def index(vault: Path, store: Path):
    config = load_config(vault, store=store)
    return config, run_index(config, embedding_func=HashEmbedding().func())


def placeholder_nodes(config) -> list[str]:
    return [name for name in snapshot(config)["nodes"] if "{{" in name or "<%" in name]


@pytest.mark.parametrize("settings, text", [
    (TEMPLATES_JSON, json.dumps({"folder": "/Templates/"})),  # slashes around it, as a user may type it
    (TEMPLATER_JSON, json.dumps({"templates_folder": "Templates", "trigger_on_file_creation": False})),
])
def test_the_configured_template_folder_is_not_indexed(vault, tmp_path, settings, text):
    write(vault, settings, text)
    config, report = index(vault, tmp_path / "store")
    notes = ledger_doc(config.workspace_dir)["notes"]
    assert sorted(notes) == ["Home.md", "Project.md", "Templatesque.md"]  # the folder, not a name prefix
    assert placeholder_nodes(config) == [] and not report.issues
    # a link to a template note is unresolved, as a link to an Excluded file is
    assert snapshot(config)["nodes"]["Daily"]["entity_type"] == "unresolved"


def test_index_templates_setting_reads_them(vault, tmp_path):
    write(vault, TEMPLATES_JSON, json.dumps({"folder": "Templates"}))
    write(vault, "wikirag.toml", "[index]\ntemplates = true\n")
    config, _report = index(vault, tmp_path / "store")
    assert {"Templates/Daily.md", "Templates/Meeting/Agenda.md"} <= set(ledger_doc(config.workspace_dir)["notes"])
    assert "{{date}}" in placeholder_nodes(config)  # what the default leaves out


@pytest.mark.parametrize("settings", [TEMPLATES_JSON, TEMPLATER_JSON])
def test_broken_template_settings_are_one_issue_and_the_run_goes_on(vault, tmp_path, settings):
    write(vault, settings, '{"folder": "Templates",')
    config, report = index(vault, tmp_path / "store")
    lines = [line for line in report.issues if settings in line]
    assert len(lines) == 1 and "unreadable" in lines[0] and "\n" not in lines[0], report.issues
    assert "Templates/Daily.md" in ledger_doc(config.workspace_dir)["notes"]  # nothing left out


@pytest.mark.parametrize("folder, notes", [
    ("Templates", 3), ("/Templates/", 3), ("Templates//", 3), ("./Templates", 3), ("Templates/Meeting", 4),
    ("", 5), ("   ", 5), ("/", 5), (".", 5), (None, 5),  # blank or the vault root: nothing left out
    ("Nowhere", 5), ("templates", 5),  # not there; paths are case-sensitive, as Excluded files' are
])
def test_how_the_folder_setting_is_read(vault, folder, notes):
    write(vault, TEMPLATES_JSON, json.dumps({} if folder is None else {"folder": folder}))
    scan = scan_vault(vault)
    assert len(scan.notes) == notes and not scan.issues


def test_a_folder_setting_that_is_no_text_is_reported(vault):
    write(vault, TEMPLATER_JSON, json.dumps({"templates_folder": ["Templates"]}))
    scan = scan_vault(vault)
    assert len(scan.notes) == 5 and [i.path for i in scan.issues] == [TEMPLATER_JSON]


def test_both_plugins_and_a_symlinked_obsidian_folder(vault, tmp_path):
    settings = tmp_path / "shared-obsidian"
    write(settings, "templates.json", json.dumps({"folder": "Templates/Meeting"}))
    write(settings, "plugins/templater-obsidian/data.json", json.dumps({"templates_folder": "Project.md"}))
    os.symlink(settings, vault / ".obsidian", target_is_directory=True)
    scan = scan_vault(vault)
    # a folder setting leaves out a folder of that name only: a note named like it stays
    assert [n.path for n in scan.notes] == ["Home.md", "Project.md", "Templates/Daily.md", "Templatesque.md"]
    assert scan_vault(vault, templates=True).notes[-2].path == "Templates/Meeting/Agenda.md"


def test_doctor_says_once_which_folder_was_left_out(vault, tmp_path):
    write(vault, TEMPLATES_JSON, json.dumps({"folder": "Templates"}))
    write(vault, TEMPLATER_JSON, json.dumps({"templates_folder": "Templates/"}))  # the same folder
    check, loaded = _vault(load_config(vault, store=tmp_path / "store"))
    assert check.status == "ok" and check.detail.count("Templates/") == 1, check.detail
    assert "template folder Templates/ left out" in check.detail and "[index] templates = true" in check.detail
    assert loaded is not None and len(loaded.notes) == 3
    write(vault, TEMPLATES_JSON, json.dumps({"folder": "Gone"}))  # a folder that is not there: nothing to say
    write(vault, TEMPLATER_JSON, "{}")
    check, _loaded = _vault(load_config(vault, store=tmp_path / "store"))
    assert "template" not in check.detail
