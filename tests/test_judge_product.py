"""A judge in the product path: the Space's judges from its environment, the daily call budget on every judge
path (against the loopback judge server, tests/support/judge_server.py), and the About tab's judge lines."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from tests.support.judge_server import ScriptedJudge  # noqa: E402
from test_judges import echo_json, world  # noqa: E402,F401  (the small benchmark + stored replies fixture)

from eval_backend.scoring.judge_env import describe, space_judge_config  # noqa: E402
from eval_backend.scoring.judges import DEFAULT_CALLS_PER_DAY, JudgeCache, judge_settings  # noqa: E402
from eval_backend.scoring.registry import METRICS, ScoringContext  # noqa: E402

BASE = {"EMPATHY_ARENA_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "EMPATHY_ARENA_JUDGE_MODEL": "text-j",
        "EMPATHY_ARENA_JUDGE_API_KEY_ENV": "MY_JUDGE_KEY"}


@pytest.fixture
def judge():
    with ScriptedJudge() as j:
        yield j


def test_environment_gives_the_same_settings_as_a_judge_config(tmp_path):
    env = {**BASE, "EMPATHY_ARENA_AUDIO_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
           "EMPATHY_ARENA_AUDIO_JUDGE_MODEL": "audio-j", "EMPATHY_ARENA_JUDGE_CALLS_PER_DAY": "50",
           "MY_JUDGE_KEY": "sk-very-secret"}
    path = space_judge_config(tmp_path, env)
    text = Path(path).read_text()
    assert "sk-very-secret" not in text and "MY_JUDGE_KEY" in text        # the variable's name, never the key
    t, a = judge_settings({"judge_config": path})
    assert (t.model, t.api_key_env, t.calls_per_day) == ("text-j", "MY_JUDGE_KEY", 50)
    assert (a.model, a.calls_per_day) == ("audio-j", 50)
    assert "text judge `text-j` (50 calls per UTC day)" in describe(path)
    # unset: no judge, and the default budget when only the budget is missing
    assert space_judge_config(tmp_path, {}) is None and "No judge is configured" in describe(None)
    t, _ = judge_settings({"judge_config": space_judge_config(tmp_path, BASE)})
    assert t.calls_per_day == DEFAULT_CALLS_PER_DAY


@pytest.mark.parametrize("env,message", [
    ({"EMPATHY_ARENA_JUDGE_BASE_URL": "http://x/v1"}, "EMPATHY_ARENA_JUDGE_MODEL must be set"),
    ({**BASE, "EMPATHY_ARENA_JUDGE_CALLS_PER_DAY": "many"}, "whole number"),
    ({**BASE, "EMPATHY_ARENA_JUDGE_CALLS_PER_DAY": "-1"}, ">= 0"),
    ({**BASE, "EMPATHY_ARENA_JUDGE_CONFIG": "/nonexistent.yaml"}, "not both"),
    ({"EMPATHY_ARENA_JUDGE_CONFIG": "/nonexistent.yaml"}, "does not exist"),
])
def test_bad_judge_settings_are_clear_errors(tmp_path, env, message):
    with pytest.raises(ValueError, match=message):
        space_judge_config(tmp_path, env)


def test_the_space_worker_gets_the_judge(tmp_path, monkeypatch):
    """app.SpaceContext hands the judge config to the in-process worker's settings (what `start_worker_thread`
    receives); a bad setting leaves the worker without a judge and says why."""
    import app
    for k, v in BASE.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    ctx = app.SpaceContext(tmp_path / "data")
    assert ctx.submissions.judge_config and ctx.judge_error is None
    assert yaml.safe_load(Path(ctx.submissions.judge_config).read_text())["judge"]["model"] == "text-j"
    from leaderboard.about_tab import judge_status
    assert "text judge `text-j`" in judge_status(ctx)
    monkeypatch.setenv("EMPATHY_ARENA_JUDGE_CALLS_PER_DAY", "lots")
    bad = app.SpaceContext(tmp_path / "data2")
    assert bad.submissions.judge_config is None and "whole number" in bad.judge_error
    assert "rejected at start-up" in judge_status(bad)


def test_budget_stops_calls_across_clients_and_is_visible(judge, world, tmp_path):
    """Two scorings on one data dir share the day's budget: the server sees exactly `calls_per_day` requests,
    the items it stopped are `judge_budget` failures, and the About tab says the budget is reached."""
    from eval_backend.scoring.results import score, write_results
    bench, store, replies, _ = world
    judge.responder = lambda body: echo_json(4, 4, 4, 4)
    cfg = space_judge_config(tmp_path, {"EMPATHY_ARENA_JUDGE_BASE_URL": judge.base_url,
                                        "EMPATHY_ARENA_JUDGE_MODEL": "scripted-judge",
                                        "EMPATHY_ARENA_JUDGE_CALLS_PER_DAY": "2"})
    settings = {"judge_config": cfg}
    res = METRICS["l3.judge.c1"].compute(ScoringContext("m1", bench, replies, store, settings=settings))
    assert len(judge.requests) == 2
    assert res.n == 2 and res.failures.get("judge_budget", 0) >= 1, res.failures
    run = score(bench, replies.values(), "m1", store, settings=settings, metrics=["aeq.coherence"])
    assert len(judge.requests) == 2                                     # nothing more today
    entry = run.doc["metrics"]["aeq.coherence"]
    assert entry["value"] is None and "budget" in entry["reason"] and entry["failures"]["judge_budget"] >= 1
    write_results(store.root, run.doc)
    assert JudgeCache(store.root / "cache" / "judge_cache.sqlite3").calls_today("scripted-judge") == 2
    from leaderboard.about_tab import judge_rows, judge_status
    ctx = types.SimpleNamespace(store=store, judge_error=None, submissions=types.SimpleNamespace(judge_config=cfg))
    assert "budget is reached" in judge_status(ctx)
    row = [r for r in judge_rows(store) if r[0] == "m1"][0]
    assert row[2] == "scripted-judge" and row[5] >= 1


def test_no_limit_when_the_budget_is_zero(judge, tmp_path):
    from eval_backend.scoring.judges import JudgeClient, JudgeSettings
    judge.responder = lambda body: "ok"
    c = JudgeClient(JudgeSettings(base_url=judge.base_url, model="m", calls_per_day=0),
                    JudgeCache(tmp_path / "c.sqlite3"))
    for _ in range(3):
        c.chat([{"role": "user", "content": "hi"}], None)
    assert len(judge.requests) == 3 and c.calls == 3
    limited = JudgeClient(JudgeSettings(base_url=judge.base_url, model="m2", calls_per_day=1))   # no cache file
    limited.chat([{"role": "user", "content": "hi"}], None)
    with pytest.raises(Exception, match="judge budget reached: 1 calls per UTC day to m2"):
        limited.chat([{"role": "user", "content": "hi"}], None)
    assert len(judge.requests) == 4
    assert json.dumps(JudgeSettings(base_url="u", model="m").public())      # manifest unchanged in shape
