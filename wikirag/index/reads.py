"""Whole-vault reads for `cost-estimate` and `stats`, sharing the index's parse cache.

When the vault has been indexed, its store holds every note's parse, body token count, digest and stat data
(index.parsecache): notes unchanged since are neither read, parsed nor tokenised again. Read only: these
commands never create or change a store. Attachments are only listed by the scan (never opened).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wikirag.index.parsecache import load_parse_cache
from wikirag.lightrag.tokens import get_encoding
from wikirag.settings import WikiragConfig
from wikirag.vault.model import Vault


def read_vault(config: WikiragConfig, exclude: Sequence[str] | None = None) -> tuple[Vault, dict[str, int]]:
    """The parsed vault and each note's body tokens (as routing counts them), from the cache where valid."""
    cache = load_parse_cache(config.workspace_dir, config.index.encoding)
    vault = Vault.load(config.vault, exclude=config.exclude if exclude is None else exclude,
                       parsed={p: (d, n) for p, (d, n, _) in cache.items()}, trusted=cache.stats)
    encoder = get_encoding(config.index.encoding)
    tokens = {p: cached[2] if (cached := cache.get(p)) and cached[0] == vault.digests[p]
              else len(encoder.encode_ordinary(note.body.strip())) for p, note in vault.notes.items()}
    return vault, tokens


def estimate_cost(config: WikiragConfig, values: dict[str, Any] | None = None) -> Any:
    """`wikirag cost-estimate`: plan.cost.estimate_for_config on the cached read of the vault."""
    from wikirag.plan.cost import estimate_for_config

    vault, tokens = read_vault(config)
    return estimate_for_config(config, values, vault=vault, body_tokens=tokens)

