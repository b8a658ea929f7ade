"""The opening banner (issue 15): step k of n, an estimate from the measured rate, nothing of the operator's.

Pure parts with a fake clock (space_shell/opening.py), the banner and header text (arena/ui/opening_banner.py) over a
real Opening and a stand-in arena, and the app context's public vs operator status lines.
"""
from __future__ import annotations

import threading
import types

import pytest

from arena.ui.opening_banner import OpeningState, banner_html, header_line
from space_shell.bootstrap import BootstrapStatus
from space_shell.opening import Opening, rough_duration, view

OPERATOR = ("HF_HUB_OFFLINE", "loopback port", "Traceback", "RuntimeError", "running baselines", "8765")


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def opening_with_demo(clock: Clock) -> Opening:
    o = Opening(clock)
    o.plan([("demo", 0), ("server", 0), ("slice", 48)])
    return o


def test_no_estimate_before_anything_is_measured_then_one_from_the_rate():
    clock = Clock()
    o = opening_with_demo(clock)
    o.launched("server")
    o.begin("demo")
    v = view(o)
    assert (v.k, v.n, v.eta) == (1, 3, None)            # nothing measured: no made-up figure
    clock.t += 10
    o.progress("demo", 100, 400)                        # 10 clips/s
    v = view(o)
    assert (v.k, v.n, v.done, v.total, v.unit) == (1, 3, 100, 400, "clips")
    left = o.remaining_s()
    # the demo's own rate: 300 clips at 10/s = 30 s; the slice costed at the measured speed
    speed = 10 / (100 * 0.09)
    from space_shell.opening import REFERENCE_S
    assert left == pytest.approx(30 + 48 * REFERENCE_S["slice"] * speed, rel=1e-6)
    assert v.eta == rough_duration(left)


def test_a_slower_machine_gets_a_longer_estimate():
    fast, slow = Clock(), Clock()
    estimates = []
    for clock, seconds in ((fast, 10), (slow, 40)):
        o = opening_with_demo(clock)
        o.begin("demo")
        clock.t += seconds
        o.progress("demo", 100, 400)
        estimates.append(o.remaining_s())
    assert estimates[1] == pytest.approx(4 * estimates[0])


def test_steps_advance_and_the_view_ends_when_all_are_done():
    clock = Clock()
    o = opening_with_demo(clock)
    o.begin("demo")
    clock.t += 30
    o.progress("demo", 400, 400)
    o.finish("demo")
    o.begin("server")
    clock.t += 2
    o.finish("server")
    o.begin("slice", 48)
    v = view(o)
    assert (v.k, v.n, v.title) == (3, 3, "recording the first replies for the arena")
    assert v.eta is not None                            # from the speed measured on the demo
    clock.t += 20
    o.progress("slice", 24)
    assert o.remaining_s() == pytest.approx(20.0)       # 24 left at 24 per 20 s
    assert 0 < view(o).fraction < 1
    o.finish("slice")
    assert view(o) is None and o.opened


class FakeArena:
    def __init__(self, serves: bool):
        self.serves = serves
        self.asked = 0

    def can_serve(self) -> bool:
        self.asked += 1
        return self.serves


def fake_ctx(opening: Opening | None, serves: bool, ready: bool = False, errors=()):
    boot = None
    if opening is not None:
        status = BootstrapStatus(stage="running baselines", message="loopback port 8765", errors=list(errors))
        boot = types.SimpleNamespace(opening=opening, status=status, ready=threading.Event())
        if ready:
            boot.ready.set()
    return types.SimpleNamespace(bootstrap=boot, arena=FakeArena(serves))


