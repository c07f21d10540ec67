"""A base64 run broken into lines (markdown.payloads): a PEM block, MIME's 76-character lines pasted from a mail.
Each line was under the 1,000 characters of a bare run, so all of it was chunked, embedded and read by the LLM."""

import base64
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikirag.lightrag.tokens import lightrag_tokenizer
from wikirag.markdown.chunking import chunk_text
from wikirag.markdown.payloads import Payload, mask_payloads, payloads

TOK = lightrag_tokenizer()
_RANDOM = random.Random(5)
_CERT = base64.b64encode(_RANDOM.randbytes(1190)).decode()  # 1,588 characters, one `=`
_MAIL = base64.b64encode(_RANDOM.randbytes(2998)).decode()  # 4,000 characters, `==`


def _wrap(data: str, width: int, indent: str = "") -> str:
    return "\n".join(indent + data[i : i + width] for i in range(0, len(data), width))


_PEM = f"-----BEGIN CERTIFICATE-----\n{_wrap(_CERT, 64)}\n-----END CERTIFICATE-----"


def test_a_pem_block_is_one_stand_in_between_its_armour_lines():
    """24 lines of 64 characters and a last of 52: the armour says what the data was, and stays."""
    text = f"# Certs\n\nThe lab's root certificate:\n\n```\n{_PEM}\n```\n\nRenew it in May."
    chunks = chunk_text(text, TOK, 600, 60)
    assert [c.content for c in chunks] == [
        "# Certs\n\nThe lab's root certificate:\n\n```\n-----BEGIN CERTIFICATE-----\n…(base64 1.2KB)\n"
        "-----END CERTIFICATE-----\n```\n\nRenew it in May."]
    assert (chunks[0].start, chunks[0].end, chunks[0].end_line) == (0, len(text), text.count("\n") + 1)
    assert payloads(text) == [Payload(text.index(_CERT[:64]), text.index(_CERT[-52:]) + 52, "…(base64 1.2KB)")]
    assert mask_payloads(text, keep_lines=True).count("\n") == text.count("\n")  # routing reads line numbers


@pytest.mark.parametrize(("data", "width", "indent", "size"), [
    (_MAIL, 76, "", "3.0KB"),  # MIME: 52 lines of 76 and a last of 48, ending `==`
    (_MAIL[:1520], 76, "", "1.1KB"),  # 20 whole lines, no shorter last one
    (_MAIL, 64, "    ", "3.0KB"),  # indented: code, or a list item's
    (_MAIL, 76, "> ", "3.0KB"),  # a mail quoted
    (_MAIL[:1300], 1000, "", "975B"),  # lines a bare run each: one payload for both
])
def test_a_run_broken_into_lines_of_one_width_is_one_payload(data, width, indent, size):
    wrapped = _wrap(data, width, indent)
    text = f"- Pasted from the mail:\n{wrapped}\nSent from my phone.\n"
    start = text.index(data[:width])
    assert payloads(text) == [Payload(start, start + len(wrapped) - len(indent), f"…(base64 {size})")]
    assert mask_payloads(text) == f"- Pasted from the mail:\n{indent}…(base64 {size})\nSent from my phone.\n"


def test_a_word_after_a_run_of_whole_lines_stays():
    """A run that fills its last line: the line after it is no part of it unless it brings the run to a whole
    number of fours, as padded base64 is."""
    wrapped = _wrap(_MAIL[:1520], 76)
    for after, cut in (("Thanks", False), ("Best", True), ("QUJD", True), ("QUJDRA", False)):
        text = f"{wrapped}\n{after}\n\nRenew in May."
        assert mask_payloads(text) == ("…(base64 1.1KB)" if cut else f"…(base64 1.1KB)\n{after}") + "\n\nRenew in May."


def test_windows_around_a_broken_run_point_at_the_text_they_show():
    """A code block too long for one chunk, a run broken into lines in its middle: each window's characters are
    the text it shows, the window holding the stand-in covering the whole run."""
    code = "\n".join(f"x{i} = f(x{i - 1}, {i})" for i in range(1, 400))
    wrapped = _wrap(_MAIL, 76)
    text = f"```python\n{code}\nKEY = '''\n{wrapped}\n'''\n{code}\n```"
    chunks = chunk_text(text, TOK, 300, 30)
    assert sum("…(base64 3.0KB)" in c.content for c in chunks) == 1
    for c in chunks:
        assert _MAIL[:40] not in c.content and _MAIL[-40:] not in c.content
        assert text[c.start : c.end].replace(wrapped, "…(base64 3.0KB)").strip() == c.content
    assert [c.start for c in chunks] == sorted(c.start for c in chunks) and chunks[-1].end == len(text)


_HEX = _RANDOM.randbytes(1200).hex()
_DNA = "".join(_RANDOM.choice("ACGT") for _ in range(2400))


@pytest.mark.parametrize("text", [
    ("a" * 76 + "\n") * 20,  # one letter
    ("Ab1" * 25 + "\n") * 10,  # under 1,000 characters
    _wrap(_HEX, 64), _wrap(_HEX.upper(), 64),  # a hex dump: no capitals, no small letters
    _wrap(_DNA, 60), _wrap("".join(_RANDOM.choice("ACGTacgt") for _ in range(2400)), 60),  # FASTA: no digits
    "\n".join(_MAIL[i : i + (60, 70, 80, 75, 65)[i // 80 % 5]] for i in range(0, 4000, 80)),  # widths vary
    "\n".join(base64.b64encode(_RANDOM.randbytes(64)).decode() for _ in range(30)),  # digests: `==` on each
    "\n\n".join(_MAIL[i : i + 76] for i in range(0, 4000, 76)),  # a blank line between
    "\n".join(f"https://example.org/{_MAIL[i : i + 60]}" for i in range(0, 4000, 60)),  # links
    "\n".join(f"| {_MAIL[i : i + 60]} | {i} |" for i in range(0, 4000, 60)),  # a table
    ("The rotor order was chosen again after the intercepts were read by the watch at the hut\n" * 30),
])
def test_lines_that_are_no_broken_run_are_left_alone(text):
    assert payloads(text) == [] and mask_payloads(text) == text
    assert all(c.content in text for c in chunk_text(text, TOK, 600, 60))


_PIECES = st.sampled_from([_MAIL[i : i + 76] + "\n" for i in range(0, 1520, 76)] + [
    _wrap(_MAIL[:1064], 76) + "\n", _wrap(_MAIL[:532], 76) + "\n", _MAIL[-48:] + "\n", "> ", "    ", "\n",
    "# Heading\n", "Prose, and a [[Link]].\n", "```\n", "````\n", "```compressed-json\n",
    "-----BEGIN CERTIFICATE-----\n", "Thanks\n", "==\n"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=60))
def test_chunks_show_the_text_each_payload_cut_to_its_stand_in_once(pieces):
    """Runs broken into lines, drawings, fences and headings in any order: the chunks (none windowed) hold the
    text as masked, each stand-in once, none of a payload's lines; their lines are the text's."""
    text = "".join(pieces)
    found = payloads(text)
    chunks = chunk_text(text, TOK, 8000, 100)
    shown = "".join(c.content for c in chunks)
    assert re.sub(r"\s", "", shown) == re.sub(r"\s", "", mask_payloads(text))
    assert shown.count("…(") == len(found)
    lines = text.split("\n")
    for c in chunks:
        assert text[c.start : c.end] == "\n".join(lines[c.start_line - 1 : c.end_line])
    assert mask_payloads(text, keep_lines=True).count("\n") == text.count("\n")
