"""Print wikirag's folder -> folder import table and check the layering rules.

    python tools/import_table.py        # prints the table; exits 1 on a forbidden arrow, I/O or a cycle

Rules (each folder's __init__ says the same in words):
- every folder imports only the folders listed for it in ALLOWED (a module-level or lazy import both count;
  imports under `if TYPE_CHECKING:` do not, they are annotations only);
- only wikirag/lightrag/ imports the `lightrag` package; only wikirag/cli/ imports typer or rich;
- graph/ and plan/ do no I/O: no file, OS or network calls;
- no import cycles, between modules (module-level imports) or between folders.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "wikirag"

BASE = {"errors", "models", "redaction"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "models": set(),
    "settings": {"storage"} | BASE,  # storage/settings.py and workspace.py only (checked below)
    "markdown": BASE,
    "vault": {"markdown"} | BASE,
    "graph": {"markdown", "lightrag"} | BASE,  # lightrag/ids.py only: LightRAG's own ids and names
    "llm": {"settings", "lightrag"} | BASE,  # lightrag/bindings.py only: LightRAG's provider bindings
    "storage": {"settings"} | BASE,
    "lightrag": {"markdown", "storage", "settings"} | BASE,
    "plan": {"graph", "markdown", "vault", "lightrag", "settings"} | BASE,
    "index": {"graph", "markdown", "vault", "lightrag", "llm", "plan", "storage", "settings"} | BASE,
    "query": {"graph", "markdown", "vault", "lightrag", "index", "storage", "settings", "llm"} | BASE,
    "cli": {"graph", "markdown", "vault", "lightrag", "index", "storage", "settings", "llm", "plan", "query"} | BASE,
    "__main__": {"cli"},  # `python -m wikirag`: the command line and nothing else
}
# Where a folder may reach only one module of another.
NARROW = {("graph", "lightrag"): {"wikirag.lightrag.ids", "wikirag.lightrag.guard"},
          ("llm", "lightrag"): {"wikirag.lightrag.bindings", "wikirag.lightrag.guard", "wikirag.lightrag.tokens"},
          ("settings", "storage"): {"wikirag.storage.settings", "wikirag.storage.workspace"}}
NO_IO = {"graph", "plan"}
IO_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "unlink", "mkdir", "iterdir", "rglob",
            "glob", "rename", "rmdir", "scandir", "makedirs", "listdir"}
IO_MODULES = {"os", "shutil", "tempfile", "sqlite3", "socket", "subprocess", "urllib.request", "http"}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "wikirag"


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(tree: ast.Module) -> tuple[list[str], list[str]]:
    """(every imported module, module-level ones), skipping TYPE_CHECKING blocks."""
    every: list[str] = []
    top: list[str] = []

    def visit(node: ast.AST, at_top: bool) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            return
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            names = []
        every.extend(names)
        if at_top:
            top.extend(names)
        for child in ast.iter_child_nodes(node):
            nested = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            visit(child, at_top and not nested)

    visit(tree, True)
    return every, top


def io_calls(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in IO_CALLS:
                found.append(f"{name}() at line {node.lineno}")
    return found


def check() -> tuple[dict[tuple[str, str], int], list[str]]:
    """The folder -> folder arrow counts, and every broken rule."""
    modules = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    arrows: dict[tuple[str, str], int] = defaultdict(int)
    graph: dict[str, set[str]] = defaultdict(set)
    problems: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        every, top = imports(tree)
        here = folder(name)
        for target in every:
            root = target.split(".")[0]
            if root == "lightrag" and here != "lightrag":
                problems.append(f"{name} imports {target}: only wikirag/lightrag/ may import LightRAG")
            if root in {"typer", "rich"} and here != "cli":
                problems.append(f"{name} imports {target}: only wikirag/cli/ renders")
            if here in NO_IO and target in IO_MODULES:
                problems.append(f"{name} imports {target}: {here}/ does no I/O")
            if root != "wikirag" or target not in modules:
                continue
            there = folder(target)
            if there == here or there == "wikirag":
                continue
            arrows[(here, there)] += 1
            if there not in ALLOWED.get(here, set()):
                problems.append(f"{name} imports {target}: {here}/ may not import {there}/")
            allowed_modules = NARROW.get((here, there))
            if allowed_modules is not None and target not in allowed_modules:
                problems.append(f"{name} imports {target}: {here}/ may only use {sorted(allowed_modules)}")
        for target in top:
            if target in modules and target != name:
                graph[name].add(target)
        if here in NO_IO:
            problems.extend(f"{name}: {call}: {here}/ does no I/O" for call in io_calls(tree))
    problems.extend(f"import cycle: {' -> '.join(c)}" for c in _cycles(graph))
    folders: dict[str, set[str]] = defaultdict(set)
    for (a, b) in arrows:
        folders[a].add(b)
    problems.extend(f"folder cycle: {' -> '.join(c)}" for c in _cycles(folders))
    return dict(arrows), problems


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in list(graph):
        if v not in index:
            strong(v)
    return found


def table(arrows: dict[tuple[str, str], int]) -> str:
    names = sorted({a for a, _ in arrows} | {b for _, b in arrows})
    width = max(len(n) for n in names)
    lines = [" " * width + " | " + " ".join(f"{n[:8]:>8}" for n in names)]
    for a in names:
        lines.append(f"{a:>{width}} | " + " ".join(f"{arrows.get((a, b), 0) or '.':>8}" for b in names))
    return "\n".join(lines)


if __name__ == "__main__":
    counts, broken = check()
    print("imports from (row) into (column), counted per imported name\n")
    print(table(counts))
    for problem in broken:
        print("FORBIDDEN:", problem)
    sys.exit(1 if broken else 0)
