"""The deterministic merge keeps descriptions bounded without an LLM, and every fragment in the ledger."""

from __future__ import annotations

import random
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

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


# The patterns plain_text applied one after the other: the reference its scans must agree with.
_OLD_WIKILINK = re.compile(r"!?\[\[([^\]|]*)(?:\|([^\]]*))?\]\]")
_OLD_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def _by_the_patterns(text: str) -> str:
    text = _OLD_WIKILINK.sub(lambda m: (m.group(2) or m.group(1).split("#")[0] or m.group(1)).strip(), text)
    return _OLD_MD_LINK.sub(lambda m: m.group(1), text).strip()


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(["[[", "]]", "[", "]", "|", "(", ")", "!", "#", " ", "a", "b c", "\n", "![["]),
                max_size=24).map("".join))
@example("[[a|b]] [[c#d]] ![[e.png]] [f](g) ![h](i)")
@example("![[a]]![[b|]][[#c]][[|]]")
@example("[[a|b|c]] [[a]b]] [[a|b]c]]")
@example("[x]](y) [x](y(z)) [[x](y)]] !!![[a]]")
def test_plain_text_reads_links_as_the_patterns_did(text):
    from wikirag.graph.contribution import plain_text

    assert plain_text(text) == _by_the_patterns(text)


def test_plain_text_of_brackets_that_never_close_is_the_text():
    """`[[ ` repeated without a close took 82 s for 60 KB (every `[[` was tried up to the end)."""
    from wikirag.graph.contribution import plain_text

    for unit in ("[[ ", "![[ ", "[[a|", "[ ", "[a](", "[a](b"):
        assert plain_text(unit * 500) == _by_the_patterns(unit * 500)
        text = unit * (60_000 // len(unit))
        assert plain_text(text) == text.strip()
    assert plain_text("[[ " * 20_000 + "[[a|b]]") == "b"  # the first `[[` opens the one link, as it did
