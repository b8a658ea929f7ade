"""Hub sync against the Hub client stand-in (tests/support/hub_standin.py): real Store, real ArenaService,
the real huggingface_hub.CommitScheduler driving the stand-in client."""
import io
import json
import logging
import threading
import time
from collections import Counter
from dataclasses import asdict

import numpy as np
import pytest
import soundfile as sf

from arena.services.service import ArenaService, VoteRefused
from arena.tables.storage import AXES
from space_shell.hub_sync import HubSync, HubSyncConfig, logs
from eval_backend.store import Reply, Store
from tests.support.hub_standin import StandInHub

LOG_REPO, STATE_REPO = "org/arena-logs", "org/arena-state"


def config(**kw):
    base = dict(token="hf_test", log_repo=LOG_REPO, state_repo=STATE_REPO, every_min=60, retry_s=0.2,
                restore_timeout_s=10)
    return HubSyncConfig(**{**base, **kw})


class Node:
    """One app process: its data dir, store, arena service and sync. On PostgreSQL runs each node has its own
    database: a node stands for a Space whose whole state was wiped, which is what the Hub restores."""

    def __init__(self, path, hub, database_url=None, **kw):
        self.store = Store(path, database_url=database_url)
        self.svc = ArenaService(self.store)
        self.sync = HubSync(self.store, config(**kw), api=hub.api(), append_votes=self.svc.append_votes)

    def vote(self, k: int, prefix: str = "b"):
        a, b = ("warm", "flat") if k % 3 else ("kind", "warm")
        slot = ("A", "B", "tie", "both_bad")[k % 4]
        kind = "live" if k % 7 == 3 else "benchmark"      # some battles are live ones (arena/services/live.py)
        with self.store.transaction() as conn:
            conn.execute("INSERT INTO arena_battles (id, session_id, ip_hash, benchmark_hash, request_id, task, "
                         "item_id, variant, model_a, model_b, min_listen_s, served_at, expires_at, voted, source, "
                         "a_duration_s, b_duration_s) "
                         "VALUES (?, 'sess-secret', 'iphash-secret', 'h', 'r', 'conversation', 'i', 'v', ?, ?, 3, "
                         "?, ?, 1, ?, ?, 3.5)", (f"{prefix}{k}", a, b, 1e9 + k, 1e9 + k + 1800, kind, 2.0 + k))
            self.svc.append_votes([{
                "battle_id": f"{prefix}{k}", "model_a": a, "model_b": b, "winner": {"A": a, "B": b}.get(slot, slot),
                "slot": slot, "said": "A" if k % 2 else None, "sounded": None, "reason": None,
                "session_id": "sess-secret", "user": "user-secret", "ip_hash": "iphash-secret", "first_heard": "A",
                "attribute": None, "dimension": "speaker" if k % 5 == 0 else None, "benchmark_hash": "h",
                "request_id": "r", "created_at": 1e9 + k + 10, "source": "live", "battle_source": kind,
                # the style covariates and the weight travel with the vote (issue 23)
                "a_duration_s": 2.0 + k, "b_duration_s": 3.5, "a_latency_s": 1.5 if kind == "live" else None,
                "weight": 0.5 if k % 11 == 0 else 1.0}], conn)

    def reply(self, model: str, freq: float):
        buf = io.BytesIO()
        sf.write(buf, (0.2 * np.sin(np.arange(8000) * freq / 8000 * 2 * np.pi)).astype(np.float32), 8000,
                 format="WAV")
        rel = self.store.save_reply_audio(model, buf.getvalue())
        self.store.put_reply(Reply(model, "bh", f"req-{model}", "conversation", "i", "v", "ok", text="hello",
                                   audio_path=rel, created_at=1e9))
        return rel

    def snapshot(self):
        ratings = {axis: self.svc.stored_ratings(axis) for axis in AXES}
        refused = self.store.query("SELECT reason, created_at FROM arena_refused_votes ORDER BY id")
        return self.svc.vote_log_hash(), ratings, [tuple(r) for r in refused]


@pytest.fixture
def hub():
    return StandInHub()


@pytest.fixture
def nodes(tmp_path, hub, fresh_database_url):
    made = []

    def make(name, **kw):
        n = Node(tmp_path / name, hub, fresh_database_url(), **kw)
        made.append(n)
        return n
    yield make
    for n in made:
        n.sync.stop(final_push=False, timeout_s=5)


def settle(sync):
    """Wait for the push CommitScheduler starts with, so a failure set up next hits our own push."""
    deadline = time.time() + 10
    while not hasattr(sync.scheduler, "last_future") and time.time() < deadline:
        time.sleep(0.01)
    sync.scheduler.last_future.result(timeout=10)


def log_writes(hub):
    return [(path, sha) for repo, path, sha in hub.writes if repo == LOG_REPO]


