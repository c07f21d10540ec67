"""The package's shape holds: folder -> folder imports follow the layering, LightRAG is imported only in
wikirag/lightrag/, only the CLI renders, graph/ and plan/ do no I/O, no import cycles, and modules stay small."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("import_table", ROOT / "tools" / "import_table.py")
import_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_table)

MAX_LINES = 400


def test_imports_follow_the_layering():
    arrows, problems = import_table.check()
    assert ("graph", "index") not in arrows  # a sanity check that arrows are read at all
    assert ("index", "graph") in arrows
    assert problems == []


def test_the_checker_catches_a_forbidden_arrow(tmp_path, monkeypatch):
    """A module in markdown/ that imports the index is reported (the rule table is really applied)."""
    package = tmp_path / "wikirag"
    for folder in ("markdown", "index"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "index" / "run.py").write_text("X = 1\n")
    (package / "markdown" / "parse.py").write_text("from wikirag.index.run import X\nimport lightrag\n")
    monkeypatch.setattr(import_table, "PACKAGE", package)
    _, problems = import_table.check()
    assert any("markdown/ may not import index/" in p for p in problems)
    assert any("only wikirag/lightrag/ may import LightRAG" in p for p in problems)


def test_modules_stay_small_or_say_why():
    for path in sorted((ROOT / "wikirag").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            assert "one piece" in doc, f"{path.relative_to(ROOT)} has {text.count(chr(10))} lines"


def test_every_folder_says_what_it_owns():
    for init in sorted((ROOT / "wikirag").glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "import" in doc.lower(), f"{init.parent.name}/__init__ should say what it may import"
