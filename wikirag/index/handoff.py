"""`wikirag index` hands its run to the `wikirag watch` (or `mcp --watch`) that is writing the store.

A watch holds the store's writer lock for as long as it runs, so an `index` beside it could only be refused.
Instead the watch listens on a local socket, and a plain `wikirag index` of the same vault, with the same
settings and the same wikirag, asks it to bring the index up to date now. The watch takes its pending events
and a stat scan of the vault (what changed since its last look, including what its events have not delivered
yet: the request may arrive before the kernel's event for a save just made) as one batch, and answers with
that batch's report. The run costs what a watch batch costs, with the vault, ledger and LightRAG already in
memory, instead of a new process's imports and whole-vault work.

The socket: on Linux in the abstract namespace (no file to leave behind when a watch is killed; a peer of
another user is refused by its credentials, at either end: `index` trusts no answer from another user's
socket bound to the name first); elsewhere a file in the workspace folder that only its owner may
open, or, where that path passes 100 bytes (a deep iCloud vault on macOS), a file in a folder of this user's
own under the temporary folder; none on Windows, where `index` is refused by the lock as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from wikirag.errors import StoreLocked, WikiragError
from wikirag.index.report import IndexReport
from wikirag.settings import WikiragConfig
from wikirag.vault.on_disk import walk_folders

_MAX_LINE = 1 << 20  # the longest request the watch reads: one is a few hundred bytes
# How long the watch waits for a connected client's request (`index` sends it at once): a client that sends
# nothing, or half a line, is let go rather than holding its connection for as long as the watch runs.
REQUEST_SECONDS = 5.0
SOCKET_FILENAME = "wikirag_watch.sock"
_SUN_PATH = 100  # bytes a socket file's path may take: sun_path holds 104 on macOS and the BSDs


class HandoffFailed(WikiragError):
    """The watch took the run and could not finish it (its batch failed, or it stopped first)."""


@dataclass
class HandedRun:
    pid: int  # the watch's process
    report: IndexReport


def address(config: WikiragConfig) -> str | None:
    """Where the watch writing this store listens: one address per workspace, like the writer lock."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    key = f"{os.path.realpath(config.workspace_dir)}\0{config.workspace}".encode("utf-8", "surrogateescape")
    name = hashlib.sha256(key).hexdigest()[:32]
    if sys.platform.startswith("linux"):
        return "\0wikirag-watch-" + name
    path = str(config.workspace_dir / SOCKET_FILENAME)
    if len(os.fsencode(path)) < _SUN_PATH:
        return path
    # A long store path (an iCloud vault on macOS passes 120 bytes): a socket in this user's private folder
    folder = _private_folder()
    path = os.path.join(folder, f"{name}.sock") if folder else ""
    return path if folder and len(os.fsencode(path)) < _SUN_PATH else None


def _private_folder() -> str | None:
    """`wikirag-<uid>` in the temporary folder, made 0700 and checked to be this user's alone (in a shared
    /tmp another user could have made it first, and a socket there could answer for our watch)."""
    folder = os.path.join(tempfile.gettempdir(), f"wikirag-{os.getuid()}")
    with contextlib.suppress(FileExistsError, OSError):
        os.mkdir(folder, 0o700)
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
    return folder if private else None


def settings_digest(config: WikiragConfig) -> str:
    """A digest of everything that decides what an index run writes: the vault and store (as real paths), the
    exclusions and every setting. A local model no setting names is left out: the store decides it
    (store_model.follow_store_embedding), for the watch and for a run of its own alike. So are the database
    password and the variable it came from (a secret, and not what is written), and the embedded server's
    folder and socket, which follow from the store and workspace (an absolute path, not a real one: a vault
    named through a symlink gave another digest)."""
    embedding = config.embedding if config.embedding_model_given else replace(config.embedding, model="", dim=0)
    storage = replace(config.storage, password="", password_source="")
    if storage.embedded:
        storage = replace(storage, data_dir="", host="")
    same = replace(config, vault=Path(os.path.realpath(config.vault)), store=Path(os.path.realpath(config.store)),
                   embedding=embedding, storage=storage)
    text = json.dumps(asdict(same), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def code_stamp() -> str:
    """The installed wikirag: its version, and its source files' count and newest change. A watch started
    before an upgrade (or an edit of a development checkout) runs the old code and must not take the run."""
    from wikirag import __version__

    root = Path(__file__).resolve().parents[1]
    count, newest = 0, 0
    for dirpath, dirnames, filenames in walk_folders(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".py"):
                count += 1
                with contextlib.suppress(OSError):
                    newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime_ns)
    return f"{__version__}:{count}:{newest}"


def hand_to_watch(config: WikiragConfig) -> HandedRun | None:
    """Ask the watch writing this store to run this index; None when no watch is listening (run it here).

    Raises StoreLocked when a watch is there but follows another vault or runs with other settings or another
    wikirag (it holds the store; stop it to index with these), and HandoffFailed when its batch failed."""
    where = address(config)
    if where is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(where)
    except OSError:  # no watch (refused, no socket file) or one that cannot be reached: run here
        sock.close()
        return None
    if not _same_user(sock):  # any user may bind an abstract name first: its answer would stand for the run's
        sock.close()
        return None
    request = {"vault": os.path.realpath(config.vault), "settings": settings_digest(config), "code": code_stamp()}
    try:
        with sock:
            sock.sendall(json.dumps(request).encode() + b"\n")
            reply = _read_line(sock)
    except OSError:  # reset: the watch was killed (or closed) before it read the request
        reply = None
    if reply is None:
        raise HandoffFailed(f"{config.store}: the wikirag watch writing this store stopped before it finished "
                            "this run; run `wikirag index` again")
    data = json.loads(reply)
    if "refused" in data:
        raise StoreLocked(f"{config.store}: a wikirag watch (pid {data['pid']}) is writing this store and "
                          f"{data['refused']}; stop it to index with these")
    if "error" in data:
        raise HandoffFailed(f"{config.store}: the wikirag watch writing this store (pid {data['pid']}) "
                            f"could not finish this run: {data['error']}")
    # The vault and store as this `index` was given them, as a run of its own reports them (`watch .` says ".")
    report = IndexReport(**{**data["report"], "vault": str(config.vault), "store": str(config.store)})
    return HandedRun(pid=data["pid"], report=report)


