"""A short run of benchmarks/bench_flood.py: one client floods battle requests while paced voters vote.

Asserts behaviour, not timing (the machine is shared): the flood is refused with 429s once past its
address's budget and writes at most that budget (plus the refill) to the database, each refusal is held back
(space_shell/refusal_delay.py), so a flooder gets at most its connections over the delay answers a second, while
every honest voter's battle and vote is served. The latency target is the benchmark's, measured on a quiet machine.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from arena.config import ArenaSettings
from space_shell.gradio_guard import GuardSettings
from tests.support.arena_fixtures import seed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_flood  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_flood_is_refused_and_honest_voters_are_served(tmp_path):
    seed(tmp_path, bench_flood.MODELS[:2], n_scripts=1)
    duration, pause, connections = 12.0, (0.5, 1.5), 4
    both = bench_flood.measure(voters=8, duration_s=duration, pause=pause, connections=connections, quiet=False,
                               data_dir=str(tmp_path))
    out = both["flood"]
    flooder = out["flooder"]
    per_minute = ArenaSettings().ip_battles_per_minute
    # refusals held back: each connection gets one every delay at most (25% for the flooder's own overhead and the
    # moments its connections open); with the delay off, thousands
    held_at_most = 1.25 * connections * (duration + pause[1]) / (GuardSettings().refusal_delay_ms / 1000)
    assert flooder["statuses"].get("200", 0) < flooder["statuses"].get("429", 0) <= held_at_most, flooder
    # the burst, then one a second: what reached the writer is bounded by the budget, not by the flood
    budget = per_minute + per_minute / 60 * (duration + 1.5 + 5)
    assert per_minute <= flooder["battles_written"] <= budget, flooder
    assert flooder["statuses"].get("200", 0) == flooder["battles_written"]
    # honest voters: every request answered 200, and they kept voting through the flood
    assert out["errors"] == {} and set(out["statuses"]) == {"200"}, out
    assert out["votes"] >= 8 * 4, out
    # with Gradio's routes flooded too (issue 21): new sessions and joins past the budget are refused, honest voters
    # are still served every request
    gradio = both["gradio"]
    g = gradio["gradio_flooder"]["statuses"]
    assert g.get("new_session 429", 0) > g.get("new_session 200", 0), g
    assert sum(n for k, n in g.items() if k.endswith(" 429")) <= held_at_most, g
    assert g.get("upload 429", 0) > 0, g
    # joins under one session: within their budget while the other kinds are held back, past it never more than it
    joins = GuardSettings().joins_per_minute
    assert g.get("one_session 200", 0) <= joins + joins / 60 * (duration + pause[1] + 5), g
    assert gradio["errors"] == {} and set(gradio["statuses"]) == {"200"}, gradio
