"""The bootstrap's first slice (issue 15): battles exist before the baselines' full run, and the full run's stored
replies are exactly those of a run without the slice.

Real parts: a small project-format benchmark (espeak-ng clips), the real baseline server the bootstrap starts
(Whisper tiny.en + espeak-ng, on a free loopback port), SQLite, the real ArenaService. Scoring is left out (the
slice does not touch it: the scorer reads the stored replies, ordered by model and request id, and runs only after
each model's full run); what the test pins down is that the stored rows are the same set, asked once each.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib

import pytest

from arena.config import settings_from_env
from arena.services.service import ArenaService
from eval_backend import config
from space_shell.bootstrap import Bootstrap, first_slice
from eval_backend.showcase import in_arena_pool
from eval_backend.runner import run_model
from eval_backend.store import Store
from eval_backend.tasks import SPOKEN_TASKS, build_requests
from tests.support.arena_fixtures import build_benchmark
from tests.support.baselines import free_port


def _rows(store: Store) -> set[tuple]:
    """What the scorer reads of each reply, with the audio's bytes by hash (file names differ per run)."""
    out = set()
    for r in store.replies():
        audio = hashlib.sha256(store.abspath(r.audio_path).read_bytes()).hexdigest() if r.audio_path else None
        out.add((r.model, r.benchmark_hash, r.request_id, r.task, r.status, r.text, r.transcript, audio))
    return out


def test_first_slice_takes_spoken_requests_in_turn_and_is_stable(tmp_path):
    b = build_benchmark(tmp_path / "bench", n_scripts=3)
    ids = first_slice(b, 4)
    spoken = {r.id: r for r in build_requests(b, SPOKEN_TASKS)}
    assert len(ids) == 4 == len(set(ids)) and all(i in spoken for i in ids)
    assert [spoken[i].task for i in ids[:3]] == list(SPOKEN_TASKS)       # one of each task first
    assert first_slice(b, 4) == ids and first_slice(b, 0) == []
    # the arena pool only (eval_backend/showcase.py): showcase requests are never battled
    assert set(first_slice(b, 1000)) == {i for i, r in spoken.items() if r.usable and r.audios and in_arena_pool(i)}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_battles_before_the_full_run_and_the_same_replies_as_without_the_slice(tmp_path, monkeypatch):
    data = tmp_path / "data"
    folder = tmp_path / "bench"
    # spoken slowly: the cue-aware baseline answers the pace, so the two baselines' replies differ (to a neutral
    # voice they are the very same clip, and identical replies never battle: issue 22)
    bench = build_benchmark(folder, n_scripts=3, rate=90)
    spec = str(folder)
    monkeypatch.setenv("EMPATHY_ARENA_BASELINE_PORT", str(free_port()))
    store = Store(data)
    arena = ArenaService(store, settings_from_env(data, benchmark_specs=(spec,)), benchmarks=[])
    boot = Bootstrap(data, benchmark_spec=spec, first_slice=3)
    boot.on_benchmark.append(lambda b: arena.set_benchmarks([b]))
    slice_ids = first_slice(bench, 3)
    seen: dict = {}
    scored: list[str] = []
    full_run = Bootstrap._run_baselines

    def at_full_run_start(self):
        seen["opened"] = self.opening.opened
        seen["can_serve"] = arena.can_serve()
        view = arena.serve_battle("a-session", "127.0.0.1")
        seen["battle_request"] = store.query("SELECT request_id FROM arena_battles WHERE id=?",
                                             (view.battle_id,))[0][0]
        seen["replies"] = {(r.model, r.request_id) for r in store.replies(status="ok")}
        full_run(self)

    monkeypatch.setattr(Bootstrap, "_run_baselines", at_full_run_start)
    monkeypatch.setattr(Bootstrap, "_score", lambda self, model, store: scored.append(model))
    try:
        boot.start()
        assert boot.ready.wait(800), "bootstrap did not finish"
        assert boot.status.stage == "ready", boot.status.errors
        models = [s.name for s in config.load_models(None).values() if s.baseline]
        # before the full run began: the opening was over, a battle was served, on a slice request
        assert seen["opened"] and seen["can_serve"]
        assert seen["battle_request"] in slice_ids
        assert seen["replies"] == {(m, i) for m in models for i in slice_ids}
        assert scored == models                          # each model scored once, after its full run

        # the full run asked nothing twice: its run record counts the slice as already done
        for m in models:
            run = store.get_meta(f"run/{m}/{bench.hash}")
            assert run["already_done"] == len(slice_ids), run
            assert run["requests"] == len(build_requests(bench))

        # a run without the slice, on the same server, stores the same rows
        ref = Store(tmp_path / "ref", database_url="")      # its own SQLite, whatever the test database
        for s in config.load_models(None).values():
            if s.baseline:
                s = dataclasses.replace(s, base_url=f"http://127.0.0.1:{boot.baseline_port}/v1")
                asyncio.run(run_model(s, bench, ref, concurrency=4, progress=False))
        with_slice, without = _rows(store), _rows(ref)
        assert len(with_slice) == len(build_requests(bench)) * len(models)
        assert with_slice == without
    finally:
        boot.stop()


def test_the_demo_size_setting_is_checked_at_start(tmp_path, monkeypatch):
    """EMPATHY_ARENA_DEMO_SIZE: compact unless set; a wrong value stops the app at start with the choices, rather
    than failing in the background thread after the page is up."""
    monkeypatch.delenv(config.DEMO_SIZE_ENV, raising=False)
    assert Bootstrap(tmp_path).demo_size == "compact"
    monkeypatch.setenv(config.DEMO_SIZE_ENV, "full")
    assert Bootstrap(tmp_path).demo_size == "full"
    monkeypatch.setenv(config.DEMO_SIZE_ENV, "huge")
    with pytest.raises(ValueError, match="EMPATHY_ARENA_DEMO_SIZE must be one of full, compact"):
        Bootstrap(tmp_path)
