"""The queue and the worker on real SQLite, real loopback servers and real worker processes:
atomic claims (threads and two processes), SIGKILL mid-job → lease expiry → resume without
re-asking finished items, FAILED with a reason → retry, cancel, encrypted keys, predictions jobs,
and the arena serving the new model."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from eval_backend.audio.io import encode_wav
from eval_backend.benchmark.dataset import save_benchmark
from eval_backend.benchmark.loaders import load_benchmark
from eval_backend.store import Store
from eval_backend.submissions import (JobError, Queue, SubmissionForm, SubmissionService, SubmissionSettings,
                                      Submitter)
from eval_backend.submissions import secrets as secretstore
from eval_backend.submissions.worker import Worker, start_worker_thread
from tests.support.fault_server import FaultServer, make_benchmark, tone_pcm

ROOT = Path(__file__).resolve().parent.parent
OPERATOR = Submitter("op", is_operator=True)
METRICS = ("aeq.*",)          # scoring stays quick: the judge-free AEQ entries read "not computed"


def bench_folder(tmp: Path, contexts: list[str], name: str) -> Path:
    return save_benchmark(make_benchmark(tmp / f"src-{name}", contexts, name=name), tmp / f"bench-{name}")


def settings_for(srv_port: int, folder: Path, **kw) -> SubmissionSettings:
    base = dict(allow=(f"127.0.0.1:{srv_port}",), benchmark=str(folder), metrics=METRICS, lease_s=5.0,
                heartbeat_s=0.5, max_attempts=2, call_timeout_s=10.0, concurrency=3)
    return SubmissionSettings(**{**base, **kw})


def form_for(srv: FaultServer, name: str, **kw) -> SubmissionForm:
    return SubmissionForm(**{**dict(name=name, base_url=srv.base_url, model_id="fault", audio_output=True,
                                    voice="v", licence="apache-2.0", open_weights=True), **kw})


@contextmanager
def worker_processes(data: Path, srv_port: int, n: int = 2):
    """`n` `python -m leaderboard worker` processes on one data dir (and the test's database); SIGTERM on exit.
    Each one's output goes to a file beside the data dir (a pipe nobody reads would block a talkative worker). A
    worker still running 60 s after SIGTERM is a bug: its threads' stacks (faulthandler, on SIGABRT) and its log
    are put in the failure, so a rare hang says where it hung."""
    cmd = [sys.executable, "-X", "faulthandler", "-m", "leaderboard", "worker", "--data-dir", str(data),
           "--poll", "0.1", "--metrics", ",".join(METRICS), "--allow", f"127.0.0.1:{srv_port}"]
    logs = [data.parent / f"worker-w{i}.log" for i in range(n)]
    procs = []
    for i, log in enumerate(logs):
        with log.open("wb") as out:
            procs.append(subprocess.Popen(cmd + ["--name", f"w{i}"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT))
    try:
        yield procs
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        hung = []
        for p, log in zip(procs, logs):
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGABRT)             # faulthandler writes every thread's stack, then it dies
                p.wait(30)
                hung.append(f"{log.name}:\n{log.read_text(errors='replace')[-6000:]}")
        assert not hung, "a worker did not stop within 60 s of SIGTERM:\n" + "\n".join(hung)


def wait_for(pred, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# --- claims ----------------------------------------------------------------------------------

def _insert(store: Store, n: int) -> list[int]:
    q = Queue(store)
    ids = []
    with store.transaction() as conn:
        for i in range(n):
            ids.append(q.insert(conn, {"model": f"m{i}", "kind": "endpoint", "base_url": "http://x/v1",
                                       "model_id": "x", "benchmark": "demo", "dedup_key": f"k{i}",
                                       "submitter": "t"}))
    return ids


class _WorkerClaimsAfterEachCommit:
    """The test's store, with a worker that claims the moment any transaction commits: the window between an
    action's commit and a read it makes after it. What the operator is told must still be what the action did."""

    def __init__(self, store: Store):
        self._store = store

    def __getattr__(self, name):
        return getattr(self._store, name)

    @contextmanager
    def transaction(self):
        with self._store.transaction() as conn:
            yield conn
        Queue(self._store).claim("fast-worker", 60)


def test_an_action_reports_the_state_it_left_even_if_a_worker_claims_at_once(tmp_path):
    store = Store(tmp_path / "d")
    (job_id,) = _insert(store, 1)
    q = Queue(_WorkerClaimsAfterEachCommit(store))
    assert Queue(store).claim("w", 60).id == job_id
    assert Queue(store).fail(job_id, "w", "endpoint_failed", "down")
    assert q.retry(job_id, "op", is_operator=True).state == "PENDING"      # was RUNNING: read after the claim
    assert Queue(store).get(job_id).state == "RUNNING"                      # the worker did take it
    assert q.cancel(job_id, "op", is_operator=True).state == "CANCELLED"


def test_threads_claiming_at_once_never_share_a_job(tmp_path):
    store = Store(tmp_path / "d")
    ids = _insert(store, 40)
    got: dict[str, list[int]] = {}

    def claimer(name: str):
        q = Queue(Store(tmp_path / "d"))
        mine = got.setdefault(name, [])
        while (job := q.claim(name, 60)) is not None:
            mine.append(job.id)

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [j for js in got.values() for j in js]
    assert sorted(claimed) == ids                       # every job once, none twice
    claims = store.query("SELECT id, claims, state FROM submissions")
    assert all(r["claims"] == 1 and r["state"] == "RUNNING" for r in claims)


def test_lease_expiry_reclaims_then_gives_up_as_worker_lost(tmp_path):
    now = [1000.0]
    store = Store(tmp_path / "d")
    q = Queue(store, clock=lambda: now[0])
    [job_id] = _insert(store, 1)
    assert q.claim("a", 10).id == job_id
    assert q.claim("b", 10) is None                     # lease still valid
    assert q.heartbeat(job_id, "a", 10)
    now[0] += 11
    assert not q.heartbeat(job_id, "b", 10)             # not b's job
    job = q.claim("b", 10)
    assert job.lease_owner == "b" and job.claims == 2
    assert not q.heartbeat(job_id, "a", 10)             # a lost it
    assert not q.finish(job_id, "a", results_path=None, summary={}, arena=None)   # fenced: a cannot write
    now[0] += 11
    assert q.claim("c", 10, max_claims=3).claims == 3
    now[0] += 11
    assert q.claim("d", 10, max_claims=3) is None       # 3 workers died on it: FAILED, not a fourth run
    job = q.get(job_id)
    assert job.state == "FAILED" and job.error_class == "worker_lost" and "3 times" in job.reason
    events = [e["event"] for e in q.events(job_id)]
    assert events == ["submitted", "claimed", "claimed", "claimed", "failed"]
    assert "expired" in q.events(job_id)[2]["detail"]


# --- end to end ------------------------------------------------------------------------------

def test_failed_job_shows_its_reason_and_retry_finishes_it(tmp_path):
    folder = bench_folder(tmp_path, ["I failed my exam.", "My dog is ill.", "It rains."], "retry")
    store = Store(tmp_path / "d")
    srv = FaultServer().start()
    port = srv.port
    s = settings_for(port, folder)
    svc = SubmissionService(store, s)
    out = svc.submit(form_for(srv, "Retry Model"), Submitter("alice"))
    assert out.accepted, out.errors
    srv.stop()                                           # the endpoint goes down after the preflight
    job = Worker(store, s).run_once()
    assert job.state == "FAILED" and job.error_class == "endpoint_failed"
    assert "none of the 3 requests" in job.reason and "transport error" in job.reason
    assert job.log_excerpt and "failed after" in job.log_excerpt
    listed = {j.id: j for j in svc.list_jobs()}
    assert listed[job.id].reason == job.reason           # what the Submit tab lists
    row = listed[job.id].row()
    assert row["state"] == "FAILED" and row["reason"] == job.reason and "base_url" not in row
    with pytest.raises(JobError):
        svc.retry(job.id, Submitter("alice"))            # only the operator retries
    with FaultServer(port=port) as back:                 # the endpoint comes back
        assert svc.retry(job.id, OPERATOR).state == "PENDING"
        job = Worker(store, s).run_once()
        assert job.state == "FINISHED", job.reason
        assert dict(back.counts) == {f"context/g000{i}/c0": 1 for i in range(3)}
    assert Path(job.results_path).is_file()
    assert json.loads(Path(job.results_path).read_text())["manifest"]
    assert [e["event"] for e in svc.events(job.id)][-1] == "finished"


def test_sigkill_mid_job_lease_expires_and_another_worker_finishes(tmp_path):
    n = 24
    folder = bench_folder(tmp_path, ["[fault:slow:0.3] I am so tired."] * n, "kill")
    bench = load_benchmark(str(folder))
    data = tmp_path / "d"
    store = Store(data)
    with FaultServer() as srv:
        s = settings_for(srv.port, folder, preflight=False)
        assert SubmissionService(store, s).submit(form_for(srv, "Kill Model"), OPERATOR).accepted
        cmd = [sys.executable, "-m", "leaderboard", "worker", "--data-dir", str(data), "--poll", "0.2",
               "--lease", "3", "--heartbeat", "0.5", "--concurrency", "3", "--metrics", ",".join(METRICS),
               "--allow", f"127.0.0.1:{srv.port}"]
        a = subprocess.Popen(cmd + ["--name", "worker-a"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for(lambda: len(store.finished_request_ids("Kill Model", bench.hash)) >= 6, 90, "worker A's replies")
        a.send_signal(signal.SIGKILL)
        a.wait()
        killed_at = time.time()
        done_at_kill = store.finished_request_ids("Kill Model", bench.hash)
        counts_at_kill = dict(srv.counts)
        job = SubmissionService(store, s).list_jobs()[0]
        assert job.state == "RUNNING" and job.lease_owner == "worker-a" and len(done_at_kill) < n
        b = subprocess.Popen(cmd + ["--name", "worker-b"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: Queue(store).get(job.id).state == "FINISHED", 120, "worker B to finish")
        finally:
            b.send_signal(signal.SIGTERM)
            b.wait(60)
        events = Queue(store).events(job.id)
        claims = [e for e in events if e["event"] == "claimed"]
        assert [e["actor"] for e in claims] == ["worker-a", "worker-b"]
        assert "worker-a expired" in claims[1]["detail"]
        assert claims[1]["at"] >= job.lease_expires - 0.01 and claims[1]["at"] > killed_at
        for rid in done_at_kill:
            assert srv.counts[rid] == 1, rid                      # a finished item is never asked again
        asked_twice = {rid for rid, c in srv.counts.items() if c > 1}
        assert all(c <= 2 for c in srv.counts.values())
        assert asked_twice <= set(counts_at_kill) - done_at_kill    # only the ones in flight at the kill
        assert len(asked_twice) <= 3                              # at most `concurrency` were in flight
        assert sum(srv.counts.values()) == n + len(asked_twice)
    rows = store.replies(model="Kill Model", benchmark_hash=bench.hash)
    assert len(rows) == n and all(r.status == "ok" for r in rows)


def test_two_worker_processes_never_run_a_job_twice(tmp_path):
    jobs, items = 6, 3
    folder = bench_folder(tmp_path, ["[fault:slow:0.2] hello"] * items, "two")
    data = tmp_path / "d"
    store = Store(data)
    with FaultServer() as srv:
        s = settings_for(srv.port, folder, preflight=False)
        svc = SubmissionService(store, s)
        ids = [svc.submit(form_for(srv, f"Two {i}", model_id=f"m{i}"), OPERATOR).job_id for i in range(jobs)]
        with worker_processes(data, srv.port):
            wait_for(lambda: all(j.state == "FINISHED" for j in svc.list_jobs()), 180, "all jobs")
        assert sum(srv.counts.values()) == jobs * items          # each job's items asked exactly once
    for job_id in ids:
        claims = [e for e in svc.events(job_id) if e["event"] == "claimed"]
        assert len(claims) == 1, claims
    assert {r["claims"] for r in store.query("SELECT claims FROM submissions")} == {1}


def test_cancel_stops_a_running_job_and_deletes_its_key(tmp_path, monkeypatch):
    monkeypatch.setenv(secretstore.SECRET_KEY_ENV, "a passphrase for the tests")
    secret = "sk-cancel-" + "q9" * 20
    folder = bench_folder(tmp_path, ["[fault:slow:20] wait"] * 3 + ["fine"], "cancel")
    store = Store(tmp_path / "d")
    with FaultServer() as srv:
        s = settings_for(srv.port, folder, preflight=False)
        svc = SubmissionService(store, s)
        out = svc.submit(form_for(srv, "Cancel Model", api_key=secret), Submitter("bob"))
        assert out.accepted
        raw = store.query("SELECT ciphertext FROM submission_secrets WHERE job_id=?", (out.job_id,))[0][0]
        assert secret.encode() not in bytes(raw)                   # encrypted at rest
        handle = start_worker_thread(settings=s, store=store, poll_s=0.1)
        try:
            wait_for(lambda: sum(srv.counts.values()) >= 1, 30, "the job to start")
            with pytest.raises(JobError):
                svc.cancel(out.job_id, Submitter("bob"))           # the submitter cannot cancel a RUNNING job
            t0 = time.monotonic()
            assert svc.cancel(out.job_id, OPERATOR).state == "CANCELLED"
            wait_for(lambda: not srv.inflight, 10, "the worker to drop its calls")
            assert time.monotonic() - t0 < 5                       # noticed at the next heartbeat
        finally:
            handle.stop()
        assert all(a == f"Bearer {secret}" for a in srv.auth_seen)
    job = svc.job(out.job_id)
    assert job.state == "CANCELLED" and not Queue(store).has_secret(out.job_id)
    dump = json.dumps([j.to_dict() for j in svc.list_jobs()] + svc.events(out.job_id))
    assert secret not in dump and secret[:8] not in dump
    with pytest.raises(JobError, match="give the key again"):
        svc.retry(out.job_id, OPERATOR)


def test_keyed_job_finishes_and_its_key_is_gone(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(secretstore.SECRET_KEY_ENV, "another passphrase")
    secret = "sk-finish-" + "z3" * 20
    folder = bench_folder(tmp_path, ["one", "two"], "keyed")
    store = Store(tmp_path / "d")
    with FaultServer() as srv:
        s = settings_for(srv.port, folder)
        svc = SubmissionService(store, s)
        out = svc.submit(form_for(srv, "Keyed Model", api_key=secret), Submitter("carol"))
        assert out.accepted and Queue(store).has_secret(out.job_id)
        job = Worker(store, s).run_once()
        assert job.state == "FINISHED" and not Queue(store).has_secret(out.job_id)
        assert srv.auth_seen and all(a == f"Bearer {secret}" for a in srv.auth_seen)
    assert secret not in caplog.text and secret not in json.dumps(job.to_dict())
    monkeypatch.delenv(secretstore.SECRET_KEY_ENV)
    refused = SubmissionService(store, s).submit(form_for(srv, "Keyed Two", api_key=secret), Submitter("carol"))
    assert not refused.accepted and secretstore.SECRET_KEY_ENV in refused.errors["api_key"]
    assert secret not in json.dumps(refused.to_dict())


def test_predictions_job_imports_without_calling_anything(tmp_path):
    folder = bench_folder(tmp_path, ["a", "b", "c"], "preds")
    store = Store(tmp_path / "d")
    wav = encode_wav(tone_pcm(0.5), 24000)
    zpath = tmp_path / "preds.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("run/predictions.jsonl", "\n".join(json.dumps(x) for x in [
            {"id": "context/g0000/c0", "text": "That sounds hard.", "audio": "audio/0.wav"},
            {"id": "context/g0001/c0", "text": "I am sorry.", "audio": "audio/1.wav"},
            {"id": "context/g0002/c0", "text": "Oh no."}]))
        z.writestr("run/audio/0.wav", wav)
        z.writestr("run/audio/1.wav", wav)
    s = SubmissionSettings(benchmark=str(folder), metrics=METRICS)
    svc = SubmissionService(store, s)
    out = svc.submit(SubmissionForm(name="Offline Model", kind="predictions", predictions_path=str(zpath)),
                     Submitter("dana"))
    assert out.accepted, out.errors
    job = Worker(store, s).run_once()
    assert job.state == "FINISHED", job.reason
    assert job.summary["ok"] == 3 and job.arena["with_audio"] == 2
    again = svc.submit(SubmissionForm(name="Offline Copy", kind="predictions", predictions_path=str(zpath)),
                       Submitter("dana"))
    assert not again.accepted and "duplicate" in again.errors


def test_a_finished_model_is_served_by_the_arena(tmp_path):
    from arena.services.handoff import arena_handoff
    from arena.services.service import ArenaService, NoBattleAvailable
    folder = bench_folder(tmp_path, ["I lost my job.", "My cat ran away."], "arena")
    spec = str(folder)
    store = Store(tmp_path / "d")
    with FaultServer() as srv:
        s = settings_for(srv.port, folder, arena_benchmarks=(spec,))
        svc = SubmissionService(store, s)
        for name in ("Arena One", "Arena Two"):
            assert svc.submit(form_for(srv, name, model_id=name.split()[1]), OPERATOR).accepted
        arena = ArenaService(store, benchmarks=[load_benchmark(spec, store.root)])
        with pytest.raises(NoBattleAvailable):
            arena.serve_battle("s0", "1.2.3.4")              # nobody evaluated yet: nothing to serve
        jobs = [Worker(store, s, handoff=arena_handoff).run_once() for _ in range(2)]
    assert all(j.state == "FINISHED" and j.arena["servable"] and j.row()["arena"] == "servable" for j in jobs)
    info = svc.model_info()
    assert set(info) == {"Arena One", "Arena Two"} and info["Arena One"]["licence"] == "apache-2.0"
    assert info["Arena Two"]["open_weights"] is True and Path(info["Arena Two"]["results_path"]).is_file()
    view = arena.serve_battle("s1", "1.2.3.4")
    served = set(store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (view.battle_id,))[0])
    assert served == {"Arena One", "Arena Two"}


def test_every_failure_has_a_class_and_a_reason(tmp_path):
    import shutil
    folder = bench_folder(tmp_path, ["fine", "[fault:400] refused", "[fault:400] refused", "fine too"], "why")
    store = Store(tmp_path / "d")
    with FaultServer() as srv:
        s = settings_for(srv.port, folder, preflight=False)
        svc = SubmissionService(store, s)
        first = svc.submit(form_for(srv, "Half Model"), OPERATOR).job_id
        job = Worker(store, s).run_once()
        assert job.id == first and job.state == "FAILED" and job.error_class == "too_many_failures"
        assert "2 of 4 requests failed (http_4xx ×2" in job.reason and "HTTP 400" in job.reason
        second = svc.submit(form_for(srv, "Gone Bench", model_id="other"), OPERATOR).job_id
        shutil.rmtree(folder)                                      # the operator's benchmark disappears
        job = Worker(store, s).run_once()
        assert job.id == second and job.state == "FAILED" and job.error_class == "benchmark_error"
        assert str(folder) in job.reason
    assert all(j.reason for j in svc.list_jobs())


def test_a_jobs_request_list_is_built_once(tmp_path, monkeypatch):
    """The worker selects the job's requests once and hands the list to the runner, the tally and (on a deadline)
    the failure note, and the scorer reads the benchmark's memoised id index (issue 27: it was rebuilt four
    times). The index is per loaded benchmark (the app's cache shares one), so it is warmed before the job."""
    from eval_backend import tasks
    folder = bench_folder(tmp_path, ["I lost my keys.", "It is late."], "once")
    store = Store(tmp_path / "d")
    bench = load_benchmark(str(folder), store.root)
    tasks.requests_by_id(bench)
    built: list = []
    real = tasks.build_requests
    with FaultServer() as srv:
        s = settings_for(srv.port, folder)
        assert SubmissionService(store, s).submit(form_for(srv, "Once Model"), OPERATOR).accepted
        monkeypatch.setattr(tasks, "build_requests", lambda b, t=None: built.append(t) or real(b, t))
        job = Worker(store, s, load=lambda spec: bench).run_once()
    assert job.state == "FINISHED", job.reason
    assert job.summary["ok"] == 2 and len(built) == 1
