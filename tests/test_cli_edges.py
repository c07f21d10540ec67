"""Rough edges a new user met: each command's defaults, messages and refusals, through Typer's runner on real
files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


def test_export_writes_the_format_its_file_name_says(tmp_path, fast_embedding):
    """`export -o graph.json` wrote GraphML into the .json file, silently."""
    vault = small_vault(tmp_path / "vault")
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    guessed = tmp_path / "graph.json"
    result = runner.invoke(app, ["export", "--vault", str(vault), "-o", str(guessed)])
    assert result.exit_code == 0, result.output
    assert {"nodes", "edges"} <= set(json.loads(guessed.read_text(encoding="utf-8")))
    graphml = tmp_path / "graph.GraphML"
    assert runner.invoke(app, ["export", "--vault", str(vault), "-o", str(graphml)]).exit_code == 0
    assert graphml.read_text(encoding="utf-8").startswith("<graphml")
    plain = tmp_path / "graph.out"  # no format's extension: GraphML, as before
    assert runner.invoke(app, ["export", "--vault", str(vault), "-o", str(plain)]).exit_code == 0
    assert plain.read_text(encoding="utf-8").startswith("<graphml")


def test_export_refuses_a_format_its_file_name_contradicts(tmp_path, fast_embedding):
    vault = small_vault(tmp_path / "vault")
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    out = tmp_path / "graph.json"
    result = runner.invoke(app, ["export", "--vault", str(vault), "--format", "graphml", "-o", str(out)])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "--format graphml contradicts graph.json" in result.output
    assert not out.exists()


def test_a_frontmatter_route_that_is_no_route_is_reported_not_ignored_silently(tmp_path, fast_embedding):
    """`wikirag: skp` indexed the note as if the line were not there, and said nothing."""
    vault = small_vault(tmp_path / "vault")
    (vault / "Draft.md").write_text("---\nwikirag: skp\nrelated: \"[[Bombe]]\"\n---\nA draft.\n", encoding="utf-8")
    (vault / "Kept.md").write_text("---\nwikirag: Skip\n---\nKept out.\n", encoding="utf-8")
    line = "Draft.md: frontmatter wikirag: 'skp' ignored; use inject, extract, skip"
    indexed = runner.invoke(app, ["index", str(vault), "--json"])
    assert indexed.exit_code == 0, indexed.output
    assert json.loads(indexed.stdout)["issues"] == [line]
    stats = json.loads(runner.invoke(app, ["stats", str(vault), "--json"]).stdout)
    assert stats["frontmatter_problems"] == [{"path": "Draft.md", "error": line.split(": ", 1)[1]}]
    assert stats["frontmatter_links"] >= 1  # the rest of the block is still read


@pytest.mark.parametrize("args", [["query", "x", "--vault"], ["search", "x", "--vault"], ["mcp"],
                                  ["export", "-o", "-", "--vault"]])
def test_a_vault_folder_that_is_not_there_is_said_to_be_missing(tmp_path, args):
    """`query x --vault /typo` said "no index here; run `wikirag index /typo`", which then says no such folder."""
    missing = tmp_path / "typo"
    result = runner.invoke(app, [*args, str(missing)])
    assert result.exit_code == 1 and result.output == f"Error: {missing}: no such vault folder\n", result.output


@pytest.mark.parametrize("args", [["query", "Bombe", "sv"], ["search", "Bombe", "sv"], ["export", "sv", "-o", "x"]])
def test_a_vault_given_where_the_command_takes_none_is_told_to_come_as_vault(tmp_path, monkeypatch, args):
    """`wikirag query Bombe sv` (as `index sv` takes it) said only "unexpected extra argument (sv)"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sv").mkdir()
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "pass the vault with --vault sv" in result.output, result.output
    (tmp_path / "sv").rmdir()  # an extra word that is no folder gets no hint
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "--vault" not in result.output and "(sv)" in result.output, result.output


@pytest.mark.parametrize("option", ["--price-in", "--price-out"])
def test_a_negative_price_names_the_option(tmp_path, option):
    """`--price-in -1` was said as `[cost] price_in = -1.0`, the config file's name for it."""
    vault = small_vault(tmp_path / "vault")
    result = runner.invoke(app, ["cost-estimate", str(vault), option, "-1"])
    assert result.exit_code == 2 and f"'{option}': -1.0 is not in the range x>=0" in result.output, result.output


