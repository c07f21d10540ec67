"""How a run is asked to stop: SIGTERM and Ctrl-C set an event the pipeline reads between note batches.

Kept apart from watch.py so that `index`, which stops the same way, does not import watchdog.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def stop_on_signals(again: Callable[[int], None] | None = None, first: Callable[[], None] | None = None,
                    at_once: tuple[int, ...] = ()) -> Iterator[threading.Event]:
    """An event set by SIGTERM (systemd, launchd, Docker, supervisors) and SIGINT, so `watch` finishes the
    batch in flight (or stops between its note batches), releases its lock and exits cleanly. SIGINT is
    handled too because a shell starts background jobs with SIGINT ignored, and Ctrl-C must still work in a
    terminal. `first` is called on the first signal, `again(signum)` on any later one and on the first of
    `at_once` (`index` stops at once then, and at SIGTERM). Only the main thread may set signal handlers;
    elsewhere the event is returned untouched."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handle(signum: int, frame: object) -> None:
        if again is not None and (stop.is_set() or signum in at_once):
            again(signum)
        elif not stop.is_set():
            stop.set()
            if first is not None:
                first()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
