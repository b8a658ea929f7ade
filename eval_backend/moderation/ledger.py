"""The one adapter over the screening records (`eval_backend.safety.records`, owned by the safety package).

Every decision and operator action of the project goes through `record` / `act` here, which also set a new
version token in the store's meta table: readers that cache what is playable (the arena's battle index) compare
one meta value per battle instead of re-reading the records, and any replica sees another's change.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

VERSION_KEY = "moderation:version"


def _records():
    from ..safety import records  # why: the safety screens (~0.5 s) off the app's start-up
    return records


def version(store) -> str:
    return store.get_meta(VERSION_KEY, "") or ""


def _bump(store) -> None:
    store.put_meta(VERSION_KEY, secrets.token_hex(8))


def record(store, kind: str, subject: str, text: str, result) -> None:
    _records().record(store, kind, subject, text, result)
    _bump(store)


def act(store, kind: str, subject: str, action: str, operator: str, note: str = ""):
    out = _records().act(store, kind, subject, action, operator, note)
    _bump(store)
    return out


def latest(store, kind: str, subject: str):
    return _records().latest(store, kind, subject)


def decided(store, kind: str, subject: str) -> bool:
    return latest(store, kind, subject) is not None


def held(store, kind: str | None = None) -> list:
    return _records().held(store, kind)


def held_subjects(store, kind: str) -> set[str]:
    return set(_records().held_subjects(store, kind))


@dataclass(frozen=True)
class State:
    """What a reader needs of one subject: may it be shown, and did it read as a crisis."""
    cleared: bool          # screened clean, or released by the operator
    crisis: bool
    decided: bool          # any decision recorded (False: not screened yet, so not shown)


UNDECIDED = State(False, False, False)


def state_of(rec) -> State:
    """A stored decision (records.Screening, or None) as a State. Shown only when screened clean or released:
    a "not screened" decision is never shown, whatever EMPATHY_ARENA_SCREEN_REQUIRED says."""
    if rec is None:
        return UNDECIDED
    released = rec.action == "release"
    clean = rec.result.status == "screened" and not rec.result.flagged
    return State(released or clean, bool(rec.result.crisis), True)


def states(store, kind: str, subjects) -> dict[str, State]:
    """{subject: State} for the given subjects (one read per subject; the arena does it when its battle index is
    rebuilt, not per battle)."""
    return {subject: state_of(latest(store, kind, subject)) for subject in subjects}


def state(store, kind: str, subject: str) -> State:
    return state_of(latest(store, kind, subject))
