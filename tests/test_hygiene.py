import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikirag.graph.hygiene import EntityNames
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


def test_grounding_is_tolerant_of_case_and_punctuation(names):
    assert names.grounded("Turing-Welchman Bombe", "Turing-Welchman Bombe", "the turing–welchman bombe ran", "")
    assert names.grounded("Prof", "Alan Turing", "Alan Turing, known as Prof, arrived.", "")
    assert names.grounded("Station X", "Bletchley Park", "", "Primary entity: Station X")
    assert not names.grounded("Mars Rover", "Mars Rover", "Nothing about it here.", "")
    assert not names.grounded("Turin", "Turin", "Alan Turing lived here", "")  # whole words only


def test_prompt_placeholders_are_examples(names):
    assert names.is_example("<entity_name>")
    assert not names.is_example("Alan Turing")


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + " .,_()&+:/!?-'\"<>;", min_size=1, max_size=30))
def test_the_fast_path_of_name_normalisation_agrees_with_lightrag(name):
    from lightrag.utils import normalize_entity_name

    from wikirag.lightrag.ids import normalize_name

    assert normalize_name(name) == normalize_entity_name(name)
