"""The watchdog observers a `watch` follows the vault with (`Watches`), and what it tells watchdog: the absolute
vault path, a recursion limit for deep vaults, quiet for its two messages that are no error of the watch.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from watchdog.observers import Observer

from wikirag.index.watch_events import SETTINGS_FILES, EventCollector, settings_folder


def _watching(collector: EventCollector, vault: Path) -> Any:
    """A started observer following the vault, with an inotify instance of its own."""
    observer = Observer()
    try:
        _schedule(observer, collector, vault)
        observer.start()
    except BaseException:
        observer.stop()  # its reader thread, started by the first schedule
        raise
    return observer


class Watches:
    """The observer following the vault, and those it replaced while they report what they still hold.

    Watchdog's inotify emitter holds a folder's move out for 0.5 s, waiting for a move in to pair it with, and
    with it every event read after it: an observer stopped at once loses them (seed 4054: `projects/` moved out
    of the vault and another made in its place, their events held when the watches were made again). A
    replaced observer runs on for RETIRE_SECONDS; meanwhile both report, and the collector keeps each path once.
    """

    RETIRE_SECONDS = 2.0

    def __init__(self, collector: EventCollector, vault: Path) -> None:
        self.collector, self.vault = collector, vault
        self.observer = _watching(collector, vault)
        self.retired: list[tuple[float, Any]] = []  # (when to stop it, observer)

    def again(self) -> bool:
        """Watch the vault again (EventCollector.take_rewatch) with a new observer, started before the old one
        stops; True where events may have been lost, so the vault must be read whole: where inotify's per-user
        limits lend no second instance or not twice the watches, the watch is made again in place."""
        try:
            fresh = _watching(self.collector, self.vault)
        except OSError as exc:  # EMFILE, ENOSPC
            logging.getLogger(__name__).warning("watching the vault again in place (%s)", exc)
            self.again_in_place()
            return True
        self.retired.append((time.monotonic() + self.RETIRE_SECONDS, self.observer))
        self.observer = fresh
        return False

    def again_in_place(self) -> None:
        """Watch the vault again in the same observer: the events it held are lost."""
        self.observer.unschedule_all()
        _schedule(self.observer, self.collector, self.vault)

    def stop_retired(self, now: float) -> None:
        """Stop the replaced observers whose time is up by `now`."""
        for entry in [entry for entry in self.retired if entry[0] <= now]:
            self.retired.remove(entry)
            entry[1].stop()
            entry[1].join(timeout=5)

    def stop(self) -> None:
        self.retired.append((0.0, self.observer))
        self.stop_retired(time.monotonic())


def _schedule(observer: Any, collector: EventCollector, vault: Path) -> None:
    """Watch the vault folder, and `.obsidian` too when it is a symlink out of the vault (its app.json holds
    the Excluded files, its templates.json and Templater's data.json the template folders, and the vault's
    recursive watch does not follow the link)."""
    _room_for_deep_walks()
    # The absolute path: watchdog's inotify tree dropped every subfolder of a relative root such as "."
    # ("Path b'./people' is not under watched root b'.'"), so `wikirag watch .` missed their saves.
    observer.schedule(collector, str(vault.resolve()), recursive=True)
    settings = settings_folder(vault)
    if settings is not None:
        observer.schedule(collector, settings, recursive=False)
        for rel in SETTINGS_FILES:  # Templater's folder, where it is there
            folder = os.path.dirname(os.path.join(settings, *rel.split("/")[1:]))
            if folder != settings and os.path.isdir(folder):
                observer.schedule(collector, folder, recursive=False)
    collector.follow_settings(settings)  # the same folder: a replaced vault's link may point elsewhere


# A path's bytes past which os.scandir refuses it (Linux's PATH_MAX; less on macOS), so a walk of full paths
# ends within half as many folders: each adds a slash and a name of at least one byte.
_PATH_MAX = 4096


def _room_for_deep_walks() -> None:
    """Let watchdog's walks reach the deepest folder a path can name. Its inotify emitter adds a recursive watch's
    folders with os.walk, which in Python 3.11 takes a frame per level (3.12's keeps a stack): a vault ~1,000
    folders deep passed the recursion limit, at start and in the emitter's thread for a deep folder moved in.
    The limit is raised for the process, by the 2,048 levels a walk can take past the default (their C stack,
    ~1 MB, fits a thread's 8 MB); it is never lowered."""
    if sys.version_info < (3, 12):
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000 + _PATH_MAX // 2))


_INOTIFY_SHUTDOWN = "InotifyEmitter.queue_events() called when the thread is inactive"


class _InotifyShutdownFilter(logging.Filter):
    """Drops watchdog's ERROR line for an event read that races the observer's stop: the emitter thread,
    already stopped, just returns with no events (watchdog PR #963 chose to log it). It is not an error of
    the watch, and a user stopping `wikirag watch` should not see one. Every other message passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_INOTIFY_SHUTDOWN)


# What watchdog says as a folder moved out of the vault comes straight back: the watch it keeps for it is about to
# be dropped, and the watch loop makes its watches again (EventCollector.take_rewatch). Nothing for a user to do.
warnings.filterwarnings("ignore", message="Callback with id .* already exists for watch", category=RuntimeWarning,
                        module=r"watchdog\.")

_INOTIFY_LOGGER = logging.getLogger("watchdog.observers.inotify")
if not any(isinstance(f, _InotifyShutdownFilter) for f in _INOTIFY_LOGGER.filters):
    _INOTIFY_LOGGER.addFilter(_InotifyShutdownFilter())
