"""Every command through Typer's runner on real files; effects checked through the library."""

from __future__ import annotations

import json
import os
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding, copy_vault, snapshot
from wikirag.cli import app
from wikirag.errors import ConfigError
from wikirag.index.ledger import Ledger
from wikirag.plan.cost_settings import CostSettings
from wikirag.query.retrieve import DEFAULT_MODE
from wikirag.settings import load_config

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
runner = CliRunner()


@pytest.fixture
def vault(tmp_path: Path, fast_embedding) -> Path:
    return copy_vault(SAMPLE, tmp_path / "vault")


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    return result


def test_index_json_reports_what_the_store_holds(vault):
    result = invoke("index", str(vault), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for key in ("notes_total", "notes_indexed", "notes_unchanged", "notes_deleted", "notes_failed", "entities",
                "relations", "chunks", "llm_calls", "llm_input_tokens", "llm_output_tokens", "embedding_calls",
                "seconds"):
        assert key in report
    snap = snapshot(load_config(vault))
    assert report["entities"] == len(snap["nodes"])
    assert report["relations"] == len(snap["edges"])
    assert report["chunks"] == len(snap["chunks"])
    again = json.loads(invoke("index", str(vault), "--json").stdout)
    assert again["notes_indexed"] == 0 and again["notes_unchanged"] == report["notes_indexed"]


def test_index_dry_run_writes_nothing(vault):
    result = invoke("index", str(vault), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["notes_new"] > 0
    assert not (vault / ".wikirag").exists()


def test_index_human_output_and_route_override(vault):
    result = invoke("index", str(vault), "--route", "daily/*=skip")
    assert result.exit_code == 0, result.output
    assert "indexed into" in result.stdout
    ledger = Ledger.load(load_config(vault).workspace_dir)
    assert not any(p.startswith("daily/") for p in ledger.notes)


def test_index_of_a_missing_folder_is_one_line(tmp_path):
    result = invoke("index", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0
    assert "nope" in result.output and "Traceback" not in result.output


def test_query_context_only_from_inside_the_vault(vault, monkeypatch):
    assert invoke("index", str(vault)).exit_code == 0
    monkeypatch.chdir(vault / "people")  # the store is found upwards, like git
    result = invoke("query", "Who designed the Bombe?", "-m", "hybrid", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["answer"] is None and "no LLM" in data["no_answer_reason"]
    assert "Bombe" in data["keywords"]["low_level"]
    assert any(s["path"] == "projects/Bombe.md" for s in data["sources"])
    assert all(s["obsidian_uri"].startswith("obsidian://open?vault=vault&file=") for s in data["sources"])
    human = invoke("query", "Who designed the Bombe?", "-m", "naive")
    assert human.exit_code == 0 and "No answer generated" in human.stdout and "Sources" in human.stdout


def test_query_errors_are_one_line(vault, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WIKIRAG_VAULT", raising=False)
    result = invoke("query", "anything")
    assert result.exit_code == 1 and "run `wikirag index" in result.output
    assert invoke("index", str(vault)).exit_code == 0
    bad = invoke("query", "anything", "--vault", str(vault), "-m", "sideways")
    assert bad.exit_code == 1 and "unknown mode" in bad.output
    bypass = invoke("query", "anything", "--vault", str(vault), "-m", "bypass")
    assert bypass.exit_code == 1 and "LLM" in bypass.output


def test_export_graphml_opens_in_networkx(vault, tmp_path):
    assert invoke("index", str(vault)).exit_code == 0
    out = tmp_path / "g.graphml"
    result = invoke("export", "--vault", str(vault), "--format", "graphml", "-o", str(out))
    assert result.exit_code == 0, result.output
    graph = nx.read_graphml(out)
    snap = snapshot(load_config(vault))
    assert graph.number_of_nodes() == len(snap["nodes"])
    assert graph.number_of_edges() == len(snap["edges"])
    out_json = tmp_path / "g.json"
    assert invoke("export", "--vault", str(vault), "--format", "json", "-o", str(out_json)).exit_code == 0
    data = json.loads(out_json.read_text())
    assert len(data["edges"]) == len(snap["edges"])
    assert isinstance(data["nodes"][0]["source_id"], list)


def test_stats_shows_graph_figures_once_indexed(vault):
    before = json.loads(invoke("stats", str(vault), "--json").stdout)
    assert before["graph"] is None
    assert invoke("index", str(vault)).exit_code == 0
    after = json.loads(invoke("stats", str(vault), "--json").stdout)
    assert after["graph"]["nodes"] == len(snapshot(load_config(vault))["nodes"])


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_a_symlink_to_the_store_adds_nothing_to_the_vault(vault):
    """`Store -> .wikirag`: before, index, stats and cost-estimate took the store's own files for attachments
    (and every run found them changed)."""
    first = json.loads(invoke("index", str(vault), "--json").stdout)
    attachments = json.loads(invoke("stats", str(vault), "--json").stdout)["attachments"]
    os.symlink(vault / ".wikirag", vault / "Store", target_is_directory=True)
    result = invoke("index", str(vault))
    assert result.exit_code == 0 and "Store: symlink leads into wikirag's store; not followed" in result.output
    again = json.loads(invoke("index", str(vault), "--json").stdout)
    assert again["notes_unchanged"] == first["notes_indexed"] and again["notes_indexed"] == 0
    assert json.loads(invoke("stats", str(vault), "--json").stdout)["attachments"] == attachments


def test_doctor_reports_each_check(vault):
    result = invoke("doctor", str(vault), "--json")
    assert result.exit_code == 0, result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["tokenizer"]["status"] == "ok"
    assert checks["store"]["status"] == "warn"  # no index yet
    assert checks["llm"]["status"] == "skip"
    assert invoke("index", str(vault)).exit_code == 0
    checks = {c["name"]: c for c in json.loads(invoke("doctor", str(vault), "--json").stdout)["checks"]}
    assert checks["store"]["status"] == "ok"


def test_doctor_warns_when_the_english_model_embeds_a_mostly_chinese_vault(vault, tmp_path):
    """The local model is English: a vault mostly in CJK text gets a warning naming the share and the remedy;
    the (English) sample vault does not."""
    checks = {c["name"]: c for c in json.loads(invoke("doctor", str(vault), "--json").stdout)["checks"]}
    assert checks["embedding"]["status"] == "ok", checks["embedding"]
    chinese = tmp_path / "cards"
    chinese.mkdir()
    (chinese / "现成偏误.md").write_text("我们会因为自己更容易想到某件事，而认为这件事发生的概率更高。See [[Note]].\n",
                                     encoding="utf-8")
    (chinese / "Note.md").write_text("---\ntags: [card]\n---\n信息茧房是指人们关注的信息领域会被自己的兴趣所引导。\n",
                                     encoding="utf-8")
    checks = {c["name"]: c for c in json.loads(invoke("doctor", str(chinese), "--json").stdout)["checks"]}
    detail = checks["embedding"]["detail"]
    assert checks["embedding"]["status"] == "warn" and "Chinese, Japanese or Korean" in detail
    share = int(detail.split("; ")[1].split("%")[0])
    assert 80 <= share < 100 and 'model = "ollama:bge-m3"' in detail  # the Latin "See Note", "card" count too


def test_doctor_never_prints_a_key(vault, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-0123456789abcdef")
    result = invoke("doctor", str(vault), "--llm", "openai:gpt-4o-mini")
    assert "SECRET" not in result.output
    assert "OPENAI_API_KEY is set" in result.output.replace("\n", " ")


def test_every_command_has_help_with_an_example_and_a_readme_section():
    readme = (SAMPLE.parent / "README.md").read_text()
    commands = sorted(c.name or c.callback.__name__ for c in app.registered_commands)
    assert {"index", "query", "watch", "export", "doctor", "stats", "cost-estimate"} <= set(commands)
    for command in commands:
        result = invoke(command, "--help")
        assert result.exit_code == 0, command
        assert "Example" in result.output, command
        assert f"### `wikirag {command}" in readme, f"README has no section for {command}"


@pytest.mark.slow
def test_sample_vault_end_to_end_with_the_real_embedding_model(tmp_path):
    """No fakes: MiniLM embeddings, the real store, a context query."""
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    result = invoke("index", str(vault), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["embedding_texts"] > 0
    answer = json.loads(invoke("query", "How did the Bombe use cribs?", "--vault", str(vault), "--json").stdout)
    paths = {s["path"] for s in answer["sources"]}
    assert {"projects/Bombe.md", "concepts/Cribs.md"} & paths
    assert answer["mode"] == DEFAULT_MODE == "mix"  # the CLI's default is the library's (LightRAG's own)


def test_index_and_stats_print_bracketed_file_names_literally(tmp_path, fast_embedding):
    """Found by the vault fuzzer: rich read file and folder names as console markup, so a folder `x[` holding
    `]y.md` (the path `x[/]y.md`), or a vault under `x[/vault]`, ended `index` and `stats` in a MarkupError
    traceback, and `[red]` in a name vanished from the output."""
    vault = tmp_path / "x[" / "vault]"
    (vault / "x[").mkdir(parents=True)
    (vault / "x[" / "]y.md").write_bytes(b"\0" * 64)  # a problem line naming x[/]y.md
    (vault / "x[" / "]orphan.md").write_text("no links in or out\n")  # listed among the orphans
    (vault / "[red]Note.md").write_text("a note\n")
    for command, names in (("index", ["x[/]y.md", "x[/vault]"]), ("stats", ["x[/]orphan.md", "[red]Note.md"])):
        result = invoke(command, str(vault))
        assert result.exit_code == 0 and result.exception is None, (command, repr(result.exception))
        shown = " ".join(result.output.split())
        assert all(name in shown for name in names), (command, shown)


def test_query_and_cost_estimate_print_bracketed_names_literally(tmp_path, fast_embedding):
    """The same markup trap in the other renderings: sources, entities, chunks and the costliest notes."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "[red]Alert.md").write_text("The [red]Alert note links [[x[/]Other]] and names [bold]things.\n")
    (vault / "x[").mkdir()
    (vault / "x[" / "]Other.md").write_text("---\nwikirag: extract\n---\nAn essay about the [red]Alert note.\n")
    assert invoke("index", str(vault)).exit_code == 0
    result = invoke("query", "red Alert note", "--vault", str(vault), "-m", "hybrid")
    assert result.exit_code == 0 and result.exception is None, repr(result.exception)
    assert "[red]Alert.md" in " ".join(result.output.split())
    result = invoke("cost-estimate", str(vault), "--top", "5")
    assert result.exit_code == 0 and result.exception is None, repr(result.exception)
    assert "x[/]Other.md" in " ".join(result.output.split())


def test_the_command_keeps_its_exit_status_and_whole_output_without_the_interpreters_teardown(tmp_path: Path):
    """`wikirag` (wikirag.cli.main) ends with os._exit: the status a command chose and all of its output
    must still come out, through a pipe too."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "wikirag.cli", "cost-estimate", str(root / "sample_vault"), "--json"],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["notes"]) >= 40
    missing = subprocess.run([sys.executable, "-m", "wikirag", "stats", str(tmp_path / "nowhere")], cwd=root,
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 1 and missing.stderr.startswith("Error:") and "nowhere" in missing.stderr


_MAIN = """
import os, sys
sys.path.insert(0, {root!r})
real_exit = os._exit
def fast_exit(code):
    print("fast exit", flush=True)
    real_exit(code)
os._exit = fast_exit
sys.argv = ["wikirag", "index", {vault!r}, "--store", {store!r}, "--json"]
from wikirag.cli import main
main()
"""


def test_the_command_still_exits_fast_after_the_local_model_embedded(tmp_path):
    """`wikirag.cli.main` skips the interpreter's teardown (≈1 s at 13,000 notes) only when no other thread is
    alive: the embedder's pool threads and its preload must not keep it from doing so."""
    import subprocess
    import sys

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nA note about [[b]] and ciphers.\n")
    (vault / "b.md").write_text("# B\n\nAnother note.\n")
    root = str(Path(__file__).resolve().parent.parent)
    script = _MAIN.format(root=root, vault=str(vault), store=str(tmp_path / "store"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout[: done.stdout.rindex("fast exit")])
    assert report["embedding_texts"] > 0  # the local model ran (with its pool)
    assert done.stdout.rstrip().endswith("fast exit")


def test_a_store_or_config_that_is_the_wrong_kind_of_path_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from wikirag.cli.app import app

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("A note.\n")
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder\n")
    runner = CliRunner()
    for args, says in [
        (["index", str(vault), "--store", str(a_file)], "is a file, not a folder"),
        (["index", str(vault), "--config", str(tmp_path)], "the config is a folder, not a TOML file"),
        (["search", "note", "--vault", str(vault), "--config", str(tmp_path)], "the config is a folder"),
        (["watch", str(tmp_path / "missing"), "--store", str(tmp_path / "s")], "no such vault folder"),
        (["index", str(vault), "--store", str(a_file / "sub")], "cannot make the store folder (Not a directory)"),
    ]:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert says in result.output and "Traceback" not in result.output, (args, result.output)
        assert len(result.output.strip().splitlines()) == 1, (args, result.output)


def test_ctrl_c_during_index_stops_between_batches_and_a_second_stops_at_once(tmp_path):
    import signal
    import subprocess
    import sys
    import textwrap

    from wikirag.cli.common import stop_between_batches
    from wikirag.index.run import run_index

    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(6):
        (vault / f"N{i}.md").write_text(f"Note {i} links [[N{(i + 1) % 6}]].\n")
    (vault / "wikirag.toml").write_text("[index]\nbatch_size = 2\n")
    config = load_config(vault, store=tmp_path / "store")
    with stop_between_batches() as stop:
        os.kill(os.getpid(), signal.SIGINT)  # the first Ctrl-C only asks
        assert stop.is_set()
        report = run_index(config, embedding_func=HashEmbedding().func(), should_stop=stop.is_set)
    assert report.interrupted and report.notes_indexed < 6
    rest = run_index(config, embedding_func=HashEmbedding().func())  # the next run takes the notes not reached
    assert not rest.interrupted and rest.notes_unchanged + rest.notes_indexed == 6 and rest.notes_indexed
    # a second Ctrl-C ends the process at once, saying so
    script = textwrap.dedent("""
        import os, signal, time
        from wikirag.cli.common import stop_between_batches
        with stop_between_batches():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and "stopped at once" in done.stderr and "stopping after" in done.stderr
    # SIGTERM (a supervisor, `timeout`) stops at once: its grace period is seconds, a batch may take minutes
    terminated = script.replace("signal.SIGINT)\n    os.kill(os.getpid(), signal.SIGINT)", "signal.SIGTERM)")
    assert terminated.count("SIGTERM") == 1
    termed = subprocess.run([sys.executable, "-c", terminated], capture_output=True, text=True, timeout=60)
    assert termed.returncode == 143 and "stopped at once" in termed.stderr, termed.stderr


_STARTUP = """
import os, signal, sys
sys.path.insert(0, {root!r})

def ctrl_c(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)  # the default handler: KeyboardInterrupt right here

class Loading:  # Ctrl-C while the command line's modules load (typer, rich, the commands)
    def find_spec(self, name, path=None, target=None):
        if name == "wikirag.cli.app" and {when!r} == "import":
            ctrl_c()
        return None

sys.meta_path.insert(0, Loading())
from wikirag.cli import main  # what the `wikirag` script runs
if {when!r} != "import":  # inside the command, before it takes SIGINT over (index, watch) or with none (stats)
    import typer
    commands = sys.modules["wikirag.cli.app"]
    commands.build_config = ctrl_c if {when!r} == "command" else lambda *a, **k: (_ for _ in ()).throw(typer.Exit(130))
sys.argv = ["wikirag", "stats", {vault!r}]
sys.exit(main())
"""


@pytest.mark.parametrize("when", ["import", "command", "own exit"])
def test_ctrl_c_before_a_command_handles_it_is_one_line_and_status_130(tmp_path, when):
    """Ctrl-C while the command line loaded ended in a KeyboardInterrupt traceback; inside a command that had
    not taken SIGINT over, Typer ended it with 130 and said nothing. Both say one line now; a command's own
    exit with 130 (an interrupted `index` has said why) gets no second line."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parent.parent)
    script = _STARTUP.format(root=root, vault=str(tmp_path), when=when)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 130, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    said = done.stderr.strip().splitlines()
    assert said == ([] if when == "own exit" else ["wikirag: interrupted"]), done.stderr[-2000:]
    assert not (tmp_path / ".wikirag").exists()


def test_modes_are_read_whatever_their_case(tmp_path, fast_embedding):
    vault = copy_vault(Path(__file__).resolve().parent.parent / "sample_vault", tmp_path / "vault")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    upper = runner.invoke(app, ["search", "Enigma", "--vault", str(vault), "-m", "LEXICAL", "--json"])
    lower = runner.invoke(app, ["search", "Enigma", "--vault", str(vault), "-m", "lexical", "--json"])
    assert upper.exit_code == 0, upper.output
    assert json.loads(upper.output)["hits"] == json.loads(lower.output)["hits"]
    mixed = runner.invoke(app, ["query", "Who broke Enigma?", "--vault", str(vault), "-m", "Mix", "--json"])
    assert mixed.exit_code == 0 and json.loads(mixed.output)["mode"] == "mix", mixed.output


@pytest.mark.parametrize(("toml", "says"), [
    ("[embedding]\ndim = 0\n", "[embedding] dim = 0: must be at least 1"),
    ("[index]\nencoding = \"bogus\"\n", "[index] encoding = 'bogus': use one of"),
    ("[index]\nchunk_token_size = 400.5\n", "expected a whole number"),
    ("[index]\nbatch_size = [500]\n", "[index] batch_size: expected int, got [500]"),
    ("exlude = [\"drafts/**\"]\n", "unknown key 'exlude'"),  # a typo did nothing
    ("[index]\nchunk_size = 400\n", "unknown key [index] chunk_size (known: batch_size, chunk_overlap_token_size, "
                                     "chunk_token_size,"),  # the keys there are, as [route] lists them
    ("[route]\nmin_resolved_links = -1\n", "[route] min_resolved_links = -1: must be a number ≥ 0"),
    ("[embedding]\nmodel = \"local:nope\"\n", "unknown local embedding model 'nope'"),  # left a store folder
    # tracebacks before: text settings given a number, in the first command that read them
    ("[llm]\nmodel = 3\n", "[llm] model: expected text, got 3"),
    ("[embedding]\nmodel = 3\n", "[embedding] model: expected text, got 3"),
    ("[index]\ndefault_note_type = 3\n", "[index] default_note_type: expected text, got 3"),
    ("[llm]\ntimeout_s = nan\n", "[llm] timeout_s = nan: must be a number ≥ 0"),  # passed, as did -1 and inf
    ("[llm]\nmax_retries = -1\n", "[llm] max_retries = -1: must be a number ≥ 0"),
])
def test_settings_that_would_fail_mid_run_are_refused_at_the_start(tmp_path, toml, says):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("A note.\n")
    (tmp_path / "c.toml").write_text(toml)
    result = CliRunner().invoke(app, ["index", str(vault), "--config", str(tmp_path / "c.toml")])
    assert result.exit_code == 1 and says in result.output and "Traceback" not in result.output, result.output
    assert not (vault / ".wikirag").exists()


def test_a_whole_number_written_as_a_float_is_that_number(tmp_path):
    (tmp_path / "c.toml").write_text("[index]\nchunk_token_size = 400.0\n")
    assert load_config(tmp_path, config_file=tmp_path / "c.toml").index.chunk_token_size == 400


def test_a_pasted_book_is_not_a_search_query_in_any_mode(tmp_path, fast_embedding):
    vault = copy_vault(Path(__file__).resolve().parent.parent / "sample_vault", tmp_path / "vault")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    book = "Enigma " * 1200  # 8,400 characters
    for mode in ("lexical", "naive", "hybrid"):
        result = runner.invoke(app, ["search", book, "--vault", str(vault), "-m", mode])
        assert result.exit_code == 1, result.output
        assert "the query is 8,400 characters long" in result.output and "wikirag search" not in result.output
    fits = runner.invoke(app, ["search", "Enigma " * 1000, "--vault", str(vault), "-m", "lexical", "--json"])
    assert fits.exit_code == 0 and json.loads(fits.output)["hits"], fits.output


def test_a_store_of_a_vault_with_no_note_yet_is_an_empty_index_to_readers(tmp_path, fast_embedding):
    vault = tmp_path / "vault"
    vault.mkdir()
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    searched = runner.invoke(app, ["search", "anything at all", "--vault", str(vault), "--json"])
    assert searched.exit_code == 0 and json.loads(searched.output)["hits"] == [], searched.output
    asked = runner.invoke(app, ["query", "anything at all", "--vault", str(vault), "--json"])
    assert asked.exit_code == 0 and json.loads(asked.output)["sources"] == [], asked.output
    (vault / "First.md").write_text("The first note.\n")
    assert json.loads(runner.invoke(app, ["index", str(vault), "--json"]).output)["notes_new"] == 1


def test_route_and_cost_settings_come_from_the_environment_too(tmp_path):
    (tmp_path / "c.toml").write_text("[route]\nmin_resolved_links = 7\nmin_prose_tokens = 9\n[cost]\nprice_in = 1.0\n")
    env = {"WIKIRAG_ROUTE_MIN_RESOLVED_LINKS": "3", "WIKIRAG_COST_PRICE_IN": "0.5", "WIKIRAG_COST_HINT": "false",
           "WIKIRAG_COST_GLEANING": "2"}
    config = load_config(tmp_path, config_file=tmp_path / "c.toml", environ=env)
    assert (config.route.min_resolved_links, config.route.min_prose_tokens) == (3, 9)  # env over toml, per key
    cost = CostSettings.from_config(config)
    assert (cost.price_in, cost.hint, cost.gleaning) == (0.5, False, 2)  # typed as the fields, not strings
    with pytest.raises(ConfigError, match=r"\[route\] min_resolved_link: unknown key"):
        load_config(tmp_path, environ={"WIKIRAG_ROUTE_MIN_RESOLVED_LINK": "3"})
    with pytest.raises(ConfigError, match=r"\[cost\] price_in: expected a number ≥ 0, got 'cheap'"):
        CostSettings.from_config(load_config(tmp_path, environ={"WIKIRAG_COST_PRICE_IN": "cheap"}))


def test_a_dry_run_refuses_a_bad_llm_setting_too(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("A note.\n")
    monkeypatch.setenv("WIKIRAG_LLM", "bogus")
    result = CliRunner().invoke(app, ["index", str(vault), "--dry-run"])
    assert result.exit_code == 1 and "write it as provider:model" in result.output, result.output


def test_a_note_holding_a_pasted_image_indexes_into_few_chunks_and_its_prose_is_found(tmp_path, fast_embedding):
    """Found by the fuzzer: base64 data URIs (as Notion, Evernote and web clippers paste images) were chunked as
    prose: this note was 132 chunks to embed and extract, it is one now (markdown.payloads), and search still
    finds the prose around its two 200 KB images."""
    import base64

    vault = tmp_path / "vault"
    vault.mkdir()
    image = base64.b64encode(bytes(range(256)) * 600).decode()  # 204,800 characters
    (vault / "Wiring.md").write_text(
        "# Wiring\n\nGordon Welchman drew the diagonal board for the [[Bombe]].\n\n"
        f'![](data:image/png;base64,{image})\n\n<img src="data:image/jpeg;base64,{image}">\n\n'
        "The rotor order came from the menu, and the stops were tested by hand on a checking machine.\n",
        encoding="utf-8")
    (vault / "Bombe.md").write_text("# Bombe\n\nAn electromechanical device used against Enigma.\n")
    result = invoke("index", str(vault), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["chunks"] == 2  # one a note
    chunks = snapshot(load_config(vault))["chunks"]
    assert not any(image[:40] in c["content"] for c in chunks.values())
    assert any("data:image/png;base64,…(154KB)" in c["content"] for c in chunks.values())
    for mode in ("lexical", "naive"):
        found = invoke("search", "rotor order checking machine", "--vault", str(vault), "-m", mode, "--json")
        assert found.exit_code == 0, found.output
        assert json.loads(found.stdout)["hits"][0]["path"] == "Wiring.md", (mode, found.stdout)


@pytest.mark.parametrize("args", [["index", ""], ["stats", ""], ["cost-estimate", " "], ["watch", ""], ["doctor", ""],
                                  ["search", "x", "--vault", ""], ["export", "-o", "-", "--vault", ""], ["mcp", ""]])
def test_an_empty_vault_path_is_refused_not_read_as_the_current_folder(tmp_path, monkeypatch, args):
    """`wikirag index "$VAULT"` with VAULT unset: Path("") is the current folder, which was indexed (a store
    written wherever the script ran)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Note.md").write_text("A note in the folder the script runs in.\n")
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "the vault path is empty" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Note.md"]  # no store made here


def test_a_renamed_vault_keeps_its_index_and_a_shared_store_takes_no_other_vaults(vault, tmp_path):
    first = json.loads(invoke("index", str(vault), "--json").stdout)
    renamed = vault.rename(tmp_path / "Renamed notes")
    again = json.loads(invoke("index", str(renamed), "--json").stdout)
    # the store moved with the vault: nothing is re-embedded, and no second workspace is built beside the first
    assert again["notes_indexed"] == 0 and again["notes_unchanged"] == first["notes_indexed"]
    assert again["embedding_calls"] == 0
    assert [p.name for p in (renamed / ".wikirag").iterdir() if p.is_dir()] == ["vault"]
    assert load_config(renamed).workspace == "vault"
    found = invoke("search", "Enigma rotor", "--vault", str(renamed), "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["obsidian_uri"].startswith("obsidian://open?vault=Renamed%20notes&")
    # a store given from outside may hold other vaults' workspaces: a vault of another name takes none of them
    shared = tmp_path / "shared-store"
    invoke("index", str(renamed), "--store", str(shared), "--json")
    other = copy_vault(SAMPLE, tmp_path / "other")
    assert load_config(other, store=shared).workspace == "other"
    # nor does a vault's own store that holds two workspaces, neither of them its name
    (renamed / ".wikirag" / "vault").rename(renamed / ".wikirag" / "one")
    (renamed / ".wikirag" / "two").mkdir()
    (renamed / ".wikirag" / "two" / "wikirag_index.sqlite").write_bytes(b"")
    assert load_config(renamed).workspace == "Renamed_notes"
    checks = json.loads(invoke("doctor", str(renamed), "--json").stdout)["checks"]
    assert [c["detail"] for c in checks if c["name"] == "workspace" and "one, two" in c["detail"]], checks


def test_cost_estimate_with_the_users_prices_does_not_date_them_by_the_table(tmp_path):
    vault = copy_vault(SAMPLE, tmp_path / "vault")
    shipped = invoke("cost-estimate", str(vault), "--model", "gpt-4o-mini")
    given = invoke("cost-estimate", str(vault), "--model", "mystery-1", "--price-in", "1", "--price-out", "2")
    assert shipped.exit_code == 0 and given.exit_code == 0, given.output
    as_of = json.loads(invoke("cost-estimate", str(vault), "--json").stdout)["prices_as_of"]
    assert as_of and as_of in shipped.output.splitlines()[0]
    assert as_of not in given.output.splitlines()[0] and "your prices" in given.output.splitlines()[0]
