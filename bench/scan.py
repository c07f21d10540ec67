"""Time scan + read + parse + resolve (`Vault.load`) on a vault, or write a synthetic one.

    python bench/scan.py VAULT [--repeat 3]
    python bench/scan.py --generate 10000 /tmp/bench-vault

The generated notes look like a working vault: frontmatter with tags, aliases and a date, a few
headings, ~300 words in paragraphs and lists, 5-10 wikilinks (labels, headings, some unresolved), a
Markdown link, inline tags, an inline code span and, in one note in five, a fenced code block.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikirag.vault.model import Vault

WORDS = (
    "cipher key message letter rotor plugboard signal station codebook wheel machine operator traffic "
    "daily setting indicator crib menu bombe army navy break frequency analysis table square column "
    "grille alphabet shift substitution transposition period statistics intercept decrypt encrypt the "
    "of and a to in was for on with by from at as that this which were their"
).split()
FOLDERS = ["people", "concepts", "projects", "daily", "sources", "places", "topics/history", "topics/math"]


def _sentence(rng: random.Random, links: list[str]) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
    words[0] = words[0].capitalize()
    if links and rng.random() < 0.6:
        words.insert(rng.randrange(1, len(words)), links.pop())
    return " ".join(words) + "."


def _note(rng: random.Random, i: int, names: list[str]) -> str:
    picks = []
    for _ in range(rng.randint(5, 10)):
        name = rng.choice(names) if rng.random() < 0.9 else f"Missing {rng.randint(0, 500)}"
        form = rng.random()
        if form < 0.6:
            picks.append(f"[[{name}]]")
        elif form < 0.8:
            picks.append(f"[[{name}|{rng.choice(WORDS)}]]")
        else:
            picks.append(f"[[{name}#Background]]")
    tags = rng.sample(["history", "crypto", "ww2", "math/stats", "person", "machine", "method"], 2)
    lines = [
        "---",
        f"title: Note {i}",
        f"tags: [{', '.join(tags)}]",
        f"aliases: [N{i}]",
        f"created: 2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
        "---",
        f"# Note {i}",
        "",
        " ".join(_sentence(rng, picks) for _ in range(4)) + f" See #{rng.choice(WORDS)} and `code {i}`.",
        "",
        "## Background",
        "",
    ]
    lines += [f"- {_sentence(rng, picks)}" for _ in range(3)]
    lines += ["", " ".join(_sentence(rng, picks) for _ in range(5)), ""]
    if i % 5 == 0:
        lines += ["```python", "key = [[not a link]]", "print(key)", "```", ""]
    lines += ["## Notes", "", " ".join(_sentence(rng, picks) for _ in range(4))]
    lines += [f"Read [the source]({rng.choice(names).replace(' ', '%20')}.md).", ""]
    lines += [" ".join(_sentence(rng, picks) for _ in range(3)) + " " + " ".join(picks), ""]
    return "\n".join(lines)


def generate(n: int, out: Path, seed: int = 7) -> None:
    rng = random.Random(seed)
    names = [f"Note {i}" for i in range(n)]
    for i, name in enumerate(names):
        folder = out / FOLDERS[i % len(FOLDERS)]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.md").write_text(_note(rng, i, names), encoding="utf-8")


def bench(root: Path, repeat: int) -> None:
    best_wall = best_cpu = float("inf")
    vault = None
    for _ in range(repeat):
        vault = None  # let the previous run's vault go before timing the next
        wall, cpu = time.perf_counter(), time.process_time()
        vault = Vault.load(root)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    assert vault is not None
    n = len(vault.notes)
    mb = sum((root / path).stat().st_size for path in vault.notes) / 1e6
    links = sum(len(note.links) for note in vault.notes.values())
    print(f"{n:,} notes, {mb:.1f} MB, {links:,} links; best of {repeat}")
    print(f"wall: {best_wall:.2f} s = {n / best_wall:,.0f} notes/s, {mb / best_wall:.1f} MB/s")
    print(f"cpu:  {best_cpu:.2f} s = {n / best_cpu:,.0f} notes/s, {mb / best_cpu:.1f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", nargs="?", type=Path, help="vault to time")
    parser.add_argument("--generate", nargs=2, metavar=("N", "DIR"), help="write N synthetic notes to DIR")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best is reported")
    args = parser.parse_args()
    if args.generate:
        n, out = int(args.generate[0]), Path(args.generate[1])
        generate(n, out)
        print(f"wrote {n:,} notes to {out}")
    if args.vault:
        bench(args.vault, args.repeat)
    elif not args.generate:
        parser.error("give a VAULT to time, or --generate N DIR")


if __name__ == "__main__":
    main()
