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
