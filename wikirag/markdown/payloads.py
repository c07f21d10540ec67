"""Encoded payloads in a note's text (a pasted image's base64 data URI, a long base64 run), and the short stand-in
that takes each one's place in what is chunked, embedded and read by the LLM.

Notes imported from Notion, Evernote or a web clipper, and some Obsidian plugins, paste images inline:
`![](data:image/png;base64,iVBOR…)`, `<img src="data:image/jpeg;base64,…">`, `data:image/svg+xml,%3Csvg…`. The
payload has no words in it: a 1 MB one was ~680,000 tokens, over 600 chunks of 1,200 tokens sent to the embedding
model (1 min 45 s) and, routed to extraction, to the LLM. Its stand-in keeps what a reader can use: the
`data:image/png;base64,` head as written, then `…(750KB)`, the size of the data (decoded, for base64). No spaces,
so a Markdown link holding it stays a link (searchable drops its target as before).

A base64 run may be broken into lines of one width (MIME's 76 characters, a PEM certificate's 64, at least 60),
the last no longer, `=` only at its end, indented or quoted alike: 1,000 characters in all with capitals, small
letters and digits in them (a hex dump, a DNA sequence, lines of one letter stay) are one payload, from its first
line's data to its last's. A PEM block's `-----BEGIN CERTIFICATE-----` and `-----END…` lines are no base64 and
stay: they say what the data was, as a data URI's head does.

An Excalidraw drawing (`.excalidraw.md`, one of the most used plugins) keeps its scene LZ-string compressed to
base64 in a `compressed-json` fence, broken into lines of 256 characters with a blank line between, which no rule
for a run can tell from prose: the fence's lines are one payload, `…(Excalidraw drawing, 150KB)`; so is a scene
saved uncompressed, in a `json` fence opening `{"type": "excalidraw"`. Its text elements, above the drawing, are
what is chunked.

Masked everywhere, fenced code included: bytes in a code block are no more readable than in prose, and a CSS
example's `url(data:…)` still shows its media type. Only the chunked copy changes; the note itself does not.
A stand-in is one line: a payload of many lines takes one in what is chunked and read. A reader of line numbers
(routing's sections) masks with `keep_lines`, which leaves each of its lines an empty one.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple

MIN_PAYLOAD = 100  # a shorter data URI (`data:,Hello`, a 1x1 GIF) costs little and may be readable
MIN_BARE_RUN = 1000  # a base64-looking run without `data:`: no word, no URL path (`.`, `-`) is this long
# data:[media type][;param=value…][;base64], then the payload up to what ends a URI in Markdown, HTML or CSS
_DATA_URI = re.compile(r"(?<![A-Za-z0-9+.-])data:([A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+)?((?:;[A-Za-z0-9.+_-]+"
                       r"(?:=[^;,:\s\"'()<>]*)?)*),([^\s\"'()<>\[\]`\\]+)", re.IGNORECASE)
# Excalidraw's `.excalidraw.md`: the scene compressed (LZ-string's base64 alphabet, a line of its own each) or, with
# the plugin's compression off, as JSON ({"type": "excalidraw", …}, one key or value a line)
_DRAWING_FENCE = re.compile(r"^(`{3,}|~{3,})(compressed-json|json)[ \t]*$", re.MULTILINE)
_SCENE = re.compile(r"\s*\{\s*\"type\"\s*:\s*\"excalidraw\"")
_DRAWING_LINES = {"compressed-json": re.compile(r"^[A-Za-z0-9+/=]+$", re.MULTILINE),
                  "json": re.compile(r"^.*\S.*$", re.MULTILINE)}
_DATA_SCHEME = re.compile("data:", re.IGNORECASE)  # schemes are case-insensitive: `Data:` too (RFC 3986)
_BARE_RUN = re.compile(rf"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{{{MIN_BARE_RUN},}}={{0,2}}(?![A-Za-z0-9+/=])")
_HALF = MIN_BARE_RUN // 2  # such a run covers one of the stretches [k·_HALF, (k+1)·_HALF) whole
_HALF_RUN = re.compile(rf"[A-Za-z0-9+/]{{{_HALF}}}")
_HALF_AREA = re.compile(rf"[A-Za-z0-9+/= \t\n>]{{{_HALF}}}")  # the same for a run broken into lines, quoted too
MIN_WRAP = 60  # a line of a run broken into lines: PEM's 64, OpenSSH's 70, MIME's 76
_QUOTED = r"[ \t>]*"  # indentation, quote markers: a mail quoted, a callout's code
_WRAPPED_LINE = re.compile(rf"^{_QUOTED}([A-Za-z0-9+/]{{{MIN_WRAP},}}={{0,2}})[ \t]*$", re.MULTILINE)
_LAST_LINE = re.compile(rf"{_QUOTED}([A-Za-z0-9+/]*={{0,2}})[ \t]*$", re.MULTILINE)
_FENCE_LINE = re.compile(r"^(`{3,}|~{3,})[ \t]*$", re.MULTILINE)  # what may close a drawing's fence
# base64 of real data mixes all three; a run of digits (pi to 5,000 places) or of letters (a DNA sequence) is content
_CLASSES = (re.compile("[A-Z]"), re.compile("[a-z]"), re.compile("[0-9]"))


class Payload(NamedTuple):
    start: int  # the payload's characters in the text
    end: int
    stand_in: str


def _size(n: int) -> str:
    if n < 1000:
        return f"{n}B"
    if n < 1_000_000:
        return f"{n / 1000:.0f}KB" if n >= 10_000 else f"{n / 1000:.1f}KB"
    return f"{n / 1_000_000:.1f}MB"


def _base64_bytes(payload: str) -> int:
    return len(payload) * 3 // 4 - len(payload) + len(payload.rstrip("="))


def _drawings(text: str) -> list[Payload]:
    """Each Excalidraw drawing (its scene, LZ-string compressed to base64 in a `compressed-json` fence and broken
    into lines of 256 characters with a blank line between, or uncompressed in a `json` fence, in a `%%` comment
    under `## Drawing`): one payload from its first line to its last, its stand-in one line naming the drawing."""
    found: list[Payload] = []
    closers: dict[str, tuple[list[int], list[int]]] | None = None  # fence -> where the lines of it alone lie
    pos = 0
    while opener := _DRAWING_FENCE.search(text, pos):
        pos = opener.end()
        if closers is None:  # one pass for every fence: each opener looking for its closer took 5 s on 725 KB
            closers = {}
            for line in _FENCE_LINE.finditer(text):
                starts, ends = closers.setdefault(line.group(1), ([], []))
                starts.append(line.start())
                ends.append(line.end())
        starts, ends = closers.get(opener.group(1), ([], []))
        k = bisect_right(starts, pos)
        if k == len(starts):
            continue
        start, end, pos = pos + 1, starts[k], ends[k]
        compressed = opener.group(2) == "compressed-json"
        if not compressed and not _SCENE.match(text, start, end):
            continue  # a JSON example in a note, not a drawing's scene
        lines = list(_DRAWING_LINES[opener.group(2)].finditer(text, start, end))
        if sum(m.end() - m.start() for m in lines) < MIN_PAYLOAD:
            continue
        size = _size(sum(_base64_bytes(m.group()) if compressed else len(m.group()) for m in lines))
        found.append(Payload(lines[0].start(), lines[-1].end(), f"…(Excalidraw drawing, {size})"))
    return found


def _wrapped(text: str) -> list[Payload]:
    """Each base64 run broken into lines (MIME's 76 characters, PEM's 64, ...): one payload from its first line's
    data to its last's. A PEM block's `-----BEGIN CERTIFICATE-----` armour stays, naming what the data was."""
    found: list[Payload] = []
    run: list[tuple[int, int]] = []  # the data of each line of the run being read
    width = after = 0  # the run's line width; where its last line ends

    def close() -> None:
        nonlocal after
        if run and run[-1][1] - run[-1][0] == width and text[run[-1][1] - 1] != "=":  # a last line under MIN_WRAP?
            last = _LAST_LINE.match(text, after + 1)
            short = last.end(1) - last.start(1) if last else 0
            # padded base64 comes in fours: a word on the line after ("Thanks") is mostly not its end
            if 0 < short < width and (width * len(run) + short) % 4 == 0:
                run.append(last.span(1))
                after = last.end()
        data = "".join(text[a:b] for a, b in run)
        if len(run) > 1 and len(data) >= MIN_BARE_RUN and all(c.search(data) for c in _CLASSES):
            found.append(Payload(run[0][0], run[-1][1], f"…(base64 {_size(_base64_bytes(data))})"))
        run.clear()

    for line in _WRAPPED_LINE.finditer(text):
        a, b = line.span(1)
        if run and (line.start() != after + 1 or b - a > width):  # not the next line, or wider: another run
            close()
        if not run:
            width = b - a
        run.append((a, b))
        after = line.end()
        if b - a < width or text[b - 1] == "=":  # a shorter line, or padding, is a run's last
            close()
    close()
    return found


def _without(found: list[Payload], more: list[Payload]) -> list[Payload]:
    """`found` and those of `more` that overlap none of it, in order (both in order, neither overlapping itself)."""
    ends = [p.end for p in found]
    kept = []
    for p in more:
        k = bisect_right(ends, p.start)
        if not (k < len(found) and found[k].start < p.end):
            kept.append(p)
    return sorted(found + kept) if kept else found


def payloads(text: str) -> list[Payload]:
    """Each payload in `text` with its stand-in, in order, none overlapping."""
    found: list[Payload] = _drawings(text) if "compressed-json" in text or '"excalidraw"' in text else []
    if _DATA_SCHEME.search(text):
        drawn = [(p.start, p.end) for p in found]  # an uncompressed scene's embedded images: in its payload already
        for m in _DATA_URI.finditer(text):
            payload = m.group(3)
            k = bisect_right(drawn, (m.start(3), len(text))) - 1
            if len(payload) >= MIN_PAYLOAD and not (k >= 0 and drawn[k][1] > m.start(3)):
                size = _base64_bytes(payload) if m.group(2).lower().endswith(";base64") else len(payload)
                found.append(Payload(m.start(3), m.end(), f"…({_size(size)})"))
        found.sort()  # after the drawings, which hold no `data:`
    # the stretches first: in prose each fails within a word, or a sentence, ~1 ms a MB where the scans took 35
    stretches = range(0, len(text) - _HALF + 1, _HALF)
    if len(text) < MIN_BARE_RUN or not any(_HALF_AREA.match(text, k) for k in stretches):
        return found
    found = _without(found, _wrapped(text))  # a drawing's or a data URI's own payload may be a run too: it stays one
    if any(_HALF_RUN.match(text, k) for k in stretches):
        found = _without(found, [Payload(m.start(), m.end(), f"…(base64 {_size(_base64_bytes(m.group()))})")
                                 for m in _BARE_RUN.finditer(text) if all(c.search(m.group()) for c in _CLASSES)])
    return found


def counted_body(body: str) -> str:
    """A note body as its token count (`body_tokens`) and routing read it: stripped, payloads cut, as chunked."""
    return mask_payloads(body.strip())


def mask_payloads(text: str, keep_lines: bool = False) -> str:
    """`text` with each payload replaced by its stand-in (`text` itself when it holds none); `keep_lines`: each
    line a payload held still a line (empty), for a reader of line numbers."""
    spans = payloads(text)
    if not spans:
        return text
    parts, at = [], 0
    for p in spans:
        parts += (text[at : p.start], p.stand_in + ("\n" * text.count("\n", p.start, p.end) if keep_lines else ""))
        at = p.end
    parts.append(text[at:])
    return "".join(parts)