def _read_line(sock: socket.socket) -> bytes | None:
    """One newline-ended message, or None when the peer closed first. No size limit: the peer is a watch of
    this user, and a report lists every issue line of the vault (megabytes in a large one)."""
    parts: list[bytes] = []
    while True:
        part = sock.recv(1 << 20)
        if not part:
            return None
        parts.append(part)
        if part.endswith(b"\n"):
            return b"".join(parts)


class HandoffServer:
    """The watch's side: accepts `index` requests on the store's address while the watch runs. The watch loop
    takes them between batches (`take`), runs one batch for all it took, and answers each (`answer`)."""

    def __init__(self, config: WikiragConfig) -> None:
        self.vault = os.path.realpath(config.vault)
        self.settings = settings_digest(config)
        self.code = code_stamp()
        self.address = address(config)
        self.waiting: list[asyncio.Future[dict[str, Any]]] = []
        self.wake = asyncio.Event()
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[None]] = set()  # each connection's task, ended by `close`
        self._closing = False

    async def start(self) -> None:
        if self.address is None:
            return
        try:
            if not self.address.startswith("\0"):
                # On PostgreSQL the workspace folder may not be there yet: the engine makes it after this
                os.makedirs(os.path.dirname(self.address), exist_ok=True)
                with contextlib.suppress(FileNotFoundError):  # a killed watch's socket file; the lock is ours now
                    os.unlink(self.address)
            self._server = await asyncio.start_unix_server(self._serve, path=self.address, limit=_MAX_LINE)
            if not self.address.startswith("\0"):
                os.chmod(self.address, 0o600)
        except OSError:  # the watch works without it: an `index` beside it is then refused by the lock, as before
            self._server = None

    async def close(self) -> None:
        """Stop listening and end every connection: a client waiting for a run reads the connection's end
        ("stopped before it finished"). Every one, not only the requests still waiting: a client that has not
        sent its request yet, or a request taken by a batch the watch's cancellation cut short, would wait for
        ever, and from Python 3.12 on `wait_closed` waits for them, so the watch could not stop."""
        self._closing = True
        self.take()
        if self._server is not None:
            self._server.close()
        while self._connections:
            for task in self._connections:
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):  # a connection accepted as the server closed ends by itself
                await asyncio.wait_for(self._server.wait_closed(), 5)
            if not self.address.startswith("\0"):  # type: ignore[union-attr]
                with contextlib.suppress(OSError):
                    os.unlink(self.address)  # type: ignore[arg-type]

    async def pause(self, seconds: float) -> None:
        """Sleep between the loop's looks, waking at once for a request."""
        with contextlib.suppress(asyncio.TimeoutError):  # not yet the builtin TimeoutError on Python 3.10
            await asyncio.wait_for(self.wake.wait(), seconds)

    def take(self) -> list[asyncio.Future[dict[str, Any]]]:
        """The requests waiting for a batch, handed to the caller, who must `answer` them."""
        waiting, self.waiting = self.waiting, []
        self.wake.clear()
        return waiting

    @staticmethod
    def answer(requests: list[asyncio.Future[dict[str, Any]]], report: IndexReport | None = None,
               error: str | None = None) -> None:
        for future in requests:
            if not future.done():
                future.set_result({"report": asdict(report)} if report is not None else {"error": error})

    def _refusal(self, request: dict[str, Any]) -> str | None:
        if request.get("vault") != self.vault:
            return f"follows another vault ({self.vault})"
        if request.get("code") != self.code:
            return "was started with another version of wikirag"
        if request.get("settings") != self.settings:
            return "runs with other settings (config file, environment, --llm, --llm-concurrency, --route or --exclude)"
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            if self._closing or not _same_user(writer.get_extra_info("socket")):
                return
            request = json.loads(await asyncio.wait_for(reader.readline(), REQUEST_SECONDS))
            refusal = self._refusal(request) if isinstance(request, dict) else "was sent no request"
            if refusal is None:
                future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
                self.waiting.append(future)
                self.wake.set()
                reply = await future
            else:
                reply = {"refused": refusal}
            # ASCII: a path that is no UTF-8 (a lone surrogate in Python) travels as an escape and comes back
            writer.write(json.dumps({**reply, "pid": os.getpid()}).encode() + b"\n")
            await writer.drain()
        except (OSError, ValueError, RecursionError, asyncio.CancelledError, asyncio.LimitOverrunError,
                asyncio.TimeoutError):  # not yet the builtin TimeoutError on Python 3.10
            pass  # a client gone or silent, a malformed (or deeply nested) request, or the watch stopping: it closes
        finally:
            self._connections.discard(task)
            writer.close()


def _same_user(sock: Any) -> bool:
    """Whether the peer runs as this user: an abstract socket is open to every user of the machine, and its
    name to whoever binds it first (Linux tells each end the other's uid); a socket file is the owner's only
    already."""
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                             struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()
