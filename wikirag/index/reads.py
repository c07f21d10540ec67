"""Whole-vault reads for `cost-estimate` and `stats`, sharing the index's parse cache.

When the vault has been indexed, its store holds every note's parse, body token count, digest and stat data
(index.parsecache): notes unchanged since are neither read, parsed nor tokenised again. Read only: these
commands never create or change a store. Attachments are only listed by the scan (never opened).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wikirag.index.parsecache import ParseCache, load_parse_cache
from wikirag.lightrag.tokens import get_encoding
from wikirag.markdown.payloads import counted_body
from wikirag.settings import WikiragConfig
from wikirag.vault.memory import cyclic_gc_paused
from wikirag.vault.model import Vault
from wikirag.vault.read import read_note_files


def read_vault(config: WikiragConfig, exclude: Sequence[str] | None = None, cache: ParseCache | None = None,
               texts: dict[str, str] | None = None) -> tuple[Vault, dict[str, int]]:
    """The parsed vault and each note's body tokens (as routing counts them), from the cache where valid;
    `texts` receives the files read cleanly (Vault.load)."""
    with cyclic_gc_paused():
        cache = cache if cache is not None else load_parse_cache(config.workspace_dir, config.index.encoding)
        vault = Vault.load(config.vault, exclude=config.exclude if exclude is None else exclude,
                           parsed={p: (d, n) for p, (d, n, _) in cache.items()}, trusted=cache.stats, texts=texts,
                           store=config.store, templates=config.index.templates)
        encoder = None
        tokens = {}
        for p, note in vault.notes.items():
            cached = cache.get(p)
            if cached and cached[0] == vault.digests[p]:
                tokens[p] = cached[2]
            else:  # tiktoken's table loads only when a note changed since the cache was written
                encoder = encoder or get_encoding(config.index.encoding)
                tokens[p] = len(encoder.encode_ordinary(counted_body(note.body)))
        return vault, tokens


def estimate_cost(config: WikiragConfig, values: dict[str, Any] | None = None) -> Any:
    """`wikirag cost-estimate`: plan.cost.estimate_for_config on the cached read of the vault. A model named
    with its provider is checked as `index` checks it: `opnai:gpt-4o-mini` was priced as gpt-4o-mini."""
    from wikirag.llm.spec import parse_llm_spec
    from wikirag.plan.cost import estimate_for_config
    from wikirag.plan.cost_settings import CostSettings

    model = CostSettings.from_config(config, values).model  # the flag's, else [cost]'s, else the LLM's
    if model and ":" in model:
        parse_llm_spec(model)  # a ConfigError naming the providers there are

    with cyclic_gc_paused():  # a million long-lived objects (vault, per-note rows), no cycles: see vault.model
        cache = load_parse_cache(config.workspace_dir, config.index.encoding)
        texts: dict[str, str] = {}  # the raw files for the stock-LightRAG scenario: those the cache spared are read
        vault, tokens = read_vault(config, cache=cache, texts=texts)
        # ... but for a note without frontmatter the file is its body (parse_note takes the whole normalised
        # text as body), which the estimate uses for a note missing here
        texts.update(read_note_files(vault, [p for p, note in sorted(vault.notes.items())
                                             if p not in texts and note.body_line_offset]))
        return estimate_for_config(config, values, vault=vault, body_tokens=tokens,
                                   figures=cache.valid_figures(vault.digests), texts=texts)

