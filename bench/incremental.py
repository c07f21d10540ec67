"""Does an incremental `wikirag index` of your vault equal a fresh one? Random edits of a copy, checked run by run.

    python bench/incremental.py VAULT [--rounds 4] [--edits 10] [--seed 7]

Works on a copy of the vault (never edits yours) and temporary stores, with an instant hashing embedding (the
check is about what the runs write, not the vectors' quality). Each round makes `--edits` random edits
(tests/vault_edits.py: text, links by name, by vault path and from the note's folder, titles, aliases,
frontmatter routes), runs an incremental index, and checks that
- its plan (every note's resolutions, routes, signatures, the new/changed/unchanged/deleted lists) equals a
  plan made from scratch against the same ledger, and
- its store equals a fresh index of the edited copy, record for record (tests/storekit.py `snapshot`).
The rounds but the last keep the vault's set of paths, so the run restores the saved rows and re-resolves the
edited notes through a link index of only the files their links can name; the last round also adds, deletes
and renames notes and attachments. Prints per round the incremental and the fresh run's wall time, the notes
restored from the saved rows, and the notes resolved through the small index. Exits 1 on the first difference.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import wikirag.index.run as run_module  # noqa: E402
from tests.storekit import HashEmbedding, copy_vault, snapshot  # noqa: E402
from tests.vault_edits import EDIT_KINDS, SAME_PATHS, random_edit, same_plan  # noqa: E402
from wikirag.index.ledger import Ledger  # noqa: E402
from wikirag.index.planning import plan_index  # noqa: E402
from wikirag.settings import load_config  # noqa: E402
from wikirag.vault.model import Vault  # noqa: E402


class Recorder:
    """Wraps the run's planning, its saved rows and the small link index, to report what each run used."""

    def __init__(self) -> None:
        self.plans: list = []
        self.derived: list = []
        self.small: list[int] = []
        real_plan, real_load, real_index = run_module.plan_index, run_module.load_derived, Vault._index_for
        run_module.plan_index = lambda *a, **k: self.plans.append(real_plan(*a, **k)) or self.plans[-1]
        run_module.load_derived = lambda *a: self.derived.append(real_load(*a)) or self.derived[-1]
        Vault._index_for = lambda vault, sources: self.small.append(len(sources)) or real_index(vault, sources)


def check(vault: Path, rounds: int, edits: int, seed: int) -> bool:
    work = Path(tempfile.mkdtemp(prefix="wikirag-incremental-"))
    embedding = HashEmbedding().func()
    recorder = Recorder()
    try:
        copy = copy_vault(vault, work / "vault")
        config = load_config(copy, store=work / "store")
        started = time.perf_counter()
        run_module.run_index(config, embedding_func=embedding)
        notes = sum(1 for _ in copy.rglob("*.md"))
        print(f"{vault.name}: {notes} notes; first index {time.perf_counter() - started:.2f} s")
        rng = random.Random(seed)
        for round_ in range(rounds):
            kinds = SAME_PATHS if round_ < rounds - 1 else tuple(k for k in EDIT_KINDS if k != "config")
            made = [random_edit(rng, copy, round_ * 1000 + step, kinds) for step in range(edits)]
            want = plan_index(config, Ledger.load(run_module.open_ledger_store(config)))
            recorder.plans.clear()
            recorder.small.clear()
            started = time.perf_counter()
            run_module.run_index(config, embedding_func=embedding)
            incremental = time.perf_counter() - started
            restored = len(recorder.derived[-1].restored)
            small = sum(recorder.small)
            if recorder.plans:  # (no plan: nothing changed on disk, the manifest answered)
                same_plan(recorder.plans[-1], want)
            fresh = load_config(copy_vault(copy, work / f"fresh{round_}"), store=work / f"fresh_store{round_}")
            started = time.perf_counter()
            run_module.run_index(fresh, embedding_func=embedding)
            from_scratch = time.perf_counter() - started
            if snapshot(config) != snapshot(fresh):
                print(f"round {round_ + 1}: the incremental store differs from a fresh index ({', '.join(made)})")
                return False
            shutil.rmtree(work / f"fresh{round_}")
            shutil.rmtree(work / f"fresh_store{round_}")
            print(f"round {round_ + 1}: {edits} edits ({', '.join(sorted(set(made)))}) -> equal; incremental "
                  f"{incremental:.2f} s, fresh {from_scratch:.2f} s; {restored} notes restored from rows, "
                  f"{small} resolved through the small link index", flush=True)
        return True
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--edits", type=int, default=10, help="random edits per round")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not args.vault.is_dir():
        parser.error(f"{args.vault}: no such folder")
    sys.exit(0 if check(args.vault, max(1, args.rounds), max(1, args.edits), args.seed) else 1)


if __name__ == "__main__":
    main()
