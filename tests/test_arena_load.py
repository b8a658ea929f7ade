"""Load and crash test of the arena through its HTTP API, against a real app process.

Phase 1: 50 concurrent voters cast 5,000 votes; every acknowledged vote is in
SQLite exactly once, with the values sent, and nothing else is.
Phase 2: the same load, and the server is SIGKILLed mid-way. After a restart every
acknowledged vote is there, the only extra rows are votes that were in flight,
the database is intact, the stored TrueSkill ratings equal a replay of the vote
log on every axis, and the restarted server takes votes again.
The minimum listening time and the rate limits are switched off (settings
override) so the test measures the write path, not the integrity rules.
"""
from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from eval_backend.store import Store
from tests.support.arena_fixtures import NO_LIMITS, AppProcess, run_load, seed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

CLIENTS = 50
VOTES = 5000
KILL_AFTER = 400
MODELS = ("warm-model", "flat-model", "chirpy-model")


def _rows(data_dir) -> list[dict]:
    return [dict(r) for r in Store(data_dir).query("SELECT * FROM arena_votes ORDER BY id")]


def _check_acks_match_rows(acks: dict[str, dict], rows_by_battle: dict[str, dict]) -> None:
    for battle_id, ack in acks.items():
        row = rows_by_battle[battle_id]
        assert row["id"] == ack["vote_id"]
        assert (row["slot"], row["said"], row["sounded"]) == (ack["overall"], ack["said"], ack["sounded"])
        assert (row["model_a"], row["model_b"], row["winner"]) == (ack["A"]["model"], ack["B"]["model"],
                                                                   ack["winner"])


def test_5000_votes_then_sigkill_loses_nothing(tmp_path):
    seed(tmp_path, MODELS, n_scripts=2)
    app = AppProcess(tmp_path, NO_LIMITS).start()
    restarted = None
    try:
        # ---- phase 1: full load, no crash
        t0 = time.monotonic()
        res = asyncio.run(run_load(app.url, CLIENTS, VOTES, seed=1))
        assert not res.transport and not res.refused, (res.transport, res.refused)
        assert len(res.acks) == VOTES
        rows = _rows(tmp_path)
        by_battle = {r["battle_id"]: r for r in rows}
        assert len(rows) == len(by_battle) == VOTES            # no duplicate, no extra
        assert set(by_battle) == set(res.acks)                 # none lost
        _check_acks_match_rows(res.acks, by_battle)
        phase1_s = time.monotonic() - t0

        # ---- phase 2: SIGKILL mid-load
        res2 = asyncio.run(run_load(app.url, CLIENTS, VOTES, kill_after=KILL_AFTER, kill=app.kill, seed=2))
        assert app.proc.returncode == -9
        assert len(res2.acks) >= KILL_AFTER
        assert sum(res2.transport.values()) > 0                 # the other voters saw the server die
        restarted = AppProcess(tmp_path, NO_LIMITS).start()
        rows = _rows(tmp_path)
        by_battle = {r["battle_id"]: r for r in rows}
        acked = set(res.acks) | set(res2.acks)
        assert len(rows) == len(by_battle)                      # still one row per battle
        assert acked <= set(by_battle), f"{len(acked - set(by_battle))} acknowledged votes lost"
        unacked = set(by_battle) - acked
        assert unacked <= res2.sent and len(unacked) <= CLIENTS  # only votes in flight at the kill
        _check_acks_match_rows(res2.acks, by_battle)
        if Store(tmp_path).dialect == "sqlite":          # the file survived the kill intact
            conn = sqlite3.connect(tmp_path / "store.sqlite3")
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            conn.close()

        # ---- replayed ratings equal the stored ones on every axis
        from arena.config import settings_from_env
        from arena.services.service import ArenaService
        from arena.tables.storage import AXES

        svc = ArenaService(Store(tmp_path), settings_from_env(tmp_path, **NO_LIMITS))
        for axis in AXES:
            stored, replayed = svc.stored_ratings(axis), svc.replay_ratings(axis)
            assert set(stored) == set(replayed), axis
            for model in stored:
                assert stored[model].mu == pytest.approx(replayed[model].mu, abs=1e-9), (axis, model)
                assert stored[model].sigma == pytest.approx(replayed[model].sigma, abs=1e-9), (axis, model)
        overall = {m: r["votes"] for m, r in
                   ((r["model"], r) for r in svc.ratings_table("overall", rounds=10))}
        per_model = {m: sum(m in (r["model_a"], r["model_b"]) for r in rows) for m in MODELS}
        assert overall == per_model

        # ---- the restarted server takes votes again
        res3 = asyncio.run(run_load(restarted.url, 10, 100, seed=3))
        assert len(res3.acks) == 100 and not res3.transport and not res3.refused
        assert len(_rows(tmp_path)) == len(rows) + 100
        print(f"\narena load: phase 1 {VOTES} votes by {CLIENTS} clients in {phase1_s:.1f} s "
              f"({VOTES / res.wall_s:.0f} votes/s); kill after {len(res2.acks)} acks, "
              f"{len(unacked)} committed in flight")
    finally:
        app.stop()
        if restarted is not None:
            restarted.stop()
