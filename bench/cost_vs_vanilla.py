"""Index vaults twice with the same token-counting fake LLM: stock LightRAG, then wikirag's real pipeline.

    python bench/cost_vs_vanilla.py VAULT [VAULT ...]
    python bench/cost_vs_vanilla.py --shape docs --shape zettel --shape garden --shape prose
    python bench/cost_vs_vanilla.py --shape docs --notes 300 --keep /tmp/docs   # keep the generated vault
    python bench/cost_vs_vanilla.py --generate-wiki 300 /tmp/wiki               # the older wiki generator

Prints one row per vault: LLM calls and input tokens for each, wikirag's share of stock LightRAG's input
tokens, the share of the vault's distinct resolved links (note A links note B) that wikirag's store holds
as a graph edge between the two notes' entities, and what `wikirag cost-estimate` predicted for wikirag's
input tokens against what the pipeline then sent (the error, in %).
The fake LLM (tests/fakes.py) answers in LightRAG's real format from the chunk text (capitalised phrases
as entities, same-sentence pairs as relations), so the figures measure LightRAG's and wikirag's mechanics
(chunks, calls, prompt sizes, packing, what reaches the graph), not a model's judgement.

Shapes (issue 13's table; distributions are described in each generator's docstring):
- docs: product documentation, densely linked (about 3 pages in 4 have >= 5 resolved links);
- zettel: short-note zettelkasten, median about 30 words, 1-4 links per note;
- garden: a programming digital garden, mixed lengths, code blocks, moderate linking;
- prose: a general prose knowledge vault with few links.
Targets with default settings: docs <= 10 % of stock input tokens and 100 % of resolved links as edges,
zettel <= 20 %, garden <= 25 %, prose <= 35 %, and the estimate within +-10 % of the pipeline.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import math
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


WORDS = ("system data model query index cache schema stream batch worker queue config request token "
         "module service client server layer pattern state event record field table view graph node edge "
         "method test build deploy release version branch commit review metric signal trace budget").split()
PEOPLE = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Ken", "Dennis", "Margaret", "Leslie", "Tony",
          "Frances", "Niklaus", "John", "Radia", "Guido", "Linus", "Anders", "Bjarne", "Yukihiro"]
PLACES = ["Berlin", "Lagos", "Lima", "Osaka", "Oslo", "Quito", "Perth", "Dakar", "Porto", "Hanoi"]


def _sentence(rng: random.Random, words: int, names: list[str] | None = None) -> str:
    body = [rng.choice(WORDS) for _ in range(max(3, words))]
    for name in names or []:
        body.insert(rng.randrange(len(body)), name)
    text = " ".join(body)
    return text[0].upper() + text[1:] + "."


def _prose(rng: random.Random, words: int, proper: float = 0.3) -> str:
    """Paragraphs of ~`words` words; a share of sentences name a person or a place (what an LLM extracts)."""
    out, para, left = [], [], words
    while left > 0:
        n = rng.randint(8, 22)
        names = []
        if rng.random() < proper:
            names.append(f"{rng.choice(PEOPLE)} {rng.choice(PLACES)}son")
        if rng.random() < proper / 2:
            names.append(rng.choice(PLACES))
        para.append(_sentence(rng, n, names))
        left -= n
        if len(para) >= rng.randint(3, 6):
            out.append(" ".join(para))
            para = []
    if para:
        out.append(" ".join(para))
    return "\n\n".join(out)


def _lognormal(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    return int(min(high, max(low, rng.lognormvariate(math.log(median), sigma))))


def _link_sentence(rng: random.Random, target: str) -> str:
    return f"See [[{target}]] for the {rng.choice(WORDS)} {rng.choice(WORDS)}."


def _write(out: Path, rel: str, front: dict[str, str], body: str) -> None:
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "".join(f"{k}: {v}\n" for k, v in front.items())
    path.write_text((f"---\n{head}---\n" if head else "") + body + "\n", encoding="utf-8")


def generate_shape(shape: str, n: int, out: Path, seed: int = 13) -> None:
    """Write a vault of `n` notes of one shape into `out`."""
    rng = random.Random(seed)
    {"docs": _docs, "zettel": _zettel, "garden": _garden, "prose": _prose_vault}[shape](rng, n, out)


def _docs(rng: random.Random, n: int, out: Path) -> None:
    """Product documentation: pages of a few hundred to two thousand words under headings, with code blocks
    and frontmatter (title, description); 3 pages in 4 link >= 5 other pages (navigation, "see also",
    inline references); the rest are short reference stubs and changelog entries with 0-4 links."""
    folders = ["getting-started", "guides", "reference", "how-to", "changelog"]
    titles = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {i}" for i in range(n)]
    paths = {t: f"{folders[i % len(folders)]}/{t}.md" for i, t in enumerate(titles)}
    for _i, title in enumerate(titles):
        linked = rng.random() < 0.74
        links = rng.randint(5, 14) if linked else rng.randint(0, 4)
        targets = rng.sample([t for t in titles if t != title], links)
        if linked:
            parts, words = [], _lognormal(rng, 700, 0.6, 150, 2500)
            sections = max(1, words // 200)
            for k in range(sections):
                parts.append(f"## {rng.choice(WORDS).title()} {k}")
                parts.append(_prose(rng, words // sections, 0.15))
                if rng.random() < 0.4:
                    parts.append(f"```yaml\n{rng.choice(WORDS)}: {rng.choice(WORDS)}\n```")
                for t in targets[k::sections]:
                    parts.append(_link_sentence(rng, t))
        else:
            parts = [_prose(rng, _lognormal(rng, 60, 0.6, 15, 250), 0.3), *(_link_sentence(rng, t) for t in targets)]
        front = {"title": title, "description": f"How the {rng.choice(WORDS)} works"}
        _write(out, paths[title], front, f"# {title}\n\n" + "\n\n".join(parts))


def _zettel(rng: random.Random, n: int, out: Path) -> None:
    """Short atomic notes (median ~30 words, lognormal), 1-4 links each woven into the sentences, tags in
    frontmatter for a third of them, flat folder."""
    titles = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}" for i in range(n)]
    for title in titles:
        words = _lognormal(rng, 30, 0.5, 8, 200)
        targets = rng.sample([t for t in titles if t != title], rng.randint(1, 4))
        text = _prose(rng, words, 0.35)
        text += " " + " ".join(f"It relates to [[{t}]]." for t in targets)
        front = {"tags": f"[{rng.choice(WORDS)}]"} if rng.random() < 0.33 else {}
        _write(out, f"zettel/{title}.md", front, text)


def _garden(rng: random.Random, n: int, out: Path) -> None:
    """A programming digital garden: notes from a line to long essays (median ~180 words), code blocks in half
    of them, 0-12 links (median 3; about 1 in 5 notes has >= 5), a few folders, frontmatter on half."""
    folders = ["languages", "tools", "patterns", "notes", "til"]
    titles = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}" for i in range(n)]
    for i, title in enumerate(titles):
        words = _lognormal(rng, 180, 0.9, 10, 3000)
        links = min(12, int(rng.expovariate(1 / 3)))
        targets = rng.sample([t for t in titles if t != title], links)
        parts = [_prose(rng, words, 0.25)]
        if rng.random() < 0.5:
            parts.append("```python\n" + "\n".join(f"{rng.choice(WORDS)} = {rng.randint(0, 9)}"
                                                       for _ in range(rng.randint(2, 12))) + "\n```")
        parts += [_link_sentence(rng, t) for t in targets]
        front = {"type": "note", "tags": f"[{rng.choice(WORDS)}]"} if rng.random() < 0.5 else {}
        _write(out, f"{folders[i % len(folders)]}/{title}.md", front, "\n\n".join(parts))


def _prose_vault(rng: random.Random, n: int, out: Path) -> None:
    """A general prose knowledge vault with few links: notes of ~200 words (lognormal, some long essays up to
    3,000), 0-3 links for most, 1 in 10 a hub with >= 5; journal and topic folders."""
    folders = ["journal", "topics", "reading", "people"]
    titles = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}" for i in range(n)]
    for i, title in enumerate(titles):
        words = _lognormal(rng, 200, 0.8, 20, 3000)
        links = rng.randint(5, 10) if rng.random() < 0.1 else rng.choice([0, 0, 1, 1, 2, 3])
        targets = rng.sample([t for t in titles if t != title], links)
        body = _prose(rng, words, 0.3)
        if targets:
            body += "\n\n" + " ".join(_link_sentence(rng, t) for t in targets)
        _write(out, f"{folders[i % len(folders)]}/{title}.md", {}, body)


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


def measure(vault_dir: Path, label: str) -> dict:
    """Both pipelines on a copy of the vault, and cost-estimate's prediction."""
    from wikirag.plan.cost import estimate_for_config

    pairs = resolved_pairs(Vault.load(vault_dir))
    work = Path(tempfile.mkdtemp(prefix="wikirag-vs-"))
    try:
        copy = Path(shutil.copytree(vault_dir, work / "vault", ignore=shutil.ignore_patterns(".wikirag")))
        stock_llm, _stock_edges = asyncio.run(vanilla(copy, work / "vanilla"))
        ours_llm, edges = wikirag(copy, work)
        config = load_config(copy, store=work / "store", overrides={"llm": {"model": "fake:bench"}})
        estimate = estimate_for_config(config, {"model": "gpt-4o-mini"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stock_in = sum(c.input_tokens for c in stock_llm.calls)
    ours_in = sum(c.input_tokens for c in ours_llm.calls)
    predicted = estimate.scenarios["wikirag"].input_tokens
    return {"vault": label, "notes": estimate.note_count, "extract": estimate.routes.get("extract", 0),
            "stock_calls": len(stock_llm.calls), "stock_in": stock_in, "calls": len(ours_llm.calls),
            "input": ours_in, "ratio": ours_in / stock_in if stock_in else 0.0, "edges": edge_share(edges, pairs),
            "predicted": predicted, "error": (predicted - ours_in) / ours_in if ours_in else 0.0,
            "predicted_stock": estimate.scenarios["vanilla"].input_tokens}


def print_table(rows: list[dict]) -> None:
    print("| vault | notes | extract-routed | stock calls | stock input tok | wikirag calls | wikirag input tok "
          "| wikirag/stock | links as edges | cost-estimate (wikirag) | estimate error |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['vault']} | {r['notes']:,} | {r['extract']:,} | {r['stock_calls']:,} | {r['stock_in']:,} "
              f"| {r['calls']:,} | {r['input']:,} | {r['ratio']:.1%} | {r['edges']:.1%} | {r['predicted']:,} "
              f"| {r['error']:+.1%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vaults", nargs="*", type=Path)
    parser.add_argument("--shape", action="append", default=[], choices=SHAPES)
    parser.add_argument("--notes", type=int, default=0, help="notes per generated vault (default per shape)")
    parser.add_argument("--keep", type=Path, help="write the generated vault here and keep it (one shape)")
    parser.add_argument("--generate-wiki", nargs=2, metavar=("N", "DIR"))
    args = parser.parse_args()
    if args.generate_wiki:
        generate_wiki(int(args.generate_wiki[0]), Path(args.generate_wiki[1]))
        return
    if not args.vaults and not args.shape:
        parser.error("give VAULTs or --shape")
    logging.getLogger("lightrag").setLevel(logging.ERROR)
    rows = []
    for shape in args.shape:
        root = args.keep or Path(tempfile.mkdtemp(prefix=f"wikirag-{shape}-"))
        generate_shape(shape, args.notes or SHAPES[shape], root)
        try:
            rows.append(measure(root, f"{shape} shape"))
        finally:
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
        print_table(rows[-1:])
        sys.stdout.flush()
    for vault in args.vaults:
        rows.append(measure(vault, vault.name))
        print_table(rows[-1:])
        sys.stdout.flush()
    print()
    print_table(rows)


SHAPES = {"docs": 170, "zettel": 600, "garden": 300, "prose": 300}  # notes per generated vault


if __name__ == "__main__":
    main()
