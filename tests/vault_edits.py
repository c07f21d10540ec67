"""Random edits of a vault copy and the plan comparison that checks an incremental run against one from scratch
(tests/test_derived_plan.py, bench/incremental.py)."""

from __future__ import annotations

import os
import random
from pathlib import Path

EDIT_KINDS = ("text", "link", "title", "alias", "new resolving", "new twin", "delete", "rename", "attachment added",
              "attachment removed", "route", "config")
SAME_PATHS = ("text", "link", "title", "alias", "route")  # edits that keep the vault's set of paths


def same_plan(got, want) -> None:
    """Two plans of one vault agree on everything a run reads from them."""
    assert got.names == want.names
    assert got.unresolved == want.unresolved
    assert got.signatures == want.signatures
    assert got.body_tokens == want.body_tokens
    assert got.decisions == want.decisions  # routes, reasons, features, sections
    assert (got.new, got.changed, got.unchanged, got.deleted, got.skipped) == (
        want.new, want.changed, want.unchanged, want.deleted, want.skipped)
    assert {p: got.vault.outgoing(p) for p in got.vault.notes} == {p: want.vault.outgoing(p) for p in want.vault.notes}


def random_note(rng: random.Random, vault: Path) -> Path:
    return rng.choice(sorted(p for p in vault.rglob("*.md") if ".wikirag" not in p.parts))


def random_edit(rng: random.Random, vault: Path, step: int, kinds: tuple[str, ...] = EDIT_KINDS) -> str:
    """One random change to the vault, of one of `kinds`; returns its kind ("config" changes nothing on disk:
    the caller changes a setting)."""
    kind = rng.choice(kinds)
    note = random_note(rng, vault)
    text = note.read_text()
    if kind == "text":
        note.write_text(text + f"\n\nA new paragraph {step} about nothing linked at all, long enough to be prose.\n")
    elif kind == "link":
        other = random_note(rng, vault)
        relative = os.path.relpath(other.with_suffix(""), note.parent).replace(os.sep, "/")
        target = rng.choice([other.stem, f"Not yet written {step}", "Index", "shared name",
                             other.relative_to(vault).with_suffix("").as_posix(),  # a vault path
                             relative if relative.startswith("../") else "./" + relative])  # from the note's folder
        note.write_text(text + f"\nSee [[{target}]] and [[{target}#Part|that part]].\n")
    elif kind in ("title", "alias"):
        key = "title" if kind == "title" else "aliases"
        value = f"Retitled {step}" if kind == "title" else f"[Alias {step}, {random_note(rng, vault).stem}]"
        body = text.split("---\n", 2)[2] if text.startswith("---\n") and text.count("---\n") >= 2 else text
        note.write_text(f"---\n{key}: {value}\n---\n{body}")
    elif kind == "new resolving":
        (vault / f"Not yet written {rng.randint(0, step)}.md").write_text(f"Now it exists. [[{note.stem}]]\n")
    elif kind == "new twin":
        folder = vault / rng.choice(["people", "concepts", "twins"])
        folder.mkdir(exist_ok=True)
        (folder / f"{note.stem}.md").write_text(f"A second note named {note.stem}, linking [[shared name]].\n")
    elif kind == "delete":
        note.unlink()
    elif kind == "rename":
        note.rename(note.with_name(f"Renamed {step} {note.name}"))
    elif kind == "attachment added":
        (vault / "attachments").mkdir(exist_ok=True)
        (vault / "attachments" / f"shared name {step}.png").write_bytes(b"\x89PNG\r\n")
        note.write_text(text + f"\n![[shared name {step}.png]]\n")
    elif kind == "attachment removed":
        pictures = sorted((vault / "attachments").glob("*")) if (vault / "attachments").is_dir() else []
        if pictures:
            rng.choice(pictures).unlink()
    elif kind == "route":
        note.write_text(f"---\nwikirag: {rng.choice(['skip', 'extract', 'inject'])}\n---\n" + text)
    return kind