def test_restart_on_a_fresh_disk_gives_back_every_vote(nodes, hub):
    a = nodes("a")
    assert "synced" in a.sync.start()
    for k in range(30):
        a.vote(k)
    with pytest.raises(VoteRefused):
        a.svc.submit_vote("no-such-battle", "s", "1.2.3.4", "A")
    rel = a.reply("warm", 440)
    (a.store.root / "results" / "warm").mkdir(parents=True)
    (a.store.root / "results" / "warm" / "demo.json").write_text('{"score": 0.5}')
    a.sync.push_logs()
    assert a.sync.push_state() is not None
    for k in range(30, 40):
        a.vote(k)
    a.sync.stop()                                    # the last push happens at shutdown
    before = a.snapshot()
    assert before[0]["votes"] == 40

    b = nodes("b")                                   # the Space restarted: empty disk
    assert b.svc.votes() == []
    status = b.sync.start()
    assert b.sync.state == "synced" and "40 votes" in status
    assert b.snapshot() == before                    # same vote ids, same hash, same ratings on every axis
    assert b.store.query("SELECT COUNT(*) FROM arena_battles WHERE voted=1")[0][0] == 40
    kinds = "SELECT source, COUNT(*) FROM arena_battles GROUP BY source ORDER BY source"
    assert [tuple(r) for r in b.store.query(kinds)] == [tuple(r) for r in a.store.query(kinds)] == \
        [("benchmark", 34), ("live", 6)]                  # live battles stay live after a restore
    assert {v.battle_source for v in b.svc.votes() if v.id % 7 == 4} == {"live"}
    covariates = "SELECT id, a_duration_s, b_duration_s FROM arena_battles ORDER BY id"
    assert [tuple(r) for r in b.store.query(covariates)] == [tuple(r) for r in a.store.query(covariates)]
    assert [(v.a_duration_s, v.a_latency_s, v.weight) for v in b.svc.votes()] == \
        [(v.a_duration_s, v.a_latency_s, v.weight) for v in a.svc.votes()]
    assert [asdict(r) for r in b.store.replies()] == [asdict(r) for r in a.store.replies()]
    assert (b.store.root / rel).read_bytes() == (a.store.root / rel).read_bytes()
    assert (b.store.root / "results/warm/demo.json").read_text() == '{"score": 0.5}'

    # nothing private left the machine
    blob = "".join(t.decode() for t in hub.files(LOG_REPO).values())
    assert "secret" not in blob and "ip_hash" not in blob and "session_id" not in blob
    # append-only: every log file written exactly once; b's new votes go to new files
    b.vote(100, prefix="new")
    b.sync.push_logs()
    paths = [p for p, _ in log_writes(hub)]
    assert len(paths) == len(set(paths))
    c = nodes("c")
    c.sync.start()
    assert c.svc.vote_log_hash() == b.svc.vote_log_hash() and c.svc.vote_log_hash()["votes"] == 41


def test_a_failed_or_hanging_push_loses_nothing_and_never_blocks_voting(nodes, hub):
    a = nodes("a")
    a.sync.start()
    settle(a.sync)
    for k in range(10):
        a.vote(k)
    hub.fail_next("create_commit")
    with pytest.raises(Exception, match="503"):
        a.sync.push_logs()
    assert "failed" in a.sync.scheduler.last_result and "kept for the next push" in a.sync.status_line()
    assert len(a.svc.votes()) == 10
    a.sync.push_logs()                                # the next push carries the same rows
    hub.hold_commits()                                # the Hub hangs mid-commit
    a.vote(10)
    pending = a.sync.scheduler.trigger()
    time.sleep(0.2)
    t0 = time.perf_counter()
    for k in range(11, 31):
        a.vote(k)
    assert time.perf_counter() - t0 < 5 and not pending.done()
    hub.release()
    pending.result(timeout=10)
    a.sync.push_logs()
    # the state repo: a refused commit is reported, not raised, and the next push succeeds
    a.reply("warm", 330)
    hub.fail_next("create_commit")
    assert a.sync.push_state() is None and a.sync.last_state_push.startswith("failed")
    assert a.sync.push_state() is not None
    b = nodes("b")
    b.sync.start()
    assert b.svc.vote_log_hash() == a.svc.vote_log_hash() and len(b.svc.votes()) == 31
    assert len(b.store.replies()) == 1