def test_banner_says_step_k_of_n_with_a_bar_and_an_estimate_and_nothing_of_the_operator():
    clock = Clock()
    o = opening_with_demo(clock)
    o.begin("demo")
    clock.t += 10
    o.progress("demo", 100, 400)
    ctx = fake_ctx(o, serves=False, errors=["RuntimeError: the baseline port 8765 is in use",
                                            "HF_HUB_OFFLINE=1: serving local data only"])
    html_ = banner_html(OpeningState(ctx))
    assert "Step 1 of 3" in html_ and "building the demo benchmark" in html_ and "100 of 400 clips" in html_
    assert "<progress" in html_ and "The arena opens in ~" in html_ and "meanwhile browse the benchmark" in html_
    assert "Use my voice" not in html_                  # no live mode configured here
    assert not any(s in html_ for s in OPERATOR)
    line = header_line(ctx.bootstrap)
    assert "step 1 of 3" in line and "opens in ~" in line
    assert not any(s in line for s in OPERATOR)


def test_banner_hides_once_a_battle_can_be_served_and_stops_asking():
    o = opening_with_demo(Clock())
    ctx = fake_ctx(o, serves=True)
    state = OpeningState(ctx)
    assert banner_html(state) == "" and banner_html(state) == ""
    assert ctx.arena.asked == 1                        # remembered: the arena is asked no more


def test_failed_start_and_no_models_give_plain_words():
    o = opening_with_demo(Clock())
    o.fail()
    ctx = fake_ctx(o, serves=False, errors=["RuntimeError: espeak-ng missing at /usr/bin"])
    text = banner_html(OpeningState(ctx))
    assert "could not be prepared" in text and "espeak" not in text and "RuntimeError" not in text
    assert "RuntimeError" not in header_line(ctx.bootstrap)
    done = Opening(Clock())
    done.plan([])
    text = banner_html(OpeningState(fake_ctx(done, serves=False)))
    assert "No battles are available yet" in text
    live = fake_ctx(done, serves=False)
    live.live = object()                                # live battles do not wait for the bootstrap: say so
    assert "Use my voice" in banner_html(OpeningState(live))
    # no bootstrap at all (the arena test app): the arena's answer alone decides
    assert banner_html(OpeningState(types.SimpleNamespace(arena=FakeArena(True)))) == ""


def test_header_after_the_opening_then_silent_when_ready():
    o = Opening(Clock())
    o.plan([])
    assert "The arena is open" in header_line(fake_ctx(o, serves=True).bootstrap)
    assert header_line(fake_ctx(o, serves=True, ready=True).bootstrap) == ""


def test_app_context_keeps_operator_detail_off_the_public_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    from app_context import AppContext
    ctx = AppContext.from_env(tmp_path / "data")
    ctx.hub.start()                                     # offline: says so, for the operator
    ctx.bootstrap.status.errors.append("OSError: /secret/path unreadable")
    operator = ctx.operator_status_line()
    assert "serving local data only" in operator and "unreadable" in operator
    assert ctx.status_line() == ""                      # not started: nothing to say (never "waiting")
    ctx.bootstrap._plan(False)                          # what start() does before its thread runs
    public = ctx.status_line()
    assert "step 1 of 1" in public and "building the demo benchmark" in public
    assert "serving local data" not in public and "unreadable" not in public and "waiting" not in public


def test_operator_status_only_for_the_operator():
    import gradio as gr

    from leaderboard.operator_status import build_operator_status

    who = {"person": None}
    ctx = types.SimpleNamespace(identity=types.SimpleNamespace(who=lambda request, profile=None: who["person"]),
                                operator_status_line=lambda: "HF\\_HUB\\_OFFLINE\\=1: serving local data only")
    with gr.Blocks():
        hook = build_operator_status(ctx)
    assert hook.fn(None)["visible"] is False and "serving" not in hook.fn(None)["value"]
    who["person"] = types.SimpleNamespace(is_operator=False)
    assert hook.fn(None)["visible"] is False
    who["person"] = types.SimpleNamespace(is_operator=True)
    shown = hook.fn(None)
    assert shown["visible"] is True and "serving local data only" in shown["value"]
