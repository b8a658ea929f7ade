"""The project's store: one database plus files under the data dir.

The database is SQLite (WAL mode, the embedded default) or PostgreSQL when DATABASE_URL is set
(several app replicas and workers on one database; see eval_backend/store_pg.py for what is translated).
Callers write one SQL text for both: `?`/`:name` placeholders, `"user"` quoted, `ON CONFLICT` upserts,
`RETURNING id`; the few dialect-specific expressions are methods here (`int_floor`, `has_table`).

Everything that persists goes through here. Other modules (arena, scorer, queue)
add their tables with `register_migration`, so one `Store` owns one connection
policy and one schema history.

Layout of the data dir:
    store.sqlite3           the database (SQLite only)
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

from . import config, sqlite_checkpoints

WRITE_LOCK = "empathy-arena-store"   # PostgreSQL advisory lock every write transaction takes

# One write lock per database file and process: in-process writers queue in FIFO order here instead of
# starving in SQLite's busy handler (measured: p99 of arena votes 7.7 s -> 1.4 s at saturation).
_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.RLock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(str(path), threading.RLock())


@dataclass(frozen=True)
class Migration:
    """SQL applied once per database. A str is split on ';'; a tuple is a list of statements (for bodies that
    hold ';', like triggers). `postgres` replaces `sqlite` on PostgreSQL; without it the SQLite DDL is
    translated (REAL, AUTOINCREMENT, BLOB)."""
    sqlite: str | tuple[str, ...]
    postgres: str | tuple[str, ...] | None = None

    def statements(self, dialect: str) -> list[str]:
        if dialect == "postgresql":
            if self.postgres is not None:
                sql = self.postgres
            else:
                from .store_pg import translate_ddl  # why: psycopg (~2 s), only for a PostgreSQL store
                sql = translate_ddl(self.sqlite) if isinstance(self.sqlite, str) else tuple(
                    map(translate_ddl, self.sqlite))
        else:
            sql = self.sqlite
        parts = sql.split(";") if isinstance(sql, str) else sql
        return [p for p in parts if p.strip()]


# name -> Migration; applied once each, in registration order, recorded in schema_migrations.
MIGRATIONS: dict[str, Migration] = {}


def register_migration(name: str, sql: str | tuple[str, ...], postgres: str | tuple[str, ...] | None = None) -> None:
    migration = Migration(sql, postgres)
    if name in MIGRATIONS and MIGRATIONS[name] != migration:
        raise ValueError(f"migration {name} registered twice with different SQL")
    MIGRATIONS[name] = migration


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
FAILURE_CLASSES = ("timeout", "http_4xx", "http_5xx", "rate_limited", "malformed_body", "bad_audio", "connection",
                   "too_large", "deadline", "redirect")


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


_REPLY_KEY = ("model", "benchmark_hash", "request_id")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    return _SAFE.sub("_", name).strip("._") or "x"


class Store:
    """One database and one data dir. `database_url` (or DATABASE_URL) selects PostgreSQL; else SQLite."""

    def __init__(self, data_dir: str | Path | None = None, database_url: str | None = None):
        self.root = config.data_dir(data_dir)
        self.path = self.root / "store.sqlite3"
        self.database_url = config.database_url(database_url)
        self.dialect = "postgresql" if self.database_url else "sqlite"
        if self.dialect == "postgresql":
            from . import store_pg  # why: psycopg (~2 s), only for a PostgreSQL store
            self._pg = store_pg
            self.IntegrityError, self.DatabaseError = store_pg.IntegrityError, store_pg.DatabaseError
        else:
            self.IntegrityError, self.DatabaseError = sqlite3.IntegrityError, sqlite3.DatabaseError
        self._local = threading.local()
        self._write_lock = _write_lock(self.database_url or self.path)
        self.migrate()

    def describe(self) -> str:
        """Where the data lives, for logs and the UI (never the password)."""
        if self.dialect == "sqlite":
            return f"SQLite at {self.path}"
        return f"PostgreSQL at {config.redact_url(self.database_url)}"

    # --- connection policy: one connection per thread; commit before acknowledging ---
    def connect(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and self.dialect == "postgresql" and conn.broken:
            conn = None                        # the server restarted or dropped us: reconnect
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        return conn

    def _open(self):
        if self.dialect == "postgresql":
            return self._pg.Connection(self.database_url)   # WAL and synchronous_commit=on are server defaults
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        sqlite_checkpoints.apply_pragmas(conn)            # an acknowledged write survives SIGKILL; on disk within ~1 s
        sqlite_checkpoints.register(self.path, self)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    @contextmanager
    def transaction(self, immediate: bool = True) -> Iterator:
        """A write transaction (immediate) holds the database's one write lock from its first statement, so
        read-then-write cannot race: SQLite's BEGIN IMMEDIATE, or a PostgreSQL advisory lock every replica
        and worker shares. Writers therefore commit in lock order, and ids become visible in order."""
        conn = self.connect()
        lock = self._write_lock if immediate else None
        if lock:
            lock.acquire()
        try:
            conn.execute("BEGIN IMMEDIATE" if immediate and self.dialect == "sqlite" else "BEGIN")
            try:
                if immediate:
                    self.lock(conn, WRITE_LOCK)
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")
        finally:
            if lock:
                lock.release()

    def query(self, sql: str, params: tuple | dict = ()) -> list:
        cur = self.connect().execute(sql, params)
        return cur.fetchall() if cur.description else []

    def migrate(self) -> None:
        """Apply each registered migration once; replicas starting together wait on the write lock."""
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION)")
            done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}
            for name, migration in MIGRATIONS.items():
                if name in done:
                    continue
                for statement in migration.statements(self.dialect):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, time.time()))

    def lock(self, conn, name: str) -> None:
        """Hold the named lock until the transaction ends: the write lock, or inside a transaction without it
        (a queue claim) one kind of insert, so its ids become visible in order. PostgreSQL only: SQLite's
        writers are serial already."""
        if self.dialect == "postgresql":
            conn.execute("SELECT pg_advisory_xact_lock(?)", (self._pg.lock_key(name),))

    # --- the few expressions that differ between the dialects ---
    def int_floor(self, expr: str) -> str:
        """SQL for floor(expr) as an integer (SQLite's CAST truncates; PostgreSQL's rounds)."""
        return f"CAST({expr} AS INTEGER)" if self.dialect == "sqlite" else f"CAST(floor({expr}) AS BIGINT)"

    def has_table(self, table: str) -> bool:
        if self.dialect == "sqlite":
            return bool(self.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)))
        return bool(self.query("SELECT to_regclass(?) IS NOT NULL", (table,))[0][0])

    def sync_ids(self, conn, table: str) -> None:
        """After inserting explicit ids (a restore), move the id generator past them (PostgreSQL only:
        SQLite's AUTOINCREMENT already follows the largest id)."""
        if self.dialect == "postgresql":
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                         f"GREATEST((SELECT MAX(id) FROM {table}), 1), (SELECT MAX(id) FROM {table}) IS NOT NULL)")

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
            updates = ", ".join(f"{k}=excluded.{k}" for k in row if k not in _REPLY_KEY)
            conn.execute(f"INSERT INTO replies ({cols}) VALUES ({marks}) "
                         f"ON CONFLICT ({', '.join(_REPLY_KEY)}) DO UPDATE SET {updates}", row)

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

    # The reads other modules need, so the replies table's SQL stays here (tests/test_seams.py checks it).
    def reply(self, model: str, benchmark_hash: str, request_id: str) -> Reply | None:
        rows = self.query("SELECT * FROM replies WHERE model=? AND benchmark_hash=? AND request_id=?",
                          (model, benchmark_hash, request_id))
        return Reply(**dict(rows[0])) if rows else None

    def reply_audio_path(self, model: str, benchmark_hash: str, request_id: str) -> str | None:
        """The data-dir-relative audio path of one ok reply, or None."""
        rows = self.query("SELECT audio_path FROM replies WHERE model=? AND benchmark_hash=? AND request_id=? "
                          "AND status='ok'", (model, benchmark_hash, request_id))
        return rows[0][0] if rows and rows[0][0] else None

    def reply_texts(self, benchmark_hash: str, request_id: str, models: tuple[str, str]) -> dict[str, str | None]:
        """{model: what it said (the audio transcript, else the reply text)} for two models' replies to a request."""
        return {r["model"]: r["transcript"] or r["text"] for r in self.query(
            "SELECT model, transcript, text FROM replies WHERE benchmark_hash=? AND request_id=? AND model IN (?, ?)",
            (benchmark_hash, request_id, *models))}

    def replies_version(self) -> tuple:
        """(count, newest created_at) of the replies table: changes whenever a reply is stored."""
        return tuple(self.query("SELECT COUNT(*), MAX(created_at) FROM replies")[0])

    def has_replies_named(self, name: str, conn=None) -> bool:
        """Whether any reply is stored under `name`, case-insensitively (in the caller's transaction if given)."""
        conn = conn or self.connect()
        return conn.execute("SELECT 1 FROM replies WHERE lower(model)=lower(?) LIMIT 1", (name,)).fetchone() is not None

    def models_with_replies(self, benchmark_hash: str | None = None) -> list[str]:
        if benchmark_hash:
            rows = self.query("SELECT DISTINCT model FROM replies WHERE benchmark_hash=? ORDER BY model",
                              (benchmark_hash,))
        else:
            rows = self.query("SELECT DISTINCT model FROM replies ORDER BY model")
        return [r[0] for r in rows]

    # --- small key/value for run metadata (benchmark hashes, manifests) ---
    def put_meta(self, key: str, value: object, conn=None) -> None:
        """Set `key`; pass `conn` to write inside the caller's transaction."""
        if conn is None:
            with self.transaction() as conn:
                return self.put_meta(key, value, conn)
        conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                     (key, json.dumps(value)))

    def put_meta_once(self, key: str, value: object) -> None:
        """Set `key` unless it is set (the first writer wins)."""
        with self.transaction() as conn:
            conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, json.dumps(value)))

    def get_meta(self, key: str, default: object = None) -> object:
        row = self.connect().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def meta_rows(self, prefix: str) -> list:
        """Rows (key, value as stored JSON text) whose key starts with `prefix`."""
        escaped = prefix.replace("!", "!!").replace("%", "!%").replace("_", "!_")
        return self.query("SELECT key, value FROM meta WHERE key LIKE ? ESCAPE '!'", (escaped + "%",))
