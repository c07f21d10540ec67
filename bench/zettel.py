"""Write a synthetic vault shaped like a large zettelkasten (the shape of issue 16's 13,415-note vault).

    python bench/zettel.py N DIR [--seed 7]

Per note: a timestamped title, median ~30 words of prose, 1-4 links (one in ten to a note that does not
exist yet, so a later note can resolve them); one file in ten is a small attachment and ~30 % of files
are attachments overall (images embedded from some notes). Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

WORDS = (
    "idea claim evidence method result memory habit attention learning reading writing note card index "
    "structure thinking argument source question answer model system feedback loop concept example "
    "the of and a to in is for on with by from at as that this which it be are not or"
).split()
FOLDERS = ["", "", "", "inbox", "literature", "permanent", "permanent/archive"]
ATTACHMENT_SHARE = 0.30
MISSING_SHARE = 0.10  # links to notes that do not exist (yet)


def note_name(i: int) -> str:
    return f"{202001010000 + i * 7} {WORDS[i % 23].capitalize()} {WORDS[(i * 7) % 31]} {i}"


def missing_name(i: int) -> str:
    return f"Future idea {i}"


def _prose(rng: random.Random, words: int, links: list[str]) -> str:
    out = [rng.choice(WORDS) for _ in range(words)]
    out[0] = out[0].capitalize()
    for link in links:
        out.insert(rng.randrange(1, len(out) + 1), link)
    text = " ".join(out)
    return text + "."


def note_text(rng: random.Random, i: int, n: int, attachments: int, missing: int) -> str:
    links = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < MISSING_SHARE:
            links.append(f"[[{missing_name(rng.randrange(missing))}]]")
        else:
            links.append(f"[[{note_name(rng.randrange(n))}]]")
    words = max(5, int(rng.lognormvariate(3.4, 0.6)))  # median e^3.4 ~ 30 words
    body = _prose(rng, words, links)
    lines = [f"# {note_name(i)}", "", body, ""]
    if attachments and rng.random() < 0.2:
        lines += [f"![[img-{rng.randrange(attachments)}.png]]", ""]
    if rng.random() < 0.5:
        lines += [f"#{rng.choice(['zk', 'idea', 'source', 'todo'])}", ""]
    return "\n".join(lines)


def generate(n: int, out: Path, seed: int = 7) -> dict[str, int]:
    """Write `n` notes (and ~0.43 n attachments) under `out`; returns the counts."""
    rng = random.Random(seed)
    attachments = round(n * ATTACHMENT_SHARE / (1 - ATTACHMENT_SHARE))
    missing = max(1, n // 250)  # ~50 links wait on each missing name
    out.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        folder = out / FOLDERS[i % len(FOLDERS)]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{note_name(i)}.md").write_text(note_text(rng, i, n, attachments, missing), encoding="utf-8")
    media = out / "media"
    media.mkdir(exist_ok=True)
    for j in range(attachments):
        (media / f"img-{j}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randint(2_000, 20_000)))
    return {"notes": n, "attachments": attachments, "missing_targets": missing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(generate(args.n, args.out, args.seed))


if __name__ == "__main__":
    main()
