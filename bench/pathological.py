"""Time every stage a note's text passes on pathological text, at two sizes: what grows faster than the text does.

    python bench/pathological.py [VAULT] [--small 20000] [--large 80000] [--index] [--only UNIT ...]

Each input is a short unit (`#a `, `%%`, `$a`, `[`, `> ` lines, ...) repeated, numbered names, tags or
frontmatter keys (whole lines), fence openers of every length, or with VAULT one of its 20 largest notes
repeated, to `--small` and `--large` characters. Per input and stage it prints the seconds at both sizes (best
of 3, or of 1 over 0.3 s) and the growth ratio; a linear stage grows about large/small times (4x by default).
A `!` marks a ratio over 1.5 times that (past 0.1 s), or a second at the large size; a stage over 2 s at the
small size is not run at the large one (`skip`, and `-` for the stages that read its result). Stages:
parse_note, chunk_text, searchable_text, tokenize, sections and routing, the mention estimate,
note_contribution, and with --index a whole `wikirag index` of a vault of that note (hashing embedding, no LLM).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikirag.graph.contribution import note_contribution
from wikirag.index.lexical import tokenize
from wikirag.lightrag.tokens import count_tokens, get_encoding, lightrag_tokenizer
from wikirag.markdown.chunking import chunk_text
from wikirag.markdown.parse import parse_note
from wikirag.markdown.searchable import searchable_text
from wikirag.markdown.structure import prose_chars, sections
from wikirag.plan.mentions import chunk_mentions, sentence_names
from wikirag.plan.routing import note_features, route_note

UNITS: dict[str, str | tuple[str, str, str]] = {  # name: unit repeated to the size, or (head, unit, tail)
    "hash": "#a ", "hashes": "#", "atx": "# a\n", "atx-spaces": ("# a", " ", "b"), "pct": "%%",
    "pct-paras": "%%a%%\n\n", "dollar": "$a", "dollar-esc": "$\\", "esc-dollar": "\\$a", "math": "$a$ ",
    "dd-lines": "$$\n", "tick": "`a", "ticks": "``a", "quote": "> ", "quote-lines": "> a\n", "pipe": "|a",
    "rows": "|a|b|\n", "caret": "^a ", "block-ids": "a ^a\n", "task": "- [ ] ", "task-lines": "- [ ] a\n",
    "html-comment": "<!--", "rules": "---\n", "backslash": "\\", "wl-hash": "[[a#", "hash-caret": "#^",
    "highlight": "==a", "stars": "*", "unders": "_", "tildes": "~", "equals": "=", "emoji": "🙂",
    "cjk": "日本語", "tabs": "\t", "cr": "\r", "crlf": "a\r\n", "bracket": "[", "bracket-a": "[a",
    "md-open": "[a](", "md-spaces": ("[](", " ", "x"), "wikilinks": "[[a]] ", "callout": "> [!note] a\n",
    "html": "<a ", "url": "http://", "sentences": "A. ", "setext": "a\n-\n", "tiny-paras": "a\n\n",
    "data-uri": ("![](data:image/png;base64,", "QUJD", ")"),  # a pasted image: one base64 run, no spaces
    "drawing-fences": ('"excalidraw"\n', "```json\nx\n", ""),  # Excalidraw scene openers no line closes
    "data-params": ("x ", "data:;a=", ""),  # a data URI's parameters, each value the start of another
    "tag-chain": "#a", "glued-tags": "x#a ", "star-tags": "**#a** ", "under-tags": "_#a_ ", "under-hash": "a_#",
    "bracket-tags": "[#a] ",  # tags.py: where a `#` opens a tag (each line's marks worked out once)
}
DISTINCT: dict[str, str | tuple[str, str, str]] = {  # numbered: every name, tag and key a new one
    "names": "Name{} and ", "tags": "#t{} ", "fm-keys": ("---\n", 'k{}: "[[a]]"\n', "---\n"),
    "fm-colon-keys": ("---\n", '"k:{}": "[[a]]"\n', "---\n"), "fm-quote-keys": ("---\n", "k{}': \"[[a]]\"\n", "---\n"),
    "fm-escaped-links": ('---\nz: "[[z]]"\nk:\n', '  - "\\x5B[a{}]]"\n', "---\n"),  # not found on their line
}
BUILT: dict[str, Callable[[int], str]] = {  # neither a unit repeated nor numbered: made to the size
    "fence-lengths": lambda size: '"excalidraw"\n' + "".join(  # openers no line closes, each a new length
        "`" * k + "json\nx\n" for k in range(3, int((2 * size) ** 0.5))),
}
TOK = lightrag_tokenizer()


def _stages(text: str, index: bool) -> dict[str, Callable[[], object]]:
    box: dict[str, object] = {}

    def parse() -> None:
        box["note"] = parse_note(text, "n.md")

    def contribution() -> object:
        note = box["note"]
        return note_contribution(note, [], {note.path: note.name}, {}, TOK, chunk_size=1200, chunk_overlap=100,
                                 default_type="note")

    stages = {
        "parse": parse,
        "chunk": lambda: box.__setitem__("chunks", chunk_text(box["note"].body, TOK, 1200, 100)),
        "searchable": lambda: box.__setitem__("words", searchable_text(box["note"].body)),
        "tokenize": lambda: tokenize(box["words"]),
        "route": lambda: (sections(box["note"].body), prose_chars(box["note"].body),
                          route_note(box["note"], [], features=note_features(box["note"], [],
                                                                             count_tokens=count_tokens))),
        "mentions": lambda: (sentence_names(box["note"].body), [chunk_mentions(c.content) for c in box["chunks"]]),
        "contribution": contribution,
    }
    if index:
        stages["index"] = lambda: _index(text)
    return stages


def _index(text: str) -> None:
    from tests.storekit import HashEmbedding
    from wikirag.index.run import run_index
    from wikirag.settings import load_config

    with tempfile.TemporaryDirectory() as folder:
        vault = Path(folder) / "vault"
        vault.mkdir()
        (vault / "n.md").write_text(text, encoding="utf-8", newline="")
        run_index(load_config(vault), embedding_func=HashEmbedding().func())


def _sized(unit: str | tuple[str, str, str] | Callable[[int], str], size: int) -> str:
    if callable(unit):
        return unit(size)
    if isinstance(unit, tuple) and unit in DISTINCT.values():  # frontmatter: whole lines, or no YAML
        head, unit, tail = unit
        return head + "".join(map(unit.format, range(size // len(unit)))) + tail
    if unit in DISTINCT.values():
        return "".join(map(unit.format, range(size // len(unit))))[:size]
    head, unit, tail = unit if isinstance(unit, tuple) else ("", unit, "")
    return head + (unit * (size // len(unit) + 1))[:size] + tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("vault", nargs="?", type=Path)
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=80_000)
    parser.add_argument("--index", action="store_true", help="also time a whole index of the note (slow)")
    parser.add_argument("--only", nargs="*", default=None, help="input names to run")
    args = parser.parse_args()
    inputs: dict[str, str | tuple[str, str, str] | Callable[[int], str]] = {**UNITS, **DISTINCT, **BUILT}
    if args.vault:
        notes = sorted(args.vault.rglob("*.md"), key=lambda p: p.stat().st_size, reverse=True)[:20]
        inputs.update((str(p.relative_to(args.vault)), p.read_text(encoding="utf-8", errors="replace") or " ")
                      for p in notes)
    get_encoding("o200k_base").full()  # the small-table start is a per-process cost (tests/test_pathological)
    if args.index:
        _index("# warm up\n\n[[x]]")
    linear, flagged = args.large / args.small, []
    print(f"{'input':24} {'stage':12} {'small s':>9} {'large s':>9} {'ratio':>7}")
    for name, unit in inputs.items():
        if args.only and name not in args.only:
            continue
        seconds: dict[str, list[float]] = {}
        for size in (args.small, args.large):
            for stage, run in _stages(_sized(unit, size), args.index).items():
                if seconds.get(stage, [0.0])[0] > 2:  # quadratic: 16x as long at 4x the size
                    seconds[stage].append(math.nan)
                    continue
                best = math.inf
                for _ in range(3):  # best of 3 (one run when slow): a collection or a busy core skews one
                    start = time.perf_counter()
                    try:
                        run()
                    except KeyError:  # what it reads was skipped (tokenize after searchable_text, ...)
                        best = -1.0
                        break
                    best = min(best, time.perf_counter() - start)
                    if best > 0.3:
                        break
                seconds.setdefault(stage, []).append(best)
        for stage, (small, large) in seconds.items():
            ratio = large / small if small > 0 else 0.0
            bad = math.isnan(large) or large > 1 or (ratio > 1.5 * linear and large > 0.1)  # below: noise
            flagged += [(name, stage)] if bad else []
            shown = "skip" if math.isnan(large) else "-" if large < 0 else f"{large:9.3f}"
            times = f"{shown:>9} {'-' if large < 0 else f'{ratio:.1f}':>7}"
            print(f"{name[:24]:24} {stage:12} {small:9.3f} {times}{' !' if bad else ''}", flush=True)
    print(f"\n{len(flagged)} flagged: " + ", ".join(f"{n}/{s}" for n, s in flagged) if flagged else "\nnone flagged")


if __name__ == "__main__":
    main()
