"""Index one vault twice with the same token-counting fake LLM: stock LightRAG, then wikirag's plan.

    python bench/cost_vs_vanilla.py VAULT
    python bench/cost_vs_vanilla.py --generate-wiki 300 /tmp/wiki   # a densely linked wiki to try it on

Prints, for each: LLM calls, input and output tokens, and the share of the vault's distinct resolved
links (note A links note B) that the store holds as a graph edge between the two notes' entities.
The fake LLM (tests/fakes.py) answers in LightRAG's real format from the chunk text (capitalised phrases
as entities, same-sentence pairs as relations), so the figures measure LightRAG's and wikirag's
mechanics (chunks, calls, prompt sizes, what reaches the graph), not a model's judgement.
Target on a well-linked wiki: wikirag <= 10% of vanilla's input tokens with 100% of links as edges.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import FakeLLM, fake_embedding_func  # noqa: E402
from wikirag.graph.naming import note_entity_names
from wikirag.index.run import run_index
from wikirag.lightrag.guard import import_lightrag  # noqa: E402
from wikirag.lightrag.tokens import lightrag_tokenizer  # noqa: E402
from wikirag.settings import load_config  # noqa: E402
from wikirag.vault.model import Vault

TOPICS = ["Cipher", "Rotor", "Codebook", "Station", "Machine", "Signal", "Protocol", "Network", "Archive", "Bureau"]


def generate_wiki(n: int, out: Path, seed: int = 11) -> None:
    """A wiki as people write them when they link generously: most sentences name another page;
    one page in ten is a long essay with few links."""
    rng = random.Random(seed)
    titles = [f"{rng.choice(TOPICS)} {i}" for i in range(n)]
    out.mkdir(parents=True, exist_ok=True)
    for i, title in enumerate(titles):
        others = rng.sample(titles, 12)
        if i % 10 == 9:
            prose = " ".join(f"The {rng.choice(TOPICS).lower()} work of period {j} was slow and careful."
                             for j in range(60))
            body = f"{prose} See [[{others[0]}]]."
        else:
            lines = [f"[[{t}]] worked closely with {title} during phase {j}." for j, t in enumerate(others[:7])]
            body = " ".join(lines)
        (out / f"{title}.md").write_text(f"---\ntype: {title.split()[0].lower()}\n---\n# {title}\n\n{body}\n")


def resolved_pairs(vault: Vault) -> set[tuple[str, str]]:
    names = note_entity_names(vault.notes)
    pairs = set()
    for path in vault.notes:
        if vault.notes[path].route_override == "skip":  # kept out of the index on purpose
            continue
        for _link, res in vault.outgoing(path):
            if res.path and res.path != path and not res.is_attachment and res.path in names:
                pairs.add(tuple(sorted((names[path].casefold(), names[res.path].casefold()))))
    return pairs


def edge_share(edges: list[tuple[str, str]], pairs: set[tuple[str, str]]) -> float:
    present = {tuple(sorted((a.casefold(), b.casefold()))) for a, b in edges}
    return len(pairs & present) / len(pairs) if pairs else 1.0


async def vanilla(vault_dir: Path, workdir: Path) -> tuple[FakeLLM, list[tuple[str, str]]]:
    import_lightrag()
    from lightrag import LightRAG

    llm = FakeLLM()
    rag = LightRAG(working_dir=str(workdir), workspace="vanilla", llm_model_func=llm,
                   embedding_func=fake_embedding_func(), tokenizer=lightrag_tokenizer(),
                   chunk_token_size=1200, chunk_overlap_token_size=100)
    await rag.initialize_storages()
    try:
        paths = sorted(p for p in vault_dir.rglob("*.md") if ".wikirag" not in p.parts)
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
        rel = [p.relative_to(vault_dir).as_posix() for p in paths]
        # unique ids and file names: LightRAG keys duplicates on the basename and on the content
        await rag.ainsert(texts, ids=["doc-" + hashlib.md5(r.encode()).hexdigest() for r in rel],
                          file_paths=[r.replace("/", "__") for r in rel])
        edges = [(e["source"], e["target"]) for e in await rag.chunk_entity_relation_graph.get_all_edges()]
    finally:
        await rag.finalize_storages()
    return llm, edges


def wikirag(vault_dir: Path, workdir: Path) -> tuple[FakeLLM, list[tuple[str, str]]]:
    from wikirag.query.export import read_graph

    config = load_config(vault_dir, store=workdir / "store", overrides={"llm": {"model": "fake:bench"}})
    llm = FakeLLM()
    embedding = fake_embedding_func()
    run_index(config, llm_func=llm, embedding_func=embedding)
    graph = asyncio.run(read_graph(config, embedding_func=embedding))
    return llm, [(e["source"], e["target"]) for e in graph.edges]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vault", nargs="?", type=Path)
    parser.add_argument("--generate-wiki", nargs=2, metavar=("N", "DIR"))
    args = parser.parse_args()
    if args.generate_wiki:
        generate_wiki(int(args.generate_wiki[0]), Path(args.generate_wiki[1]))
        return
    if args.vault is None:
        parser.error("give a VAULT (or --generate-wiki N DIR)")
    logging.getLogger("lightrag").setLevel(logging.ERROR)
    pairs = resolved_pairs(Vault.load(args.vault))
    work = Path(tempfile.mkdtemp(prefix="wikirag-vs-"))
    try:
        copy = Path(shutil.copytree(args.vault, work / "vault", ignore=shutil.ignore_patterns(".wikirag")))
        runs = {"vanilla LightRAG": asyncio.run(vanilla(copy, work / "vanilla")),
                "wikirag plan": wikirag(copy, work)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(pairs)} distinct resolved links between notes")
    print(f"{'':18} {'LLM calls':>10} {'input tokens':>13} {'output tokens':>14} {'links as edges':>15}")
    base = None
    for label, (llm, edges) in runs.items():
        calls = len(llm.calls)
        tokens_in = sum(c.input_tokens for c in llm.calls)
        tokens_out = sum(c.output_tokens for c in llm.calls)
        base = base or tokens_in
        print(f"{label:18} {calls:10,} {tokens_in:13,} {tokens_out:14,} {edge_share(edges, pairs):15.1%}")
    print(f"wikirag / vanilla input tokens: {tokens_in / base:.1%}")


if __name__ == "__main__":
    main()