def test_unreachable_hub_serves_local_data_then_merges(nodes, hub, caplog):
    a = nodes("a")
    a.sync.start()
    for k in range(10):
        a.vote(k, prefix="a")
    a.sync.stop()
    hub.down = True
    b = nodes("b")
    with caplog.at_level(logging.WARNING, logger="space_shell.hub_sync"):
        t0 = time.perf_counter()
        status = b.sync.start()
    assert time.perf_counter() - t0 < 5
    assert b.sync.state == "local" and "Hub unreachable" in status and "serving local data" in status
    assert any("Hub unreachable" in r.getMessage() for r in caplog.records)
    for k in range(5):
        b.vote(k, prefix="b")                         # voting works meanwhile
    hub.down = False
    deadline = time.time() + 10
    while b.sync.state != "synced" and time.time() < deadline:
        time.sleep(0.05)
    assert b.sync.state == "synced"
    keys = Counter(v.id for v in b.svc.votes())
    assert len(b.svc.votes()) == 15 and max(keys.values()) == 1
    b.sync.push_logs()
    c = nodes("c")
    c.sync.start()
    assert c.svc.vote_log_hash() == b.svc.vote_log_hash()


def test_parent_commit_conflict_is_merged_and_retried(nodes, hub):
    a, b = nodes("a"), nodes("b")
    a.sync.start()
    b.sync.start()
    rel_a, rel_b = a.reply("warm", 440), b.reply("flat", 550)
    commits = hub.calls.count("create_commit")
    hub.before_commit = a.sync.push_state             # a commits while b's commit is in flight
    assert b.sync.push_state() is not None
    assert hub.calls.count("create_commit") == commits + 3     # b's first try was refused, then merged
    files = hub.files(STATE_REPO)
    rows = [json.loads(x) for x in files["state/replies.jsonl"].decode().splitlines()]
    assert {r["model"] for r in rows} == {"warm", "flat"}
    assert rel_a in files and rel_b in files
    # the stand-in refuses a stale parent outright
    api = hub.api()
    stale = hub.repos[("dataset", STATE_REPO)].commits[0][0]
    from huggingface_hub import CommitOperationAdd
    with pytest.raises(Exception, match="412"):
        api.create_commit(STATE_REPO, [CommitOperationAdd("x.txt", b"x")], commit_message="m",
                          repo_type="dataset", parent_commit=stale)


def test_offline_or_unconfigured_makes_no_hub_call(nodes, hub):
    n = nodes("a", offline=True)
    assert "HF_HUB_OFFLINE=1" in n.sync.start() and n.sync.state == "offline"
    n.vote(1)
    assert hub.calls == []
    assert HubSyncConfig.from_env({"HF_HUB_OFFLINE": "1", "HF_TOKEN": "t", "EMPATHY_ARENA_HUB_LOG_REPO": "a/b"}).offline
    env = HubSyncConfig.from_env({"HF_TOKEN": "t", "EMPATHY_ARENA_HUB_LOG_REPO": "a/b",
                                  "EMPATHY_ARENA_HUB_EVERY_MIN": "2"})
    assert env.configured and not env.offline and env.every_min == 2 and env.state_repo is None
    off = HubSync(n.store, HubSyncConfig.from_env({}), api=hub.api())
    assert "off" in off.start() and hub.calls == []
    with pytest.raises(ValueError, match="numbers"):
        HubSyncConfig.from_env({"EMPATHY_ARENA_HUB_RETRY_S": "soon"})


def test_restart_on_the_same_disk_reuploads_nothing_and_drops_crash_orphans(nodes, hub, tmp_path):
    a = nodes("a")
    a.sync.start()
    settle(a.sync)                                    # else its first push may split the 5 votes over 2 files
    for k in range(5):
        a.vote(k)
    a.sync.push_logs()
    a.sync.stop()
    written = log_writes(hub)
    node = a.store.get_meta("hub_sync.node")
    seq = a.store.get_meta("hub_sync.log.votes")["seq"]
    orphan = a.sync.folder / "votes" / f"{node}-{seq + 1:08d}.jsonl"
    orphan.write_text('{"half": "written"}\n')        # a crash between the file and its record

    again = Node(tmp_path / "a", hub, a.store.database_url)   # same disk (and database), new process
    try:
        again.sync.start()
        assert len(again.svc.votes()) == 5             # nothing restored twice
        again.sync.push_logs()
        assert log_writes(hub) == written              # no re-upload of pushed files
        again.vote(5)
        again.sync.push_logs()
        new = log_writes(hub)[len(written):]
        assert sorted(p for p, _ in new) == [f"battles/{node}-00000002.jsonl", f"votes/{orphan.name}"]
        assert "half" not in hub.files(LOG_REPO)[f"votes/{orphan.name}"].decode()
    finally:
        again.sync.stop(final_push=False)


