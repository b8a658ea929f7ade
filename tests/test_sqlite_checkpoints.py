"""SQLite's durability policy (eval_backend/sqlite_checkpoints.py): commits do not wait for an fsync, and a thread
syncs every open database within about a second, so an acknowledged write is on the disk soon after without any
request waiting for the disk."""
import gc
import os
import sqlite3
import threading
import time

import pytest

from eval_backend import sqlite_checkpoints
from eval_backend.store import Store

pytestmark = pytest.mark.sqlite_only     # SQLite's own durability policy (PostgreSQL keeps synchronous_commit=on)


def _fill(store: Store, mib: int) -> None:
    with store.transaction() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS blobs (v BLOB)")
        for _ in range(mib * 16):
            conn.execute("INSERT INTO blobs VALUES (?)", (os.urandom(64 * 1024),))


def test_commits_do_not_sync_and_the_wal_may_grow_to_the_backstop(tmp_path):
    conn = Store(tmp_path).connect()
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1            # NORMAL: no fsync in a commit
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == sqlite_checkpoints.BACKSTOP_PAGES


def test_the_thread_moves_acknowledged_writes_into_the_database_within_seconds(tmp_path):
    """8 MiB committed stays in the WAL (below the backstop, so no commit checkpoints it); the process's thread
    copies it into the database file (syncing the WAL first) without anyone asking."""
    store = Store(tmp_path)
    before = store.path.stat().st_size
    _fill(store, 8)
    assert store.path.stat().st_size < before + 1024 * 1024          # still only in the WAL
    deadline = time.monotonic() + 5 * sqlite_checkpoints.INTERVAL_S + 5
    while store.path.stat().st_size < 8 * 1024 * 1024 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert store.path.stat().st_size >= 8 * 1024 * 1024
    names = [t.name for t in threading.enumerate()]
    assert names.count("sqlite-checkpoints") == 1                    # one thread per process, however many Stores


def test_a_dropped_store_is_forgotten_and_a_removed_database_is_not_recreated(tmp_path):
    kept, dropped = Store(tmp_path / "kept"), Store(tmp_path / "dropped")
    _fill(kept, 1)
    _fill(dropped, 1)
    dropped_path = str(dropped.path)
    connections: dict[str, sqlite3.Connection] = {}
    sqlite_checkpoints.checkpoint_all(connections)
    assert {str(kept.path), dropped_path} <= set(connections)

    del dropped
    gc.collect()
    sqlite_checkpoints.checkpoint_all(connections)
    assert dropped_path not in connections and str(kept.path) in connections

    for name in os.listdir(tmp_path / "kept"):                       # a wiped data dir, Store still alive
        if name.startswith("store.sqlite3"):
            os.remove(tmp_path / "kept" / name)
    connections.pop(str(kept.path)).close()
    sqlite_checkpoints.checkpoint_all(connections)
    assert not kept.path.exists()
    for conn in connections.values():
        conn.close()


RACER = """
import sys, time
from eval_backend.store import Store
start, slot, dirs = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
for k, d in enumerate(dirs):
    time.sleep(max(0.0, start + k * slot - time.time() - 0.003))
    while time.time() < start + k * slot:       # the last 3 ms spun: the racers meet within microseconds
        pass
    try:
        Store(d)
        print("ok", flush=True)
    except Exception as exc:
        print("failed", repr(exc), flush=True)
"""


def test_processes_opening_one_new_store_at_once_all_open_it(tmp_path):
    """Four processes make the same new data dir's store at the same instant, 40 times (the runner CLIs of a demo
    run start together on a fresh data dir). Each makes the new database WAL; two at once deadlock by design (each
    holds a shared lock and wants the exclusive one), and SQLite answers one of them "database is locked" at once,
    without its busy handler: 1 to 5 of 400 opens failed so in each of three runs before the open retried
    (sqlite_checkpoints.apply_pragmas), none after."""
    import subprocess
    import sys
    rounds, racers, slot = 100, 4, 0.05
    dirs = [str(tmp_path / f"d{k}") for k in range(rounds)]
    start = time.time() + 3.0                        # after the racers' imports
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(start), str(slot), *dirs], stdout=subprocess.PIPE,
                              text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
             for _ in range(racers)]
    lines = [line for p in procs for line in p.communicate(timeout=120)[0].splitlines()]
    assert all(p.returncode == 0 for p in procs)
    failed = [line for line in lines if not line.startswith("ok")]
    assert len(lines) == rounds * racers and not failed, failed[:5]


class FlakyConnection:
    """Answers "database is locked" to its first `busy` statements (what SQLite does in that deadlock), then runs
    them on a real connection."""

    def __init__(self, path, busy: int, error: str = "database is locked"):
        self.real, self.busy, self.error, self.seen = sqlite3.connect(path), busy, error, []

    def execute(self, sql):
        self.seen.append(sql)
        if self.busy:
            self.busy -= 1
            raise sqlite3.OperationalError(self.error)
        return self.real.execute(sql)


def test_the_pragmas_are_retried_while_locked_and_other_errors_are_not(tmp_path):
    conn = FlakyConnection(tmp_path / "a.db", busy=3)
    sqlite_checkpoints.apply_pragmas(conn)
    assert conn.real.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert len(conn.seen) == len(sqlite_checkpoints.PRAGMAS) + 3
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        sqlite_checkpoints.apply_pragmas(FlakyConnection(tmp_path / "b.db", busy=1, error="disk I/O error"))
    t0 = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):          # locked for good: gives up in time
        sqlite_checkpoints.apply_pragmas(FlakyConnection(tmp_path / "c.db", busy=10**6),
                                         timeout_s=0.3)
    assert time.monotonic() - t0 < 2.0
