"""The reading commands (query, search, get_note, neighbors) on hostile but real vaults and questions: short
questions, lone surrogates, names holding link syntax, notes written with a BOM or named in NFD (as macOS
writes them). Through the CLI runner on real files, or the library where the MCP tools call it."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import unicodedata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.storekit import HashEmbedding
from wikirag.cli import app
from wikirag.errors import QueryFailed
from wikirag.query.engine import WarmEngine
from wikirag.query.notes import NoteTable
from wikirag.settings import load_config

runner = CliRunner()
NFD_ECOLE = unicodedata.normalize("NFD", "école")


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture
def vault(tmp_path: Path, fast_embedding) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "Go.md").write_text("# Go\n\nGo is a programming language with goroutines.\n", encoding="utf-8")
    (root / "Rust.md").write_text("Rust is a systems language; compare [[Go]].\n", encoding="utf-8")
    (root / f"{NFD_ECOLE}.md").write_text("---\ntitle: Ecole\n---\n# Ecole\n\nThe school of schools.\n",
                                          encoding="utf-8")
    (root / "bom.md").write_bytes("\ufeff---\ntitle: Bom Title\naliases: [BomAlias]\n---\nA BOM note about "
                                  "schools.\n".encode())
    (root / "C#.md").write_text("The C# language, not [[C]].\n", encoding="utf-8")
    (root / "C.md").write_text("The C language.\n", encoding="utf-8")
    assert invoke("index", str(root)).exit_code == 0
    return root


def _one_line_error(result, *words: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.output.strip().count("\n") == 0 and "Traceback" not in result.output
    for word in words:
        assert word in result.output


@pytest.mark.parametrize("mode", ["naive", "hybrid"])
def test_a_question_too_short_for_lightrag_is_one_line(vault, mode):
    # LightRAG refuses a retrieval query under 3 characters (a CJK character counts 2): "Go", "C", an emoji
    for question in ("Go", "🚀"):
        _one_line_error(invoke("query", question, "--vault", str(vault), "-m", mode, "--json"), "too short",
                        repr(question))


def test_search_for_a_short_name_finds_it_without_lightrag(vault):
    result = invoke("search", "Go", "--vault", str(vault), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["hits"][0]["path"] == "Go.md"
    assert any("too short" in note for note in data["notes"])  # says why LightRAG's ranking is missing


@pytest.mark.parametrize("command", ["query", "search"])
def test_lone_surrogates_in_the_question_are_replaced(vault, command):
    # what a shell hands Python for bytes that are not UTF-8 (surrogateescape), or a JSON "\udc80" escape
    result = invoke(command, "Go language caf\udce9", "--vault", str(vault), "-m", "naive", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data.get("question", data.get("query")) == "Go language caf\ufffd"


@pytest.mark.parametrize("command", ["query", "search"])
def test_a_question_in_nfd_is_taken_as_nfc(vault, command):
    # as macOS hands over a pasted file name: "café" with a combining accent
    nfd = unicodedata.normalize("NFD", "Go language café")
    result = invoke(command, nfd, "--vault", str(vault), "-m", "naive", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data.get("question", data.get("query")) == "Go language caf\u00e9"
    if command == "query":  # the keywords keep the whole word, not "caf" and a lone accent
        assert "café" in " ".join(kw for kws in data["keywords"].values() for kw in kws)


def test_resolve_tries_a_name_whole_before_reading_link_syntax():
    table = NoteTable({p: {"title": Path(p).stem} for p in ("C#.md", "C.md", "a|b.md", " pad .md", "x.md")})
    assert table.resolve("C#") == "C#.md"
    assert table.resolve("C#.md") == "C#.md"
    assert table.resolve("a|b.md") == "a|b.md"
    assert table.resolve(" pad .md") == " pad .md"
    assert table.resolve("[[C#Intro]]") == "C.md"  # no note "C#Intro": a heading link into C
    assert table.resolve("[[C|shown]]") == "C.md"
    assert table.resolve("[[x#^block|shown]]") == "x.md"


def _engine_call(vault: Path, method: str, *args: object):
    async def run():
        async with WarmEngine(load_config(vault), embedding_func=HashEmbedding().func()) as engine:
            return getattr(engine, method)(*args)

    return asyncio.run(run())


def test_get_note_reads_notes_named_in_nfd_and_written_with_a_bom(vault):
    note = _engine_call(vault, "get_note", "école")
    assert note.path == "école.md" and note.properties == {"title": "Ecole"}
    assert note.content.startswith("---\ntitle: Ecole") and "school of schools" in note.content
    note = _engine_call(vault, "get_note", "BomAlias")
    assert note.path == "bom.md" and note.properties == {"title": "Bom Title", "aliases": ["BomAlias"]}
    assert note.content.startswith("---\n")  # the BOM dropped, as the index reads it
    assert _engine_call(vault, "get_note", "C#").path == "C#.md"
    assert _engine_call(vault, "neighbors", "C#").links[0].note == "C.md"


@pytest.mark.parametrize("written", ["[[BomAlias]]", "![[bom]]", "[[bom#A heading|shown]]", "[[bom\\|shown]]",
                                     " ![[Bom Title#^block]] "])
def test_get_note_takes_a_link_or_embed_as_a_note_writes_it(vault, written):
    assert _engine_call(vault, "get_note", written).path == "bom.md"


def test_get_note_of_a_note_gone_from_disk_names_it(vault):
    (vault / "Go.md").unlink()
    with pytest.raises(QueryFailed, match=r"Go\.md.*vanished"):
        _engine_call(vault, "get_note", "Go")


def test_search_passages_of_nfd_and_bom_notes(vault):
    result = invoke("search", "schools", "--vault", str(vault), "-m", "lexical", "--json")
    assert result.exit_code == 0, result.output
    hits = {h["path"]: h for h in json.loads(result.stdout)["hits"]}
    assert hits["école.md"]["passages"] == ["The school of schools."]
    assert hits["école.md"]["heading"] == "Ecole"
    bom = hits["bom.md"]
    assert bom["passages"] == ["A BOM note about schools."] and bom["heading"] == "Bom Title"
    assert bom["obsidian_uri"].endswith("file=bom")  # no heading anchor made of the frontmatter


def test_get_note_does_not_follow_a_note_replaced_by_a_link_out_of_the_vault(vault, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("not the vault's\n", encoding="utf-8")
    (vault / "Go.md").unlink()
    (vault / "Go.md").symlink_to(secret)
    with pytest.raises(QueryFailed, match=r"Go\.md: leads out of the vault"):
        _engine_call(vault, "get_note", "Go")


def test_status_finds_nothing_stale_right_after_indexing_notes_named_in_nfd(vault):
    assert _engine_call(vault, "status").stale_notes == 0


def test_stats_of_an_indexed_vault_prints_entity_types_as_text(vault):
    # a frontmatter `type` is an entity type, which stats lists once the vault is indexed: never console markup
    (vault / "Rust.md").write_text("---\ntype: \"[/]\"\n---\nRust, compare [[Go]].\n", encoding="utf-8")
    assert invoke("index", str(vault)).exit_code == 0
    result = invoke("stats", str(vault))
    assert result.exit_code == 0, result.exception
    assert "  [/]" in result.stdout


# --- cost-estimate ---------------------------------------------------------------------------------------------


def test_cost_estimate_prices_a_free_model_at_zero(tmp_path):
    (tmp_path / "a.md").write_text("A note that mentions [[B]] in passing.\n", encoding="utf-8")
    result = invoke("cost-estimate", str(tmp_path), "--model", "my-local", "--price-in", "0", "--price-out", "0",
                    "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scenarios"]["vanilla"]["usd"] == 0


@pytest.mark.parametrize(("where", "setting", "shown"), [
    ("toml", 'price_in = "cheap"\nprice_out = 1', "'cheap'"),
    ("toml", "price_in = -3\nprice_out = 1", "-3"),
    ("toml", "price_in = nan\nprice_out = 1", "nan"),
    ("prices", '[models.cheap]\ninput = "free"\noutput = 1', "'free'"),
])  # a negative --price-in is the option's own range error (tests/test_cli_edges.py)
def test_cost_estimate_refuses_a_price_that_is_not_a_number_at_least_zero(tmp_path, where, setting, shown):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("A note that mentions [[B]] in passing.\n", encoding="utf-8")
    args = ["cost-estimate", str(vault)]
    if where == "toml":
        (vault / "wikirag.toml").write_text(f"[cost]\n{setting}\n", encoding="utf-8")
    else:
        (tmp_path / "prices.toml").write_text(setting + "\n", encoding="utf-8")
        (vault / "wikirag.toml").write_text(f'[cost]\nprices_file = "{tmp_path / "prices.toml"}"\nmodel = "cheap"\n',
                                            encoding="utf-8")
    result = invoke(*args)
    _one_line_error(result, shown, "number ≥ 0")
    if where == "prices":
        assert "prices.toml" in result.output


# --- export ----------------------------------------------------------------------------------------------------


def test_export_into_a_folder_that_does_not_exist_is_one_line(vault, tmp_path):
    out = tmp_path / "no" / "such" / "graph.graphml"
    _one_line_error(invoke("export", "--vault", str(vault), "-o", str(out)), str(out), "is not a folder that exists")
    assert not out.parent.exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no file can be created")
def test_export_that_cannot_be_written_is_one_line(vault):
    out = "/proc/wikirag-export.graphml"  # even root cannot write there: chmod would not stop root
    _one_line_error(invoke("export", "--vault", str(vault), "-o", out), out, "cannot write it")


def test_export_refuses_a_pipe_or_device_and_leaves_it_as_it_was(vault, tmp_path):
    fifo = tmp_path / "graph.pipe"
    os.mkfifo(fifo)
    _one_line_error(invoke("export", "--vault", str(vault), "-o", str(fifo)), str(fifo), "not a plain file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the pipe: an export once renamed a file over /dev/full


def test_export_writes_through_a_link_and_keeps_it(vault, tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    result = invoke("export", "--vault", str(vault), "--format", "json", "-o", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and json.loads(target.read_text())["nodes"]


def test_export_files_get_the_usual_permissions(vault, tmp_path):
    old = os.umask(0o022)
    try:
        fresh, kept = tmp_path / "fresh.json", tmp_path / "kept.json"
        kept.write_text("old\n")
        kept.chmod(0o640)
        for out in (fresh, kept):
            assert invoke("export", "--vault", str(vault), "--format", "json", "-o", str(out)).exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # as any new file here, not wikirag's private 0600
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and json.loads(kept.read_text())["edges"]


def test_export_to_standard_output(vault):
    result = invoke("export", "--vault", str(vault), "--format", "json", "-o", "-")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["nodes"] and "standard output" in result.stderr
    assert not (Path.cwd() / "-").exists()


# --- wikirag.toml as people write it ---------------------------------------------------------------------------


@pytest.fixture
def plain_vault(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    (root / "drafts").mkdir(parents=True)
    (root / "a.md").write_text("Alpha links [[b]] in a sentence.\n", encoding="utf-8")
    (root / "drafts" / "b.md").write_text("A draft.\n", encoding="utf-8")
    return root


def _notes_counted(vault: Path) -> int:
    result = invoke("stats", str(vault), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["notes"]


def test_a_config_file_saved_with_a_bom_is_read(plain_vault):
    (plain_vault / "wikirag.toml").write_bytes('\ufeffexclude = ["drafts/**"]\n'.encode())  # Windows Notepad
    assert _notes_counted(plain_vault) == 1


def test_exclude_given_as_one_string_is_one_pattern(plain_vault):
    # before: a string was read as its characters, each a pattern, and "*" left out every note
    (plain_vault / "wikirag.toml").write_text('exclude = "drafts/**"\n', encoding="utf-8")
    assert _notes_counted(plain_vault) == 1


@pytest.mark.parametrize("command", ["stats", "doctor", "cost-estimate"])
def test_exclude_that_is_not_text_is_one_line(plain_vault, command):
    (plain_vault / "wikirag.toml").write_text("exclude = [1, 2]\n", encoding="utf-8")
    _one_line_error(invoke(command, str(plain_vault)), "wikirag.toml", "exclude")


@pytest.mark.parametrize("pattern", ["!", "\\", "[z-a]"])
def test_an_exclude_pattern_gitignore_cannot_read_is_one_line(plain_vault, pattern):
    # before: pathspec's error came out of the scan as a traceback, for the flag and the config file alike
    for command in ("index", "stats", "cost-estimate", "watch"):
        _one_line_error(invoke(command, str(plain_vault), "--exclude", pattern), "--exclude", repr(pattern))
    (plain_vault / "wikirag.toml").write_text(f"exclude = [{json.dumps(pattern)}]\n", encoding="utf-8")
    _one_line_error(invoke("index", str(plain_vault)), "wikirag.toml", repr(pattern))


@pytest.mark.parametrize("setting", ["chunk_token_size = -5", "chunk_token_size = 0",
                                     "chunk_overlap_token_size = 1200", "chunk_overlap_token_size = -1"])
def test_chunk_sizes_that_cannot_chunk_are_one_line(plain_vault, setting):
    (plain_vault / "wikirag.toml").write_text(f"[index]\n{setting}\n", encoding="utf-8")
    _one_line_error(invoke("cost-estimate", str(plain_vault)), setting.split(" =")[0])


@pytest.mark.parametrize("setting", ["batch_size = 0", "gleaning = -1", "pack_max_tokens = -300"])
def test_index_counts_below_their_floor_are_one_line(plain_vault, setting):
    (plain_vault / "wikirag.toml").write_text(f"[index]\n{setting}\n", encoding="utf-8")
    for command in (["index", str(plain_vault)], ["cost-estimate", str(plain_vault)]):
        _one_line_error(invoke(*command), setting.split(" =")[0])


@pytest.mark.parametrize(("section", "setting"), [
    ("route", "min_prose_tokens = 1e400"), ("route", "min_resolved_links = inf"),
    ("route", "max_uncovered_tokens = 2.5"), ("cost", "model = 3"), ("cost", "prices_file = 5"),
    ("cost", "language = [1]"), ("cost", "output_ratio = nan"), ("cost", "max_total_records = inf"),
])
def test_route_and_cost_settings_of_the_wrong_kind_are_one_line(plain_vault, section, setting):
    # before: an infinite count was an OverflowError, a number or list where text goes a TypeError, both
    # tracebacks; nan passed and failed later in the estimate, 2.5 links was silently 2
    (plain_vault / "wikirag.toml").write_text(f"[{section}]\n{setting}\n", encoding="utf-8")
    _one_line_error(invoke("cost-estimate", str(plain_vault)), f"[{section}]", setting.split(" =")[0])


@pytest.mark.parametrize("flag", ["--top-k", "--chunk-top-k", "--max-tokens"])
def test_query_numbers_below_one_are_refused(plain_vault, flag):
    result = invoke("query", "Who?", "--vault", str(plain_vault), flag, "-1")
    assert result.exit_code == 2 and "Traceback" not in result.output and flag in result.output


def test_a_long_note_is_read_in_pages_and_a_hub_s_neighbours_are_capped(vault):
    body = "".join(f"Paragraph {i} links [[Go]] and [[Hub {i}]].\n\n" for i in range(3000))
    (vault / "Hub.md").write_text("---\ntags: [hub]\n---\n" + body, encoding="utf-8")
    assert runner.invoke(app, ["index", str(vault)]).exit_code == 0
    whole = _engine_call(vault, "get_note", "Hub")
    assert whole.next_offset is None and whole.total_chars == len(whole.content) > 100_000
    pages, offset = [], 0
    while offset is not None:
        page = _engine_call(vault, "get_note", "Hub", offset, 40_000)
        assert len(page.content) <= 40_000 and page.total_chars == whole.total_chars
        assert page.properties == {"tags": ["hub"]}  # every page: the frontmatter of the whole note
        pages.append(page.content)
        offset = page.next_offset
    assert "".join(pages) == whole.content and len(pages) == -(-whole.total_chars // 40_000)
    capped = _engine_call(vault, "neighbors", "Hub", 1, 100)
    assert len(capped.links) == 100 and capped.links_total == 3001  # Go and the 3,000 unresolved hubs
    full = _engine_call(vault, "neighbors", "Hub", 1)
    assert capped.links == full.links[:100] and len(full.links) == full.links_total


def test_terminal_controls_in_names_and_text_are_shown_not_obeyed(tmp_path, fast_embedding):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Line\nbreak.md").write_text("A note whose name breaks a table row, about ciphers.\n")
    (vault / "Bidi.md").write_text("Ciphers \u202eseulav desrever\u202c and a bell \x07 ring.\n")
    (vault / "Para\u2028graph.md").write_text("A line separator in the name, about ciphers.\n")
    (vault / "Bi\u200bdi.md").write_text("Looks like Bidi but holds a zero-width space: ciphers.\n")
    assert invoke("index", str(vault)).exit_code == 0
    for args in (["search", "ciphers", "--vault", str(vault)], ["stats", str(vault)],
                 ["query", "ciphers", "--vault", str(vault), "-m", "naive"]):
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
        assert "\u202e" not in result.output and "\x07" not in result.output, args
        assert "Line\nbreak" not in result.output, args
        assert "\u2028" not in result.output and "Bi\u200bdi" not in result.output, args
    shown = invoke("search", "ciphers", "--vault", str(vault)).output
    assert "Line\\x0abreak.md" in shown and "\\u202e" in shown
    assert "Para\\u2028graph.md" in shown and "Bi\\u200bdi.md" in shown


@pytest.fixture
def twins(tmp_path: Path, fast_embedding) -> Path:
    """A vault holding Café.md in NFC and in NFD: the scan keeps the first in name order (NFD) and skips the other."""
    root = tmp_path / "twins"
    root.mkdir()
    (root / "Caf\u00e9.md").write_text("The NFC spelling, which the index skips: tea.\n", encoding="utf-8")
    (root / unicodedata.normalize("NFD", "Caf\u00e9.md")).write_text("The NFD spelling, indexed: coffee.\n",
                                                                     encoding="utf-8")
    if len(os.listdir(root)) < 2:
        pytest.skip("this file system normalises names")
    assert invoke("index", str(root)).exit_code == 0
    return root


def test_get_note_and_search_read_the_twin_the_index_holds(twins):
    """Found by a review: get_note read Café.md as spelled (NFC) when it was there, though the scan had kept
    the NFD file and skipped that one, so an agent read text the index never held."""
    note = _engine_call(twins, "get_note", "Café")
    assert note.path == "Café.md" and "coffee" in note.content, note.content
    result = invoke("search", "coffee", "--vault", str(twins), "-m", "lexical", "--json")
    assert result.exit_code == 0, result.output
    [hit] = json.loads(result.stdout)["hits"]
    assert hit["passages"] == ["The NFD spelling, indexed: coffee."]


def test_a_note_whose_name_xml_cannot_carry_is_one_line_and_the_rest_is_indexed(tmp_path, fast_embedding):
    """Found by fuzzing: a note named with an ESC (or another C0 control, U+FFFE) reached LightRAG's GraphML
    store as a node's `file_path`, which it refuses: `index` died with a traceback and indexed nothing. Such a
    note is skipped with one line naming it, by the scan and by `watch`; the rest is indexed."""
    from wikirag.vault.model import Vault

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Ok.md").write_text("A note about ciphers, linking [[esc\x1bname]].\n")
    (vault / "esc\x1bname.md").write_text("Escape in the name, ciphers [[Ok]].\n")
    (vault / "sub\x01dir").mkdir()
    (vault / "sub\x01dir" / "inner.md").write_text("Inside a folder named with a control character.\n")
    (vault / "pic\x1b.png").write_bytes(b"\x89PNG")  # an attachment's path is no graph value: it stays
    result = invoke("index", str(vault), "--json")
    assert result.exit_code == 0 and result.exception is None, result.output
    report = json.loads(result.stdout)
    assert report["notes_indexed"] == 1
    assert report["issues"] == [
        "esc\x1bname.md: name holds U+001B, a character LightRAG's graph store cannot hold; skipped",
        "sub\x01dir/inner.md: name holds U+0001, a character LightRAG's graph store cannot hold; skipped"]
    again = json.loads(invoke("index", str(vault), "--json").stdout)
    assert again["notes_unchanged"] == 1 and again["notes_new"] == again["notes_changed"] == 0
    model = Vault.load(vault)
    assert list(model.notes) == ["Ok.md"] and "pic\x1b.png" in model.attachments
    (vault / "esc\x1bname.md").write_text("Edited.\n")
    assert [i.path for i in model.update_file("esc\x1bname.md")] == ["esc\x1bname.md"]
    assert list(model.notes) == ["Ok.md"]


def test_a_note_whose_name_holds_lightrags_list_separator_is_one_line(tmp_path, fast_embedding):
    """Found by fuzzing: LightRAG joins a node's file paths with `<SEP>`, so a note named `x<SEP>y.md` came back
    from the graph as two notes, `x` and `y.md`, that do not exist (export's and neighbors' file paths)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Alpha.md").write_text("Alpha links to [[x<SEP>y]].\n")
    (vault / "x<SEP>y.md").write_text("A note named with the separator, linking [[Alpha]].\n")
    result = invoke("index", str(vault), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["issues"] == [
        "x<SEP>y.md: name holds '<SEP>', which LightRAG reads as a list separator; skipped"]
    exported = invoke("export", "--vault", str(vault), "--format", "json", "-o", "-")
    assert exported.exit_code == 0, exported.output
    paths = {p for node in json.loads(exported.stdout)["nodes"] for p in node.get("file_path", [])}
    assert paths == {"Alpha.md"}


def test_problem_lines_of_stats_and_watch_show_controls_in_names_not_obey_them(tmp_path):
    """Found by fuzzing: `stats` (its problem lines on stderr) and `watch` (each batch's problem lines) printed a
    file name as it is, so a name holding ESC sequences drove the terminal and one holding a newline split its
    line in two; the other commands' renderings show them as escapes."""
    from wikirag.cli.render import watch_lines
    from wikirag.index.watch import BatchReport

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Ok.md").write_text("A note.\n")
    (vault / "bin\x1b[2J.md").write_text("A note the index skips for its name.\n")
    (vault / "two\nlines.md").write_bytes(b"\0" * 64)
    result = invoke("stats", str(vault))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stderr and "two\nlines" not in result.stderr
    assert "bin\\x1b[2J.md: name holds U+001B" in result.stderr and "two\\x0alines.md: looks binary" in result.stderr
    batch = BatchReport(1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.1, issues=["a\x1b[2J\rb.md: looks binary"],
                        error="cannot write c\x07.md")
    assert watch_lines(batch) == ["batch 1 failed, retrying with backoff: cannot write c\\x07.md",
                                  "a\\x1b[2J\\x0db.md: looks binary"]


def test_status_of_a_vault_a_thousand_folders_deep(tmp_path, fast_embedding):
    """Found with the deep-vault fuzz case: status counted stale notes with Path.rglob, which in Python 3.11
    takes a call per folder, so the MCP `status` of a vault ~1,000 folders deep raised RecursionError."""
    vault = tmp_path / "vault"
    folder = vault
    for _ in range(1000):
        folder = folder / "d"
        folder.mkdir(parents=True)
    (folder / "Deep.md").write_text("Deep.\n", encoding="utf-8")
    (vault / "Top.md").write_text("Top.\n", encoding="utf-8")
    try:
        assert invoke("index", str(vault)).exit_code == 0
        assert _engine_call(vault, "status").stale_notes == 0
        (folder / "Deep.md").unlink()  # gone from disk: stale, as a note the walk no longer finds
        assert _engine_call(vault, "status").stale_notes == 1
    finally:  # deepest first: pytest's own tmp cleanup (shutil.rmtree) recurses per folder
        (folder / "Deep.md").unlink(missing_ok=True)
        while folder != vault:
            folder.rmdir()
            folder = folder.parent


def test_a_note_named_with_an_uppercase_extension_is_a_note_to_every_reader(tmp_path, fast_embedding):
    """`NOTES.MD` is a note to the scanner (vault.links.is_note): status counted it stale for ever, its
    obsidian:// link kept `.MD`, and get_note("b/loud.md") gave the first note so named, not b/LOUD.MD."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "NOTES.MD").write_text("Shouting notes about the enigma rotor.\n", encoding="utf-8")
    for folder in ("a", "b"):
        (vault / folder).mkdir()
        (vault / folder / "LOUD.MD").write_text(f"Loud note in {folder}.\n", encoding="utf-8")
    assert invoke("index", str(vault)).exit_code == 0
    assert _engine_call(vault, "status").stale_notes == 0
    result = invoke("search", "enigma rotor", "--vault", str(vault), "-m", "lexical", "--json")
    hit = json.loads(result.stdout)["hits"][0]
    assert hit["path"] == "NOTES.MD" and hit["obsidian_uri"].endswith("file=NOTES"), hit
    assert _engine_call(vault, "get_note", "NOTES.MD").path == "NOTES.MD"
    assert _engine_call(vault, "get_note", "notes").path == "NOTES.MD"
    assert _engine_call(vault, "get_note", "b/loud.md").path == "b/LOUD.MD"  # by path, not the first so named
