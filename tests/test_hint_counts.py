"""Hint headers in parts (plan.hints.hint_parts, plan.packing.pack_hint_parts) and their token counts
(plan.memo.TokenCounts.concat): the text the pipeline shows the LLM stays as it was, and the counts summed from
the parts equal the tokenizer's count of the whole text."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from wikirag.lightrag.tokens import get_encoding
from wikirag.models import ParsedNote
from wikirag.plan.hints import HINT_TITLE, MAX_LISTED_LINKS, build_hint, hint_parts, hint_text_parts
from wikirag.plan.memo import TokenCounts
from wikirag.plan.packing import pack_hint, pack_hint_parts
from wikirag.vault.model import Vault

SAMPLE = Path(__file__).resolve().parents[1] / "sample_vault"
ENCODINGS = ("o200k_base", "cl100k_base")
TAIL = ("Extract ONLY entities and relations the text implies that are not listed above. When the text mentions "
        "a listed entity, use exactly the name given here.")


def _note(**kw) -> ParsedNote:
    return ParsedNote(path="people/Alan Turing.md", name="Alan Turing", title="Alan Turing", body="", **kw)


def test_build_hint_text_is_unchanged_by_parts():
    """The header as the pipeline has always written it: aliases, tags, typed and aliased targets, and the
    line that stands for the links past MAX_LISTED_LINKS."""
    n = _note(aliases=["Prof", "AMT"], tags=["math", "ww2"])
    targets = [("Bombe", "machine", []), ("Enigma", None, ["the machine"]), ("Hut 8", None, [])]
    targets += [(f"T{i:02d}", None, []) for i in range(MAX_LISTED_LINKS)]
    text = build_hint(n, "Alan Turing", "person", targets)
    listed = "".join(f"- Alan Turing -> T{i:02d}\n" for i in range(MAX_LISTED_LINKS - 3))
    assert text == (
        f"{HINT_TITLE}\nPrimary entity: Alan Turing (type: person)\n"
        "Also called: Prof, AMT — use the name 'Alan Turing' for it.\nTags: math, ww2\n"
        "Confirmed relations (already in the graph):\n- Alan Turing -> Bombe (machine)\n"
        "- Alan Turing -> Enigma (None; also called the machine)\n- Alan Turing -> Hut 8\n"
        f"{listed}- … and 3 more linked notes\n{TAIL}\n\n")
    assert build_hint(_note(), "A", "note", []) == f"{HINT_TITLE}\nPrimary entity: A (type: note)\n{TAIL}\n\n"


def test_pack_hint_text_is_unchanged_by_parts():
    many = [f"T{i:02d}" for i in range(MAX_LISTED_LINKS + 2)]
    text = pack_hint([("Alan Turing", "person", ["Prof"], ["Bombe", "Enigma"]), ("Bombe", "machine", [], []),
                      ("Hut 8", "place", [], many)])
    assert text == (
        f"{HINT_TITLE}\nThe input holds several short notes, each under its own title line.\n"
        "- Alan Turing (type: person; also called Prof) -> Bombe, Enigma\n- Bombe (type: machine)\n"
        f"- Hut 8 (type: place) -> {', '.join(many[:MAX_LISTED_LINKS])}, … and 2 more\n"
        "Each note's entity and its listed relations are already in the graph. " + TAIL + "\n\n")


# Names with the characters that decide where the tokenizer's pieces start: spaces (leading, trailing,
# doubled), newlines, punctuation, digits, apostrophes, non-breaking and other Unicode spaces, CJK, emoji.
_NAME = st.text(alphabet=st.sampled_from(list(" \n\t/#-aZ1's:.,)(é\u00a0\u2028\u3000漢😀>")), min_size=0, max_size=16)


@settings(max_examples=300, deadline=None)
@given(st.lists(_NAME, min_size=1, max_size=12))
def test_concat_equals_direct_counting(parts):
    """concat cuts only where the tokenizer's pieces start anyway; elsewhere it glues parts together."""
    for name in ENCODINGS:
        enc = get_encoding(name)
        counts = TokenCounts(enc)
        assert counts.concat(parts) == len(enc.encode_ordinary("".join(parts))), (name, parts)
        assert counts.concat([" " + p for p in parts]) == len(enc.encode_ordinary("".join(" " + p for p in parts)))


@settings(max_examples=150, deadline=None)
@given(_NAME, _NAME, st.lists(st.tuples(_NAME, st.one_of(st.none(), _NAME), st.lists(_NAME, max_size=2)),
                              max_size=5), st.lists(_NAME, max_size=2), st.lists(_NAME, max_size=2))
def test_hint_parts_count_as_their_text(entity, kind, targets, aliases, tags):
    """Whatever the names hold, the parts join to the header and concat counts what the LLM reads."""
    n = _note(aliases=aliases, tags=tags)
    parts = hint_parts(n, entity, kind or "note", targets)
    members = [(entity, kind or "note", aliases, [t for t, _k, _a in targets]), *((t, k or "note", a, tags)
                                                                                   for t, k, a in targets)]
    packed = pack_hint_parts(members)
    assert "".join(packed) == pack_hint(members)
    for name in ENCODINGS:
        enc = get_encoding(name)
        counts = TokenCounts(enc)
        assert counts.concat(parts) == len(enc.encode_ordinary(build_hint(n, entity, kind or "note", targets)))
        assert counts.concat(packed) == len(enc.encode_ordinary(pack_hint(members)))


def test_sample_vault_hints_count_in_parts():
    """On real notes: every hint counted from its parts equals the count of its text, and the names were
    counted apart from the lines that hold them (fewer distinct texts counted than lines)."""
    vault = Vault.load(SAMPLE)
    hints = [hint_text_parts(vault.notes[p], vault.outgoing(p), vault.notes) for p in sorted(vault.notes)]
    for name in ENCODINGS:
        enc = get_encoding(name)
        counts = TokenCounts(enc)
        assert [counts.concat(h) for h in hints] == [len(enc.encode_ordinary("".join(h))) for h in hints]
        names = {" " + (n.title.strip() or n.name) for n in vault.notes.values()}
        assert names & set(counts)  # a name counted on its own
