"""A served battle's clips: how long each lasts (written with the battle) and when its audio was fetched
(written by the audio route, arena/web/media.py). The listening rule (arena/core/listening.py) reads both.

"Fetched" means the clip's bytes were sent, enough to cover what the rule asks: the route reports each span of
bytes it sent (`FetchLog.sent`), and once the spans sent cover the clip's first `need_s / seconds` share of its
bytes (the rule's `need`; at least one byte), the time is written. One `Range: bytes=0-0` is no fetch; a player's
usual `bytes=0-` answer, or its seeks and resumes together, are. The spans are counted per process: a player whose
ranges went to different replicas is counted by each alone (the fetch then waits for a range that covers).

In the database, not in memory, so a vote checked on one replica sees a fetch served by another. The fetch
write is one small UPDATE, once per clip and process (`FetchLog` remembers which clips it has recorded, so a
player's repeated Range requests write nothing), on the request's own thread: it takes the store's write lock
for one short transaction, never the vote's or the next battle's response path.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from typing import Callable, Mapping

from arena.tables import storage  # noqa: F401  (arena_battles first: migrations apply in registration order)
from eval_backend.store import Store, register_migration

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
        self._partial: OrderedDict[tuple[str, str], tuple[int, list[list[int]]]] = OrderedDict()  # need, spans
        self._lock = threading.Lock()

    def sent(self, battle_id: str, clip: str, start: int, end: int, size: int,
             need_share: Callable[[], float]) -> None:
        """Bytes [start, end) of the clip's `size`-byte file were sent. `need_share()`: the share of the clip the
        listening rule asks to hear (read once per clip and process)."""
        key = (battle_id, clip)
        with self._lock:
            if key in self._done:
                return
            entry = self._partial.get(key)
        if entry is None:
            share = min(1.0, max(0.0, need_share()))
            entry = (max(1, min(size, math.ceil(size * share))), [])
        with self._lock:
            entry = self._partial.setdefault(key, entry)
            self._partial.move_to_end(key)
            need, spans = entry
            spans.append([start, end])
            spans.sort()
            covered = 0
            for a, b in spans:              # the prefix [0, covered) the spans cover together
                if a > covered:
                    break
                covered = max(covered, b)
            merged: list[list[int]] = []
            for a, b in spans:
                if merged and a <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            spans[:] = merged[:64]             # a client sending countless disjoint ranges keeps a bounded list
            while len(self._partial) > MAX_REMEMBERED:
                self._partial.popitem(last=False)
            done = covered >= need
            if done:
                self._partial.pop(key, None)
        if done:
            self.fetched(battle_id, clip)

    def fetched(self, battle_id: str, clip: str) -> None:
        """The clip's needed bytes were all sent: record the time (once)."""
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


def need_share(store: Store, battle_id: str, clip: str, need: Callable[[float], float]) -> float:
    """The share of a clip's length the listening rule asks to hear (`need(seconds)`: ListenRule.need); 1.0 when
    the clip's length is unknown (then the whole file must be sent)."""
    rows = store.query("SELECT seconds FROM arena_battle_clips WHERE battle_id=? AND clip=?", (battle_id, clip))
    seconds = float(rows[0]["seconds"]) if rows else 0.0
    return need(seconds) / seconds if seconds > 0 else 1.0
