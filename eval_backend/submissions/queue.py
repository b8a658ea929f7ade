"""The evaluation queue: one row per submission, its state, its lease, and its history.

States: PENDING → RUNNING → FINISHED | FAILED; CANCELLED by the operator (or the submitter while
PENDING); the operator's retry puts FAILED or CANCELLED back to PENDING. A RUNNING job holds a
lease (`lease_owner`, `lease_expires`) that its worker renews with `heartbeat()`; a job whose
lease expired is claimable again (its worker died), and after `max_claims` such claims it is
FAILED as `worker_lost` instead of looping. Every state change is fenced by the lease owner, so a
worker that lost its lease cannot overwrite what the next one wrote, and is recorded in
`submission_events` (who, when, why), which is what the UI lists.

Claiming is atomic: one SELECT picks the oldest claimable row and one UPDATE takes it, re-checking
the state in its WHERE. On SQLite `BEGIN IMMEDIATE` holds the write lock around both; on PostgreSQL
the SELECT is `FOR UPDATE SKIP LOCKED`, so workers on several machines claim different jobs at once.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from ..store import Store, register_migration
from ..sync_logs import RestoreContext, SyncLog, register_sync_log
from . import secrets as secretstore

STATES = ("PENDING", "RUNNING", "FINISHED", "FAILED", "CANCELLED")
ENDED = ("FINISHED", "FAILED", "CANCELLED")
ACTIVE = ("PENDING", "RUNNING", "FINISHED")     # these block a duplicate submission
ERROR_CLASSES = ("endpoint_failed", "too_many_failures", "benchmark_error", "predictions_error", "scoring_error",
                 "worker_lost", "secret_unavailable", "internal_error", "restored_unfinished",
                 "too_large",   # a reply, or the job's stored replies, passed a size cap (settings.py)
                 "deadline")    # the job's endpoint did not finish within job_deadline_s
# A job that had not ended when a wiped disk was restored from the Hub cannot resume: its endpoint URL and API
# key never leave the machine (hub_sync.logs restores it FAILED with this class, so the list says why).
RESTORED_UNFINISHED = "restored_unfinished"

register_migration("submissions_0001", """
CREATE TABLE IF NOT EXISTS submissions (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    model            TEXT NOT NULL,
    organisation     TEXT,
    link             TEXT,
    licence          TEXT,
    open_weights     INTEGER NOT NULL DEFAULT 0,
    kind             TEXT NOT NULL CHECK (kind IN ('endpoint', 'predictions')),
    base_url         TEXT,
    model_id         TEXT,
    audio_output     INTEGER NOT NULL DEFAULT 0,
    voice            TEXT,
    has_api_key      INTEGER NOT NULL DEFAULT 0,
    predictions_dir  TEXT,
    predictions_jsonl TEXT,
    predictions_hash TEXT,
    benchmark        TEXT NOT NULL,
    tasks            TEXT,
    limit_n          INTEGER,
    dedup_key        TEXT NOT NULL,
    submitter        TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('PENDING', 'RUNNING', 'FINISHED', 'FAILED', 'CANCELLED')),
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    lease_owner      TEXT,
    lease_expires    REAL,
    heartbeat_at     REAL,
    claims           INTEGER NOT NULL DEFAULT 0,
    error_class      TEXT,
    error_message    TEXT,
    log_excerpt      TEXT,
    results_path     TEXT,
    summary          TEXT,
    arena            TEXT
);
CREATE INDEX IF NOT EXISTS submissions_state ON submissions (state, id);
CREATE INDEX IF NOT EXISTS submissions_dedup ON submissions (dedup_key, state);
CREATE INDEX IF NOT EXISTS submissions_submitter ON submissions (submitter, created_at);
CREATE TABLE IF NOT EXISTS submission_events (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id    INTEGER NOT NULL,
    at        REAL NOT NULL,
    event     TEXT NOT NULL,
    actor     TEXT,
    detail    TEXT
);
CREATE INDEX IF NOT EXISTS submission_events_job ON submission_events (job_id, id);
CREATE TABLE IF NOT EXISTS submission_secrets (
    job_id     INTEGER PRIMARY KEY,
    ciphertext BLOB NOT NULL,
    created_at REAL NOT NULL
)
""")

# Live battles (issue 22, arena/services/live_submitted.py): the submitter's opt-in and daily budget. A FINISHED job that opted
# in keeps its encrypted API key (submission_secrets) while it battles live; withdrawing deletes it.
register_migration("submissions_0002_live", (
    "ALTER TABLE submissions ADD COLUMN live_opt_in INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE submissions ADD COLUMN live_calls_per_day INTEGER",
))

CLAIMABLE = "(state = 'PENDING' OR (state = 'RUNNING' AND lease_expires < :now))"
CLAIM_SELECT = f"SELECT * FROM submissions WHERE {CLAIMABLE} ORDER BY id LIMIT 1"
# PostgreSQL: workers claim in plain transactions and skip rows another claimer holds, instead of queueing
# on the store's write lock.
CLAIM_SELECT_PG = CLAIM_SELECT + " FOR UPDATE SKIP LOCKED"


class JobError(ValueError):
    """A queue operation that is not allowed (unknown job, wrong state, not the owner)."""


@dataclass
class Job:
    id: int
    model: str
    organisation: str | None
    link: str | None
    licence: str | None
    open_weights: bool
    kind: str
    base_url: str | None
    model_id: str | None
    audio_output: bool
    voice: str | None
    has_api_key: bool
    predictions_dir: str | None
    predictions_jsonl: str | None
    predictions_hash: str | None
    benchmark: str
    tasks: list[str] | None
    limit_n: int | None
    dedup_key: str
    submitter: str
    state: str
    created_at: float
    updated_at: float
    started_at: float | None
    finished_at: float | None
    lease_owner: str | None
    lease_expires: float | None
    heartbeat_at: float | None
    claims: int
    error_class: str | None
    error_message: str | None
    log_excerpt: str | None
    results_path: str | None
    summary: dict | None
    arena: dict | None
    live_opt_in: bool = False           # battles live once FINISHED and servable (arena/services/live_submitted.py)
    live_calls_per_day: int | None = None

    @classmethod
    def from_row(cls, row) -> "Job":
        d = dict(row)
        for k in ("open_weights", "audio_output", "has_api_key", "live_opt_in"):
            d[k] = bool(d[k])
        for k in ("tasks", "summary", "arena"):
            d[k] = json.loads(d[k]) if d[k] else None
        return cls(**d)

    @property
    def reason(self) -> str | None:
        """One line for the UI: why a job failed or was cancelled."""
        if self.state in ("FAILED", "CANCELLED") and self.error_message:
            return f"{self.error_class}: {self.error_message}" if self.error_class else self.error_message
        return None

    def to_dict(self) -> dict[str, Any]:
        """Every stored field, for the operator and exports (no secret is a field of Job)."""
        return {**asdict(self), "reason": self.reason}

    def row(self) -> dict[str, Any]:
        """One line of the public request list (the Submit tab's table): no endpoint URL, no model id."""
        def iso(t):
            return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if t else ""
        arena = self.arena or {}
        return {"id": self.id, "model": self.model, "organisation": self.organisation or "", "kind": self.kind,
                "state": self.state, "reason": self.reason or "", "submitter": self.submitter,
                "submitted": iso(self.created_at), "updated": iso(self.updated_at), "attempts": self.claims,
                "results": self.results_path or "",
                "arena": ("servable" if arena.get("servable") else f"not served: {arena.get('why')}") if arena else ""}


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Queue:
    """Queue operations over the shared Store. `clock` is injectable for lease tests."""

    def __init__(self, store: Store, clock=time.time):
        self.store = store
        self.clock = clock

    # --- reads -----------------------------------------------------------------------------
    @staticmethod
    def _row(conn, job_id: int) -> Job:
        """The job as this transaction leaves it. An action reports what it did from here, not from a read after
        the commit: a worker polling every second may claim a retried job in between (it was then shown RUNNING
        to the operator who had just queued it, and a test waiting for PENDING failed once)."""
        return Job.from_row(conn.execute("SELECT * FROM submissions WHERE id=?", (job_id,)).fetchone())

    def get(self, job_id: int) -> Job:
        rows = self.store.query("SELECT * FROM submissions WHERE id=?", (job_id,))
        if not rows:
            raise JobError(f"no submission #{job_id}")
        return Job.from_row(rows[0])

    def list(self, submitter: str | None = None, states: tuple[str, ...] | None = None) -> list[Job]:
        """Every submission, newest first (optionally one submitter's / some states)."""
        where, params = [], []
        if submitter is not None:
            where.append("submitter = ?")
            params.append(submitter)
        if states:
            where.append(f"state IN ({', '.join('?' * len(states))})")
            params.extend(states)
        sql = "SELECT * FROM submissions" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id DESC"
        return [Job.from_row(r) for r in self.store.query(sql, tuple(params))]

    def events(self, job_id: int) -> list[dict]:
        return [dict(r) for r in self.store.query(
            "SELECT id, job_id, at, event, actor, detail FROM submission_events WHERE job_id=? ORDER BY id", (job_id,))]

    # Reads inside the submit transaction (the service's duplicate, name and quota checks).
    def active_duplicate(self, conn, dedup_key: str):
        """(id, state) of an active job with the same settings, or None."""
        placeholders = ", ".join("?" * len(ACTIVE))
        return conn.execute(f"SELECT id, state FROM submissions WHERE dedup_key=? AND state IN ({placeholders}) "
                            f"ORDER BY id LIMIT 1", (dedup_key, *ACTIVE)).fetchone()

    def active_named(self, conn, name: str):
        """(id, state) of an active job under `name` (case-insensitive), or None."""
        placeholders = ", ".join("?" * len(ACTIVE))
        return conn.execute(f"SELECT id, state FROM submissions WHERE lower(model)=lower(?) AND state IN "
                            f"({placeholders}) LIMIT 1", (name, *ACTIVE)).fetchone()

    def latest_named(self, conn, name: str):
        """(id) of the newest job under `name` (case-insensitive), or None."""
        return conn.execute("SELECT id FROM submissions WHERE lower(model)=lower(?) ORDER BY id DESC LIMIT 1",
                            (name,)).fetchone()

    def submitted_since(self, conn, submitter: str, since: float) -> int:
        return conn.execute("SELECT COUNT(*) FROM submissions WHERE submitter=? AND created_at>=?",
                            (submitter, since)).fetchone()[0]

    def has_secret(self, job_id: int) -> bool:
        return bool(self.store.query("SELECT 1 FROM submission_secrets WHERE job_id=?", (job_id,)))

    # --- writes ----------------------------------------------------------------------------
    def _event(self, conn, job_id: int, event: str, actor: str | None, detail: str | None = None,
               at: float = 0.0) -> None:
        # Always the transaction's last write: claims hold a row lock without the store's write lock, and the
        # events lock keeps event ids committing in order (the Hub log reads them by id) without deadlock.
        self.store.lock(conn, "submission_events")
        conn.execute("INSERT INTO submission_events (job_id, at, event, actor, detail) VALUES (?, ?, ?, ?, ?)",
                     (job_id, at or time.time(), event, actor, detail))

    def insert(self, conn, row: dict, api_key: str | None = None) -> int:
        """Insert a PENDING job inside the caller's transaction (the one that checked duplicates and quota)."""
        now = self.clock()
        row = {**row, "state": "PENDING", "created_at": now, "updated_at": now, "has_api_key": int(bool(api_key))}
        for k in ("tasks",):
            if row.get(k) is not None and not isinstance(row[k], str):
                row[k] = json.dumps(row[k])
        cols = ", ".join(row)
        cur = conn.execute(f"INSERT INTO submissions ({cols}) VALUES ({', '.join(':' + k for k in row)}) "
                           "RETURNING id", row)
        job_id = int(cur.fetchone()[0])
        if api_key:
            secretstore.put(conn, job_id, api_key)
        self._event(conn, job_id, "submitted", row.get("submitter"), None, now)
        return job_id

    def claim(self, worker: str, lease_s: float, max_claims: int = 3) -> Job | None:
        """Take the oldest PENDING job (or one whose lease expired) for `worker`; None if there is none."""
        while True:
            now = self.clock()
            pg = self.store.dialect == "postgresql"
            # SQLite: BEGIN IMMEDIATE, no other claimer in between. PostgreSQL: the row lock does that.
            with self.store.transaction(immediate=not pg) as conn:
                row = conn.execute(CLAIM_SELECT_PG if pg else CLAIM_SELECT, {"now": now}).fetchone()
                if row is None:
                    return None
                job_id, was = row["id"], row["state"]
                if was == "RUNNING" and row["claims"] >= max_claims:
                    self._end(conn, job_id, "FAILED", "worker_lost",
                              f"the worker stopped without finishing {row['claims']} times (last lease held by "
                              f"{row['lease_owner']}); the job needs a look before a retry", None, now)
                    continue
                cur = conn.execute(
                    f"UPDATE submissions SET state='RUNNING', lease_owner=:w, lease_expires=:exp, heartbeat_at=:now, "
                    f"started_at=COALESCE(started_at, :now), updated_at=:now, claims=claims+1 "
                    f"WHERE id=:id AND {CLAIMABLE}", {"w": worker, "exp": now + lease_s, "now": now, "id": job_id})
                if cur.rowcount != 1:
                    continue
                detail = None if was == "PENDING" else (
                    f"lease of {row['lease_owner']} expired (last heartbeat "
                    f"{now - (row['heartbeat_at'] or now):.0f} s ago); resuming")
                self._event(conn, job_id, "claimed", worker, detail, now)
            return self.get(job_id)

    def heartbeat(self, job_id: int, worker: str, lease_s: float) -> bool:
        """Renew the lease; False when the worker no longer owns the job (expired and taken, cancelled)."""
        now = self.clock()
        with self.store.transaction() as conn:
            cur = conn.execute("UPDATE submissions SET lease_expires=?, heartbeat_at=?, updated_at=? "
                               "WHERE id=? AND lease_owner=? AND state='RUNNING'",
                               (now + lease_s, now, now, job_id, worker))
            return cur.rowcount == 1

    def api_key(self, job_id: int) -> str | None:
        with self.store.transaction(immediate=False) as conn:
            return secretstore.get(conn, job_id)

    def note(self, job_id: int, worker: str | None, event: str, detail: str | None = None) -> None:
        with self.store.transaction() as conn:
            self._event(conn, job_id, event, worker, detail, self.clock())

    def _end(self, conn, job_id: int, state: str, error_class: str | None, message: str | None,
             actor: str | None, now: float, **extra) -> None:
        sets = {"state": state, "error_class": error_class, "error_message": message, "finished_at": now,
                "updated_at": now, "lease_owner": None, "lease_expires": None, **extra}
        for k in ("summary", "arena"):
            if k in sets and sets[k] is not None and not isinstance(sets[k], str):
                sets[k] = json.dumps(sets[k])
        conn.execute(f"UPDATE submissions SET {', '.join(f'{k}=:{k}' for k in sets)} WHERE id=:id",
                     {**sets, "id": job_id})
        live = conn.execute("SELECT live_opt_in FROM submissions WHERE id=?", (job_id,)).fetchone()
        if not (state == "FINISHED" and live and live[0]):
            secretstore.delete(conn, job_id)     # the key lives no longer than the job (or its live battles)
        self._event(conn, job_id, state.lower(), actor, f"{error_class}: {message}" if error_class else message, now)

    def finish(self, job_id: int, worker: str, *, results_path: str | None, summary: dict, arena: dict | None,
               log_excerpt: str | None = None) -> bool:
        """RUNNING → FINISHED, only by the lease owner. False when the lease was lost meanwhile."""
        return self._complete(job_id, worker, "FINISHED", None, None, results_path=results_path,
                              summary=summary, arena=arena, log_excerpt=log_excerpt)

    def fail(self, job_id: int, worker: str, error_class: str, message: str, *, log_excerpt: str | None = None,
             summary: dict | None = None) -> bool:
        """RUNNING → FAILED with a class and a plain-words message, only by the lease owner."""
        if error_class not in ERROR_CLASSES:
            raise ValueError(f"unknown job error class {error_class!r}")
        return self._complete(job_id, worker, "FAILED", error_class, message, log_excerpt=log_excerpt,
                              summary=summary)

    def _complete(self, job_id, worker, state, error_class, message, **extra) -> bool:
        now = self.clock()
        with self.store.transaction() as conn:
            row = conn.execute("SELECT state, lease_owner FROM submissions WHERE id=?", (job_id,)).fetchone()
            if row is None or row["state"] != "RUNNING" or row["lease_owner"] != worker:
                return False
            self._end(conn, job_id, state, error_class, message, worker, now, **extra)
            return True

    def withdraw_live(self, job_id: int, actor: str, is_operator: bool) -> Job:
        """The submitter (or the operator) takes a model out of live battles: no more live calls, and its stored
        API key is deleted now."""
        now = self.clock()
        with self.store.transaction() as conn:
            row = conn.execute("SELECT submitter, live_opt_in FROM submissions WHERE id=?", (job_id,)).fetchone()
            if row is None:
                raise JobError(f"no submission #{job_id}")
            if not is_operator and row["submitter"] != actor:
                raise JobError("only its submitter or the operator can take a model out of live battles")
            if not row["live_opt_in"]:
                raise JobError(f"submission #{job_id} does not battle live")
            conn.execute("UPDATE submissions SET live_opt_in=0, updated_at=? WHERE id=?", (now, job_id))
            secretstore.delete(conn, job_id)
            self._event(conn, job_id, "live_withdrawn", actor, None, now)
            return self._row(conn, job_id)

    def cancel(self, job_id: int, actor: str, is_operator: bool) -> Job:
        """PENDING or RUNNING → CANCELLED. The operator may cancel any job, a submitter only their PENDING one.
        A running worker notices at its next heartbeat and stops."""
        now = self.clock()
        with self.store.transaction() as conn:
            row = conn.execute("SELECT state, submitter FROM submissions WHERE id=?", (job_id,)).fetchone()
            if row is None:
                raise JobError(f"no submission #{job_id}")
            if not is_operator and not (row["submitter"] == actor and row["state"] == "PENDING"):
                raise JobError("only the operator can cancel this submission")
            if row["state"] not in ("PENDING", "RUNNING"):
                raise JobError(f"submission #{job_id} is {row['state']}; only PENDING or RUNNING jobs can be cancelled")
            self._end(conn, job_id, "CANCELLED", None, f"cancelled by {actor}", actor, now)
            return self._row(conn, job_id)

    def retry(self, job_id: int, actor: str, is_operator: bool, api_key: str | None = None) -> Job:
        """FAILED or CANCELLED → PENDING (operator only). Stored ok replies are kept, so the run resumes.
        A job submitted with an API key needs it again (it was deleted when the job ended)."""
        if not is_operator:
            raise JobError("only the operator can retry a submission")
        now = self.clock()
        with self.store.transaction() as conn:
            row = conn.execute("SELECT state, has_api_key FROM submissions WHERE id=?", (job_id,)).fetchone()
            if row is None:
                raise JobError(f"no submission #{job_id}")
            if row["state"] not in ("FAILED", "CANCELLED"):
                raise JobError(f"submission #{job_id} is {row['state']}; only FAILED or CANCELLED jobs can be retried")
            if row["has_api_key"] and not api_key:
                raise JobError("this submission used an API key, deleted when the job ended; give the key again")
            if api_key:
                secretstore.put(conn, job_id, api_key)
            conn.execute("UPDATE submissions SET state='PENDING', error_class=NULL, error_message=NULL, "
                         "log_excerpt=NULL, finished_at=NULL, lease_owner=NULL, lease_expires=NULL, claims=0, "
                         "updated_at=? WHERE id=?", (now, job_id))
            self._event(conn, job_id, "retried", actor, None, now)
            return self._row(conn, job_id)


# ---------------------------------------------------------------- the Hub log (eval_backend/hub_sync)
# One line per submission event, with the submission's public fields at the time of the flush.
SUBMISSION_FIELDS = ("model", "organisation", "link", "licence", "open_weights", "kind", "model_id", "audio_output",
                     "benchmark", "tasks", "limit_n", "state", "created_at", "updated_at", "started_at",
                     "finished_at", "error_class", "error_message", "summary")


def _restore_submissions(ctx: RestoreContext, records: list[dict]) -> int:
    """The public request list survives a wiped disk: each submission the store lacks comes back with its latest
    public fields and its event history (who acted is not logged, so events have no actor). Returns how many."""
    store, conn = ctx.store, ctx.conn
    have = {r[0] for r in conn.execute("SELECT id FROM submissions")}
    by_job: dict[int, list[dict]] = {}
    for rec in records:                              # file order; a stable sort by time keeps it for ties
        if rec.get("submission_id") not in have:
            by_job.setdefault(int(rec["submission_id"]), []).append(rec)
    if not by_job:
        return 0
    ended = []
    for job_id, recs in sorted(by_job.items()):
        recs.sort(key=lambda r: r["at"])
        row = {k: recs[-1].get(k) for k in SUBMISSION_FIELDS}
        if row["state"] in ("PENDING", "RUNNING"):
            ended.append((job_id, row["state"]))
        row.update(id=job_id, dedup_key=f"restored:{job_id}", submitter="(restored from the Hub)")
        conn.execute(f"INSERT INTO submissions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                     tuple(row.values()))
        for rec in recs:
            conn.execute("INSERT INTO submission_events (job_id, at, event, actor, detail) VALUES (?, ?, ?, NULL, NULL)",
                         (job_id, rec["at"], rec["event"]))
    store.sync_ids(conn, "submissions")
    store.sync_ids(conn, "submission_events")
    if not have:                                     # the restored events are already in the repo
        ctx.mark(conn.execute("SELECT MAX(id) FROM submission_events").fetchone()[0])
    for job_id, was in ended:
        message = (f"the Space restarted on a wiped disk while this job was {was}; its endpoint and API key are "
                   "kept on the machine only, so it cannot resume: submit the model again")
        conn.execute("UPDATE submissions SET state='FAILED', error_class=?, error_message=?, finished_at=updated_at "
                     "WHERE id=?", (RESTORED_UNFINISHED, message, job_id))
        conn.execute("INSERT INTO submission_events (job_id, at, event, actor, detail) VALUES (?, "
                     "(SELECT updated_at FROM submissions WHERE id=?), 'failed', 'hub restore', ?)",
                     (job_id, job_id, f"{RESTORED_UNFINISHED}: {message}"))
    return len(by_job)


register_sync_log(SyncLog(
    "submissions", "submission_events",
    "SELECT e.id AS seq, e.job_id AS submission_id, e.at, e.event, "
    + ", ".join(f"s.{c}" for c in SUBMISSION_FIELDS)
    + " FROM submission_events e JOIN submissions s ON s.id = e.job_id WHERE e.id > ? AND e.id <= ? "
      "ORDER BY e.id LIMIT ?",
    "SELECT MAX(id) FROM submission_events",
    _restore_submissions, order=40))
