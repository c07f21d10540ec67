"""Small-note packing and attribution, through LightRAG's real extraction step with the deterministic fake LLM;
and what a new note or a changed name costs an indexed vault (issue 11 item 3)."""

from __future__ import annotations

import random
from pathlib import Path

from tests.fakes import FakeLLM
from tests.storekit import HashEmbedding, snapshot
from wikirag.index.ledger import Ledger
from wikirag.index.run import run_index
from wikirag.plan.mentions import sentence_names
from wikirag.plan.packing import ANCHOR_EVERY, PackItem, is_anchor, pack_items
from wikirag.settings import load_config


def word(i: int) -> str:
    """A capitalised word made of letters only, distinct for each i ("Bc" for 12)."""
    return "".join(chr(ord("a") + int(d)) for d in str(i)).capitalize() + "ova"


def small_note(i: int) -> str:
    w = word(i)
    return (f"Ada {w} met Charles {w}ton at the {w}ville Institute to discuss engines.\n\n"
            f"They wrote letters for years, and the {w}ville Institute kept them all.\n")


def make_vault(root: Path, n: int, folder: str = "notes") -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / folder / f"Note {word(i)}.md").write_text(small_note(i))
    return root


def config_for(vault: Path, store: Path, **index):
    return load_config(vault, store=store, overrides={"llm": {"model": "fake:one"}, "index": index})


def run(config, llm, embedding: HashEmbedding | None = None):
    return run_index(config, llm_func=llm, embedding_func=(embedding or HashEmbedding()).func())


def own_names(text: str) -> set[str]:
    return {n for names in sentence_names(text) for n in names}


# -- membership -----------------------------------------------------------------------------------------------


def items(paths: list[str], tokens: int = 50) -> list[PackItem]:
    return [PackItem(p, p[:-3], "text " * tokens, tokens) for p in paths]


def test_packs_stay_in_their_folder_under_the_chunk_size_and_leave_big_notes_alone():
    paths = [f"a/{i:03}.md" for i in range(40)] + [f"b/{i:03}.md" for i in range(5)]
    packs, alone = pack_items([*items(paths), PackItem("a/big.md", "big", "x " * 900, 900)], 600, 300)
    assert "a/big.md" in [i.path for i in alone]
    for pack in packs:
        assert len({p.split("/")[0] for p in pack.paths}) == 1
        assert sum(m.tokens + len(m.title.split()) + 4 for m in pack.members) <= 600
        assert pack.paths == sorted(pack.paths)
        assert all(not is_anchor(p) for p in pack.paths[1:])  # an anchor always opens its pack
    packed = [p for pack in packs for p in pack.paths] + [i.path for i in alone]
    assert sorted(packed) == sorted([*paths, "a/big.md"])
    assert pack_items(items(paths), 600, 0)[0] == []  # 0 turns packing off


def test_adding_a_note_moves_pack_boundaries_only_up_to_the_next_anchor():
    rng = random.Random(3)
    paths = sorted(f"n/{rng.random():.8f}.md" for _ in range(300))
    before, _ = pack_items(items(paths, 40), 1200, 300)
    new = "n/0.5.md"
    after, _ = pack_items(items([*paths, new], 40), 1200, 300)
    changed_before = [p.paths for p in before if p.paths not in [q.paths for q in after]]
    touched = sorted({x for group in changed_before for x in group})
    # every pack that changed lies between the anchor before the new note and the anchor after it
    anchors = [p for p in sorted([*paths, new]) if is_anchor(p)]
    low = max([a for a in anchors if a < new], default="")
    high = min([a for a in anchors if a > new], default="~")
    assert touched and all(low <= p < high for p in touched)
    assert len(changed_before) <= 1 + 300 // ANCHOR_EVERY // 4  # a few packs, not the folder


# -- attribution through the pipeline ---------------------------------------------------------------------


