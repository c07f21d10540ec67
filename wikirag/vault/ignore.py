"""Which vault paths wikirag leaves out: dot-files, Obsidian's "Excluded files", and `--exclude` globs.

- Any path segment starting with "." (`.obsidian`, `.trash`, `.git`, `.wikirag`) is out, as in Obsidian.
- Editor and OS droppings (`dropping`: backup, temp, lock files such as `x~`, `x.bak`, `4913`) are never notes or
  attachments: `watch` ignores their events, so the scan leaves them out too.
- Obsidian's Settings > Files and links > Excluded files is stored as `userIgnoreFilters` in
  `.obsidian/app.json`. Obsidian treats a plain entry as a case-sensitive prefix of the vault path
  (`Templates/` leaves out the folder; `Temp` also catches `Templates/`), and an entry written `/…/` as a
  regular expression searched anywhere in the path. An invalid regex is reported and skipped.
- `--exclude` globs follow .gitignore's rules (matched by `pathspec`): `*` and `?` stay inside one path
  segment, `**` crosses folders, `[...]` is a class. A pattern without "/" is tried against every segment
  (`Templates`, `*.excalidraw.md`); a pattern with "/" against the whole vault path (`drafts/**`,
  `**/private/*.md`). A leading "/" anchors at the root; `!pattern` takes a path back.
- The template folder of Obsidian's core Templates plugin (`folder` in `.obsidian/templates.json`) and of Templater
  (`templates_folder` in its `data.json`) is left out too: its notes are boilerplate, `{{date}}` and `<% tp.… %>`
  in their links became entities. `[index] templates = true` reads them (`templates=True`). The daily and unique
  note plugins name template files, not folders: their notes count as any other's.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import pathspec

from wikirag.models import ReadIssue

APP_JSON = ".obsidian/app.json"
# Where Obsidian's template plugins keep their folder: (settings file, key)
TEMPLATE_SETTINGS = ((".obsidian/templates.json", "folder"),
                     (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"))

# Editor and OS droppings: swap, backup, temp and lock files. 4913: vim's write-permission probe file.
_DROPPING_SUFFIXES = (".swp", ".swo", ".swx", ".tmp", ".temp", ".crdownload", ".part", "~", ".bak")
_DROPPING_NAMES = {".DS_Store", "Thumbs.db", "4913"}


def dropping(rel: str) -> bool:
    """True when the file at vault path `rel` is an editor's or the OS's dropping, never a note or attachment
    (a folder of such a name is a folder like any other)."""
    name = rel.rsplit("/", 1)[-1]
    return (name in _DROPPING_NAMES or name.endswith(_DROPPING_SUFFIXES)
            or (name.startswith("#") and name.endswith("#")) or name.startswith(".~lock."))


class IgnoreRules:
    """Decides, for a vault-relative POSIX path, whether wikirag reads it."""

    def __init__(self, exclude: Sequence[str] = (), obsidian_filters: Sequence[str] = (),
                 store: Path | None = None, templates: Sequence[str] = ()) -> None:
        # wikirag's store folder (its real path), which the scan never enters through a symlink either
        self.store = os.path.realpath(store) if store is not None else None
        patterns = [unicodedata.normalize("NFC", p.strip()) for p in exclude]
        self.patterns = tuple(patterns)
        self.globs = pathspec.GitIgnoreSpec.from_lines(p for p in patterns if p) if any(patterns) else None
        self.prefixes: list[str] = []
        self.regexes: list[re.Pattern[str]] = []
        self.problems: list[str] = []
        for entry in obsidian_filters:
            if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
                try:
                    self.regexes.append(re.compile(entry[1:-1]))
                except re.error as exc:
                    self.problems.append(f"Excluded files entry {entry!r} is no valid regex ({exc}); ignored")
            elif entry:
                self.prefixes.append(unicodedata.normalize("NFC", entry))
        self.templates = tuple(templates)  # the template folders left out (template_folders)
        self.prefixes.extend(folder + "/" for folder in self.templates)

    def signature(self) -> tuple[object, ...]:
        """What the rules are made of: rules with equal signatures ignore the same paths."""
        return self.store, self.patterns, tuple(self.prefixes), tuple(r.pattern for r in self.regexes)

    @classmethod
    def for_vault(cls, root: Path, exclude: Sequence[str] = (), store: Path | None = None,
                  templates: bool = False) -> tuple[IgnoreRules, list[ReadIssue]]:
        """Rules from `--exclude` plus the vault's `.obsidian/app.json` and template folders (unless `templates`:
        then they are read); problems come back as issues.
        `store` is wikirag's store folder: hidden when it lies in the vault, but a symlink may lead into it."""
        filters: list[str] = []
        issues: list[ReadIssue] = []
        app_json = root / APP_JSON
        if app_json.is_file():
            try:
                raw = json.loads(app_json.read_text(encoding="utf-8-sig")).get("userIgnoreFilters") or []
                if isinstance(raw, list):
                    filters = [f for f in raw if isinstance(f, str)]
                else:  # a string would be read letter by letter, each letter a prefix excluding notes
                    issues.append(ReadIssue(APP_JSON, f"Excluded files (userIgnoreFilters) is a JSON "
                                                      f"{type(raw).__name__}, not a list; not applied"))
            except (OSError, ValueError, AttributeError) as exc:
                issues.append(ReadIssue(APP_JSON, f"unreadable, Excluded files not applied ({exc})"))
        folders, problems = template_folders(root) if not templates else ([], [])
        rules = cls(exclude, filters, store, folders)
        if rules.problems:  # one file, one line
            issues.append(ReadIssue(APP_JSON, "; ".join(rules.problems)))
        return rules, issues + problems

    def folder_ignored(self, rel: str) -> bool:
        """True when nothing under folder `rel` can be read (lets the scan skip the whole folder)."""
        return self._globbed(rel, rel + "/") or any((rel + "/").startswith(p) for p in self.prefixes)

    def file_ignored(self, rel: str) -> bool:
        if self.globs is None and not self.prefixes and not self.regexes:
            return False  # no rules (most vaults): asked once per file of the vault
        return (
            self._globbed(rel, rel)
            or any(rel.startswith(p) for p in self.prefixes)
            or any(r.search(rel) for r in self.regexes)
        )

    def ignored(self, rel: str) -> bool:
        """Full check for one file path, folders above it included (used for single-file updates)."""
        parts = rel.split("/")
        if any(part.startswith(".") for part in parts):
            return True
        folders = ("/".join(parts[:k]) for k in range(1, len(parts)))
        return any(self.folder_ignored(f) for f in folders) or self.file_ignored(rel)

    def _globbed(self, rel: str, as_path: str) -> bool:
        return self.globs is not None and (self.globs.match_file(as_path) or self.globs.match_file(rel))


def template_folders(root: Path) -> tuple[list[str], list[ReadIssue]]:
    """The vault paths of the template folders Obsidian's Templates plugin and Templater are set to, slashes
    around them dropped ("/Templates/" is "Templates"); none for a blank setting or the vault root. A folder that
    is not there leaves nothing out. A settings file that cannot be read is one issue, and its templates are read
    as notes."""
    folders: list[str] = []
    issues: list[ReadIssue] = []
    for rel, key in TEMPLATE_SETTINGS:
        settings = root / rel  # through a symlinked `.obsidian` too
        if not settings.is_file():
            continue
        try:
            value = json.loads(settings.read_text(encoding="utf-8-sig")).get(key)
        except (OSError, ValueError, AttributeError) as exc:
            issues.append(ReadIssue(rel, f"unreadable, its template folder is not left out ({exc})"))
            continue
        if value is not None and not isinstance(value, str):
            issues.append(ReadIssue(rel, f"{key} is a JSON {type(value).__name__}, not a folder; not left out"))
            continue
        parts = unicodedata.normalize("NFC", (value or "").strip()).split("/")
        folder = "/".join(part for part in parts if part not in ("", "."))
        if folder and folder not in folders:
            folders.append(folder)
    return folders, issues
