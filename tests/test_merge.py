"""The deterministic merge keeps descriptions bounded without an LLM, and every fragment in the ledger."""

from __future__ import annotations

import random

from wikirag.graph.merge import DESCRIPTION_BUDGET_TOKENS, approx_tokens, merge_entity, merge_relation
from wikirag.graph.records import EntityFragment, RelationFragment


def _mentions(n: int) -> list[EntityFragment]:
    own = EntityFragment("Bletchley Park", "place", "The estate where Britain's codebreakers worked in the war.",
                         ["c-own"], "places/Bletchley Park.md", 0)
    daily = [EntityFragment("Bletchley Park", None,
                            f"On day {i} the team met at [[Bletchley Park]] to discuss rotor {i % 7} and crib {i}.",
                            [f"c{i}"], f"daily/2024-{i:04d}.md", 1) for i in range(n)]
    return [own, *daily]


def test_a_hub_entity_keeps_a_bounded_description_led_by_its_own_note():
    fragments = _mentions(400)
    record = merge_entity("Bletchley Park", fragments)
    lines = record["description"].split("\n")
    assert lines[0] == "The estate where Britain's codebreakers worked in the war."
    assert approx_tokens(record["description"]) <= DESCRIPTION_BUDGET_TOKENS + len(lines)
    assert 1 < len(lines) < 400
    # every source still counts: the bound is on the text, not on provenance
    assert len(record["source_id"].split("<SEP>")) == 401


def test_the_bounded_description_does_not_depend_on_fragment_order():
    fragments = _mentions(200)
    shuffled = fragments[:]
    random.Random(7).shuffle(shuffled)
    assert merge_entity("Bletchley Park", fragments) == merge_entity("Bletchley Park", shuffled)


def test_near_repeats_are_skipped_and_small_sets_are_kept_whole():
    few = _mentions(3)
    assert merge_entity("Bletchley Park", few)["description"].count("\n") == 3
    repeats = [RelationFragment("A", "B", f"A works with B at the lab. Note {i}.", [], [f"c{i}"], f"n{i}.md", 1)
               for i in range(600)]
    description = merge_relation(("A", "B"), repeats)["description"]
    assert approx_tokens(description) <= DESCRIPTION_BUDGET_TOKENS + description.count("\n") + 1


def test_plain_text_flattens_links_to_what_a_reader_sees():
    """Wikilinks give their label, else their target without the heading; Markdown links their text; text
    without link syntax only loses its outer whitespace."""
    from wikirag.graph.contribution import plain_text

    assert plain_text(" See [[Alan Turing|Turing]] and [[Bombe#Design]], ![[img.png]] or [the site](https://x.y). ") \
        == "See Turing and Bombe, img.png or the site."
    assert plain_text("[[#Only a heading]] here") == "#Only a heading here"
    assert plain_text("  a ( b ) ] c  ") == "a ( b ) ] c"
    assert plain_text("[not a link] [[unclosed") == "[not a link] [[unclosed"
