"""Submitted models battle live (issue 22, arena/services/live_submitted.py): opt-in, evaluated and screened first, a daily
budget, the SSRF guard, a void battle on a failed or slow call, a pause after repeated failures.

Real parts: the submission service and queue (the opt-in and the encrypted key as the Submit tab stores them),
loopback OpenAI-compatible endpoints (tests/support/fault_server.py: one that answers, one that fails with HTTP 500,
one that never answers), the live route on uvicorn, SQLite or PostgreSQL (EMPATHY_ARENA_TEST_DB).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from arena.services.live import LiveSettings
from arena.services.live_submitted import PAUSE_AFTER, SubmittedContestants
from eval_backend.store import Store
from eval_backend.submissions import SubmissionForm, SubmissionService, Submitter
from eval_backend.submissions.queue import JobError, Queue
from eval_backend.submissions.settings import SubmissionSettings
from tests.support.fault_server import FaultServer, make_benchmark
from tests.support.live_fixtures import LiveApp, post_live, spec, wav

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-live-" + "Q7x" * 10
TONE = wav(0.3 * np.sin(np.arange(16000) / 5))
LIVE = LiveSettings(call_timeout_s=3, deadline_s=8)


@pytest.fixture(autouse=True)
def secret_key(monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_SECRET_KEY", "a passphrase for the tests' encrypted keys")


def submit(store: Store, server: FaultServer, name: str, *, live=True, calls=50, allow=True, finish=True,
           servable=True) -> int:
    """Submit `name` at `server` through the service (as the Submit tab does), then end its evaluation as the
    worker would: FINISHED, with the arena hand-off's verdict."""
    port = server.base_url.split(":")[2].split("/")[0]
    settings = SubmissionSettings(allow=(f"127.0.0.1:{port}",) if allow else (), preflight=False)
    svc = SubmissionService(store, settings, load=lambda spec: make_benchmark(store.root / "b", ["x"]))
    out = svc.submit(SubmissionForm(name=name, base_url=server.base_url, model_id=f"{name}-id", audio_output=True,
                                    api_key=KEY, live=live, live_calls_per_day=calls), Submitter("someone"))
    assert out.accepted, out.errors
    if finish:
        q = Queue(store)
        job = q.claim("w1", 60)
        assert job.id == out.job_id and job.live_opt_in == live
        assert q.finish(job.id, "w1", results_path=None, summary={}, arena={"servable": servable})
    return out.job_id


def pool(store: Store, *servers: FaultServer) -> SubmittedContestants:
    ports = [s.base_url.split(":")[2].split("/")[0] for s in servers]
    return SubmittedContestants(store, SubmissionSettings(allow=tuple(f"127.0.0.1:{p}" for p in ports)))


def models_of(store: Store, battle_id: str) -> set[str]:
    row = store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (battle_id,))[0]
    return {row["model_a"], row["model_b"]}


def test_the_opt_in_is_validated_and_off_by_default():
    from eval_backend.submissions.validation import validate_form
    base = dict(name="voice-model", base_url="https://api.example.com/v1", model_id="m", audio_output=True)
    assert SubmissionForm().live is False
    assert validate_form(SubmissionForm(**base)) == {}
    assert "live_calls_per_day" in validate_form(SubmissionForm(**base, live=True))           # a budget is needed
    assert validate_form(SubmissionForm(**base, live=True, live_calls_per_day=200)) == {}
    assert "live" in validate_form(SubmissionForm(**{**base, "audio_output": False}, live=True, live_calls_per_day=5))
    assert "live_calls_per_day" in validate_form(SubmissionForm(**base, live=True, live_calls_per_day=10**6))


