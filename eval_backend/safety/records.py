"""Screening decisions and operator actions on the shared Store (SQLite or PostgreSQL); every SQL text naming
safety_screenings or safety_actions lives here (tests/test_seams.py).

- safety_screenings: the current decision per (kind, subject) — the text screened, the screen's name and version,
  scores and reason, and the operator's latest action on it. Recording the same text with the same screen and
  status again keeps the row (and so an operator's release); a different text, screen or status replaces it and
  clears the action (a new decision needs a new look).
- safety_actions: append-only log of every operator action (release / keep_hidden), with time and operator.

`kind` says what was screened ("reply", "reason", "submission_name", "live_utterance", "live_reply"); `subject`
is an opaque id the caller chooses (a reply key, a vote id, ...).
"""
from __future__ import annotations

import hashlib
import json
import time
import weakref
from dataclasses import dataclass

from ..store import Store, register_migration
from .core import CATEGORIES, ScreenResult

KINDS = ("reply", "reason", "submission_name", "live_utterance", "live_reply")
ACTIONS = ("release", "keep_hidden")

register_migration("safety_0001", """
CREATE TABLE IF NOT EXISTS safety_screenings (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    text            TEXT NOT NULL,
    text_hash       TEXT NOT NULL,
    screen          TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('screened', 'not_screened')),
    flagged         INTEGER NOT NULL CHECK (flagged IN (0, 1)),
    crisis          INTEGER NOT NULL CHECK (crisis IN (0, 1)),
    categories      TEXT NOT NULL,
    reason          TEXT NOT NULL,
    screened_at     REAL NOT NULL,
    action          TEXT CHECK (action IS NULL OR action IN ('release', 'keep_hidden')),
    action_by       TEXT,
    action_at       REAL,
    UNIQUE (kind, subject)
);
CREATE INDEX IF NOT EXISTS safety_screenings_held ON safety_screenings (kind, flagged);
CREATE TABLE IF NOT EXISTS safety_actions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    screening_id    INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    action          TEXT NOT NULL CHECK (action IN ('release', 'keep_hidden')),
    operator        TEXT NOT NULL,
    note            TEXT NOT NULL DEFAULT '',
    created_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS safety_actions_subject ON safety_actions (kind, subject, id)
""")

_COLUMNS = ("id, kind, subject, text, screen, status, flagged, crisis, categories, reason, screened_at, "
            "action, action_by, action_at")
_migrated: weakref.WeakSet = weakref.WeakSet()     # stores whose tables this process has made sure of


@dataclass(frozen=True)
class Screening:
    """A stored decision plus the operator's latest action on it."""
    id: int
    kind: str
    subject: str
    text: str
    result: ScreenResult
    screened_at: float
    action: str | None = None
    action_by: str | None = None
    action_at: float | None = None

    @property
    def hidden(self) -> bool:
        """Kept from voters and releases: flagged (or not screened) and not released by an operator."""
        return self.result.flagged and self.action != "release"


HeldItem = Screening     # a held item is a stored decision that is hidden


def _ensure(store: Store) -> None:
    """The tables, when the store was opened before this module was imported (migrations run at Store())."""
    if store not in _migrated:
        store.migrate()
        _migrated.add(store)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown screening kind {kind!r} (expected one of {', '.join(KINDS)})")


def _row(r) -> Screening:
    cats = json.loads(r["categories"])
    result = ScreenResult(flagged=bool(r["flagged"]), crisis=bool(r["crisis"]),
                          categories={c: float(cats.get(c, 0.0)) for c in CATEGORIES},
                          reason=r["reason"], screen=r["screen"], status=r["status"])
    return Screening(id=int(r["id"]), kind=r["kind"], subject=r["subject"], text=r["text"], result=result,
                     screened_at=float(r["screened_at"]), action=r["action"], action_by=r["action_by"],
                     action_at=None if r["action_at"] is None else float(r["action_at"]))


