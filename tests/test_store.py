import sqlite3

import pytest

from eval_backend.store import Reply, Store


def make(status="ok", **kw):
    base = dict(model="m", benchmark_hash="h", request_id="conversation/s1/target", task="conversation",
                item_id="s1", variant="target", status=status)
    if status == "ok":
        base["text"] = "hello"
    else:
        base.update(error_class="timeout", error_message="no answer in 5 s")
    base.update(kw)
    return Reply(**base)


def test_wal_mode_and_migrations_run_once(tmp_path):
    s = Store(tmp_path)
    assert s.query("PRAGMA journal_mode")[0][0] == "wal"
    Store(tmp_path)  # second open must not re-apply migrations
    names = [r[0] for r in s.query("SELECT name FROM schema_migrations")]
    assert len(names) == len(set(names)) and "0001_replies" in names


def test_failure_needs_class_and_ok_needs_content():
    with pytest.raises(ValueError):
        Reply(model="m", benchmark_hash="h", request_id="r", task="t", item_id="i", variant="-", status="failed")
    with pytest.raises(ValueError):
        Reply(model="m", benchmark_hash="h", request_id="r", task="t", item_id="i", variant="-", status="ok")


def test_ok_reply_is_never_overwritten_by_a_failure(tmp_path):
    s = Store(tmp_path)
    s.put_reply(make())
    s.put_reply(make(status="failed"))
    [r] = s.replies(model="m")
    assert r.status == "ok" and r.text == "hello"
    assert s.finished_request_ids("m", "h") == {"conversation/s1/target"}


def test_failure_is_replaced_by_a_later_success(tmp_path):
    s = Store(tmp_path)
    s.put_reply(make(status="failed"))
    assert s.finished_request_ids("m", "h") == set()
    s.put_reply(make(text="second try"))
    [r] = s.replies()
    assert r.status == "ok" and r.text == "second try"


def test_reply_audio_is_content_addressed(tmp_path):
    s = Store(tmp_path)
    a = s.save_reply_audio("model/with:odd name", b"RIFF....")
    b = s.save_reply_audio("model/with:odd name", b"RIFF....")
    assert a == b and s.abspath(a).read_bytes() == b"RIFF...."
    assert ".." not in a and ":" not in a


def test_status_check_constraint_holds_in_sql(tmp_path):
    s = Store(tmp_path)
    with pytest.raises(sqlite3.IntegrityError):
        with s.transaction() as c:
            c.execute("INSERT INTO replies (model, benchmark_hash, request_id, task, item_id, variant, status, "
                      "created_at) VALUES ('m','h','r','t','i','-','maybe',0)")
