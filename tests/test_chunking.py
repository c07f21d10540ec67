import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from wikirag.lightrag.tokens import lightrag_tokenizer
from wikirag.markdown.chunking import chunk_text, heading_record, lightrag_chunking_func
from wikirag.markdown.payloads import mask_payloads

TOK = lightrag_tokenizer()


def test_a_short_note_is_one_chunk_with_its_whole_text():
    text = "Intro line.\n\n# Section\n\nBody text here."
    chunks = chunk_text(text, TOK, 600, 60)
    assert len(chunks) == 1
    assert chunks[0].content == text
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 5)


def test_chunks_respect_the_size_and_carry_their_heading_path():
    paragraph = "word " * 150
    text = f"# Top\n\n{paragraph}\n\n## Sub\n\n{paragraph}\n\n### Deeper\n\n{paragraph}"
    chunks = chunk_text(text, TOK, 200, 20)
    assert all(c.tokens <= 200 for c in chunks)
    assert [c.headings for c in chunks] == [["Top"], ["Top", "Sub"], ["Top", "Sub", "Deeper"]]
    assert [c.order for c in chunks] == [0, 1, 2]


def test_an_oversized_paragraph_is_windowed_with_overlap():
    text = " ".join(f"w{i}" for i in range(3000))
    chunks = chunk_text(text, TOK, 500, 50)
    assert len(chunks) > 1
    assert all(c.tokens <= 500 for c in chunks)
    # consecutive windows share their overlap: chunk 1 starts inside chunk 0's last 50 tokens
    first_word_of_next = chunks[1].content.split()[0]
    tail = TOK.decode(TOK.encode(chunks[0].content)[-50:])
    assert first_word_of_next in tail.split()
    assert first_word_of_next != chunks[0].content.split()[-1]


_WORDS = st.sampled_from(["alpha", "béta", "字符", "🫠ꙮ𝔘", "[[Link]]", "#", "\n", "\n\n", "  ", "```", "\ufffd"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, max_size=150), st.integers(min_value=24, max_value=48))
def test_each_chunk_knows_the_characters_it_covers(words, size):
    """A chunk's start/end are where its text lies: its lines for packed blocks, the window's own stretch for
    a windowed one, in order. Where a window boundary cuts a character (its tokens decode as U+FFFD), the
    stretch is exact to that one character."""
    text = " ".join(words)
    chunks = chunk_text(text, TOK, size, 8)
    whole = "\ufffd" not in "".join(TOK.decode([t]) for t in TOK.encode(text))  # no character spans tokens
    lines = text.split("\n")
    for c in chunks:
        span = text[c.start : c.end]
        if sum((d.start_line, d.end_line) == (c.start_line, c.end_line) for d in chunks) == 1:  # packed blocks
            assert span == "\n".join(lines[c.start_line - 1 : c.end_line])
        elif whole:
            assert span.strip() == c.content
        else:
            assert c.content.strip("\ufffd").strip() in text[max(0, c.start - 1) : c.end + 1]
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert [c.end for c in chunks] == sorted(c.end for c in chunks)


def test_windows_of_one_long_line_cover_stretches_of_it():
    """Characters cut between windows (U+FFFD in their texts) do not shift the windows after them."""
    text = "intro\n\n" + " ".join(f"w{i} 字符🫠" for i in range(2000))
    chunks = chunk_text(text, TOK, 100, 10)
    windows = chunks[1:]
    assert len(windows) > 20 and windows[0].start_line == windows[-1].end_line == 3
    assert sum("\ufffd" in c.content for c in windows) > 5
    for c in windows:
        assert c.content.strip("\ufffd").strip() in text[c.start - 1 : c.end + 1]
        assert c.end - c.start < 2 * len(c.content)
    assert windows[-1].end == len(text)


def test_headings_inside_code_fences_do_not_split():
    text = "# Real\n\n```\n# not a heading\n\nstill code\n```\n\nafter"
    chunks = chunk_text(text, TOK, 600, 60)
    assert [c.headings for c in chunks] == [["Real"]]


def test_empty_text_gives_no_chunks():
    assert chunk_text("", TOK) == []
    assert chunk_text("\n\n  \n", TOK) == []