def test_packed_notes_share_calls_and_keep_exactly_their_own_entities(tmp_path):
    vault = make_vault(tmp_path / "v", 24)
    # a note whose last line has no full stop: the fake reads it and the next title line as one sentence
    (vault / "notes" / "Note Zz.md").write_text(
        "Grace Hopper visited the Harvard Mark Lab with her team of careful engineers, in the long and cold "
        "winter of a busy year\n")
    config = config_for(vault, tmp_path / "store")
    llm = FakeLLM(keep_prompts=True)
    report = run(config, llm)
    extract_calls = [c for c in llm.calls if c.kind == "extract"]
    assert report.notes_extracted == 25 and len(extract_calls) < 10  # packed: far fewer calls than notes
    assert any(c.prompt.count("\n# Note ") >= 3 for c in extract_calls)
    ledger = Ledger.load(config.workspace_dir)
    for path, entry in ledger.notes.items():
        text = (vault / path).read_text()
        extracted = {f.name for f in entry.entities if f.rank == 2}
        expected = own_names(text)
        # no entity crosses from a pack neighbour, none grounded in the note's own text is lost
        assert extracted - {entry.entity} == expected - {entry.entity}, path
        for r in entry.relations:
            if r.description.startswith(("Note ", "notes/")):
                continue  # structure
            assert {r.src, r.tgt} <= expected | {entry.entity}, (path, r)
        assert all(c in entry.chunk_ids for f in entry.entities for c in f.chunk_ids), path
    # the stored chunks are each note's own text: no title lines of other notes, no hint
    chunks = snapshot(config)["chunks"]
    assert len(chunks) == 25
    assert not any("# Note " in chunk["content"] for chunk in chunks.values())


def test_an_alias_grounds_a_packed_notes_entity(tmp_path):
    vault = make_vault(tmp_path / "v", 6)
    (vault / "notes" / "Note Bova.md").write_text(
        "---\naliases: [Countess Bova]\n---\nCountess Bova met Charles Bovaton at the Bovaville Institute, "
        "where they talked for a whole afternoon about engines and looms.\n")
    config = config_for(vault, tmp_path / "store")
    report = run(config, FakeLLM())
    assert any("'Countess Bova' -> 'Note Bova' (alias)" in m for m in report.entity_merges)
    nodes = snapshot(config)["nodes"]
    assert "Countess Bova" not in nodes
    # the alias belongs to its own note only, not to the neighbours it was packed with
    assert nodes["Note Bova"]["file_path"] == ["notes/Note Bova.md"]


def test_editing_one_packed_note_re_extracts_its_pack_at_most(tmp_path):
    vault = make_vault(tmp_path / "v", 30)
    config = config_for(vault, tmp_path / "store")
    run(config, FakeLLM())
    note = vault / "notes" / f"Note {word(7)}.md"
    note.write_text(note.read_text().replace("discuss engines", "discuss looms"))
    llm = FakeLLM()
    report = run(config, llm)
    assert report.notes_changed == 1
    assert [c.kind for c in llm.calls] == ["extract"]  # one pack; LightRAG's cache answers nothing else
    fresh = config_for(vault, tmp_path / "fresh")
    run(fresh, FakeLLM())
    assert snapshot(config) == snapshot(fresh)


# -- issue 11 item 3: a new note does not re-process the vault ----------------------------------------------


def test_a_new_note_does_not_reprocess_fifty_extract_routed_notes(tmp_path):
    vault = make_vault(tmp_path / "v", 50)
    config = config_for(vault, tmp_path / "store")
    counted = HashEmbedding()
    full = run(config, FakeLLM(), counted)
    assert full.notes_extracted == 50
    embedded_full, counted.texts = counted.texts, 0
    (vault / "notes" / "Note Newcomer.md").write_text(small_note(77))
    llm = FakeLLM()
    report = run(config, llm, counted)
    assert (report.notes_new, report.notes_changed) == (1, 0)
    assert report.notes_extracted == 1
    assert len(llm.calls) == 1  # the new note's extraction call (its pack's)
    # what is re-embedded: the new note's records and its pack neighbours' re-attributed records
    assert 0 < counted.texts <= 0.3 * embedded_full
    # alone in its folder, a new note costs only its own records
    (vault / "elsewhere").mkdir()
    (vault / "elsewhere" / "Lone.md").write_text(small_note(88))
    llm = FakeLLM()
    counted.texts = 0
    report = run(config, llm, counted)
    assert (report.notes_new, report.notes_changed, len(llm.calls)) == (1, 0, 1)
    own = own_names(small_note(88))
    assert 0 < counted.texts <= 1 + 1 + 2 * len(own) + 2  # its chunk, entity, names and relations
    fresh = config_for(vault, tmp_path / "fresh")
    run(fresh, FakeLLM())
    assert snapshot(config) == snapshot(fresh)


