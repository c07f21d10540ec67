import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikirag.graph.hygiene import EntityNames, fold_type
from wikirag.lightrag.prompts import prompt_example_names


@pytest.fixture
def names() -> EntityNames:
    n = EntityNames(examples=prompt_example_names())
    n.add("Alan Turing", "person", ["Turing", "Prof"])
    n.add("Java", "language", [])
    n.add("Paris", "place", [])
    n.add("Bletchley Park", "place", ["Station X"])
    return n


@pytest.mark.parametrize("name, kind, expected, how", [
    ("alan turing", "person", "Alan Turing", "alias"),
    ("TURING", "concept", "Alan Turing", "alias"),  # aliases ignore the type
    ("Station X", "organization", "Bletchley Park", "alias"),
    ("Bletchly Park", "place", "Bletchley Park", "fuzzy"),  # a typo, same type
    ("Bletchly Park", "organization", "Bletchly Park", None),  # same typo, other type: no merge
    ("JavaScript", "language", "JavaScript", None),  # hard negative
    ("Parish", "place", "Parish", None),  # hard negative
    ("Alan Mathison Turing", "person", "Alan Mathison Turing", None),  # conservative: not merged
    ("Alan Turing", "person", "Alan Turing", None),
])
def test_canonical_names(names, name, kind, expected, how):
    assert names.canonical(name, kind) == (expected, how)


@pytest.mark.parametrize("a, b", [("people", "Person"), ("Organisations", "organization"), ("places", "Location"),
                                  ("Natural Object", "NaturalObject"), ("Companies", "Organization"),
                                  ("ciphers", "Cipher"), ("Machines", "machine"), ("Analysis", "analysis")])
def test_types_fold_onto_one_vocabulary(a, b):
    assert fold_type(a) == fold_type(b)


@pytest.mark.parametrize("a, b", [("person", "organization"), ("location", "event"), ("class", "clas"),
                                  ("concept", "method")])
def test_different_types_stay_apart(a, b):
    assert fold_type(a) != fold_type(b)


def test_fuzzy_merge_meets_across_spellings_of_a_type_but_keeps_hard_negatives():
    n = EntityNames()
    n.add("Bletchley Park", "places", [])
    n.add("Government Code and Cypher School", "organisation", [])
    n.add("Java", "languages", [])
    n.add("Paris", "places", [])
    assert n.canonical("Bletchly Park", "Location") == ("Bletchley Park", "fuzzy")
    assert n.canonical("Government Code and Cipher School", "Organization") == (
        "Government Code and Cypher School", "fuzzy")
    assert n.canonical("JavaScript", "Language") == ("JavaScript", None)
    assert n.canonical("Parish", "location") == ("Parish", None)
    assert n.canonical("Bletchly Park", "event") == ("Bletchly Park", None)


def test_grounding_is_tolerant_of_case_and_punctuation(names):
    assert names.grounded("Turing-Welchman Bombe", "Turing-Welchman Bombe", "the turing–welchman bombe ran", "")
    assert names.grounded("Prof", "Alan Turing", "Alan Turing, known as Prof, arrived.", "")
    assert names.grounded("Station X", "Bletchley Park", "", "Primary entity: Station X")
    assert not names.grounded("Mars Rover", "Mars Rover", "Nothing about it here.", "")
    assert not names.grounded("Turin", "Turin", "Alan Turing lived here", "")  # whole words only


def test_placeholders_and_prompt_examples():
    names = EntityNames(examples={"Tokyo", "Noah Carter"})  # as earlier LightRAG versions' examples read
    assert names.is_placeholder("<entity_name>") and not names.is_placeholder("Alan Turing")
    assert names.is_example("Tokyo") and names.is_example("noah carter") and not names.is_example("Alan Turing")


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + " .,_()&+:/!?-'\"<>;"
               + "ÀÉÖ×Øßàéöüÿ÷ĀčĲŀŉŁłſƒǅǈȘțɏ" + "\u00a0\u00bf\u0250\u0301\u2019\u201c\u3000（",
               min_size=1, max_size=30))
def test_the_fast_path_of_name_normalisation_agrees_with_lightrag(name):
    from lightrag.utils import normalize_entity_name

    from wikirag.lightrag.ids import normalize_name

    assert normalize_name(name) == normalize_entity_name(name)