def test_a_submitted_model_joins_live_battles_once_evaluated_and_keeps_its_secrets(tmp_path):
    store = Store(tmp_path / "data")
    with FaultServer(tone_hz=262.0) as house, FaultServer(tone_hz=392.0) as good:
        job = submit(store, good, "good-voice", finish=False)
        contestants = pool(store, good)
        assert contestants.specs() == []                             # PENDING: not yet
        q = Queue(store)
        q.finish(q.claim("w1", 60).id, "w1", results_path=None, summary={}, arena={"servable": True})
        assert q.has_secret(job)                                     # kept encrypted while it battles live
        with LiveApp(tmp_path / "data", [spec("house-voice", house.base_url)], LIVE, screen=None,
                     transcribe=lambda s, sr: "x", submitted=pool(store, good),
                     arena_overrides={"session_open_battles": 50}) as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            assert c.get("/api/arena/live/status").json() == {"ready": True, "contestants": 2}
            r = post_live(c, TONE)
            assert r.status_code == 200, r.text
            assert models_of(store, r.json()["battle_id"]) == {"house-voice", "good-voice"}
            public = r.text + "".join(c.get(u).headers.get("content-disposition", "") for u in r.json()["audio"].values())
            for secret in (KEY, good.base_url, str(good.port), "good-voice-id", "good-voice"):
                assert secret not in public
            assert good.auth_seen == [f"Bearer {KEY}"]               # the stored key, decrypted for the call only
        health = contestants.health()
        assert health == [{"model": "good-voice", "calls_24h": 1, "failed_24h": 0, "failed_in_a_row": 0,
                           "calls_per_day": 50, "paused": None}]
        Queue(store).withdraw_live(job, "someone", False)            # out of live battles: the key goes too
        assert not Queue(store).has_secret(job) and pool(store, good).specs() == []


def test_not_opted_in_or_not_servable_never_battles_live(tmp_path):
    store = Store(tmp_path / "data")
    with FaultServer() as a, FaultServer() as b:
        quiet = submit(store, a, "plain-voice", live=False)
        submit(store, b, "held-voice", servable=False)              # every reply held by the screen
        assert pool(store, a, b).specs() == []
        assert not Queue(store).has_secret(quiet)                    # no opt-in: the key ended with the job


@pytest.mark.parametrize("fault", ["500", "hang"])
def test_a_failed_or_slow_call_voids_the_battle_and_repeated_failures_pause_the_model(tmp_path, fault):
    store = Store(tmp_path / "data")
    with FaultServer(tone_hz=262.0) as house, FaultServer(fault=fault, hang_s=30) as bad:
        submit(store, bad, "shaky-voice")
        with LiveApp(tmp_path / "data", [spec("house-voice", house.base_url)], LIVE, screen=None,
                     transcribe=lambda s, sr: "x", submitted=pool(store, bad),
                     arena_overrides={"session_open_battles": 50}) as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            for i in range(PAUSE_AFTER):
                t0 = time.monotonic()
                r = post_live(c, TONE)
                assert r.status_code == 503 and r.json()["error"] == "void", r.text
                assert time.monotonic() - t0 < LIVE.call_timeout_s + 2          # a slow call is cut at the timeout
                message = r.json()["message"]
                assert "void" in message and "nothing was kept" in message
                assert bad.base_url not in message and str(bad.port) not in message and "shaky" not in message
                assert app.stored() == {"battles": 0, "live": 0, "votes": 0, "files": []}    # never a half-battle
            calls = store.query("SELECT ok, error_class FROM arena_live_calls WHERE model='shaky-voice'")
            assert [(r["ok"], r["error_class"]) for r in calls] == \
                [(0, "http_5xx" if fault == "500" else "timeout")] * PAUSE_AFTER
            paused = store.query("SELECT paused, reason FROM arena_live_paused WHERE model='shaky-voice'")[0]
            assert paused["paused"] == 1 and f"{PAUSE_AFTER} failed live calls in a row" in paused["reason"]
            asked = sum(bad.counts.values())
            r = post_live(c, TONE)                       # paused: no longer asked (one contestant is left)
            assert r.status_code == 503 and r.json()["error"] == "no_contestants"
            assert sum(bad.counts.values()) == asked
            out = subprocess.run([sys.executable, "-m", "arena", "health", "--data-dir", str(store.root), "--json"],
                                 capture_output=True, text=True, timeout=300, cwd=ROOT)
            assert out.returncode == 0, out.stderr
            (row,) = json.loads(out.stdout)["live_models"]
            assert row["failed_in_a_row"] == PAUSE_AFTER and row["paused"].startswith("paused from live")
            subprocess.run([sys.executable, "-m", "arena", "unpause", "shaky-voice", "--data-dir", str(store.root)],
                           check=True, capture_output=True, timeout=120, cwd=ROOT)
            assert [s.name for s in app.live.contestants()] == ["house-voice", "shaky-voice"]


