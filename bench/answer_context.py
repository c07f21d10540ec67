"""What an LLM answer reads: per question, whether the expected notes are in the context LightRAG hands the
LLM, with the default fusion (naive and mix read BM25's chunks fused into the vector chunks) and with
`--no-fusion` (LightRAG's own context).

    python bench/answer_context.py VAULT QUESTIONS.json --store DIR [--modes naive,mix]

A deterministic fake LLM (tests/fakes.py) stands in for the answering model: the context is built before any
answer is written, so the figures are those of any LLM. Context recall = share of a question's expected notes
among the notes of the context's chunks, averaged over questions; "chunks" = chunks in the context (mean).
The store must exist (`wikirag index VAULT --store DIR` with the default local model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes import FakeLLM  # noqa: E402
from wikirag.index.lexical import load_index  # noqa: E402
from wikirag.lightrag.engine import open_engine  # noqa: E402
from wikirag.query.notes import read_note_table  # noqa: E402
from wikirag.query.retrieve import query_store  # noqa: E402
from wikirag.settings import load_config  # noqa: E402


async def measure(config, questions: list[dict], modes: list[str]) -> None:
    llm = FakeLLM()
    notes = read_note_table(config)
    lexical = load_index(config.workspace_dir)
    async with open_engine(config, llm_func=llm) as rag:
        print(f"{'mode':<8} {'context':<10} {'recall':>7} {'chunks':>7}")
        for mode in modes:
            for fusion in (False, True):
                recalls, sizes = [], []
                for item in questions:
                    result = await query_store(config, item["q"], mode=mode, llm_func=llm, rag=rag, notes=notes,
                                               fusion=fusion, lexical=lexical)
                    seen = {c.get("file_path") for c in result.chunks}
                    expected = set(item["notes"])
                    recalls.append(len(expected & seen) / len(expected))
                    sizes.append(len(result.chunks))
                label = "fused" if fusion else "LightRAG"
                print(f"{mode:<8} {label:<10} {statistics.mean(recalls):7.3f} {statistics.mean(sizes):7.1f}",
                      flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", type=Path)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--modes", default="naive,mix")
    args = parser.parse_args()
    config = load_config(args.vault, store=args.store)
    questions = json.loads(args.questions.read_text(encoding="utf-8"))["questions"]
    print(f"{args.vault.name}: {len(questions)} questions")
    asyncio.run(measure(config, questions, args.modes.split(",")))


if __name__ == "__main__":
    main()
