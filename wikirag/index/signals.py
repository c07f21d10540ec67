"""How a run is asked to stop: SIGTERM and Ctrl-C set an event the pipeline reads between note batches.

Kept apart from watch.py so that `index`, which stops the same way, does not import watchdog.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def stop_on_signals(again: Callable[[], None] | None = None,
                    first: Callable[[], None] | None = None) -> Iterator[threading.Event]:
    """An event set by SIGTERM (systemd, launchd, Docker, supervisors) and SIGINT, so `watch` finishes the
    batch in flight (or stops between its note batches), releases its lock and exits cleanly. SIGINT is
    handled too because a shell starts background jobs with SIGINT ignored, and Ctrl-C must still work in a
    terminal. `first` is called on the first signal, `again` on any later one (`index` stops at once then).
    Only the main thread may set signal handlers; elsewhere the event is returned untouched."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handle(signum: int, frame: object) -> None:
        if stop.is_set() and again is not None:
            again()
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
