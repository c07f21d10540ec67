"""Per-note pieces of a cost estimate that the settings an alternative varies do not change.

`cost-estimate` prices a vault three times: the routed plan, then one setting away (the other routing policy,
no packing; gleaning on or off comes from the plan's own pass: scenarios.toggled_gleaning). Each pass cut
every note into chunks (the structure pass and a tokenizer call for its breadcrumb), found the names in its
sentences and counted its hint header: the same work, over and over. One `EstimateMemo` shared by the passes
does each once per note (and per chunk settings), and so do the summary model's entity names and per-note
link descriptions; `TokenCounts` counts each distinct text once (hint headers, packs, descriptions and
record names recur from pass to pass).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from wikirag.plan.chunk_plans import ChunkPlanner, PlannedChunk
from wikirag.plan.mentions import sentence_names


class EstimateMemo:
    def __init__(self) -> None:
        self._plans: dict[tuple, list[PlannedChunk]] = {}
        self._names: dict[Any, list[list[str]]] = {}
        self._hints: dict[tuple, int] = {}
        self._shared: dict[Any, Any] = {}

    def plan(self, planner: ChunkPlanner, path: Any, body: str, tokens: int, title: str) -> list[PlannedChunk]:
        """planner.wikirag(body, tokens, title), once per note and chunk settings (the chunks are shared:
        callers only ever set a chunk's `names` to what `sentence_names` gives)."""
        s = planner.s
        key = (path, tokens, s.chunk_token_size, s.chunk_overlap_token_size, s.section_context, s.encoding,
               planner.sizes.max_section_tokens)
        found = self._plans.get(key)
        if found is None:
            found = self._plans[key] = planner.wikirag(body, tokens, title)
        return found

    def names(self, path: Any, text: str) -> list[list[str]]:
        """sentence_names(text), once per `path` (a note's path for its body, or a pack's key)."""
        found = self._names.get(path)
        if found is None:
            found = self._names[path] = sentence_names(text)
        return found

    def hint(self, path: Any, key: Any, count: Callable[[], int]) -> int:
        """A count (hint tokens, by default) for `path` under `key`: `count()` the first time only."""
        found = self._hints.get((path, key))
        if found is None:
            found = self._hints[(path, key)] = count()
        return found

    def shared(self, key: Any, make: Callable[[], Any]) -> Any:
        """`make()` once per `key`; the callers treat what it returns as read-only."""
        found = self._shared.get(key)
        if found is None:
            found = self._shared[key] = make()
        return found

    def token_counts(self, enc: Any) -> TokenCounts:
        """One count per distinct text for this encoder, shared by the passes."""
        return self.shared(("tokens", id(enc)), lambda: TokenCounts(enc))  # TokenCounts keeps enc alive


# A text splits into its tokenizer's pieces (the encoding's regex) before BPE, and no piece of these
# encodings runs past a newline into a following letter, digit or '-' (a piece holds a newline only at its
# end, and only punctuation's trailing `[\r\n/]*` could take a '/'; the lookaheads see whitespace only).
# So a text cut right after such newlines counts the sum of its parts' counts: the fixed lines of hint
# headers and the member notes of packs are counted once, however many texts they recur in. Other
# encodings are counted whole. tests/test_cost.py checks the sum against direct counting.
_LINE_SPLIT_ENCODINGS = frozenset({"o200k_base", "cl100k_base"})
_LINE_START = re.compile(r"(?<=\n)(?=[A-Za-z0-9-])")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_LINE_START_CHARS = _ALNUM | {"-"}
_AFTER_ALNUM = frozenset("\n,")  # a piece holds neither right after a letter or digit (see concat)


class TokenCounts(dict):
    """text -> its token count (`len(enc.encode_ordinary(text))`), counted on first lookup only."""

    def __init__(self, enc: Any) -> None:
        super().__init__()
        self.enc = enc
        self.by_line = getattr(enc, "name", None) in _LINE_SPLIT_ENCODINGS
        self.parts: dict[str, int] = {}

    def __missing__(self, text: str) -> int:
        if not self.by_line or "\n" not in text:
            count = len(self.enc.encode_ordinary(text))
        else:
            count = 0
            parts = self.parts
            for part in _LINE_START.split(text):
                found = parts.get(part)
                if found is None:
                    found = parts[part] = len(self.enc.encode_ordinary(part))
                count += found
        self[text] = count
        return count

    def concat(self, parts: Sequence[str]) -> int:
        """The count of `"".join(parts)`, summed from the counts of its runs of parts. A part starts a new run
        where the text may be cut before it: a part starting with a space after one ending in a non-space (no
        piece of these encodings holds a space after anything but whitespace, except at its start: see
        `join`), a part starting with a letter, digit or '-' after a newline (see above), or one starting with
        a newline or a comma after an ASCII letter or digit (a piece holding a letter or digit goes on only with
        letters, marks or an apostrophe's contraction; one of punctuation or whitespace holds neither);
        elsewhere it is glued to the run. Hint headers come as parts (a name, the fixed words around it), so
        each name is counted once however many headers and lines repeat it."""
        if not self.by_line:
            return self["".join(parts)]
        total = 0
        run = ""
        for part in parts:
            first = part[:1]
            if run and ((first == " " and not run[-1].isspace()) or (run[-1] == "\n" and first in _LINE_START_CHARS)
                        or (first in _AFTER_ALNUM and run[-1] in _ALNUM)):
                total += self[run]
                run = part
            else:
                run += part
        return total + self[run] if run else total

    def join(self, texts: Sequence[str], sep: str = "\n\n") -> int:
        """The count of `sep.join(texts)` (a pack's title lines and member texts), summed from the texts' own
        counts. A text after a newline is cut from what precedes it when it starts with neither whitespace
        nor '/' (see above); a text followed by `sep` is counted again only from its last space that follows
        a non-space on (no piece of these encodings holds a space after anything but whitespace, except at
        its start), so a long member text known already is not counted again."""
        if not (self.by_line and sep.endswith("\n") and all(t and not t[0].isspace() and t[0] != "/"
                                                             for t in texts[1:])):
            return self[sep.join(texts)]
        total = self[texts[-1]] if texts else 0
        for text in texts[:-1]:
            cut = text.rfind(" ")
            if len(text) < 64 or cut <= 0 or text[cut - 1].isspace():
                first = text.find(" ")  # a title line ("# " and a name): the name's count is known already
                total += self.concat((text[:first], text[first:], sep) if first > 0 else (text, sep))
            else:
                tail = text[cut:]
                total += self[text] - self[tail] + self[tail + sep]
        return total
