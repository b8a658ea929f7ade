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

Every SQL text that names an arena table is in this module (tests/test_seams.py checks it), except the Hub logs'
(arena/tables/storage_sync.py, a co-owner: what of these tables is backed up and how it is restored); the service, the
health report and the board call the functions below.
"""
from __future__ import annotations

import time

from arena.core.covariates import COLUMNS as COVARIATE_COLUMNS
from arena.core.ratings import Rating
from arena.core.vote_rows import AXES, DIMENSION_AXES, EXPORT_FIELDS, SLOTS, SUB_SLOTS, VoteRow  # noqa: F401  (re-exported: the table's row shape lives in the pure core)
from arena.tables import (
    live_store,  # noqa: F401  (registers arena_live's migration with the arena's own)
    storage_sync,  # noqa: F401  (registers the arena's Hub logs, arena/tables/storage_sync.py)
)
from eval_backend.store import Store, register_migration

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

# Live battles (arena/services/live.py): a battle and its vote say where the battle came from, `benchmark` (a benchmark
# request's stored replies) or `live` (a voter's own recording answered live). arena_votes.source already says
# where the *vote* came from (live | import), so the vote's copy of the battle's kind is `battle_source`.
# What a live battle adds (transcript, the replies' words, consent, deletion date) is arena/tables/live_store.py's table.
register_migration("arena_0005_live", (
    "ALTER TABLE arena_battles ADD COLUMN source TEXT NOT NULL DEFAULT 'benchmark' "
    "CHECK (source IN ('benchmark', 'live'))",
    "ALTER TABLE arena_votes ADD COLUMN battle_source TEXT NOT NULL DEFAULT 'benchmark' "
    "CHECK (battle_source IN ('benchmark', 'live'))",
    "CREATE INDEX IF NOT EXISTS arena_votes_battle_source ON arena_votes (battle_source, id)",
))

# Skips (arena/services/battles.py: skip_battle): the voter asked for another battle without voting. The battle is closed
# (no vote can follow), nothing enters the ratings, the refusal log or the abuse counters; `skipped_at` records it.
register_migration("arena_0006_skipped", "ALTER TABLE arena_battles ADD COLUMN skipped_at REAL")

# Style covariates (arena/core/covariates.py): a battle's a_*/b_* measures of the clips its voter hears, copied into its
# vote, so the vote log alone refits the style board. `weight`: how much a vote counts in every rating (0 = not at
# all); an import may set it, integrity flags multiply it at rating time (VoteLog.vote_weights).
register_migration("arena_0007_style_covariates", tuple(
    f"ALTER TABLE {table} ADD COLUMN {column} REAL" for table in ("arena_battles", "arena_votes")
    for column in COVARIATE_COLUMNS) + (
    "ALTER TABLE arena_votes ADD COLUMN weight REAL NOT NULL DEFAULT 1.0 CHECK (weight >= 0 AND weight <= 1)",))




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


# ---------------------------------------------------------------- battles
def insert_battle(conn, values: tuple, source: str = "benchmark", covariates: dict | None = None) -> None:
    """One served battle, unvoted; `values` in the column order below; `source` benchmark | live; `covariates`:
    the a_*/b_* measures of its clips (arena/core/covariates.py: battle_columns), None where not measured."""
    covariates = covariates or {}
    conn.execute(
        f"""INSERT INTO arena_battles (id, session_id, "user", ip_hash, benchmark_hash, request_id, task,
               item_id, variant, attribute, dimension, model_a, model_b, first_heard, min_listen_s,
               served_at, expires_at, voted, source, {', '.join(COVARIATE_COLUMNS)})
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,?{',?' * len(COVARIATE_COLUMNS)})""",
        (*values, source, *(covariates.get(c) for c in COVARIATE_COLUMNS)))


def set_battle_covariates(conn, battle_id: str, covariates: dict) -> None:
    """A live battle's a_*/b_* measures, taken once its clips as heard are written (arena/services/live.py)."""
    conn.execute(f"UPDATE arena_battles SET {', '.join(f'{c}=?' for c in COVARIATE_COLUMNS)} WHERE id=?",
                 (*(covariates.get(c) for c in COVARIATE_COLUMNS), battle_id))


def plausible_id(value) -> bool:
    """Text that could be an id this server issued (battle ids, sessions): at most 128 characters, no NUL (no database
    stores one) and no lone surrogate (no encoder takes one). Anything else is answered like an unknown id, before
    it reaches a query."""
    if not isinstance(value, str) or not 0 < len(value) <= 128 or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def battle_clip_row(store: Store, battle_id: str):
    """The row a clip URL is answered from (request and models), or None."""
    rows = store.query("SELECT benchmark_hash, request_id, model_a, model_b, expires_at, source "
                       "FROM arena_battles WHERE id=?", (battle_id,))
    return rows[0] if rows else None


def battle_session(store: Store, battle_id: str) -> str | None:
    """The session a battle was served to (None when unknown)."""
    rows = store.query("SELECT session_id FROM arena_battles WHERE id=?", (battle_id,))
    return rows[0]["session_id"] if rows else None


def battle_row(conn, battle_id: str):
    """The whole battle row, read inside the vote's write transaction; None when unknown."""
    return conn.execute("SELECT * FROM arena_battles WHERE id=?", (battle_id,)).fetchone()


def mark_voted(conn, battle_id: str) -> None:
    conn.execute("UPDATE arena_battles SET voted=1 WHERE id=?", (battle_id,))


