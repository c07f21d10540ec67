"""Shared by test_golden.py and regen_golden.py: build a scenario vault and snapshot it as JSON texts.

`tests/fixtures/vaults/<scenario>/` holds a tiny vault; `tests/fixtures/expected/<scenario>/` holds one
`<note path>.json` per note (the ParsedNote minus `body`, each link with its resolution, the note's read
issues) and `_vault.json` (what was scanned and skipped, duplicate names, unresolved targets, backlinks).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from wikirag.vault.model import Vault

FIXTURES = Path(__file__).parent / "fixtures"
VAULTS = FIXTURES / "vaults"
EXPECTED = FIXTURES / "expected"
VAULT_FILE = "_vault.json"

# --exclude globs a scenario is loaded with
EXCLUDE = {"excluded-files": ("drafts/**", "*.tmp.md", "Scratch")}


def scenarios() -> list[str]:
    return sorted(p.name for p in VAULTS.iterdir() if p.is_dir())


def _symlinks(vault: Path) -> None:
    """symlink-out: links are made here, not committed (they would point outside the checkout)."""
    outside = vault.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_text("# secret\n\nOutside the vault: never read.\n", encoding="utf-8")
    os.symlink(Path("..") / "outside" / "secret.md", vault / "leak.md")
    os.symlink(Path("..") / "outside", vault / "leakdir", target_is_directory=True)
    os.symlink("real", vault / "alias", target_is_directory=True)
    os.symlink("..", vault / "real" / "loop", target_is_directory=True)
    os.symlink(Path("real") / "Target.md", vault / "Shortcut.md")


SETUP = {"symlink-out": _symlinks}


def prepare(scenario: str, workdir: Path) -> Path:
    """A fresh copy of the scenario's vault under `workdir`, with its setup applied."""
    target = workdir / scenario / "vault"
    shutil.copytree(VAULTS / scenario, target, symlinks=True)
    if scenario in SETUP:
        SETUP[scenario](target)
    return target


def dump(data: object) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def snapshot(vault: Vault) -> dict[str, str]:
    """Golden file name -> its JSON text."""
    out: dict[str, str] = {}
    for path, note in vault.notes.items():
        data = asdict(note)
        del data["body"]
        data["links"] = [{**asdict(link), "resolution": asdict(res)} for link, res in vault.outgoing(path)]
        data["read_issues"] = [asdict(i) for i in vault.issues if i.path == path]
        out[f"{path}.json"] = dump(data)
    out[VAULT_FILE] = dump(
        {
            "notes": sorted(vault.notes),
            "attachments": sorted(vault.attachments),
            "issues": [asdict(i) for i in vault.issues],
            "duplicate_names": vault.duplicate_names(),
            "unresolved": {t: sorted(s) for t, s in sorted(vault.unresolved().items())},
            "backlinks": {p: sorted(vault.backlinks(p)) for p in sorted(vault.notes) if vault.backlinks(p)},
        }
    )
    return out


def load_scenario(scenario: str, workdir: Path) -> dict[str, str]:
    return snapshot(Vault.load(prepare(scenario, workdir), exclude=EXCLUDE.get(scenario, ())))
