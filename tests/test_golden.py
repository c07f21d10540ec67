"""Golden tests: each fixture vault, read and resolved, must match tests/fixtures/expected/ exactly.

Regenerate with `.venv/bin/python tests/regen_golden.py` and review the diff.
"""

from __future__ import annotations

import os

import pytest

from tests.golden import EXPECTED, VAULT_FILE, load_scenario, scenarios

CASES = sorted(p.relative_to(EXPECTED).as_posix() for p in EXPECTED.rglob("*.json"))
CAN_SYMLINK = hasattr(os, "symlink") and os.name != "nt"


@pytest.fixture(scope="session")
def loaded(tmp_path_factory: pytest.TempPathFactory):
    cache: dict[str, dict[str, str]] = {}

    def get(scenario: str) -> dict[str, str]:
        if scenario not in cache:
            cache[scenario] = load_scenario(scenario, tmp_path_factory.mktemp("golden"))
        return cache[scenario]

    return get


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str, loaded) -> None:
    scenario, name = case.split("/", 1)
    if scenario == "symlink-out" and not CAN_SYMLINK:
        pytest.skip("needs symlinks")
    actual = loaded(scenario)
    assert name in actual, f"{name}: in expected/ but not produced (stale golden? run regen_golden.py)"
    assert actual[name] == (EXPECTED / case).read_text(encoding="utf-8")


@pytest.mark.parametrize("scenario", scenarios())
def test_every_note_has_a_golden(scenario: str, loaded) -> None:
    if scenario == "symlink-out" and not CAN_SYMLINK:
        pytest.skip("needs symlinks")
    expected = {p.relative_to(EXPECTED / scenario).as_posix() for p in (EXPECTED / scenario).rglob("*.json")}
    assert set(loaded(scenario)) == expected
    assert VAULT_FILE in expected