def test_a_new_alias_re_applies_names_without_the_llm(tmp_path):
    vault = make_vault(tmp_path / "v", 12)
    (vault / "Engines.md").write_text("---\naliases: [Difference Engine]\n---\n")
    (vault / "Essay.md").write_text(
        "The Bovaville Institute lent its Analytical Engine to Ada Bova for a winter of careful study, and she "
        "filled three notebooks with tables before the spring came.\n")
    config = config_for(vault, tmp_path / "store")
    run(config, FakeLLM())
    assert "Analytical Engine" in snapshot(config)["nodes"]
    (vault / "Engines.md").write_text("---\naliases: [Difference Engine, Analytical Engine]\n---\n")
    llm = FakeLLM()
    report = run(config, llm)
    assert report.notes_changed == 1 and llm.calls == []  # Engines.md is injected; nothing is re-extracted
    nodes = snapshot(config)["nodes"]
    assert "Analytical Engine" not in nodes and "Essay.md" in nodes["Engines"]["file_path"]
    fresh = config_for(vault, tmp_path / "fresh")
    run(fresh, FakeLLM())
    assert snapshot(config) == snapshot(fresh)


def test_what_no_packed_note_grounds_is_dropped_and_reported(tmp_path):
    class Invents(FakeLLM):
        def extraction(self, text: str) -> str:
            d = self.tuple_delimiter
            return "\n".join([super().extraction(text).rsplit("\n", 1)[0],
                              f"entity{d}Xanadu Holdings{d}organization{d}Invented.", self.completion])

    vault = make_vault(tmp_path / "v", 6)
    config = config_for(vault, tmp_path / "store")
    report = run(config, Invents())
    assert "Xanadu Holdings" not in snapshot(config)["nodes"]
    assert any("packed): 'Xanadu Holdings' (not found in the text)" in d for d in report.entities_dropped)


def test_deleting_a_packed_note_re_extracts_its_pack_and_the_store_equals_a_fresh_index(tmp_path):
    vault = make_vault(tmp_path / "v", 20)
    config = config_for(vault, tmp_path / "store")
    run(config, FakeLLM())
    ledger = Ledger.load(config.workspace_dir)
    packed = sorted(p for p, e in ledger.notes.items() if len(e.raw.get("pack", [])) > 2)
    (vault / packed[1]).unlink()
    llm = FakeLLM()
    report = run(config, llm)
    assert report.notes_deleted == 1 and [c.kind for c in llm.calls] == ["extract"]  # its pack, once
    fresh = config_for(vault, tmp_path / "fresh")
    run(fresh, FakeLLM())
    assert snapshot(config) == snapshot(fresh)


def test_no_extraction_prompt_reads_a_pasted_images_payload(tmp_path):
    """A pasted image's data URI (markdown.payloads) reaches the LLM as its stand-in: in a pack (a small
    image: the note stays under pack_max_tokens) and in a note's own chunks (a 200 KB one)."""
    import base64

    vault = make_vault(tmp_path / "v", 3)
    small, big = base64.b64encode(bytes(range(120))).decode(), base64.b64encode(bytes(range(256)) * 600).decode()
    (vault / "notes" / "Note Zicon.md").write_text(  # packed after Note Aova (an anchor), Bova and Cova
        f"Ada Lovelace drew this icon.\n\n![](data:image/gif;base64,{small})\n")
    (vault / "notes" / "Wiring.md").write_text(
        f"Gordon Welchman drew the diagram.\n\n![](data:image/png;base64,{big})\n\nAlan Turing checked it.\n")
    llm = FakeLLM(keep_prompts=True)
    report = run(config_for(vault, tmp_path / "store"), llm)
    prompts = [c.prompt for c in llm.calls if c.kind == "extract"]
    assert report.notes_extracted == 5 and len(prompts) <= 3
    assert any("data:image/gif;base64,…(120B)" in p and p.count("\n# Note ") >= 2 for p in prompts)  # packed
    assert any("data:image/png;base64,…(154KB)" in p and "Alan Turing" in p for p in prompts)
    assert not any(small[:40] in p or big[:40] in p for p in prompts)
    assert sum(map(len, prompts)) < 60_000
