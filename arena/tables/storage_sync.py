"""The arena's Hub logs (eval_backend/hub_sync): which fields of the vote log, the battles and the refused votes are
backed up, and how a backup is restored into them. A co-owner of arena/tables/storage.py's tables (tests/test_seams.py);
registered when arena/tables/storage.py is imported."""
from __future__ import annotations

import hashlib
import json

from arena.core.covariates import COLUMNS as COVARIATE_COLUMNS
from eval_backend.store import Store
from eval_backend.sync_logs import RestoreContext, SyncLog, register_sync_log

# Private fields stay home: no session ids, IP hashes or user names.
VOTE_FIELDS = ("id", "battle_id", "model_a", "model_b", "winner", "slot", "said", "sounded", "reason", "first_heard",
               "attribute", "dimension", "benchmark_hash", "request_id", "created_at", "source", "battle_source",
               *COVARIATE_COLUMNS, "weight")
BATTLE_FIELDS = ("id", "benchmark_hash", "request_id", "task", "item_id", "variant", "attribute", "dimension",
                 "model_a", "model_b", "first_heard", "min_listen_s", "served_at", "expires_at", "source",
                 *COVARIATE_COLUMNS)
# Fields added later: a record without them reads as None (weight 1.0); vote_key leaves them out while empty.
LATER_VOTE_FIELDS = (*COVARIATE_COLUMNS, "weight")
# Logged before live battles existed, a record has no battle_source / source: its battle was a benchmark one.
SOURCE_DEFAULT = "benchmark"
REFUSED_FIELDS = ("id", "battle_id", "reason", "message", "created_at")


def count_votes(store: Store) -> int:
    if not store.has_table("arena_votes"):
        return 0
    return store.query("SELECT COUNT(*) FROM arena_votes")[0][0]


def battle_seq(store) -> str:
    """Battles' insertion order: SQLite's rowid, or the identity column arena_0004 adds on PostgreSQL."""
    return "rowid" if store.dialect == "sqlite" else "seq"


def _with_battle_seq(store, text: str) -> str:
    return text.replace("{battle_seq}", battle_seq(store))


def vote_key(rec: dict) -> str:
    """A vote's identity across writers: its battle (live votes), else its content (imports)."""
    if rec.get("battle_id"):
        return "b:" + rec["battle_id"]
    body = {k: rec.get(k) for k in VOTE_FIELDS if k not in ("id", "battle_id", "battle_source", "weight")
            and (k not in LATER_VOTE_FIELDS or rec.get(k) is not None)}
    return "c:" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _restore_votes(ctx: RestoreContext, records: list[dict]) -> int:
    """With an empty vote table the votes keep their ids (the canonical order, so the vote-log hash is the same
    as before the restart); otherwise the missing ones are appended after the local ones (a late restore after
    serving local data). Ratings are recorded as for live votes, by the arena's `append_votes`."""
    if ctx.append_votes is None:
        raise RuntimeError("the vote log needs the arena's append_votes to be restored")
    local = [dict(r) for r in ctx.conn.execute(f"SELECT {', '.join(VOTE_FIELDS)} FROM arena_votes")]
    have = {vote_key(r) for r in local}
    # a vote logged by several writers (a late merge re-logs it under a new id): the latest id wins,
    # which is the order of the writer that merged last
    best: dict[str, dict] = {}
    for rec in records:
        k = vote_key(rec)
        if k not in have and (k not in best or rec["id"] > best[k]["id"]):
            best[k] = rec
    fresh = sorted(best.values(), key=lambda r: (r["id"], r["created_at"], vote_key(r)))
    keep_ids = not local and len({r["id"] for r in fresh}) == len(fresh)
    rows = [{**{k: rec.get(k) for k in VOTE_FIELDS if keep_ids or k != "id"},
             "battle_source": rec.get("battle_source") or SOURCE_DEFAULT,
             "weight": 1.0 if rec.get("weight") is None else rec["weight"],
             "session_id": None, "user": None, "ip_hash": None} for rec in fresh]
    n = ctx.append_votes(rows, ctx.conn)
    if keep_ids and fresh:
        ctx.mark(max(r["id"] for r in fresh))
    return n


def _restore_battles(ctx: RestoreContext, records: list[dict]) -> int:
    conn = ctx.conn
    empty = conn.execute("SELECT COUNT(*) FROM arena_battles").fetchone()[0] == 0
    n = 0
    for rec in records:
        cur = conn.execute(
            f"INSERT INTO arena_battles ({', '.join(BATTLE_FIELDS)}, session_id, ip_hash, voted) "
            f"VALUES ({', '.join('?' * len(BATTLE_FIELDS))}, '', '', "
            "CASE WHEN EXISTS (SELECT 1 FROM arena_votes WHERE battle_id = ?) THEN 1 ELSE 0 END) "
            "ON CONFLICT (id) DO NOTHING",
            (*[rec.get(k) or SOURCE_DEFAULT if k == "source" else rec.get(k) for k in BATTLE_FIELDS], rec["id"]))
        n += cur.rowcount
    if empty and n:
        ctx.mark(conn.execute(f"SELECT MAX({battle_seq(ctx.store)}) FROM arena_battles").fetchone()[0])
    return n


def _restore_refused(ctx: RestoreContext, records: list[dict]) -> int:
    conn = ctx.conn
    have = {tuple(r) for r in conn.execute(
        "SELECT battle_id, reason, message, created_at FROM arena_refused_votes")}
    empty = not have
    n = 0
    for rec in sorted(records, key=lambda r: r["id"]):
        key = (rec.get("battle_id"), rec["reason"], rec["message"], rec["created_at"])
        if key in have:
            continue
        have.add(key)
        conn.execute("INSERT INTO arena_refused_votes (battle_id, session_id, ip_hash, reason, message, "
                     "created_at) VALUES (?, NULL, NULL, ?, ?, ?)", key)
        n += 1
    if empty and n:
        ctx.mark(conn.execute("SELECT MAX(id) FROM arena_refused_votes").fetchone()[0])
    return n


register_sync_log(SyncLog(
    "votes", "arena_votes",
    f"SELECT id AS seq, {', '.join(VOTE_FIELDS)} FROM arena_votes WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
    "SELECT MAX(id) FROM arena_votes", _restore_votes, order=10, count=count_votes))
register_sync_log(SyncLog(
    "battles", "arena_battles",
    f"SELECT {{battle_seq}} AS seq, {', '.join(BATTLE_FIELDS)} FROM arena_battles WHERE {{battle_seq}} > ? "
    "AND {battle_seq} <= ? ORDER BY {battle_seq} LIMIT ?",
    "SELECT MAX({battle_seq}) FROM arena_battles", _restore_battles, order=20, dialect=_with_battle_seq))
register_sync_log(SyncLog(
    "refused", "arena_refused_votes",
    f"SELECT id AS seq, {', '.join(REFUSED_FIELDS)} FROM arena_refused_votes WHERE id > ? AND id <= ? "
    "ORDER BY id LIMIT ?",
    "SELECT MAX(id) FROM arena_refused_votes", _restore_refused, order=30))
