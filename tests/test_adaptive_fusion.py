"""Question-dependent fusion weights (bench/adaptive_fusion.py; not shipped, see docs/retrieval.md): the
`flat` feature tells a question BM25 is sure of from one it is not, and the rule blends only the latter."""

from __future__ import annotations

from bench.adaptive_fusion import RULE, features, rule_of
from wikirag.index.lexical import build_index, tokenize
from wikirag.query.ranking import FUSION


def _index():
    rows = [("zymurgy.md", "zymurgy is the chemistry of brewing and fermentation")]
    rows += [(f"n{i}.md", f"history note {i} about brewing and history") for i in range(6)]
    return build_index([(f"c{i}", path, "", tokenize(text)) for i, (path, text) in enumerate(rows)])


def test_flat_is_low_when_one_note_stands_out_and_high_when_bm25_cannot_tell_notes_apart():
    index = _index()
    named = features(index, "zymurgy chemistry", {"lexical": ["zymurgy.md"], "lightrag": []})
    thematic = features(index, "history", {"lexical": [f"n{i}.md" for i in range(6)], "lightrag": []})
    assert named["flat"] == 0.0  # one note matches: fewer than 5 notes, BM25 is sure
    assert thematic["flat"] > 0.9  # six notes match alike
    assert features(index, "quasar", {"lexical": [], "lightrag": []})["flat"] == 1.0  # BM25 matched nothing

    rule = rule_of(*RULE)
    assert rule(named) is FUSION
    blended = rule(thematic)
    assert blended.weights["lightrag"] > FUSION.weights["lightrag"]
    assert blended.weights["lexical"] == FUSION.weights["lexical"] and blended.k == FUSION.k
