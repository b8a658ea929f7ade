"""A served battle's clips: how long each lasts (written with the battle) and when its audio was first
fetched (written by the audio route, arena/media.py). The listening rule (arena/listening.py) reads both.

In the database, not in memory, so a vote checked on one replica sees a fetch served by another. The fetch
write is one small UPDATE, once per clip and process (`FetchLog` remembers which clips it has recorded, so a
player's repeated Range requests write nothing), on the request's own thread: it takes the store's write lock
for one short transaction, never the vote's or the next battle's response path.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Mapping

from eval_backend.store import Store, register_migration

from . import storage  # noqa: F401  (arena_battles first: migrations apply in registration order)

register_migration("arena_0005_battle_clips", """
CREATE TABLE IF NOT EXISTS arena_battle_clips (
    battle_id       TEXT NOT NULL,
    clip            TEXT NOT NULL,
    seconds         REAL NOT NULL,
    fetched_at      REAL,
    PRIMARY KEY (battle_id, clip)
)
""")

MAX_REMEMBERED = 100_000      # (battle, clip) pairs a process remembers as recorded (LRU)


def add_clips(conn, battle_id: str, seconds: Mapping[str, float]) -> None:
    """Record a new battle's clips and their lengths, inside the transaction that inserts the battle."""
    for clip, s in seconds.items():
        conn.execute("INSERT INTO arena_battle_clips (battle_id, clip, seconds) VALUES (?, ?, ?)",
                     (battle_id, clip, float(s)))


def read(conn, battle_id: str) -> tuple[dict[str, float], dict[str, float | None]]:
    """({clip: seconds}, {clip: first fetch time or None}) of a battle, in the caller's transaction."""
    rows = conn.execute("SELECT clip, seconds, fetched_at FROM arena_battle_clips WHERE battle_id=? ORDER BY clip",
                        (battle_id,)).fetchall()
    return {r["clip"]: r["seconds"] for r in rows}, {r["clip"]: r["fetched_at"] for r in rows}


class FetchLog:
    """Records the first fetch of each battle clip (the audio route calls `fetched` once it has the file)."""

    def __init__(self, store: Store, clock: Callable[[], float]):
        self.store = store
        self.clock = clock
        self._done: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def fetched(self, battle_id: str, clip: str) -> None:
        key = (battle_id, clip)
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return
        now = self.clock()
        with self.store.transaction() as conn:
            conn.execute("UPDATE arena_battle_clips SET fetched_at=? WHERE battle_id=? AND clip=? "
                         "AND fetched_at IS NULL", (now, battle_id, clip))
        with self._lock:
            self._done[key] = None
            while len(self._done) > MAX_REMEMBERED:
                self._done.popitem(last=False)