def test_heading_record_puts_the_title_first():
    assert heading_record("Alan Turing", ["Life", "Early"]) == {
        "level": 2, "heading": "Early", "parent_headings": ["Alan Turing", "Life"]}
    assert heading_record("", []) is None


def test_lightrag_chunking_func_matches_chunk_text():
    text = "# A\n\n" + "alpha beta " * 400
    func = lightrag_chunking_func()
    produced = func(TOK, text, None, False, 60, 600)
    expected = chunk_text(text, TOK, 600, 60)
    assert [p["content"] for p in produced] == [c.content for c in expected]
    assert [p["tokens"] for p in produced] == [c.tokens for c in expected]


def test_a_body_h1_equal_to_the_title_is_not_repeated():
    assert heading_record("Bombe", ["Bombe", "Design"]) == {
        "level": 2, "heading": "Design", "parent_headings": ["Bombe"]}
    assert heading_record("Bombe", ["The machine"])["parent_headings"] == ["Bombe"]


_LINE = st.one_of(st.text(alphabet=st.sampled_from(list("#=-> \t\u00a0*1.aZ[]!`<%$~|&\\")), max_size=8),
                  st.from_regex(r"#{1,7}[ \t]?[a-z #%$`<|]{0,6}", fullmatch=True))


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=4))
@example(["# a #"])
@example(["#  x ##  "])
@example(["## x %% y %%"])
@example(["# a | b", "", "text"])
@example(["#tag line"])
@example(["####### seven"])
@example(["#\tTab `code` <!-- c -->"])
def test_first_heading_skips_the_layout_pass_only_where_no_heading_can_open(lines):
    """first_heading answers "" without the layout pass when no line opens with '#', '=' or '-' (after
    indentation and quote markers): the same answer as the layout pass's, for any opening paragraph."""
    from wikirag.markdown.chunking import first_heading
    from wikirag.markdown.layout import lay_out

    content = "\n".join(lines)
    end = content.find("\n\n")
    headings = lay_out(content if end < 0 else content[:end]).headings
    assert first_heading(content) == (headings[0][2].strip() if headings and headings[0][3] == 0 else "")


# A pasted image's data URI (markdown.payloads): cut to a stand-in in chunk content, the spans still on the text.
_B64 = __import__("base64").b64encode(bytes(range(256)) * 600).decode()  # 153,600 bytes: 204,800 characters
_PASTED = {
    "markdown image": f"![diagram](data:image/png;base64,{_B64})",
    "html img": f'<img alt="x" src="data:image/jpeg;base64,{_B64}">',
    "bare data uri": f"data:application/pdf;name=a.pdf;base64,{_B64} as pasted",
    "fenced code": f"```css\n.logo {{ background: url(data:image/png;base64,{_B64}); }}\n```",
    "bare base64 run": f"The key blob: {_B64}",
    "svg": "![](data:image/svg+xml," + "%3Cpath%20d%3D%22M0%200L10%2010%22%2F%3E" * 200 + ")",
    "svg, scheme in capitals": "![](Data:image/svg+xml," + "%3Cpath%20d%3D%22M0%200L10%2010%22%2F%3E" * 200 + ")",
}


@pytest.mark.parametrize("name", sorted(_PASTED))
def test_a_pasted_payload_is_cut_from_every_chunk_and_the_spans_keep_the_text(name):
    pasted = _PASTED[name]
    payload = _B64 if "svg" not in name else pasted[pasted.index(",") + 1 : -1]
    text = f"# Wiring\n\nThe [[Bombe]] wiring diagram.\n\n{pasted}\n\nWelchman chose the rotor order."
    chunks = chunk_text(text, TOK, 600, 60)
    assert len(chunks) == 1 and chunks[0].tokens < 60
    shown = chunks[0].content
    assert payload[:40] not in shown and "diagram." in shown and "rotor order." in shown
    assert ("…(base64 154KB)" if "run" in name else "…(8.0KB)" if "svg" in name else ";base64,…(154KB)") in shown
    assert text[chunks[0].start : chunks[0].end] == text  # the text's own lines and characters, payload and all
    assert (chunks[0].start_line, chunks[0].end_line) == (1, len(text.split("\n")))


