"""Per-vault fusion weights from pseudo-queries (bench/pseudo_queries.py, measured by bench/calibration.py, not used
by search): which signal wins on a constructed vault, determinism, the pseudo-query itself."""

from __future__ import annotations

import asyncio

from bench.pseudo_queries import GRID, calibrate, pseudo_query, sample_notes
from wikirag.index.lexical import build_index, tokenize
from wikirag.query.notes import NoteTable
from wikirag.query.ranking import FUSION

TOPICS = ["glacier moraine sediment meltwater valley", "violin bow rosin string luthier", "sourdough starter yeast",
          "comet nucleus orbit perihelion tail", "beehive honeycomb pollen queen drone", "tidal estuary salt marsh",
          "printing press typeface ink movable", "volcano magma basalt eruption crater", "chess opening gambit pawn",
          "coral reef polyp lagoon atoll", "windmill sail grain millstone", "lighthouse lens beacon keeper"]


def _vault() -> tuple[NoteTable, dict[str, str]]:
    texts = {f"n{i:02}.md": f"# Note {i}\n\nThe {topic} appear together often in this particular account of things.\n"
             for i, topic in enumerate(TOPICS)}
    return NoteTable({p: {"title": f"Note {p[1:3]}"} for p in texts}), texts


def _run(notes, index, texts, vector):
    return asyncio.run(calibrate(notes, index, texts.__getitem__, vector))


def _vector(answer):
    async def chunks(query: str) -> list[dict]:
        return [{"file_path": p} for p in answer(query)]

    return chunks


def test_calibration_keeps_bm25_first_when_the_vectors_are_useless():
    notes, texts = _vault()
    index = build_index([(f"c{i}", p, "", tokenize(t)) for i, (p, t) in enumerate(texts.items())])
    useless = _vector(lambda q: sorted(texts, reverse=True))  # the same notes whatever the query
    data = _run(notes, index, texts, useless)
    assert data["sample"] == len(TOPICS)
    assert data["signal_mrr"]["lexical"] > 0.9 > data["signal_mrr"]["lightrag"]
    assert data["weights"]["lightrag"] == FUSION.weights["lightrag"] == min(GRID)


def test_calibration_raises_lightrag_when_it_finds_the_notes_bm25_misses():
    notes, texts = _vault()
    paths = list(texts)
    # a lexical index that points every note's words at the next note: BM25 is confidently wrong
    index = build_index([(f"c{i}", paths[(i + 1) % len(paths)], "", tokenize(texts[p])) for i, p in enumerate(paths)])
    by_words = {pseudo_query(t, [notes.notes[p]["title"]]): p for p, t in texts.items()}
    right = _vector(lambda q: [by_words[q], *[p for p in paths if p != by_words[q]]])
    data = _run(notes, index, texts, right)
    assert data["signal_mrr"]["lightrag"] == 1.0
    assert data["weights"]["lightrag"] == data["weights"]["graph"] == max(GRID)
    assert data == _run(notes, index, texts, right)  # deterministic


def test_pseudo_query_drops_math_markup_title_words_and_stopwords():
    text = ("---\naliases: [Abel summation]\n---\n# Abel's Formula\n\ntitle: Abel's Formula\n\n"
            "Let $a_k$ and [[Sequence|sequences]] be given. Then the partial sums $$s_n = \\sum b_k$$ of the "
            "sequences telescope neatly whenever the summation boundary terms vanish completely.\n")
    query = pseudo_query(text, ["Abel's Formula", "Abel summation"])
    assert query == "partial sums sequences telescope neatly whenever boundary terms vanish completely"
    assert pseudo_query("# Title\n\nToo short here.", ["Title"]) is None


def test_the_draw_is_a_fixed_order_independent_of_listing_order():
    paths = [f"n{i}.md" for i in range(30)]
    assert sample_notes(paths) == sample_notes(list(reversed(paths)))
    assert sorted(sample_notes(paths)) == sorted(paths) and sample_notes(paths) != paths
