"""Issue 16, the assembly: app_context.AppContext builds every service once and the tabs share one contract.

- one integrity alert reaches the log once, though the background check loop and the health tab both check;
- building the page constructs no SubmissionService, HealthMonitor or Identity: the tabs use the context's;
- every entry of app.TABS returns TabHandles, and the page's load events are exactly the tabs' hooks;
- with EMPATHY_ARENA_BENCHMARK set to a non-demo benchmark, the worker's arena hand-off reports the model
  servable and the arena really serves it (before, the hand-off compared against the arena's default `demo`);
  the bootstrap, the submission service and the worker share one loaded Benchmark object.
"""
from __future__ import annotations

import logging
import time

import pytest

from arena.services.handoff import arena_handoff
from eval_backend.submissions import SubmissionForm, Submitter
from eval_backend.submissions.worker import Worker
from space_shell.tab_contract import TabHandles
from tests.support.fault_server import FaultServer
from test_health import add_battles, add_refusals, add_votes
from test_queue_worker import METRICS, bench_folder

OPERATOR = Submitter("op", is_operator=True)


@pytest.fixture
def quiet_env(monkeypatch):
    """The app without its background preparation (nothing is built or downloaded)."""
    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    for name in ("EMPATHY_ARENA_BENCHMARK", "EMPATHY_ARENA_SUBMIT_BENCHMARK", "EMPATHY_ARENA_JUDGE_BASE_URL",
                 "EMPATHY_ARENA_JUDGE_CONFIG", "EMPATHY_ARENA_AUDIO_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def wait_for(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_one_alert_is_logged_once_by_the_loop_and_the_health_tab(tmp_path, quiet_env, caplog):
    import app
    from app_context import AppContext

    ctx = AppContext.from_env(tmp_path / "data")
    now = time.time()
    # in the last window: 40 battles served, 5 votes counted, 25 refused: the counted share is 17%
    add_battles(ctx.arena, [now - 120 + k for k in range(40)])
    add_votes(ctx.arena, [now - 100 + k for k in range(5)])
    add_refusals(ctx.arena, [now - 90 + k for k in range(25)], "rate_limited")
    demo = app.build_blocks(ctx)
    health_loads = [f for f in demo.fns.values()
                    if any(ev == "load" for _, ev in f.targets) and f.fn is not None
                    and f.fn.__module__ == "leaderboard.health_tab"]
    assert len(health_loads) == 1
    with caplog.at_level(logging.WARNING, logger="arena.services.health"):
        ctx.start_health_checks(every_s=3600.0)      # the app's loop: its first check runs at once
        wait_for(lambda: ctx.health.status.startswith("ALERT"), 30, "the loop's first check")
        for _ in range(2):                           # two visitors open the health tab
            status, _, _, _, pairs = health_loads[0].fn()
            assert status.startswith("**ALERT")
            assert pairs.startswith("Battle pairs: 0 of 0 request pairs servable")   # nothing served yet (issue 22)
    alerts = [r for r in caplog.records if r.name == "arena.services.health" and r.levelno == logging.WARNING]
    assert len(alerts) == 1, [r.getMessage() for r in alerts]
    assert "17%" in alerts[0].getMessage()


def test_building_the_page_makes_no_second_service(tmp_path, quiet_env, monkeypatch):
    import app
    from app_context import AppContext
    from arena.services.health import HealthMonitor
    from eval_backend.submissions import SubmissionService
    from leaderboard.identity import Identity

    ctx = AppContext.from_env(tmp_path / "data")
    made = []
    for cls in (SubmissionService, HealthMonitor):
        real = cls.__init__

        def spy(self, *a, _real=real, **kw):
            made.append(type(self).__name__)
            _real(self, *a, **kw)
        monkeypatch.setattr(cls, "__init__", spy)
    real_identity = Identity.from_env.__func__
    monkeypatch.setattr(Identity, "from_env",
                        classmethod(lambda cls, *a, **kw: made.append("Identity") or real_identity(cls, *a, **kw)))
    app.build_app(ctx)
    assert made == []                                 # every tab used the context's services


def test_every_tab_follows_the_contract(tmp_path, quiet_env):
    import gradio as gr

    import app
    from app_context import AppContext

    ctx = AppContext.from_env(tmp_path / "data")
    hooks = 0
    with gr.Blocks() as demo:
        for tab in app.TABS:
            with gr.Tab(tab.label, id=tab.id):
                handles = tab.build(ctx)
            assert isinstance(handles, TabHandles), tab.label
            hooks += len(handles.loads)
    assert not [f for f in demo.fns.values() if any(ev == "load" for _, ev in f.targets)]  # a tab registers none
    assert len({t.id for t in app.TABS}) == len(app.TABS)
    page = app.build_blocks(ctx)
    loads = [f for f in page.fns.values() if any(ev == "load" for _, ev in f.targets)]
    # app.py registers exactly the tabs' hooks, plus its own three: the header's status line (rendered on each page
    # load), the ?tab= tab picker and the players' accessible names (both page scripts, no server function)
    assert hooks >= 5 and len(loads) == hooks + 3
    assert sum(f.fn is None for f in loads) == 2
    assert sum(f.fn is not None and f.fn.__name__ == "header" for f in loads) == 1


def test_a_non_demo_benchmark_is_handed_to_the_arena(tmp_path, quiet_env):
    from app_context import AppContext

    folder = bench_folder(tmp_path, ["I lost my job.", "My cat ran away."], "space")
    spec = str(folder)
    with FaultServer() as srv:
        quiet_env.setenv("EMPATHY_ARENA_BENCHMARK", spec)
        quiet_env.setenv("EMPATHY_ARENA_SUBMIT_BENCHMARK", spec)
        quiet_env.setenv("EMPATHY_ARENA_ALLOW_ADDRESSES", f"127.0.0.1:{srv.port}")
        ctx = AppContext.from_env(tmp_path / "data")
        assert ctx.arena.settings.benchmark_specs == (spec,) and ctx.submissions.arena_benchmarks == (spec,)
        ctx.submissions = ctx.submissions.with_(metrics=METRICS, lease_s=5.0, heartbeat_s=0.5,
                                                call_timeout_s=10.0)      # quick scoring; the specs stay
        assert ctx.submissions.arena_benchmarks == (spec,)
        ctx.bootstrap.start()
        assert ctx.bootstrap.ready.wait(60) and ctx.benchmark is not None, ctx.bootstrap.status.errors
        for name in ("Space One", "Space Two"):
            out = ctx.submission_service.submit(SubmissionForm(name=name, base_url=srv.base_url,
                                                               model_id=name.split()[1], audio_output=True,
                                                               voice="v", licence="apache-2.0",
                                                               open_weights=True), OPERATOR)
            assert out.accepted, out.errors
        worker = Worker(ctx.store, ctx.submissions, handoff=arena_handoff,   # what ctx.start_worker() runs
                        load=ctx.benchmarks)
        jobs = [worker.run_once() for _ in range(2)]
    for job in jobs:
        assert job.state == "FINISHED", (job.state, job.reason)
        assert job.arena["servable"] and job.row()["arena"] == "servable", job.arena
        assert job.arena["arena_benchmarks"] == [spec]
    # one Benchmark object for the bootstrap (and so the arena), the submission service and the worker
    assert ctx.benchmarks.loaded() == {spec: ctx.benchmark}
    assert ctx.submission_service.benchmark() is ctx.benchmark
    from leaderboard.bench_tab import model_infos      # the board reads the queue through ctx's one service
    assert {"Space One", "Space Two"} <= set(model_infos(ctx))
    view = ctx.arena.serve_battle(ctx.arena.new_session(), "1.2.3.4")
    served = set(ctx.store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (view.battle_id,))[0])
    assert served == {"Space One", "Space Two"}