def test_windows_around_a_payload_point_at_the_text_they_show():
    """A paragraph too long for one chunk, a payload in its middle: each window's characters are the text it
    shows, the window holding the stand-in covering the whole payload."""
    text = " ".join(f"w{i}" for i in range(1500)) + f" ![](data:image/png;base64,{_B64}) " + "tail " * 1500
    chunks = chunk_text(text, TOK, 500, 50)
    assert all(c.tokens <= 500 for c in chunks) and len(chunks) < 15  # the payload alone: ~300
    assert sum(";base64,…(154KB)" in c.content for c in chunks) >= 1
    for c in chunks:
        assert _B64[:40] not in c.content
        assert text[c.start : c.end].replace(_B64, "…(154KB)").strip() == c.content
    assert [c.start for c in chunks] == sorted(c.start for c in chunks) and chunks[-1].end == len(text)


def test_paragraphs_beside_a_payload_chunk_as_they_did_without_it():
    """Only the chunk holding the payload changes: the others keep their content, so their ids."""
    prose = "\n\n".join(f"Paragraph {i} " + "about the Bombe " * 40 for i in range(6))
    plain = chunk_text(prose, TOK, 300, 30)
    pasted = chunk_text(prose + f"\n\n![](data:image/png;base64,{_B64})", TOK, 300, 30)
    assert [c.content for c in pasted[: len(plain) - 1]] == [c.content for c in plain[:-1]]
    assert pasted[-1].content.endswith("![](data:image/png;base64,…(154KB))")


@pytest.mark.parametrize("text", [
    "data:,Hello%2C%20World and data:text/plain;base64,SGVsbG8= stay as written",  # short: readable, cheap
    "pi: 3." + "1415926535" * 500,  # digits alone
    "ACGT" * 500 + " a sequence", "=" * 2000,  # letters alone; a setext underline
    "metadata: " + "word " * 300,
])
def test_text_without_a_payload_chunks_exactly_as_before(text):
    from wikirag.markdown import chunking

    assert chunking.payloads(text) == []
    assert all(c.content in text for c in chunk_text(text, TOK, 600, 60))  # nothing cut


