"""The cyclic garbage collector around big loads: paused while a vault, a ledger or a cache is built (millions of
long-lived objects, no cycles), and told to leave a big run's long-lived objects alone until the run ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Loading allocates millions of long-lived objects and makes no reference cycles; the cyclic
    collector would rescan the growing heap again and again (a quarter of load time). Pause it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Everything allocated meanwhile sits in the youngest generation, so the first allocation
            # after `enable` would trace all of it (~0.25 s for 10k notes). freeze + unfreeze moves it
            # to the oldest generation in O(1) instead; a full collection still visits it later. When a
            # caller has frozen objects on purpose (`freeze_long_lived`), unfreezing would hand them all back
            # to the collector (a 1.5-million-object full collection): keep everything frozen then.
            gc.freeze()
            if not _KEEP_FROZEN:
                gc.unfreeze()
            gc.enable()


_KEEP_FROZEN = False  # set by freeze_long_lived (gc.get_freeze_count() walks the whole frozen list: slow)


def freeze_long_lived() -> None:
    """Move every object alive now out of the collector's reach for good (`gc.freeze`), and keep later
    `cyclic_gc_paused` blocks from unfreezing them: for a big run whose vault, ledger and stores live to
    its end (index.run). Reference counting still frees them; only cycles among them would stay."""
    global _KEEP_FROZEN
    gc.freeze()
    _KEEP_FROZEN = True


def thaw_long_lived() -> None:
    """Undo `freeze_long_lived` at the end of a run: what it froze and has since dropped in cycles becomes
    collectable again (a process that runs again, such as `watch` between its batches, must not leak)."""
    global _KEEP_FROZEN
    if _KEEP_FROZEN:
        gc.unfreeze()
        _KEEP_FROZEN = False
