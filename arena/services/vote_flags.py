"""Flagged votes: the periodic integrity sweep, its flags in the database, the weights the public fit applies, and
the operator's reversals. The rules are arena/core/sweeps.py (pure); this module loads their facts and keeps the result.

    report = run_sweep(store)                    # the periodic job (app_context.py's health loop; `python -m arena
                                                 # sweep`): flags every attributable vote the rules catch
    weights(store)   -> {vote id: weight}        # flagged votes only (0: excluded; 0.5: down-weighted)
    groups(store)    -> one row per (kind, subject): votes, weight, why, reversed or not (the operator's review)
    decide(store, kind, subject, "reverse" | "restore", operator, note)

Tables:
- arena_vote_flags: the sweep's current flags, one per (vote, kind). Derived data: each sweep replaces the set
  with what the rules say now (a voter who passes more gold checks loses the gold flag), so it can be rebuilt
  from the log at any time. The votes themselves are never touched (arena_votes is append-only).
- arena_flag_decisions: the operator's reversals, append-only, per (kind, subject): the latest decision wins. A
  reversed (kind, subject) stays reversed through later sweeps, for that subject's later votes too (the operator
  judged the voter, not one vote), until the operator restores it.
- arena_flag_log: every change the sweep makes to a flag (set, changed, lifted), by battle id, append-only: the
  Hub log "flags" (eval_backend/sync_logs.py). A Space restarted on an empty disk gets its votes back from the
  Hub without their sessions, so the sweep can no longer judge them; the restore puts their flags back from this
  log (subject "restored": who cast them stays home, as everything private does), and the sweep leaves flags of
  votes it cannot attribute as they are. The operator's decisions are not logged to the Hub (they name subjects).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from arena.core.sweeps import KINDS, Flag, Rules, VoteFacts, flag_votes, short_hash
from arena.services import gold
from arena.tables import storage
from eval_backend.store import Store, register_migration
from eval_backend.sync_logs import RestoreContext, SyncLog, register_sync_log

register_migration("arena_0007_vote_flags", """
CREATE TABLE IF NOT EXISTS arena_vote_flags (
    vote_id         INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    weight          REAL NOT NULL CHECK (weight >= 0 AND weight < 1),
    subject         TEXT NOT NULL,
    detail          TEXT NOT NULL,
    voted_at        REAL NOT NULL,
    flagged_at      REAL NOT NULL,
    PRIMARY KEY (vote_id, kind)
);
CREATE INDEX IF NOT EXISTS arena_vote_flags_subject ON arena_vote_flags (kind, subject);
CREATE TABLE IF NOT EXISTS arena_flag_log (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    battle_id       TEXT NOT NULL,
    kind            TEXT NOT NULL,
    weight          REAL,
    detail          TEXT,
    voted_at        REAL NOT NULL,
    logged_at       REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS arena_flag_decisions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    action          TEXT NOT NULL CHECK (action IN ('reverse', 'restore')),
    operator        TEXT NOT NULL,
    note            TEXT,
    created_at      REAL NOT NULL
)
""")

ACTIONS = ("reverse", "restore")


def voter_subject(user: str | None, session_id: str | None) -> str:
    """Who cast a vote, for reliability and sweeps: the signed-in account, else the session (hashed: a session
    token lets its holder vote, so it is not shown even to the operator)."""
    return f"user:{user}" if user else f"session:{short_hash(session_id or '')}"


def address_subject(ip_hash: str | None) -> str:
    return f"address:{(ip_hash or '')[:12]}"


def load_facts(store: Store) -> tuple[list[VoteFacts], dict[int, tuple[str, float]]]:
    """The attributable votes as the rules see them, and {vote id: (battle id, time)} for the flags' log."""
    rows = storage.vote_facts(store)
    return ([VoteFacts(r["id"], voter_subject(r["user"], r["session_id"]), address_subject(r["ip_hash"]),
                       r["created_at"], r["model_a"], r["model_b"], r["slot"]) for r in rows],
            {r["id"]: (r["battle_id"], r["created_at"]) for r in rows})


@dataclass(frozen=True)
class SweepReport:
    votes: int               # attributable votes swept
    flags: dict              # {kind: flagged votes}
    excluded: int            # votes whose weight is 0 (reversals applied)
    down_weighted: int
    seconds: float

    def as_dict(self) -> dict:
        return {"votes": self.votes, "flags": self.flags, "excluded": self.excluded,
                "down_weighted": self.down_weighted, "seconds": round(self.seconds, 3)}


def run_sweep(store: Store, rules: Rules = Rules(), now: float | None = None) -> SweepReport:
    """Flag what the rules catch now and drop the flags they no longer raise (the votes stay untouched)."""
    t0 = time.perf_counter()
    now = time.time() if now is None else now
    facts, where = load_facts(store)
    records = gold.records(store, voter_subject)
    flags = flag_votes(facts, records, rules)
    replace_flags(store, flags, where, now)
    w = weights(store)
    return SweepReport(len(facts), {k: sum(f.kind == k for f in flags) for k in KINDS},
                       sum(x == 0 for x in w.values()), sum(0 < x < 1 for x in w.values()),
                       time.perf_counter() - t0)