def test_ordinary_notes_chunk_byte_for_byte_as_before_payloads_were_cut():
    """Every sample and fixture note (and two windowed texts), at three sizes: the digest of every chunk's
    fields, taken with the chunker before payloads were cut. Their chunk ids stay what stores hold."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = sorted([*(root / "sample_vault").rglob("*.md"), *(root / "tests/fixtures/vaults").rglob("*.md")])
    texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
    texts += ["intro\n\n" + " ".join(f"w{i} 字符🫠" for i in range(2000)), "# A\n\n" + "alpha beta " * 400]
    digest = hashlib.sha1()
    for text in texts:
        for size, overlap in ((600, 60), (40, 8), (1200, 100)):
            for c in chunk_text(text, TOK, size, overlap):
                fields = (c.content, c.tokens, c.order, c.headings, c.start_line, c.end_line, c.start, c.end)
                digest.update(repr(fields).encode())
    assert len(texts) == 145
    # changed on purpose: obsidian-parity is new, and Quote then rule.md's heading inside a quote is no heading
    assert digest.hexdigest() == "b13c45b3c4a1f8b5a3b95f6f7ade5933ac2c83e7"


def _excalidraw(drawing: str, fence: str = "```") -> str:
    """An `.excalidraw.md` as the Excalidraw plugin saves it: text elements, then the scene compressed in a comment."""
    lines = [drawing[i : i + 256] for i in range(0, len(drawing), 256)]
    return ("---\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n---\n==⚠  Switch to EXCALIDRAW VIEW ==\n\n"
            "# Excalidraw Data\n\n## Text Elements\nRotor wiring diagram ^abc12345\n\nSee [[Enigma]] ^def67890\n\n"
            f"%%\n## Drawing\n{fence}compressed-json\n" + "\n\n".join(lines) + f"\n{fence}\n%%\n")


def test_an_excalidraw_drawing_is_cut_to_one_stand_in():
    """The drawing's 256-character lines were each too short to be a bare base64 run: a 150 KB drawing was about
    100,000 tokens of chunks, embedded and sent to the LLM; the drawing's text elements are what is worth reading."""
    text = _excalidraw(_B64)
    chunks = chunk_text(text, TOK, 1200, 100)
    assert len(chunks) == 1 and chunks[0].tokens < 600, [c.tokens for c in chunks]
    content = chunks[0].content
    assert "Rotor wiring diagram" in content and "[[Enigma]]" in content
    assert "compressed-json\n…(Excalidraw drawing, 154KB)\n```\n%%" in content and _B64[:256] not in content
    assert not any(line in content for line in (_B64[256 * k : 256 * (k + 1)] for k in range(len(_B64) // 256)))
    assert chunks[0].tokens < 100  # 184 when each of its 1,600 lines was left an empty one
    assert chunks[0].start_line == 1 and chunks[0].end_line >= text.count("\n")  # every line still in a chunk
    assert chunks[0].start == 0 and chunks[0].end >= len(text) - 1  # its characters: the drawing's too
    assert mask_payloads(text).count("Excalidraw drawing") == 1 and mask_payloads(text).count("\n") < 30
    assert mask_payloads(text, keep_lines=True).count("\n") == text.count("\n")  # routing reads line numbers


def test_a_drawing_the_layout_ends_early_is_cut_in_each_block_it_runs_into():
    """A longer fence closes the code block (CommonMark) but not the drawing's fence (the same fence alone): the
    drawing runs on through blocks the blank lines make. Its stand-in is in the first, the rest is cut from each."""
    lines = [_B64[256 * k : 256 * (k + 1)] for k in range(6)]
    text = "Before.\n\n```compressed-json\n" + "\n\n".join(lines[:3]) + "\n````\n" + "\n\n".join(lines[3:]) + "\n```\n"
    chunks = chunk_text(text, TOK, 1200, 100)
    assert len(chunks) == 1 and "```compressed-json\n…(Excalidraw drawing, " in chunks[0].content
    assert not any(line in chunks[0].content for line in lines) and chunks[0].content.endswith("\n```")
    assert (chunks[0].start, chunks[0].end, chunks[0].end_line) == (0, len(text), text.count("\n") + 1)
    small = chunk_text(text, TOK, 20, 2)  # the drawing's blocks after its first show nothing of it
    assert [c.content for c in small] == ["Before.", "```compressed-json\n…(Excalidraw drawing, 1.2KB)\n\n```"]
    assert [(c.start, c.end, c.start_line, c.end_line) for c in small] == [(0, 8, 1, 2), (9, len(text), 3, 16)]


def test_a_compressed_json_fence_of_prose_or_a_short_one_is_left_alone():
    prose = _excalidraw("", "~~~").replace("compressed-json\n\n~~~", "compressed-json\nnot base64, words\n~~~")
    assert mask_payloads(prose) == prose
    short = _excalidraw("QUJD" * 10)
    assert mask_payloads(short) == short  # 40 characters: under MIN_PAYLOAD


def test_an_excalidraw_drawing_saved_uncompressed_is_cut_to_one_stand_in():
    """With the plugin's compression off the scene is JSON, one key or value a line (its pasted images as data URIs
    in "files"): its lines one payload, its stand-in one line. A JSON example in a note stays."""
    import json

    scene = {"type": "excalidraw", "version": 2,
             "elements": [{"id": f"e{k}", "type": "rectangle", "x": k, "y": 2 * k} for k in range(300)],
             "files": {"f1": {"mimeType": "image/png", "dataURL": f"data:image/png;base64,{_B64}"}}}
    drawing = json.dumps(scene, indent="\t")
    text = _excalidraw("").replace("```compressed-json\n\n```", f"```json\n{drawing}\n```")
    chunks = chunk_text(text, TOK, 1200, 100)
    assert len(chunks) == 1 and chunks[0].tokens < 2000, [c.tokens for c in chunks]
    content = chunks[0].content
    assert "Rotor wiring diagram" in content and "```json\n…(Excalidraw drawing, 225KB)\n```\n%%" in content
    assert "rectangle" not in content and _B64[:100] not in content and chunks[0].tokens < 100  # 196 with empty lines
    listing = json.dumps({"type": "note", "items": list(range(200))}, indent=1)
    example = f"A config example:\n\n```json\n{listing}\n```\n"
    assert mask_payloads(example) == example
