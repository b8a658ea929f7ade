"""The arena's tables on the shared Store (SQLite or PostgreSQL), and the SQL that touches them.

- battles: one row per served battle. The id is an unguessable token; the row
  keeps who was served (session, salted IP hash, HF user) and when, so a vote can
  be checked against it.
- votes: append-only (UPDATE/DELETE raise), `id` AUTOINCREMENT is the canonical
  order for the TrueSkill replay. `winner` is a model name, 'tie' or 'both_bad';
  `slot` is the button pressed ('A', 'B', 'tie', 'both_bad') and `first_heard`
  which slot played first, so position bias can be measured.
- ratings: current TrueSkill per (axis, model), updated in the vote's transaction.
- refused_votes: every refused submission with its reason (integrity health).
- paused_models: never served while paused.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from eval_backend.store import Store, register_migration

from .ratings import BOTH_BAD, TIE, Rating, Vote

AXES = ("overall", "said", "sounded", "speaker", "paralinguistic", "environment")
DIMENSION_AXES = ("speaker", "paralinguistic", "environment")
SLOTS = ("A", "B", TIE, BOTH_BAD)
SUB_SLOTS = ("A", "B", TIE)

register_migration("arena_0001", """
CREATE TABLE IF NOT EXISTS arena_battles (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL,
    "user"          TEXT,
    ip_hash         TEXT NOT NULL,
    benchmark_hash  TEXT NOT NULL,
    request_id      TEXT NOT NULL,
    task            TEXT NOT NULL,
    item_id         TEXT NOT NULL,
    variant         TEXT NOT NULL,
    attribute       TEXT,
    dimension       TEXT,
    model_a         TEXT NOT NULL,
    model_b         TEXT NOT NULL,
    first_heard     TEXT NOT NULL DEFAULT 'A' CHECK (first_heard IN ('A', 'B')),
    min_listen_s    REAL NOT NULL,
    served_at       REAL NOT NULL,
    expires_at      REAL NOT NULL,
    voted           INTEGER NOT NULL DEFAULT 0 CHECK (voted IN (0, 1)),
    CHECK (model_a <> model_b)
);
CREATE INDEX IF NOT EXISTS arena_battles_session ON arena_battles (session_id, served_at);
CREATE TABLE IF NOT EXISTS arena_votes (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    battle_id       TEXT UNIQUE,
    model_a         TEXT NOT NULL,
    model_b         TEXT NOT NULL,
    winner          TEXT NOT NULL,
    slot            TEXT NOT NULL CHECK (slot IN ('A', 'B', 'tie', 'both_bad')),
    said            TEXT CHECK (said IN ('A', 'B', 'tie')),
    sounded         TEXT CHECK (sounded IN ('A', 'B', 'tie')),
    reason          TEXT,
    session_id      TEXT,
    "user"          TEXT,
    ip_hash         TEXT,
    first_heard     TEXT CHECK (first_heard IN ('A', 'B')),
    attribute       TEXT,
    dimension       TEXT,
    benchmark_hash  TEXT,
    request_id      TEXT,
    created_at      REAL NOT NULL,
    source          TEXT NOT NULL CHECK (source IN ('live', 'import')),
    CHECK (model_a <> model_b),
    CHECK ((slot = 'A' AND winner = model_a) OR (slot = 'B' AND winner = model_b)
           OR (slot IN ('tie', 'both_bad') AND winner = slot))
);
CREATE INDEX IF NOT EXISTS arena_votes_session ON arena_votes (session_id, created_at);
CREATE INDEX IF NOT EXISTS arena_votes_ip ON arena_votes (ip_hash, created_at);
CREATE TABLE IF NOT EXISTS arena_ratings (
    axis            TEXT NOT NULL,
    model           TEXT NOT NULL,
    mu              REAL NOT NULL,
    sigma           REAL NOT NULL,
    votes           INTEGER NOT NULL DEFAULT 0,
    wins            INTEGER NOT NULL DEFAULT 0,
    losses          INTEGER NOT NULL DEFAULT 0,
    ties            INTEGER NOT NULL DEFAULT 0,
    both_bad        INTEGER NOT NULL DEFAULT 0,
    last_vote_id    INTEGER,
    updated_at      REAL NOT NULL,
    PRIMARY KEY (axis, model)
);
CREATE TABLE IF NOT EXISTS arena_refused_votes (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    battle_id       TEXT,
    session_id      TEXT,
    ip_hash         TEXT,
    reason          TEXT NOT NULL,
    message         TEXT NOT NULL,
    created_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS arena_refused_time ON arena_refused_votes (created_at);
CREATE TABLE IF NOT EXISTS arena_paused_models (
    model           TEXT PRIMARY KEY,
    reason          TEXT,
    paused_at       REAL NOT NULL
)
""")

register_migration("arena_0002_user_index",
                   'CREATE INDEX IF NOT EXISTS arena_votes_user ON arena_votes ("user", created_at)')

# The vote log is append-only in the database itself, not only in this code. Trigger bodies hold ';',
# so they are given as statement tuples.
register_migration("arena_0003_append_only", (
    "CREATE TRIGGER IF NOT EXISTS arena_votes_no_update BEFORE UPDATE ON arena_votes "
    "BEGIN SELECT RAISE(ABORT, 'arena_votes is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS arena_votes_no_delete BEFORE DELETE ON arena_votes "
    "BEGIN SELECT RAISE(ABORT, 'arena_votes is append-only'); END",
), postgres=(
    "CREATE OR REPLACE FUNCTION arena_votes_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'arena_votes is append-only'; END $$",
    "CREATE OR REPLACE TRIGGER arena_votes_no_change BEFORE UPDATE OR DELETE ON arena_votes "
    "FOR EACH ROW EXECUTE FUNCTION arena_votes_append_only()",
))

# Hub sync reads battles in insertion order; SQLite has rowid for that, PostgreSQL gets a sequence column.
register_migration("arena_0004_battle_seq", "SELECT 1",
                   postgres="ALTER TABLE arena_battles ADD COLUMN IF NOT EXISTS seq BIGINT GENERATED ALWAYS AS IDENTITY")

# Live battles (arena/live.py): a battle and its vote say where the battle came from, `benchmark` (a benchmark
# request's stored replies) or `live` (a voter's own recording answered live). arena_votes.source already says
# where the *vote* came from (live | import), so the vote's copy of the battle's kind is `battle_source`.
# arena_live keeps what a live battle adds: the transcript, the replies' words, consent and the deletion date.
register_migration("arena_0005_live", (
    "ALTER TABLE arena_battles ADD COLUMN source TEXT NOT NULL DEFAULT 'benchmark' "
    "CHECK (source IN ('benchmark', 'live'))",
    "ALTER TABLE arena_votes ADD COLUMN battle_source TEXT NOT NULL DEFAULT 'benchmark' "
    "CHECK (battle_source IN ('benchmark', 'live'))",
    "CREATE INDEX IF NOT EXISTS arena_votes_battle_source ON arena_votes (battle_source, id)",
    """CREATE TABLE IF NOT EXISTS arena_live (
    battle_id       TEXT PRIMARY KEY,
    "user"          TEXT,
    ip_hash         TEXT NOT NULL,
    transcript      TEXT,
    text_a          TEXT,
    text_b          TEXT,
    consent_store   INTEGER NOT NULL CHECK (consent_store IN (0, 1)),
    consent_release INTEGER NOT NULL CHECK (consent_release IN (0, 1)),
    crisis          INTEGER NOT NULL DEFAULT 0 CHECK (crisis IN (0, 1)),
    screen          TEXT,
    replaced        TEXT,
    audio_dir       TEXT,
    created_at      REAL NOT NULL,
    delete_after    REAL NOT NULL,
    deleted_at      REAL
)""",
    "CREATE INDEX IF NOT EXISTS arena_live_due ON arena_live (deleted_at, delete_after)",
    'CREATE INDEX IF NOT EXISTS arena_live_user ON arena_live ("user", created_at)',
    "CREATE INDEX IF NOT EXISTS arena_live_ip ON arena_live (ip_hash, created_at)",
))


@dataclass(slots=True)
class VoteRow:
    """A stored vote, as exported and replayed (never the session id or IP hash)."""
    id: int
    model_a: str
    model_b: str
    winner: str
    slot: str
    said: str | None
    sounded: str | None
    reason: str | None
    first_heard: str | None
    attribute: str | None
    dimension: str | None
    benchmark_hash: str | None
    request_id: str | None
    created_at: float
    source: str

    def outcome(self, axis: str) -> str | None:
        """The slot outcome this vote gives on an axis, None when it does not bear on it."""
        if axis == "said":
            return self.said
        if axis == "sounded":
            return self.sounded
        if axis in DIMENSION_AXES and self.dimension != axis:
            return None
        return self.slot

    def as_vote(self, axis: str) -> Vote | None:
        out = self.outcome(axis)
        if out is None:
            return None
        winner = {"A": self.model_a, "B": self.model_b}.get(out, out)
        return Vote(self.id, self.model_a, self.model_b, winner)


EXPORT_FIELDS = tuple(VoteRow.__dataclass_fields__)


def load_votes(store: Store, after_id: int = 0) -> list[VoteRow]:
    rows = store.query(f"SELECT {', '.join(EXPORT_FIELDS)} FROM arena_votes WHERE id > ? ORDER BY id", (after_id,))
    return [VoteRow(**dict(r)) for r in rows]


def axes_for(slot: str, said: str | None, sounded: str | None, dimension: str | None) -> list[tuple[str, str]]:
    """(axis, slot outcome) pairs a new vote updates."""
    out = [("overall", slot)]
    if said is not None:
        out.append(("said", said))
    if sounded is not None:
        out.append(("sounded", sounded))
    if dimension in DIMENSION_AXES:
        out.append((dimension, slot))
    return out


def read_rating(conn, axis: str, model: str, default: Rating) -> Rating:
    row = conn.execute("SELECT mu, sigma FROM arena_ratings WHERE axis=? AND model=?", (axis, model)).fetchone()
    return Rating(row["mu"], row["sigma"]) if row else default


def write_rating(conn, axis: str, model: str, rating: Rating, result: str,
                 vote_id: int, now: float) -> None:
    """Upsert the new rating and bump the count for `result` (win, loss, tie, both_bad)."""
    counts = {"win": 0, "loss": 0, "tie": 0, "both_bad": 0}
    counts[result] = 1
    conn.execute(
        """INSERT INTO arena_ratings (axis, model, mu, sigma, votes, wins, losses, ties, both_bad, last_vote_id,
                                      updated_at)
           VALUES (:axis, :model, :mu, :sigma, 1, :win, :loss, :tie, :both_bad, :vid, :now)
           ON CONFLICT (axis, model) DO UPDATE SET mu=excluded.mu, sigma=excluded.sigma, votes=arena_ratings.votes + 1,
               wins=arena_ratings.wins + excluded.wins, losses=arena_ratings.losses + excluded.losses,
               ties=arena_ratings.ties + excluded.ties, both_bad=arena_ratings.both_bad + excluded.both_bad, last_vote_id=excluded.last_vote_id,
               updated_at=excluded.updated_at""",
        {"axis": axis, "model": model, "mu": rating.mu, "sigma": rating.sigma, "vid": vote_id, "now": now,
         **counts})


def stored_ratings(store: Store, axis: str = "overall") -> dict[str, dict]:
    rows = store.query("SELECT * FROM arena_ratings WHERE axis=? ORDER BY model", (axis,))
    return {r["model"]: dict(r) for r in rows}


def insert_vote(conn, row: dict) -> int:
    cols = ", ".join(f'"{k}"' for k in row)      # quoted: `user` is a reserved word in PostgreSQL
    marks = ", ".join(f":{k}" for k in row)
    return int(conn.execute(f"INSERT INTO arena_votes ({cols}) VALUES ({marks}) RETURNING id", row).fetchone()[0])


def log_refusal(store: Store, battle_id: str | None, session_id: str | None, ip_hash: str | None,
                reason: str, message: str) -> None:
    with store.transaction() as conn:
        conn.execute("INSERT INTO arena_refused_votes (battle_id, session_id, ip_hash, reason, message, created_at)"
                     " VALUES (?, ?, ?, ?, ?, ?)", (battle_id, session_id, ip_hash, reason, message, time.time()))


def paused_models(store: Store) -> set[str]:
    return {r[0] for r in store.query("SELECT model FROM arena_paused_models")}


def set_paused(store: Store, model: str, paused: bool, reason: str | None = None) -> None:
    with store.transaction() as conn:
        if paused:
            conn.execute("INSERT INTO arena_paused_models VALUES (?, ?, ?) ON CONFLICT (model) DO UPDATE SET "
                         "reason=excluded.reason, paused_at=excluded.paused_at", (model, reason, time.time()))
        else:
            conn.execute("DELETE FROM arena_paused_models WHERE model=?", (model,))