def replace_flags(store: Store, flags: list[Flag], where: dict[int, tuple[str, float]], now: float) -> None:
    """Make the table hold exactly `flags` for the votes in `where` ({vote id: (battle id, vote time)}: the votes
    the sweep could judge), keeping unchanged rows' first flag time; flags of other votes (restored from the Hub,
    whose voters are unknown here) stay. Every change is appended to arena_flag_log (the Hub log)."""
    want = {(f.vote_id, f.kind): f for f in flags}
    with store.transaction() as conn:
        have = {(r["vote_id"], r["kind"]): r for r in conn.execute(
            "SELECT vote_id, kind, weight, subject, detail FROM arena_vote_flags").fetchall() if r["vote_id"] in where}

        def log(vote_id: int, kind: str, weight: float | None, detail: str | None) -> None:
            battle_id, voted_at = where[vote_id]
            if battle_id:
                conn.execute("INSERT INTO arena_flag_log (battle_id, kind, weight, detail, voted_at, logged_at) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (battle_id, kind, weight, detail, voted_at, now))
        for key in have.keys() - want.keys():
            conn.execute("DELETE FROM arena_vote_flags WHERE vote_id=? AND kind=?", key)
            log(*key, None, None)
        for key, f in want.items():
            old = have.get(key)
            if old is None:
                conn.execute("INSERT INTO arena_vote_flags (vote_id, kind, weight, subject, detail, voted_at, "
                             "flagged_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (f.vote_id, f.kind, f.weight, f.subject, f.detail, where[f.vote_id][1], now))
            elif (old["weight"], old["subject"], old["detail"]) != (f.weight, f.subject, f.detail):
                conn.execute("UPDATE arena_vote_flags SET weight=?, subject=?, detail=? WHERE vote_id=? AND kind=?",
                             (f.weight, f.subject, f.detail, *key))
            else:
                continue
            log(f.vote_id, f.kind, f.weight, f.detail)


def reversed_subjects(store: Store) -> set[tuple[str, str]]:
    """(kind, subject) pairs whose latest operator decision is a reversal."""
    latest: dict[tuple[str, str], str] = {}
    for r in store.query("SELECT kind, subject, action FROM arena_flag_decisions ORDER BY id"):
        latest[(r["kind"], r["subject"])] = r["action"]
    return {k for k, action in latest.items() if action == "reverse"}


def version(store: Store) -> tuple:
    """Changes whenever a flag or a decision is added, changed or dropped (the weights' cache key)."""
    f = store.query("SELECT COUNT(*), COALESCE(SUM(weight), 0), COALESCE(MAX(flagged_at), 0), "
                    "COALESCE(SUM(vote_id), 0) FROM arena_vote_flags")[0]
    d = store.query("SELECT COUNT(*) FROM arena_flag_decisions")[0]
    return tuple(f) + tuple(d)


def active_flags(store: Store) -> list[dict]:
    """Flags in force: every flag whose (kind, subject) the operator has not reversed."""
    off = reversed_subjects(store)
    return [dict(r) for r in store.query("SELECT vote_id, kind, weight, subject, detail, voted_at "
                                         "FROM arena_vote_flags ORDER BY vote_id, kind")
            if (r["kind"], r["subject"]) not in off]


def weights(store: Store) -> dict[int, float]:
    """{vote id: weight < 1} of the votes flags in force hold down; every other vote weighs 1."""
    out: dict[int, float] = {}
    for f in active_flags(store):
        out[f["vote_id"]] = min(out.get(f["vote_id"], 1.0), f["weight"])
    return out


def reasons(store: Store) -> dict[int, list[str]]:
    """{vote id: the kinds of its flags in force}, for releases and the health view."""
    out: dict[int, list[str]] = {}
    for f in active_flags(store):
        out.setdefault(f["vote_id"], []).append(f["kind"])
    return out


def groups(store: Store) -> list[dict]:
    """One row per (kind, subject) with a flag: how many votes, the lowest weight, one reason, and the operator's
    latest decision. Newest flags first."""
    decisions: dict[tuple[str, str], dict] = {}
    for r in store.query("SELECT kind, subject, action, operator, note, created_at FROM arena_flag_decisions "
                         "ORDER BY id"):
        decisions[(r["kind"], r["subject"])] = dict(r)
    rows = store.query("SELECT kind, subject, COUNT(*) AS votes, MIN(weight) AS weight, MAX(detail) AS detail, "
                       "MAX(flagged_at) AS flagged_at FROM arena_vote_flags GROUP BY kind, subject "
                       "ORDER BY MAX(flagged_at) DESC, kind, subject")
    out = []
    for r in rows:
        d = decisions.get((r["kind"], r["subject"]))
        state = "reversed" if d and d["action"] == "reverse" else "in force"
        out.append({**dict(r), "state": state, "decided_by": d["operator"] if d else None,
                    "note": d["note"] if d else None})
    return out


def decide(store: Store, kind: str, subject: str, action: str, operator: str, note: str | None = None,
           now: float | None = None) -> None:
    """The operator reverses a flag (its votes count again) or restores it; logged with their name."""
    if kind not in KINDS or action not in ACTIONS or not subject or not operator:
        raise ValueError(f"a decision needs a kind ({', '.join(KINDS)}), a subject, an action "
                         f"({' or '.join(ACTIONS)}) and the operator's name")
    with store.transaction() as conn:
        conn.execute("INSERT INTO arena_flag_decisions (kind, subject, action, operator, note, created_at) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (kind, subject, action, operator, note or None,
                                                   time.time() if now is None else now))


def weight_counts(store: Store, since: float, until: float, bucket_s: float) -> dict[int, dict]:
    """Per bucket of the votes' time (arena/services/health.py): {bucket: {"down_weighted": n, "excluded": n,
    "why": {kind: votes}}} over the flags in force on votes cast in [since, until)."""
    w: dict[int, float] = {}
    kinds: dict[int, list[str]] = {}
    when: dict[int, float] = {}
    for f in active_flags(store):
        if since <= f["voted_at"] < until:
            w[f["vote_id"]] = min(w.get(f["vote_id"], 1.0), f["weight"])
            kinds.setdefault(f["vote_id"], []).append(f["kind"])
            when[f["vote_id"]] = f["voted_at"]
    out: dict[int, dict] = {}
    for vid, weight in w.items():
        cell = out.setdefault(int(when[vid] // bucket_s), {"down_weighted": 0, "excluded": 0, "why": {}})
        cell["excluded" if weight == 0 else "down_weighted"] += 1
        for k in kinds[vid]:
            cell["why"][k] = cell["why"].get(k, 0) + 1
    return out


# ---------------------------------------------------------------- the Hub log (eval_backend/hub_sync)
RESTORED = "restored"        # the subject of a flag put back from the Hub (its voter is not logged)
LOG_FIELDS = ("id", "battle_id", "kind", "weight", "detail", "voted_at", "logged_at")


def _restore_flags(ctx: RestoreContext, records: list[dict]) -> int:
    """Put the logged flag changes the store lacks back in arena_flag_log (keeping ids on an empty log), and each
    (battle, kind)'s latest state back in arena_vote_flags for the votes the store holds."""
    conn = ctx.conn
    empty = conn.execute("SELECT COUNT(*) FROM arena_flag_log").fetchone()[0] == 0
    have = {(r[0], r[1], r[2]) for r in conn.execute("SELECT battle_id, kind, logged_at FROM arena_flag_log")}
    fresh = [r for r in sorted(records, key=lambda r: r["id"]) if (r["battle_id"], r["kind"], r["logged_at"]) not in have]
    for r in fresh:
        cols = LOG_FIELDS if empty else LOG_FIELDS[1:]
        conn.execute(f"INSERT INTO arena_flag_log ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                     tuple(r.get(c) for c in cols))
    if empty and fresh:
        ctx.store.sync_ids(conn, "arena_flag_log")      # PostgreSQL: the id sequence past the restored ids
        ctx.mark(max(r["id"] for r in fresh))
    latest: dict[tuple[str, str], dict] = {}
    for r in conn.execute("SELECT battle_id, kind, weight, detail, voted_at, logged_at FROM arena_flag_log "
                          "ORDER BY id").fetchall():
        latest[(r["battle_id"], r["kind"])] = dict(r)
    votes = storage.vote_ids_of_battles(conn, sorted({b for b, _ in latest}))
    for (battle_id, kind), r in latest.items():
        if battle_id in votes and r["weight"] is not None:
            conn.execute("INSERT INTO arena_vote_flags (vote_id, kind, weight, subject, detail, voted_at, flagged_at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (vote_id, kind) DO NOTHING",
                         (votes[battle_id], kind, r["weight"], RESTORED, r["detail"] or "", r["voted_at"],
                          r["logged_at"]))
    return len(fresh)


def _count_log(store: Store) -> int:
    return store.query("SELECT COUNT(*) FROM arena_flag_log")[0][0] if store.has_table("arena_flag_log") else 0


register_sync_log(SyncLog(
    "flags", "arena_flag_log",              # a log name is [a-z]+ (space_shell/hub_sync/logs.py)
    f"SELECT id AS seq, {', '.join(LOG_FIELDS)} FROM arena_flag_log WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
    "SELECT MAX(id) FROM arena_flag_log", _restore_flags, order=15, count=_count_log))
