"""Screening decisions and operator actions on the real store (SQLite, and PostgreSQL with
EMPATHY_ARENA_TEST_DB=postgresql): what is held, what an operator's action changes, and that every action is logged."""
from __future__ import annotations

import pytest

from eval_backend.safety import records
from eval_backend.safety.core import CATEGORIES, ScreenResult, not_screened
from eval_backend.store import Store


def _result(flagged: bool, reason: str = "", crisis: bool = False, abuse: float = 0.0) -> ScreenResult:
    cats = {c: 0.0 for c in CATEGORIES}
    cats["abuse"] = abuse
    return ScreenResult(flagged=flagged, crisis=crisis, categories=cats, reason=reason, screen="test:screen-1")


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path)


def test_record_and_latest_round_trip(store):
    result = _result(True, "abuse 0.97 (classifier)", crisis=True, abuse=0.97)
    records.record(store, "reply", "m1/b/r1", "you idiot", result)
    got = records.latest(store, "reply", "m1/b/r1")
    assert got.result == result and got.text == "you idiot" and got.kind == "reply" and got.hidden
    assert got.action is None and got.screened_at > 0
    assert records.latest(store, "reply", "nope") is None
    assert records.latest(store, "reason", "m1/b/r1") is None          # kinds are separate namespaces


def test_held_lists_flagged_and_not_screened_but_not_clean_or_released(store):
    records.record(store, "reply", "a", "bad", _result(True, "abuse 0.99 (classifier)", abuse=0.99))
    records.record(store, "reply", "b", "fine", _result(False))
    records.record(store, "reply", "c", "unknown", not_screened("test:screen-1", "timeout"))
    records.record(store, "reason", "v1", "bad reason", _result(True, "insult 0.90 (rule)"))
    assert records.held_subjects(store, "reply") == {"a", "c"}
    assert records.held_subjects(store, "reason") == {"v1"}
    assert records.held_subjects(store, "live_reply") == set()
    held = records.held(store, "reply")
    assert [h.subject for h in held] == ["a", "c"]
    assert held[1].result.status == "not_screened" and held[1].result.reason == "not screened: timeout"
    assert {h.subject for h in records.held(store)} == {"a", "c", "v1"}

    records.act(store, "reply", "a", "release", "operator-1", "a quote, not an insult")
    records.act(store, "reply", "c", "keep_hidden", "operator-2")
    assert records.held_subjects(store, "reply") == {"c"}
    kept = records.latest(store, "reply", "c")
    assert kept.action == "keep_hidden" and kept.action_by == "operator-2" and kept.hidden
    released = records.latest(store, "reply", "a")
    assert released.action == "release" and not released.hidden
    log = records.actions(store)
    assert [(a["subject"], a["action"], a["operator"], a["note"]) for a in log] == [
        ("a", "release", "operator-1", "a quote, not an insult"), ("c", "keep_hidden", "operator-2", "")]
    assert all(a["created_at"] > 0 for a in log)


def test_recording_the_same_decision_keeps_the_release_and_a_new_text_needs_a_new_look(store):
    flagged = _result(True, "abuse 0.99 (classifier)", abuse=0.99)
    records.record(store, "reply", "a", "bad", flagged)
    records.act(store, "reply", "a", "release", "op")
    records.record(store, "reply", "a", "bad", flagged)              # re-screened at hand-off: same decision
    assert records.latest(store, "reply", "a").action == "release"
    assert records.held_subjects(store, "reply") == set()
    records.record(store, "reply", "a", "worse", flagged)            # the text changed: held again
    assert records.latest(store, "reply", "a").action is None
    assert records.held_subjects(store, "reply") == {"a"}
    assert len(records.actions(store, "reply", "a")) == 1            # the log keeps the earlier action


def test_a_screened_retry_replaces_a_not_screened_decision(store):
    records.record(store, "live_reply", "x", "hello", not_screened("test:screen-1", "http_5xx"))
    assert records.held_subjects(store, "live_reply") == {"x"}
    records.record(store, "live_reply", "x", "hello", _result(False))
    assert records.held_subjects(store, "live_reply") == set()
    assert records.latest(store, "live_reply", "x").result.status == "screened"


def test_bad_calls_are_refused(store):
    with pytest.raises(ValueError, match="kind"):
        records.record(store, "comment", "a", "x", _result(False))
    records.record(store, "reply", "a", "x", _result(True))
    with pytest.raises(ValueError, match="action"):
        records.act(store, "reply", "a", "delete", "op")
    with pytest.raises(ValueError, match="operator"):
        records.act(store, "reply", "a", "release", " ")
    with pytest.raises(KeyError):
        records.act(store, "reply", "missing", "release", "op")
    assert records.actions(store) == []


def test_tables_appear_on_a_store_opened_before_the_module_registered_them(tmp_path):
    """Migrations run when a Store opens; records makes sure its tables exist on a store opened earlier."""
    from eval_backend import store as store_module
    saved = store_module.MIGRATIONS.pop("safety_0001")
    try:
        early = Store(tmp_path / "early")
        assert not early.has_table("safety_screenings")
    finally:
        store_module.MIGRATIONS["safety_0001"] = saved
    records.record(early, "reply", "a", "x", _result(True))
    assert records.held_subjects(early, "reply") == {"a"}


def test_the_same_store_seen_from_a_second_connection(store, tmp_path):
    """Another replica (a second Store on the same database) sees decisions and actions."""
    records.record(store, "submission_name", "sub-1", "Org of idiots", _result(True, "insult 0.90 (rule)"))
    other = Store(tmp_path)
    assert records.held_subjects(other, "submission_name") == {"sub-1"}
    records.act(other, "submission_name", "sub-1", "release", "op")
    assert records.held_subjects(store, "submission_name") == set()


def test_held_version_changes_with_every_decision_and_action(store):
    stamps = [records.held_version(store)]
    records.record(store, "reply", "a", "x", _result(True))
    stamps.append(records.held_version(store))
    records.record(store, "reply", "a", "x", _result(True))           # the same decision: no change
    assert records.held_version(store) == stamps[-1]
    records.act(store, "reply", "a", "release", "op")
    stamps.append(records.held_version(store))
    records.record(store, "reply", "a", "y", _result(True))           # replaced: same count, new id
    stamps.append(records.held_version(store))
    assert len(set(stamps)) == 4
