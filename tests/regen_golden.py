"""Rewrite tests/fixtures/expected/ from the fixture vaults. Review the diff like code.

.venv/bin/python tests/regen_golden.py [SCENARIO ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.golden import EXPECTED, load_scenario, scenarios  # noqa: E402


def regen(scenario: str, workdir: Path) -> tuple[int, int, int]:
    files = load_scenario(scenario, workdir)
    root = EXPECTED / scenario
    written = unchanged = removed = 0
    for name, text in sorted(files.items()):
        path = root / name
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            unchanged += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written += 1
    if root.is_dir():
        for path in sorted(root.rglob("*.json")):
            if path.relative_to(root).as_posix() not in files:
                path.unlink()
                removed += 1
    return written, unchanged, removed


def main(argv: list[str]) -> None:
    chosen = argv or scenarios()
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in chosen:
            written, unchanged, removed = regen(scenario, Path(tmp))
            print(f"{scenario}: {written} written, {unchanged} unchanged, {removed} removed")


if __name__ == "__main__":
    main(sys.argv[1:])
