"""Time `wikirag cost-estimate`'s work (scan + parse + route + estimate) on a vault.

    python bench/cost_estimate.py VAULT                 # seconds and notes/s, per stage
    python bench/cost_estimate.py --generate 13000 DIR  # write a synthetic vault (~1.4M words) first
    python bench/cost_estimate.py --prompt-sizes        # LightRAG's rendered prompt sizes, in tokens
    python bench/cost_estimate.py --cli 5 VAULT         # `wikirag cost-estimate VAULT --json`, fresh processes

Every figure comes with CPU seconds (user+sys) and the 1-minute load average: the machine may be shared.
`--cli` times the command as a user runs it (start-up, tokenizer load and JSON output included), best and
median of N runs; it reads the vault's parse cache when the vault has been indexed (a warm run).

The synthetic vault is deterministic (seeded): a mix of link-heavy notes (maps of content, people and
project notes), prose notes with few links, long essays and near-empty daily stubs, about 108 words a
note on average, so 13,000 notes come to roughly 1.4M words.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FIRST = ["Ada", "Alan", "Grace", "Claude", "Marian", "Dilly", "Joan", "Bill", "Tommy", "Gordon", "Hedy",
         "Emmy", "Kurt", "John", "Lise", "Niels", "Rosalind", "Edsger", "Barbara", "Donald", "Frances"]
LAST = ["Lovelace", "Turing", "Hopper", "Shannon", "Rejewski", "Knox", "Clarke", "Tutte", "Flowers",
        "Welchman", "Lamarr", "Noether", "Gödel", "Neumann", "Meitner", "Bohr", "Franklin", "Dijkstra",
        "Liskov", "Knuth", "Allen"]
PLACES = ["Bletchley Park", "Princeton", "Cambridge", "Warsaw", "Manchester", "Dollis Hill", "Zurich",
          "Göttingen", "Vienna", "Copenhagen", "Boston", "Paris", "Berlin", "Kyoto"]
CONCEPTS = ["frequency analysis", "one-time pad", "public-key cryptography", "lambda calculus",
            "information theory", "error correction", "stored-program computer", "garbage collection",
            "type theory", "graph colouring", "sorting networks", "finite automata", "hash functions",
            "compilers", "operating systems", "formal verification", "cellular automata", "entropy"]
WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which but "
         "have an they one had you were her all she there would their we him been has when who will more no "
         "if out so said what up its about into than them can only other new some could time these two may "
         "then do first any my now such like our over man me even most made after also did many before must "
         "through back years where much your way well down should because each just those people how too "
         "little state good very make world still own see men work long get here between both life being "
         "under never day same another know while last might us great old year off come since against go "
         "came right used take three machine cipher message key theory proof method design paper result "
         "system network signal code wheel rotor index letter table").split()
FOLDERS = ["people", "places", "concepts", "projects", "reading", "journal", "meetings", "essays",
           "archive", "inbox", "notes/tech", "notes/history", "notes/math", "work/2023", "work/2024",
           "maps", "ideas", "courses", "talks", "misc"]


def _sentence(rng: random.Random, link: str | None = None) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    if rng.random() < 0.5:
        words.insert(rng.randrange(len(words)), f"{rng.choice(FIRST)} {rng.choice(LAST)}")
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), rng.choice(PLACES))
    if link:
        words.insert(rng.randrange(len(words)), link)
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def generate(count: int, root: Path, seed: int = 7) -> int:
    """Write `count` notes under `root`; returns the number of words written."""
    rng = random.Random(seed)
    names = [f"{rng.choice(FIRST)} {rng.choice(LAST)} {i}" if i % 3 == 0 else
             f"{rng.choice(CONCEPTS).capitalize()} {i}" for i in range(count)]
    total_words = 0
    for i, name in enumerate(names):
        folder = FOLDERS[i % len(FOLDERS)]
        kind = rng.random()
        lines: list[str] = []
        if rng.random() < 0.6:
            lines += ["---", f"type: {folder.split('/')[0]}", f"tags: [{rng.choice(CONCEPTS).split()[0]}]"]
            if rng.random() < 0.5:
                lines.append(f"description: {_sentence(rng)}")
            lines += ["---", ""]
        lines += [f"# {name}", ""]

        def link() -> str:
            return f"[[{rng.choice(names)}]]"

        if kind < 0.40:  # link-heavy: a short intro and a list of links with a few words each
            lines += [_sentence(rng, link()), ""]
            for _ in range(rng.randint(5, 14)):
                lines.append(f"- {link()} — {' '.join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))}")
        elif kind < 0.80:  # prose with a few links
            for _ in range(rng.randint(1, 3)):
                lines += [" ".join(_sentence(rng, link() if rng.random() < 0.3 else None)
                                   for _ in range(rng.randint(1, 3))), ""]
        elif kind < 0.87:  # long essay with sections
            for s in range(rng.randint(2, 6)):
                lines += [f"## Section {s + 1}", ""]
                for _ in range(rng.randint(1, 4)):
                    lines += [" ".join(_sentence(rng, link() if rng.random() < 0.2 else None)
                                       for _ in range(rng.randint(2, 5))), ""]
        else:  # near-empty stub
            if rng.random() < 0.5:
                lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))))
        text = "\n".join(lines) + "\n"
        total_words += len(text.split())
        path = root / folder / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return total_words


def run(vault_root: Path, model: str) -> dict:
    from wikirag.lightrag.tokens import get_encoding
    from wikirag.plan.cost import estimate_vault
    from wikirag.plan.cost_settings import CostSettings, prompt_sizes
    from wikirag.plan.routing import route_vault
    from wikirag.settings import RouteSettings
    from wikirag.vault.model import Vault

    timings: dict[str, float] = {}
    cpu = time.process_time()
    started = t = time.perf_counter()
    vault = Vault.load(vault_root)
    timings["scan_parse"] = time.perf_counter() - t
    settings = CostSettings(model=model)
    t = time.perf_counter()
    get_encoding(settings.encoding)  # tiktoken loads its BPE tables once per process
    timings["tokenizer_load"] = time.perf_counter() - t
    t = time.perf_counter()
    prompt_sizes(settings)  # imports LightRAG and renders its templates (once per process)
    timings["lightrag_templates"] = time.perf_counter() - t
    t = time.perf_counter()
    decisions = route_vault(vault, RouteSettings(), encoding=settings.encoding)
    timings["route"] = time.perf_counter() - t
    t = time.perf_counter()
    estimate = estimate_vault(vault, decisions, settings)
    timings["estimate"] = time.perf_counter() - t
    seconds = time.perf_counter() - started
    words = sum(n.words for n in vault.notes.values())
    return {
        "vault": str(vault_root),
        "notes": len(vault.notes),
        "words": words,
        "seconds": round(seconds, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
        "load_1min": round(os.getloadavg()[0], 2),
        "notes_per_s": round(len(vault.notes) / seconds, 1),
        "stages_s": {k: round(v, 2) for k, v in timings.items()},
        "routes": estimate.routes,
        "usd": {k: round(v.usd, 2) for k, v in estimate.scenarios.items()},
    }


def run_cli(vault_root: Path, rounds: int) -> dict:
    """`wikirag cost-estimate VAULT --json` in fresh interpreters: wall and CPU seconds, best and median."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    walls, cpus, loads = [], [], []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "wikirag.cli", "cost-estimate", str(vault_root), "--json"],
                       stdout=subprocess.DEVNULL, env=env, check=True)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        loads.append(os.getloadavg()[0])
    return {
        "vault": str(vault_root),
        "runs": rounds,
        "wall_s": {"best": round(min(walls), 2), "median": round(statistics.median(walls), 2)},
        "cpu_s": {"best": round(min(cpus), 2), "median": round(statistics.median(cpus), 2)},
        "load_1min": [round(x, 2) for x in loads],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", nargs="?", type=Path)
    parser.add_argument("--generate", nargs=2, metavar=("N", "DIR"), help="write a synthetic vault of N notes")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--prompt-sizes", action="store_true", help="print LightRAG's rendered prompt sizes")
    parser.add_argument("--cli", type=int, metavar="N", help="time the CLI command N times in fresh processes")
    args = parser.parse_args(argv)
    if args.prompt_sizes:
        from dataclasses import asdict

        from wikirag.plan.cost_settings import CostSettings, prompt_sizes

        print(json.dumps(asdict(prompt_sizes(CostSettings(model=args.model))), indent=2))
        return 0
    if args.generate:
        count, target = int(args.generate[0]), Path(args.generate[1])
        t = time.perf_counter()
        words = generate(count, target)
        print(f"wrote {count} notes, {words:,} words to {target} in {time.perf_counter() - t:.1f} s")
        if args.vault is None:
            args.vault = target
    if args.vault is None:
        parser.error("give a VAULT (or --generate N DIR)")
    result = run_cli(args.vault, args.cli) if args.cli else run(args.vault, args.model)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
