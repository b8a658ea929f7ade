"""Two app processes on one database (SQLite, WAL): votes through both at once, none lost or duplicated,
and the online ratings both processes wrote still equal a replay of the merged vote log.

(Two worker processes on one queue: tests/test_queue_worker.py::test_two_worker_processes_never_run_a_job_twice.)
"""
from __future__ import annotations

import asyncio
import sqlite3

import pytest

from tests.arena_fixtures import NO_LIMITS, AppProcess, run_load, seed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MODELS = ("warm-model", "flat-model", "chirpy-model")
CLIENTS_EACH = 20
VOTES_EACH = 600


def test_two_app_processes_share_one_database_without_losing_votes(tmp_path):
    seed(tmp_path, MODELS, n_scripts=2)
    apps = [AppProcess(tmp_path, NO_LIMITS).start() for _ in range(2)]
    try:
        async def both():
            return await asyncio.gather(*(run_load(app.url, CLIENTS_EACH, VOTES_EACH, seed=i)
                                          for i, app in enumerate(apps)))
        results = asyncio.run(both())
    finally:
        for app in apps:
            app.stop()
    acks = {}
    for res in results:
        assert not res.transport and not res.refused, (res.transport, res.refused)
        assert len(res.acks) == VOTES_EACH
        assert not set(acks) & set(res.acks)          # a battle is served by one process only
        acks.update(res.acks)

    conn = sqlite3.connect(tmp_path / "store.sqlite3")
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM arena_votes ORDER BY id")]
    conn.close()
    by_battle = {r["battle_id"]: r for r in rows}
    assert len(rows) == len(by_battle) == 2 * VOTES_EACH      # no duplicate, no extra
    assert set(by_battle) == set(acks)                         # none lost
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    for battle_id, ack in acks.items():
        assert by_battle[battle_id]["id"] == ack["vote_id"]

    from arena.config import settings_from_env
    from arena.service import ArenaService
    from arena.storage import AXES
    from eval_backend.store import Store

    svc = ArenaService(Store(tmp_path), settings_from_env(tmp_path, **NO_LIMITS))
    for axis in AXES:
        stored, replayed = svc.stored_ratings(axis), svc.replay_ratings(axis)
        assert set(stored) == set(replayed), axis
        for model in stored:
            assert stored[model].mu == replayed[model].mu, (axis, model)
            assert stored[model].sigma == replayed[model].sigma, (axis, model)
