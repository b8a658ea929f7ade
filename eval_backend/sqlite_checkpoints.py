"""How SQLite commits reach the disk: no fsync in a commit; one thread per process syncs every database each second.

Why (issue 21, point 5): with `synchronous=FULL` every acknowledged vote and battle waited for an fsync of the WAL,
and this VM's disk has an fsync tail of its own (p99 96 ms, max 208-395 ms with nothing else running); that tail,
not the app, was the honest voters' p99 under a flood. In WAL mode with `synchronous=NORMAL` a commit is a write to
the WAL, which survives a crash or SIGKILL of the app; only a power loss or a kernel crash can undo commits the disk
has not synced yet. This module bounds that window: a checkpoint syncs the WAL (then the database) and one runs on
every open database every `INTERVAL_S` on a thread of its own, off every request's path. So an acknowledged write is
on the disk within about a second plus one fsync. Measured on this VM's disk with another file fsynced beside it
(docs/benchmarks.md): commit p99 38.6 ms, max 289 ms (FULL) -> 0.56 ms, max 1.05 ms (this policy).

A commit still checkpoints by itself when the WAL passes `BACKSTOP_PAGES` (the thread fell far behind or died), so
the WAL cannot grow without bound.
"""
from __future__ import annotations

import random
import sqlite3
import threading
import time
import weakref
from pathlib import Path

INTERVAL_S = 1.0
BACKSTOP_PAGES = 10_000     # ~40 MB of WAL at 4 KiB pages

PRAGMAS = ("PRAGMA journal_mode=WAL",
           "PRAGMA synchronous=NORMAL",
           f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")

BUSY_RETRY_S = 30.0        # as long as a connection's own busy timeout


def apply_pragmas(conn: sqlite3.Connection, pragmas: tuple[str, ...] = PRAGMAS,
                  timeout_s: float = BUSY_RETRY_S) -> None:
    """`pragmas` (this policy's by default) on a new connection, retried while SQLite answers "database is locked"
    at once. Processes making one new database WAL at the same instant deadlock by design (each holds a shared lock
    and wants the exclusive one), and SQLite then answers one of them SQLITE_BUSY without calling its busy handler:
    the runner CLIs of a demo run, started together on a fresh data dir, failed this way now and then; so could a
    judge cache's first threads (tests/test_sqlite_checkpoints.py)."""
    deadline = time.monotonic() + timeout_s
    for pragma in pragmas:
        while True:
            try:
                conn.execute(pragma)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01 + 0.04 * random.random())     # apart, so the two do not meet again


_owners: dict[str, weakref.WeakSet] = {}    # database path -> the live objects that use it
_guard = threading.Lock()
_thread: threading.Thread | None = None


def register(path: Path, owner: object) -> None:
    """Checkpoint `path` every second for as long as `owner` lives (the process's one thread starts on first use)."""
    global _thread
    with _guard:
        _owners.setdefault(str(path), weakref.WeakSet()).add(owner)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="sqlite-checkpoints", daemon=True)
            _thread.start()


def checkpoint_all(connections: dict[str, sqlite3.Connection]) -> None:
    """One pass: a PASSIVE checkpoint (never waits on readers or writers) of every database still in use."""
    with _guard:
        live = [p for p, owners in _owners.items() if len(owners)]
        for gone in set(_owners) - set(live):
            del _owners[gone]
    for path in set(connections) - set(live):
        connections.pop(path).close()
    for path in live:
        try:
            conn = connections.get(path) or connections.setdefault(path, _connect(path))
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            # The database was removed under us (a test's temp dir) or is busy: try again next pass.
            bad = connections.pop(path, None)
            if bad is not None:
                bad.close()


def _connect(path: str) -> sqlite3.Connection:
    # mode=rw: never create a database that was removed (a wiped data dir must stay empty)
    return sqlite3.connect(f"{Path(path).as_uri()}?mode=rw", uri=True, timeout=30, check_same_thread=False)


def _run() -> None:
    connections: dict[str, sqlite3.Connection] = {}
    while True:
        time.sleep(INTERVAL_S)
        checkpoint_all(connections)