def mark_skipped(conn, battle_id: str, now: float) -> None:
    """Close an unvoted battle without a vote (the first skip's time is kept)."""
    conn.execute("UPDATE arena_battles SET skipped_at=? WHERE id=? AND voted=0 AND skipped_at IS NULL",
                 (now, battle_id))


def count_skips(store: Store) -> int:
    return store.query("SELECT COUNT(*) AS n FROM arena_battles WHERE skipped_at IS NOT NULL")[0]["n"]


# ---------------------------------------------------------------- votes
RATE_COLUMNS = ("session_id", "ip_hash", '"user"')


def recent_votes(conn, col: str, key: str, now: float) -> tuple[int | None, int]:
    """(votes in the last minute, votes in the last day) of one session, address or user (`col`)."""
    if col not in RATE_COLUMNS:
        raise ValueError(f"not a rate-limited column: {col}")
    return conn.execute(
        f"SELECT SUM(CASE WHEN created_at > ? THEN 1 ELSE 0 END), COUNT(*) FROM arena_votes "
        f"WHERE {col}=? AND created_at > ?",
        (now - 60, key, now - 86400)).fetchone()


def session_votes_since(conn, session_id: str, since: float) -> int:
    """Votes of one session cast at or after `since` (arena/services/pow.py: votes covered by its last proof of work)."""
    return conn.execute("SELECT COUNT(*) FROM arena_votes WHERE session_id=? AND created_at >= ?",
                        (session_id, since)).fetchone()[0]


def vote_facts(store: Store) -> list:
    """Every vote cast live in a served battle, with who cast it and from where (arena/services/vote_flags.py's sweep;
    imported and restored votes have no session and are not swept)."""
    return store.query('SELECT id, battle_id, session_id, "user", ip_hash, created_at, model_a, model_b, slot '
                       "FROM arena_votes WHERE source='live' AND session_id IS NOT NULL ORDER BY id")


def vote_ids_of_battles(conn, battle_ids: list[str]) -> dict[str, int]:
    """{battle id: vote id} of the voted battles among `battle_ids` (a Hub restore of the vote flags)."""
    out: dict[str, int] = {}
    for k in range(0, len(battle_ids), 500):
        chunk = battle_ids[k:k + 500]
        out.update({r[0]: r[1] for r in conn.execute(
            f"SELECT battle_id, id FROM arena_votes WHERE battle_id IN ({', '.join('?' * len(chunk))})", chunk)})
    return out


def aspect_counts(store: Store, since: float = 0.0) -> dict[str, int]:
    """{"votes", "said", "sounded"}: votes since `since` (unix time), and how many of them carry each aspect
    (the health view's share of votes that feed the two aspect boards)."""
    r = store.query("SELECT COUNT(*) AS votes, SUM(CASE WHEN said IS NOT NULL THEN 1 ELSE 0 END) AS said, "
                    "SUM(CASE WHEN sounded IS NOT NULL THEN 1 ELSE 0 END) AS sounded FROM arena_votes "
                    "WHERE created_at >= ?", (since,))[0]
    return {k: int(r[k] or 0) for k in ("votes", "said", "sounded")}


def overall_vote_counts(conn, model_a: str, model_b: str) -> dict[str, int]:
    return {r["model"]: r["votes"] for r in conn.execute(
        "SELECT model, votes FROM arena_ratings WHERE axis='overall' AND model IN (?, ?)", (model_a, model_b))}


def sync_vote_ids(store: Store, conn) -> None:
    """After a restore with explicit vote ids (see Store.sync_ids)."""
    store.sync_ids(conn, "arena_votes")


def has_votes_table(store: Store) -> bool:
    return store.has_table("arena_votes")


def vote_log_version(store: Store) -> tuple:
    """(count, last id) of the vote log: changes whenever a vote is added."""
    return tuple(store.query("SELECT COUNT(*), MAX(id) FROM arena_votes")[0])


# ---------------------------------------------------------------- integrity health
def integrity_counts(store: Store, since: float) -> tuple[int, dict[str, int]]:
    """(live votes accepted, {refusal reason: count}) since `since`."""
    accepted = store.query("SELECT COUNT(*) FROM arena_votes WHERE source='live' AND created_at > ?",
                           (since,))[0][0]
    refused = {r[0]: r[1] for r in store.query(
        "SELECT reason, COUNT(*) FROM arena_refused_votes WHERE created_at > ? GROUP BY reason", (since,))}
    return accepted, refused


def bucket_counts(store: Store, since: float, until: float, bucket_s: float) -> tuple[dict, dict, dict]:
    """Battles served, live votes accepted and votes refused (by reason) per bucket index
    (floor(time / bucket_s)), aggregated in SQL so a week of a busy arena is a few hundred rows."""
    def grouped(table: str, col: str, extra: str = "", where: str = "") -> list:
        return store.query(f"SELECT {store.int_floor(f'{col} / ?')} AS b{extra}, COUNT(*) FROM {table} "
                           f"WHERE {col} >= ? AND {col} < ? {where} GROUP BY b{extra}", (bucket_s, since, until))
    served = {r[0]: r[1] for r in grouped("arena_battles", "served_at")}
    accepted = {r[0]: r[1] for r in grouped("arena_votes", "created_at", where="AND source = 'live'")}
    refused = {(r[0], r[1]): r[2] for r in grouped("arena_refused_votes", "created_at", extra=", reason")}
    return served, accepted, refused
