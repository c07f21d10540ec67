"""Rough edges a new user met: each command's defaults, messages and refusals, through Typer's runner on real
files."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from wikirag.cli import app

runner = CliRunner()


def small_vault(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "Alan Turing.md").write_text("# Alan Turing\nDesigned the [[Bombe]].\n", encoding="utf-8")
    (root / "Bombe.md").write_text("# Bombe\nA machine that broke Enigma settings.\n", encoding="utf-8")
    return root


def test_doctor_without_a_vault_checks_the_current_folder(tmp_path, monkeypatch):
    """`cd VAULT && wikirag doctor`: the default Path(".") went through the parser meant for typed strings."""
    monkeypatch.chdir(small_vault(tmp_path / "vault"))
    result = runner.invoke(app, ["doctor", "--json"])
    assert not isinstance(result.exception, AttributeError), repr(result.exception)
    checks = json.loads(result.stdout)["checks"]
    assert checks and checks[0]["name"] == "vault", checks