def test_doctors_failed_llm_call_names_the_model_once(tmp_path, monkeypatch):
    """It said "openai:gpt-4o-mini at …: openai:gpt-4o-mini: APIConnectionError: Connection error.; KEY is set"."""
    import socket

    with socket.socket() as closed:  # a port nothing listens on: the connection is refused at once
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("WIKIRAG_LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    vault = small_vault(tmp_path / "vault")
    result = runner.invoke(app, ["doctor", str(vault), "--llm", "openai:gpt-4o-mini", "--check-llm", "--json"])
    llm = {c["name"]: c for c in json.loads(result.stdout)["checks"]}["llm"]
    assert llm["status"] == "fail" and llm["detail"].count("gpt-4o-mini") == 1, llm
    assert llm["detail"].endswith("APIConnectionError: Connection error; OPENAI_API_KEY is set"), llm


def test_cost_estimate_refuses_a_provider_index_refuses(tmp_path):
    """`--model opnai:gpt-4o-mini` was priced as gpt-4o-mini, where `index --llm` refuses the provider."""
    vault = small_vault(tmp_path / "vault")
    result = runner.invoke(app, ["cost-estimate", str(vault), "--model", "opnai:gpt-4o-mini"])
    assert result.exit_code == 1 and "unknown provider 'opnai'" in result.output, result.output
    indexed = runner.invoke(app, ["index", str(vault), "--dry-run", "--llm", "opnai:gpt-4o-mini"])
    assert indexed.exit_code == 1 and result.output == indexed.output
    for model in ("openai:gpt-4o-mini", "gpt-4o-mini", "ollama:qwen2.5:7b"):  # as before
        assert runner.invoke(app, ["cost-estimate", str(vault), "--model", model]).exit_code == 0, model


def test_counts_of_one_are_said_in_the_singular(tmp_path, fast_embedding, monkeypatch):
    """"1 notes are indexed from their links", "1 notes, 1 attachments", "1 files with problems"."""
    monkeypatch.setenv("COLUMNS", "200")
    vault = tmp_path / "vault"
    vault.mkdir()
    prose = "A note of plain prose about rotors and wiring, with no link for its graph to come from. " * 20
    (vault / "Lone.md").write_text(f"---\ntitle: [broken\n---\n{prose}\n")  # for the LLM, which is not set
    (vault / "pic.png").write_bytes(b"\x89PNG")
    indexed = runner.invoke(app, ["index", str(vault)])
    assert indexed.exit_code == 0, indexed.output
    assert "1 note is indexed from its links and waits for LLM extraction" in indexed.output, indexed.output
    doctor = runner.invoke(app, ["doctor", str(vault)]).output
    assert "1 note, 1 attachment read in" in doctor and "1 file with problems" in doctor, doctor
    assert "1 note indexed in" in doctor and "1 note waits for LLM extraction" in doctor, doctor
    estimate = runner.invoke(app, ["cost-estimate", str(vault)]).output
    assert estimate.startswith("1 note · "), estimate


def test_cost_estimate_top_0_lists_no_notes(tmp_path):
    vault = small_vault(tmp_path / "vault")
    listed = runner.invoke(app, ["cost-estimate", str(vault)])
    none = runner.invoke(app, ["cost-estimate", str(vault), "--top", "0"])
    assert listed.exit_code == 0 and none.exit_code == 0, none.output
    assert "Most expensive notes" in listed.output and "Most expensive notes" not in none.output
    assert runner.invoke(app, ["cost-estimate", str(vault), "--top", "-1"]).exit_code == 2


def test_watch_says_nothing_changed_when_it_starts_on_an_index_in_step(tmp_path, fast_embedding):
    from wikirag.cli.render import watch_start_line
    from wikirag.index.report import IndexReport

    vault = small_vault(tmp_path / "vault")
    first = runner.invoke(app, ["index", str(vault), "--json"])
    again = IndexReport(**{k: v for k, v in json.loads(runner.invoke(app, ["index", str(vault), "--json"]).stdout)
                           .items() if k in IndexReport.__dataclass_fields__})
    assert watch_start_line(again) == "nothing changed in 2 notes since the last run; watching for changes"
    ran = IndexReport(**{k: v for k, v in json.loads(first.stdout).items() if k in IndexReport.__dataclass_fields__})
    assert watch_start_line(ran).startswith("indexed 2 of 2 notes in ")
