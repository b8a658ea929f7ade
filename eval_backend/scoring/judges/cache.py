"""The judge cache: one SQLite file of judge answers keyed by (judge model, prompt hash, input hash,
temperature, seed, sample index), plus the daily call budget counted in the same file (so every process and
every judge path on one data dir shares it)."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from ... import sqlite_checkpoints
from .rendering import Block


class JudgeCache:
    """SQLite file of judge answers; safe across threads (one connection per thread).

    A row holds either a readable answer, or the parse failure the judge ended on after `attempts`
    tries (its answers were unusable: asking again with the same settings costs money and is as
    likely to fail). Call failures (timeouts, HTTP errors) are transient and never stored."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conn().execute(
            "CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, judge_model TEXT, prompt_hash TEXT, "
            "input_hash TEXT, answer TEXT, failure TEXT, attempts INTEGER, created_at REAL)")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            sqlite_checkpoints.apply_pragmas(conn, ("PRAGMA journal_mode=WAL",))   # retried: two new at once
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> tuple[str | None, str | None, int] | None:
        """(answer, failure, attempts) or None when absent."""
        row = self._conn().execute("SELECT answer, failure, attempts FROM judge_cache WHERE key=?", (key,)).fetchone()
        return (row[0], row[1], row[2] or 0) if row else None

    def put(self, key: str, judge_model: str, prompt_hash: str, input_hash: str, answer: str | None,
            failure: str | None = None, attempts: int = 1) -> None:
        self._conn().execute("INSERT OR REPLACE INTO judge_cache VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (key, judge_model, prompt_hash, input_hash, answer, failure, attempts, time.time()))

    # the daily call budget lives in the same file: one count per (UTC day, judge model) for every process
    def take_call(self, model: str, limit: int, day: str | None = None) -> bool:
        """Count one call to `model` today unless `limit` calls were already counted; False = over budget."""
        day = day or utc_day()
        conn = self._conn()
        conn.execute("CREATE TABLE IF NOT EXISTS judge_budget (day TEXT, model TEXT, calls INTEGER, "
                     "PRIMARY KEY (day, model))")
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT calls FROM judge_budget WHERE day=? AND model=?", (day, model)).fetchone()
            used = row[0] if row else 0
            if used >= limit:
                return False
            conn.execute("INSERT OR REPLACE INTO judge_budget VALUES (?, ?, ?)", (day, model, used + 1))
            return True
        finally:
            conn.execute("COMMIT")

    def calls_today(self, model: str, day: str | None = None) -> int:
        conn = self._conn()
        conn.execute("CREATE TABLE IF NOT EXISTS judge_budget (day TEXT, model TEXT, calls INTEGER, "
                     "PRIMARY KEY (day, model))")
        row = conn.execute("SELECT calls FROM judge_budget WHERE day=? AND model=?",
                           (day or utc_day(), model)).fetchone()
        return row[0] if row else 0


def utc_day(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() if t is None else t))


def input_hash(blocks: dict[str, Block], plain: dict[str, str] | None, audios: list[bytes]) -> str:
    doc = json.dumps({"blocks": blocks, "plain": plain or {},
                      "audio": [hashlib.sha256(a).hexdigest() for a in audios]}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()