def test_processes_on_one_database_flush_every_row_once(tmp_path, hub, database_url):
    """Replicas on one PostgreSQL database (each its own data dir), or processes on one SQLite data dir, share the
    watermarks and the writer id: their flushes take turns, so no file name is written twice and every row is
    in exactly one file, while votes keep arriving."""
    dirs = [tmp_path / "a", tmp_path / "b"] if database_url else [tmp_path / "a"] * 2
    voter, other = Node(dirs[0], hub, database_url), Node(dirs[1], hub, database_url)
    node = logs.node_id(voter.store)
    assert logs.node_id(other.store) == node
    done = threading.Event()
    written: list[list[str]] = [[], []]

    def flusher(i, n):
        while not done.is_set():
            written[i] += logs.flush(n.store, n.sync.folder, node)
        written[i] += logs.flush(n.store, n.sync.folder, node)
    threads = [threading.Thread(target=flusher, args=(i, n)) for i, n in enumerate((voter, other))]
    for t in threads:
        t.start()
    try:
        for k in range(300):
            voter.vote(k)
    finally:
        done.set()
        for t in threads:
            t.join(timeout=60)
    names = written[0] + written[1]
    assert len(names) == len(set(names))                                # no name written twice
    for log_name in ("votes", "battles"):
        ids = [json.loads(line)["id"]
               for n, mine in zip((voter, other), written) for path in mine if path.startswith(log_name + "/")
               for line in (n.sync.folder / path).read_text().splitlines()]
        assert len(ids) == len(set(ids)) == 300, log_name                # none lost, none twice
    per_log = Counter(p.split("/")[0] for p in names)
    assert per_log["votes"] == per_log["battles"]          # one cut per flush: a vote and its battle go together


def test_offline_env_wins_over_a_config_without_it(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE=1 stops the default (real) client from being created at all."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    store = Store(tmp_path / "d")
    sync = HubSync(store, config())                   # no api injected: would be HfApi
    assert "HF_HUB_OFFLINE=1" in sync.start() and sync._api is None


def test_submissions_come_back_after_a_wiped_disk_and_unfinished_ones_say_why(nodes, hub):
    from eval_backend.submissions.queue import Queue
    a = nodes("a")
    a.sync.start()
    settle(a.sync)
    q = Queue(a.store)
    with a.store.transaction() as conn:
        ids = [q.insert(conn, {"model": f"Model {i}", "kind": "endpoint", "base_url": "http://secret-host/v1",
                               "model_id": f"m{i}", "benchmark": "demo", "dedup_key": f"k{i}",
                               "submitter": "alice"}, None) for i in range(3)]
    done = q.claim("w1", 60)
    assert q.finish(done.id, "w1", results_path="results/x.json", summary={"score": 1}, arena=None)
    q.claim("w1", 60)                                  # the second job is RUNNING when the disk is wiped
    a.sync.push_logs()
    before = {j.id: j for j in q.list()}
    blob = "".join(t.decode() for t in hub.files(LOG_REPO).values())
    assert "secret-host" not in blob and "alice" not in blob
    a.sync.stop()
    pushed = len(log_writes(hub))                      # everything a pushed; b's pushes come after

    b = nodes("b")                                     # the Space restarted: empty disk
    b.sync.start()
    assert b.sync.restored["submissions"] == 3
    after = {j.id: j for j in Queue(b.store).list()}
    assert set(after) == set(ids)
    assert after[done.id].state == "FINISHED" and after[done.id].summary == {"score": 1}
    for job_id in ids[1:]:                             # RUNNING and PENDING cannot resume: no endpoint, no key
        assert after[job_id].state == "FAILED" and after[job_id].error_class == "restored_unfinished"
        assert "submit the model again" in after[job_id].reason and after[job_id].base_url is None
    for job_id in ids:
        assert after[job_id].model == before[job_id].model and after[job_id].created_at == before[job_id].created_at
        events = [e["event"] for e in Queue(b.store).events(job_id)]
        assert events[:len(Queue(a.store).events(job_id))] == [e["event"] for e in Queue(a.store).events(job_id)]
    # new submissions continue after the restored ids; the restored history is not pushed again
    with b.store.transaction() as conn:
        new_id = Queue(b.store).insert(conn, {"model": "New", "kind": "endpoint", "base_url": "http://h/v1",
                                              "model_id": "n", "benchmark": "demo", "dedup_key": "kn",
                                              "submitter": "bob"}, None)
    assert new_id == max(ids) + 1
    # b's scheduler pushes once as it starts (when, against this test's steps, is up to its thread) and again
    # here: together they carry the events b made and nothing restored (each flush writes new files)
    b.sync.push_logs()
    paths = dict.fromkeys(p for p, _ in log_writes(hub)[pushed:] if p.startswith("submissions/"))
    rows = [json.loads(line) for p in paths for line in hub.files(LOG_REPO)[p].decode().splitlines()]
    assert sorted((r["submission_id"], r["event"]) for r in rows) == sorted(
        [(ids[1], "failed"), (ids[2], "failed"), (new_id, "submitted")])
