"""`wikirag stats` through CliRunner on real vault copies; --json checked against the library."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.golden import VAULTS
from wikirag import __version__
from wikirag.cli import app
from wikirag.vault.model import Vault
from wikirag.vault.stats import compute_stats

runner = CliRunner()
SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "sample_vault"
CONTRACT_KEYS = {
    "notes", "words", "links_total", "links_resolved", "links_unresolved", "embeds",
    "links_in_code_ignored", "notes_with_frontmatter", "frontmatter_errors", "duplicate_name_groups",
}  # fmt: skip


def copy(scenario: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(VAULTS / scenario, tmp_path / scenario))


def stats_json(vault: Path, *args: str) -> dict:
    result = runner.invoke(app, ["stats", str(vault), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_matches_the_library(tmp_path: Path) -> None:
    vault = copy("main-samples", tmp_path)
    data = stats_json(vault)
    assert data.keys() >= CONTRACT_KEYS
    assert data.pop("graph") is None  # not indexed yet: no graph figures
    assert data == json.loads(json.dumps(asdict(compute_stats(Vault.load(vault)))))
    assert (data["notes"], data["links_total"], data["links_unresolved"], data["links_self"]) == (4, 13, 2, 2)
    assert data["links_total"] == data["links_resolved"] + data["links_unresolved"]
    assert data["orphans"] == ["Orphan.md"]
    assert data["top_hubs"] == [
        {"path": "Alpha.md", "backlinks": 1},
        {"path": "Beta.md", "backlinks": 1},
        {"path": "Index.md", "backlinks": 1},
    ]
    assert [b["notes"] for b in data["link_density"]] == [2, 1, 1]  # Beta, Orphan | Alpha | Index


def test_stats_honours_the_tomls_exclude_as_index_does(tmp_path: Path) -> None:
    vault = copy("main-samples", tmp_path)
    everything = stats_json(vault)["notes"]
    (vault / "wikirag.toml").write_text('exclude = ["Orphan.md"]\n')
    assert stats_json(vault)["notes"] == everything - 1
    assert stats_json(vault, "--exclude", "Alpha.md")["notes"] == everything - 2  # flag and toml add up


def test_counts_on_the_tie_break_vault(tmp_path: Path) -> None:
    data = stats_json(copy("same-name-different-folders", tmp_path))
    assert data["duplicate_name_groups"] == 3  # Note, Twin, Linker
    assert ["Note.md", "a/b/Note.md", "zzzz/Note.md"] in data["duplicate_names"]
    assert data["links_ambiguous"] == 8


def test_exclude_option(tmp_path: Path) -> None:
    vault = copy("excluded-files", tmp_path)
    assert stats_json(vault)["notes"] == 5  # Excluded files only
    assert stats_json(vault, "--exclude", "drafts/**", "--exclude", "*.tmp.md", "--exclude", "Scratch")["notes"] == 2


def test_read_issues_go_to_stderr_one_line_each(tmp_path: Path) -> None:
    vault = copy("bad-bytes", tmp_path)
    result = runner.invoke(app, ["stats", str(vault), "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "binary.md: looks binary (200 NUL bytes in the first 8 KiB); skipped",
        "latin1.md: 2 invalid UTF-8 sequences replaced (first at byte 46)",
        "long-line.md: a line of 10,563 characters (over 10,000), kept",
        "nul.md: 3 NUL bytes removed",
        "utf16.md: UTF-16 text (only UTF-8 is read); skipped",
    ]
    assert json.loads(result.stdout)["notes"] == 8


def test_human_output(tmp_path: Path) -> None:
    vault = copy("frontmatter-variants", tmp_path)
    result = runner.invoke(app, ["stats", str(vault)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "notes" in out and "Resolved links per note" in out
    assert "Frontmatter problems: 4" in out and "Bad date.md: " not in out  # a date that is none stays text
    assert "Route unknown.md: frontmatter wikirag: 'sometimes' ignored; use inject, extract, skip" in out
    assert "Broken YAML.md: invalid YAML at line 4" in out
    assert "Duplicate key.md: invalid YAML at line" in out


def test_missing_vault_is_one_line_exit_1(tmp_path: Path) -> None:
    result = runner.invoke(app, ["stats", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {tmp_path / 'nope'}: no such vault folder\n"
    assert "Traceback" not in result.output


def test_version_and_help() -> None:
    assert runner.invoke(app, ["--version"]).stdout == f"wikirag {__version__}\n"
    result = runner.invoke(app, ["stats", "--help"])
    assert result.exit_code == 0
    assert "Example" in result.stdout and "--exclude" in result.stdout


@pytest.mark.skipif(not SAMPLE_VAULT.is_dir(), reason="sample_vault/ is not there")
def test_sample_vault(tmp_path: Path) -> None:
    # a store left by the README's quick start is not copied: this vault is not indexed
    vault = Path(shutil.copytree(SAMPLE_VAULT, tmp_path / "sample_vault", ignore=shutil.ignore_patterns(".wikirag")))
    data = stats_json(vault)
    library = compute_stats(Vault.load(vault))
    assert data.pop("graph") is None
    assert data == json.loads(json.dumps(asdict(library)))
    assert data["notes"] >= 30
    assert data["links_total"] == data["links_resolved"] + data["links_unresolved"]
    assert data["links_resolved"] > data["links_unresolved"]
