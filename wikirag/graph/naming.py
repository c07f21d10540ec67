"""Entity names for notes: a note's title (frontmatter `title`, else its file name), names for unresolved
links and attachments, all normalised the way LightRAG normalises extracted names, and bounded in length.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from itertools import chain, count
from typing import Any

from wikirag.lightrag.ids import normalize_name
from wikirag.models import ParsedNote, WikiLink

# LightRAG's PostgreSQL tables hold an entity name in VARCHAR(512) columns, and a relation's chunk list under
# the key "source<SEP>target" in one more: a name over 253 characters (a title pasted as a paragraph, a link
# to one) made every write of the run fail there. LightRAG cuts extracted names at 512 UTF-8 bytes.
NAME_MAX_CHARS = 250
NAME_MAX_BYTES = 512
_TAIL_MAX_CHARS = 60  # of a qualifier such as " (folder)"


_BREAKS = re.compile(r"\s*[\t\n\r\x0b\x0c\x85\u2028\u2029]\s*")


def fit(name: str, tail: str = "") -> str:
    """`name` + `tail` on one line (a title written as a YAML block, `title: |`, has line breaks: LightRAG reads
    an LLM's entities line by line, so none it extracts could ever meet that name, and a hint line would break),
    within NAME_MAX_CHARS and NAME_MAX_BYTES: cut at the end of `name`, marked with "…" (a tail over
    _TAIL_MAX_CHARS loses its start instead: " (…er/Note)"), so the tail that tells names apart stays. LightRAG's
    separator `<SEP>` in a title or a link's target reads `‹SEP›`."""
    if not name.isascii():  # NFD (as macOS writes) and NFC spellings of one name are one entity, as one link target
        name = unicodedata.normalize("NFC", name)
    if not (name + tail).isprintable():
        name, tail = _BREAKS.sub(" ", name).strip(), _BREAKS.sub(" ", tail)
    if "<SEP>" in name:  # LightRAG's field separator: a relation keyed "a<SEP>b<SEP>c" has no one reading back
        name = name.replace("<SEP>", "‹SEP›")
    whole = name + tail
    if len(whole) <= NAME_MAX_CHARS and (whole.isascii() or len(whole.encode()) <= NAME_MAX_BYTES):
        return whole
    if len(tail) > _TAIL_MAX_CHARS:
        tail = tail[:2] + "…" + tail[-(_TAIL_MAX_CHARS - 3):]
    head = name[:NAME_MAX_CHARS - len(tail) - 1]
    head = head.encode()[:NAME_MAX_BYTES - len(tail.encode()) - 3].decode(errors="ignore")  # "…" is 3 bytes
    return head.rstrip() + "…" + tail


def note_entity_names(notes: dict[str, ParsedNote]) -> dict[str, str]:
    """One canonical entity name per note: its title, qualified by folder when titles collide.

    Titles are compared case-insensitively after LightRAG's normalisation, because LightRAG would keep
    "Enigma" and "enigma" apart while a reader (and Obsidian's resolver) treats them as one name.
    """
    base: dict[str, str] = {}
    for path, note in notes.items():
        title = note.title.strip() or note.name
        # "Note 42" for a title LightRAG's normaliser empties (digits); a blank one, "Note", would take Note.md's name
        base[path] = fit(normalize_name(title) or title.strip() and normalize_name(f"Note {title}") or "Untitled note")
    groups: dict[str, list[str]] = {}
    for path, name in base.items():
        groups.setdefault(name.casefold(), []).append(path)
    names: dict[str, str] = {}
    for paths in groups.values():
        if len(paths) == 1:
            names[paths[0]] = base[paths[0]]
            continue
        for path in paths:
            folder = path.rsplit("/", 1)[0] if "/" in path else "/"
            names[path] = fit(base[path], f" ({folder})")
        qualified = [names[p].casefold() for p in paths]
        if len(set(qualified)) < len(qualified):  # same title, same folder, different case
            for path in paths:
                names[path] = fit(base[path], f" ({path.removesuffix('.md')})")
    return _apart(names, base)


def _apart(names: dict[str, str], base: dict[str, str]) -> dict[str, str]:
    """A qualified name may be another note's own title: `a/Note.md` and `b/Note.md` become "Note (a)" and
    "Note (b)", and `Note (a).md` is "Note (a)" already. One entity for two notes would merge them, so a
    qualified name that meets another note's name takes the note's path (with `.md`, then a number); a
    note's unqualified name never changes."""
    owners: dict[str, list[str]] = {}
    for path, name in names.items():
        owners.setdefault(name.casefold(), []).append(path)
    taken = set(owners)
    for paths in owners.values():
        if len(paths) < 2:
            continue
        for path in sorted(p for p in paths if names[p] != base[p]):  # the qualified ones move
            forms = chain((fit(base[path], f" ({path.removesuffix('.md')})"), fit(base[path], f" ({path})")),
                          (fit(base[path], f" ({path}) {n}") for n in count(2)))
            names[path] = next(f for f in forms if f.casefold() not in taken)
            taken.add(names[path].casefold())
    return names


def unresolved_name(link: WikiLink) -> str:
    """The entity name for a link that points at no note: the last path part, without `.md`."""
    target = link.target.rstrip("/").rsplit("/", 1)[-1]
    if target.lower().endswith(".md"):
        target = target[:-3]
    return fit(normalize_name(target) or target.strip() and normalize_name(f"Note {target}") or "")


def unresolved_names(vault: Any, names: Mapping[str, str]) -> dict[str, str]:
    """Canonical entity name per casefolded unresolved target of `vault` (anything with `notes` and
    `outgoing(path)`): a note entity with that name if one exists (the same thing, written before its note
    was), else the smallest spelling seen. `names` maps note paths to their entity names."""
    by_casefold = {name.casefold(): name for name in names.values()}
    spellings: dict[str, set[str]] = {}
    restored = getattr(vault, "restored_unresolved_names", None)  # a Vault: saved names, links left undecoded
    for path in vault.notes:
        saved = restored(path) if restored is not None else None
        found = saved if saved is not None else (
            unresolved_name(link) for link, resolution in vault.outgoing(path) if resolution.status == "unresolved")
        for name in found:
            if name:
                spellings.setdefault(name.casefold(), set()).add(name)
    return {key: by_casefold.get(key, min(values)) for key, values in spellings.items()}


def attachment_name(path: str) -> str:
    return fit(normalize_name(path.rsplit("/", 1)[-1]) or path)

