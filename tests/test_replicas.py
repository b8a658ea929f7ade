"""Several machines on one database: two app processes take votes while two worker processes run the queue.

Run on the suite's database (scripts/test.sh runs it on SQLite and on PostgreSQL). Checks: no acknowledged vote
is lost or counted twice, vote ids follow commit order, the online ratings both apps wrote equal a replay of the
merged vote log, and every job is claimed and run exactly once (the endpoint counts each item's calls).
"""
from __future__ import annotations

import asyncio

import pytest

from eval_backend.store import Store
from eval_backend.submissions import SubmissionService
from tests.support.arena_fixtures import NO_LIMITS, AppProcess, run_load, seed
from tests.support.fault_server import FaultServer
from test_queue_worker import OPERATOR, bench_folder, form_for, settings_for, wait_for, worker_processes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MODELS = ("warm-model", "flat-model", "chirpy-model")
CLIENTS_EACH = 20
VOTES_EACH = 500
JOBS, ITEMS = 8, 3


def test_two_apps_and_two_workers_on_one_database_lose_no_vote_and_run_no_job_twice(tmp_path):
    data = tmp_path / "data"
    seed(data, MODELS, n_scripts=2)
    folder = bench_folder(tmp_path, ["[fault:slow:0.3] hello"] * ITEMS, "replicas")
    store = Store(data)
    with FaultServer() as srv:
        jobs = SubmissionService(store, settings_for(srv.port, folder, preflight=False))
        ids = [jobs.submit(form_for(srv, f"Replica {i}", model_id=f"m{i}"), OPERATOR).job_id for i in range(JOBS)]
        apps = [AppProcess(data, NO_LIMITS).start() for _ in range(2)]
        try:
            with worker_processes(data, srv.port):
                async def both():
                    return await asyncio.gather(*(run_load(app.url, CLIENTS_EACH, VOTES_EACH, seed=i)
                                                  for i, app in enumerate(apps)))
                results = asyncio.run(both())
                wait_for(lambda: all(j.state == "FINISHED" for j in jobs.list_jobs()), 300, "all jobs")
        finally:
            for app in apps:
                app.stop()
        assert sum(srv.counts.values()) == JOBS * ITEMS          # each job's items asked exactly once

    for job_id in ids:
        claims = [e for e in jobs.events(job_id) if e["event"] == "claimed"]
        assert len(claims) == 1, claims
    assert {r["claims"] for r in store.query("SELECT claims FROM submissions")} == {1}
    assert len({e["actor"] for j in ids for e in jobs.events(j) if e["event"] == "claimed"}) == 2   # both worked

    acks = {}
    for res in results:
        assert not res.transport and not res.refused, (res.transport, res.refused)
        assert len(res.acks) == VOTES_EACH
        assert not set(acks) & set(res.acks)          # a battle is served by one process only
        acks.update(res.acks)
    rows = [dict(r) for r in store.query("SELECT id, battle_id FROM arena_votes ORDER BY id")]
    by_battle = {r["battle_id"]: r for r in rows}
    assert len(rows) == len(by_battle) == 2 * VOTES_EACH      # no duplicate, no extra
    assert set(by_battle) == set(acks)                         # none lost
    for battle_id, ack in acks.items():
        assert by_battle[battle_id]["id"] == ack["vote_id"]

    from arena.config import settings_from_env
    from arena.services.service import ArenaService
    from arena.tables.storage import AXES

    svc = ArenaService(store, settings_from_env(data, **NO_LIMITS))
    for axis in AXES:
        stored, replayed = svc.stored_ratings(axis), svc.replay_ratings(axis)
        assert set(stored) == set(replayed), axis
        for model in stored:
            assert stored[model].mu == replayed[model].mu, (axis, model)
            assert stored[model].sigma == replayed[model].sigma, (axis, model)
