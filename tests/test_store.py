import subprocess
import sys
from pathlib import Path

import pytest

from eval_backend.store import Reply, Store

ROOT = Path(__file__).resolve().parent.parent


def make(status="ok", **kw):
    base = dict(model="m", benchmark_hash="h", request_id="conversation/s1/target", task="conversation",
                item_id="s1", variant="target", status=status)
    if status == "ok":
        base["text"] = "hello"
    else:
        base.update(error_class="timeout", error_message="no answer in 5 s")
    base.update(kw)
    return Reply(**base)


@pytest.mark.sqlite_only
def test_sqlite_runs_in_wal_mode(tmp_path):
    assert Store(tmp_path).query("PRAGMA journal_mode")[0][0] == "wal"


def test_migrations_run_once_even_when_replicas_start_together(tmp_path):
    """Four processes open the same (new) database at once: each migration is applied exactly once."""
    code = "import sys; from eval_backend.store import Store; import arena.tables.storage; Store(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, stderr=subprocess.PIPE)
             for _ in range(4)]
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read().decode()
    s = Store(tmp_path)
    names = [r[0] for r in s.query("SELECT name FROM schema_migrations")]
    assert len(names) == len(set(names)) and {"0001_replies", "arena_0001", "arena_0003_append_only"} <= set(names)


def test_floats_come_back_bit_for_bit(tmp_path):
    """Ratings and times are replayed exactly: the database must not round them (PostgreSQL's REAL would)."""
    s = Store(tmp_path)
    x = 0.1 + 0.2 + 1e-13
    s.put_reply(make(latency_s=x, created_at=1767000000.123456789))
    [r] = s.replies()
    assert r.latency_s == x and r.created_at == 1767000000.123456789


def test_one_sql_text_for_both_databases(tmp_path):
    """Placeholders, quoted identifiers, literal '%' and upserts written once work on the store's database."""
    s = Store(tmp_path)
    s.put_meta("run/a", 1)
    s.put_meta("run/a", 2)                     # upsert
    s.put_meta("other", 3)
    assert [r["key"] for r in s.query("SELECT key FROM meta WHERE key LIKE 'run/%' AND key <> ?", ("x",))] == ["run/a"]
    assert s.query("SELECT value FROM meta WHERE key = :k", {"k": "run/a"})[0][0] == "2"
    assert s.query("SELECT 'a?b:c' AS \"user\"")[0]["user"] == "a?b:c"   # placeholders inside quotes stay
    assert dict(s.query("SELECT key, value FROM meta WHERE key = ?", ("other",))[0]) == {"key": "other", "value": "3"}


def test_placeholder_translation_for_postgresql():
    from eval_backend.store_pg import translate
    assert translate("SELECT * FROM t WHERE a=? AND b=:name AND c LIKE 'x%' AND d::text = '?'") == \
        "SELECT * FROM t WHERE a=%s AND b=%(name)s AND c LIKE 'x%%' AND d::text = '?'"
    assert translate('SELECT "user" FROM t WHERE x % 2 = 0') == 'SELECT "user" FROM t WHERE x %% 2 = 0'


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


def test_reply_filters_combine_and_rows_come_ordered_by_model_then_request(tmp_path):
    """Every combination of `replies`' four filters selects exactly the rows matching all of those given, ordered
    by model then request id, on the store's database (each combination is its own SQL text)."""
    from itertools import combinations, product
    s = Store(tmp_path)
    rows = []
    for model, bench, task, status in product(("m-b", "m-a"), ("h1", "h2"), ("conversation", "asr"), ("ok", "failed")):
        for item in ("s2", "s1"):
            reply = make(status, model=model, benchmark_hash=bench, task=task, item_id=item,
                         request_id=f"{task}/{item}/{bench}/{status}")
            s.put_reply(reply)
            rows.append(reply)
    given = dict(model="m-a", benchmark_hash="h2", task="asr", status="ok")
    for n in range(len(given) + 1):
        for keys in combinations(given, n):
            filters = {k: given[k] for k in keys}
            got = [(r.model, r.request_id) for r in s.replies(**filters)]
            want = sorted((r.model, r.request_id) for r in rows
                          if all(getattr(r, k) == v for k, v in filters.items()))
            assert got == want and want, filters


def test_reply_audio_is_content_addressed(tmp_path):
    s = Store(tmp_path)
    a = s.save_reply_audio("model/with:odd name", b"RIFF....")
    b = s.save_reply_audio("model/with:odd name", b"RIFF....")
    assert a == b and s.abspath(a).read_bytes() == b"RIFF...."
    assert ".." not in a and ":" not in a


def test_status_check_constraint_holds_in_sql(tmp_path):
    s = Store(tmp_path)
    with pytest.raises(s.IntegrityError):
        with s.transaction() as c:
            c.execute("INSERT INTO replies (model, benchmark_hash, request_id, task, item_id, variant, status, "
                      "created_at) VALUES ('m','h','r','t','i','-','maybe',0)")