def test_the_daily_budget_and_the_address_guard(tmp_path):
    store = Store(tmp_path / "data")
    with FaultServer(tone_hz=262.0) as house, FaultServer(tone_hz=392.0) as good, FaultServer() as internal:
        submit(store, good, "thrifty-voice", calls=2)
        with LiveApp(tmp_path / "data", [spec("house-voice", house.base_url)], LIVE, screen=None,
                     transcribe=lambda s, sr: "x", submitted=pool(store, good),
                     arena_overrides={"session_open_battles": 50}) as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            assert [post_live(c, TONE).status_code for _ in range(2)] == [200, 200]
            r = post_live(c, TONE)                     # the budget of 2 calls a day is spent
            assert r.status_code == 503 and r.json()["error"] == "no_contestants"
            assert sum(good.counts.values()) == 2
        # an endpoint the address policy does not allow (an internal address): refused at connection time
        store2 = Store(tmp_path / "other")         # (on PostgreSQL runs the test's one database: both stores)
        submit(store2, internal, "inside-voice")
        with LiveApp(tmp_path / "other", [spec("house-voice", house.base_url)], LIVE, screen=None,
                     transcribe=lambda s, sr: "x", submitted=pool(store2)) as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            r = post_live(c, TONE)
            assert r.status_code == 503 and r.json()["error"] == "void"
            assert sum(internal.counts.values()) == 0                  # nothing reached it
            assert store2.query("SELECT error_class FROM arena_live_calls WHERE model='inside-voice'")[0][0] == \
                "connection"


def test_the_cli_and_the_tab_carry_the_opt_in(tmp_path):
    from leaderboard.submit_tab import form_from_inputs
    base = ["voice-model", "", "", "unknown", False, "endpoint", "https://api.example.com/v1", "m", True, "", "", None]
    assert form_from_inputs(*base).live is False                                        # off by default
    form = form_from_inputs(*base, True, 250)
    assert (form.live, form.live_calls_per_day) == (True, 250)
    assert form_from_inputs(*base[:5], "predictions", *base[6:], True, 250).live is False   # endpoints only
    cmd = [sys.executable, "-m", "eval_backend", "submit", "--name", "cli-voice", "--endpoint",
           "https://api.example.com/v1", "--model-id", "m", "--json", "--data-dir", str(tmp_path), "--live"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 1 and "live" in json.loads(out.stdout)["errors"]              # needs --audio-out
    out = subprocess.run(cmd + ["--audio-out"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 1 and "live_calls_per_day" in json.loads(out.stdout)["errors"]   # and a budget


def test_leaving_live_battles_is_offered_to_the_submitter_and_the_operator(tmp_path):
    from leaderboard.submit_tab import job_markdown, leave_live_visible
    store = Store(tmp_path / "data")
    with FaultServer() as good:
        job_id = submit(store, good, "leaving-voice", calls=7)
    svc = SubmissionService(store, SubmissionSettings())
    owner, stranger, operator = Submitter("someone"), Submitter("other"), Submitter("op", is_operator=True)
    job = svc.job_for(job_id, owner)
    assert leave_live_visible(job, owner) and leave_live_visible(svc.job_for(job_id, operator), operator, True)
    assert not leave_live_visible(svc.job_for(job_id, stranger), stranger)
    assert "at most 7 calls a day" in job_markdown(job, [])
    with pytest.raises(JobError, match="submitter or the operator"):
        svc.withdraw_live(job_id, stranger)
    assert not leave_live_visible(svc.withdraw_live(job_id, owner), owner)
    assert not Queue(store).has_secret(job_id)