def record(store: Store, kind: str, subject: str, text: str, result: ScreenResult) -> None:
    """Store one decision (see the module docstring for when an earlier action survives)."""
    _check_kind(kind)
    _ensure(store)
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    with store.transaction() as conn:
        old = conn.execute("SELECT id, text_hash, screen, status FROM safety_screenings WHERE kind = ? AND subject = ?",
                           (kind, subject)).fetchone()
        if old is not None and (old["text_hash"], old["screen"], old["status"]) == (digest, result.screen,
                                                                                   result.status):
            return
        if old is not None:
            conn.execute("DELETE FROM safety_screenings WHERE id = ?", (old["id"],))
        conn.execute("INSERT INTO safety_screenings (kind, subject, text, text_hash, screen, status, flagged, crisis, "
                     "categories, reason, screened_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (kind, subject, text, digest, result.screen, result.status, int(result.flagged),
                      int(result.crisis), json.dumps(result.categories, sort_keys=True), result.reason, time.time()))


def latest(store: Store, kind: str, subject: str) -> Screening | None:
    _ensure(store)
    rows = store.query(f"SELECT {_COLUMNS} FROM safety_screenings WHERE kind = ? AND subject = ?", (kind, subject))
    return _row(rows[0]) if rows else None


def held(store: Store, kind: str | None = None) -> list[HeldItem]:
    """Flagged or not-screened decisions no operator has released, oldest first (kept-hidden ones included, with
    their action)."""
    _ensure(store)
    sql = (f"SELECT {_COLUMNS} FROM safety_screenings WHERE flagged = 1 "
           "AND (action IS NULL OR action <> 'release')")
    params: tuple = ()
    if kind is not None:
        sql += " AND kind = ?"
        params = (kind,)
    return [_row(r) for r in store.query(sql + " ORDER BY screened_at, id", params)]


def held_subjects(store: Store, kind: str) -> set[str]:
    """The subjects of one kind to keep out of battles, Browse, media and releases (one query)."""
    _ensure(store)
    return {r[0] for r in store.query("SELECT subject FROM safety_screenings WHERE kind = ? AND flagged = 1 "
                                      "AND (action IS NULL OR action <> 'release')", (kind,))}


def held_version(store: Store) -> tuple:
    """A stamp that changes whenever a decision is recorded or acted on (one cheap query): callers that filter
    battles or Browse by `held_subjects` cache the set until this changes, keeping the lookup off the vote path."""
    _ensure(store)
    row = store.query("SELECT COUNT(*), MAX(id), (SELECT MAX(id) FROM safety_actions) FROM safety_screenings")[0]
    return tuple(row)


def act(store: Store, kind: str, subject: str, action: str, operator: str, note: str = "") -> None:
    """An operator's decision on a stored screening, logged in safety_actions with time and operator."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r} (expected release or keep_hidden)")
    if not operator or not operator.strip():
        raise ValueError("an action needs the operator's name")
    _ensure(store)
    now = time.time()
    with store.transaction() as conn:
        row = conn.execute("SELECT id FROM safety_screenings WHERE kind = ? AND subject = ?",
                           (kind, subject)).fetchone()
        if row is None:
            raise KeyError(f"no screening recorded for {kind} {subject!r}")
        conn.execute("INSERT INTO safety_actions (screening_id, kind, subject, action, operator, note, created_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", (row["id"], kind, subject, action, operator, note, now))
        conn.execute("UPDATE safety_screenings SET action = ?, action_by = ?, action_at = ? WHERE id = ?",
                     (action, operator, now, row["id"]))


def actions(store: Store, kind: str | None = None, subject: str | None = None) -> list[dict]:
    """The action log, oldest first."""
    _ensure(store)
    sql, params = "SELECT id, screening_id, kind, subject, action, operator, note, created_at FROM safety_actions", []
    where = []
    if kind is not None:
        where.append("kind = ?")
        params.append(kind)
    if subject is not None:
        where.append("subject = ?")
        params.append(subject)
    if where:
        sql += " WHERE " + " AND ".join(where)
    return [dict(r) for r in store.query(sql + " ORDER BY id", tuple(params))]
