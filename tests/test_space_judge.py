"""Issue 12, end to end: the Space started with judge settings pointing at the loopback judge server
(tests/support/judge_server.py) scores C1-C4, VES and the AEQ metrics in its in-process worker (started as app.main
starts it); the daily budget stops judge calls at the limit with a visible note on the About tab; and no event of
the built page calls a judge."""
from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tests.support.fault_server import REPLY_RATE, FaultServer, tone_pcm  # noqa: E402
from tests.support.judge_server import ScriptedJudge, user_text  # noqa: E402
from test_judges import echo_json  # noqa: E402

from gradio.helpers import special_args  # noqa: E402

from eval_backend.audio.io import encode_wav, write_wav  # noqa: E402
from eval_backend.benchmark.dataset import save_benchmark  # noqa: E402
from eval_backend.benchmark.model import (AudioRef, Benchmark, ContextCase, ContextGroup, Script,  # noqa: E402
                                          ToneCase, ToneGroup, Variant)
from eval_backend.submissions import SubmissionForm, SubmissionService, Submitter  # noqa: E402

TASKS = ("conversation", "context", "tone")
# the judge metrics: C1-C4 (+ their LB3 mean), VES, and the AEQ ones
METRIC_PATTERNS = ("l3.judge.*", "l3.ves", "aeq.*")
JUDGE_METRICS = ("l3.judge.c1", "l3.judge.c2", "l3.judge.c3", "l3.judge.c4", "l3.judge.c1c4", "l3.ves",
                 "aeq.coherence", "aeq.supportiveness", "aeq.naturalness", "aeq.modality_reliance",
                 "aeq.delivery", "aeq.discrimination")
TEXT_JUDGE, AUDIO_JUDGE = "space-text-judge", "space-audio-judge"
# One job's judge calls (7 requests: 3 conversation, 2 context, 2 tone): text judge C1-C4 3 + AEQ reply 4
# + AEQ discrimination 2 = 9; audio judge VES 3 + AEQ delivery 4 = 7. The budget lets one job through whole and
# stops the second one part-way.
TEXT_CALLS, AUDIO_CALLS = 9, 7
BUDGET = 12


def answer(body: dict) -> str:
    """A valid answer for whichever prompt the judge was sent (the shapes tests/test_judges.py scripts)."""
    text = user_text(body)
    if '"c1": {"score"' in text:
        return echo_json(5, 4, 4, 3)
    if '"coherence": {"score"' in text:
        return json.dumps({"coherence": {"score": "Good"}, "supportiveness": {"score": "Fair"},
                           "naturalness": {"score": 4}, "uses_voice": {"score": "yes"},
                           "uses_context": {"score": "yes"}})
    if '"discrimination": {"score"' in text:
        return '{"discrimination": {"score": 5, "reason": "clear"}}'
    if '"ves": {"score"' in text:
        return '{"ves": {"score": 3, "reason": "flat"}}'
    if '"delivery": {"score"' in text:
        return '{"delivery": {"score": "Good", "reason": "warm"}}'
    return "I cannot tell what I am asked."          # an unknown prompt: the parser fails, the test sees it


class Endpoint(FaultServer):
    """The loopback OpenAI-compatible model (normal mode of tests/support/fault_server.py), with its own words and voice,
    so that two submitted models give the judges different replies (the judge cache would answer the second)."""

    def __init__(self, words: str, pitch: float):
        super().__init__()
        self.words = words
        self.wav = encode_wav(tone_pcm(freq=pitch), REPLY_RATE)
        self.wav_b64 = base64.b64encode(self.wav).decode()

    def body(self, rid, text, audio, transcript="", shape="plain"):
        return super().body(rid, f"{self.words} {text}", audio, transcript, shape)


def small_benchmark(tmp: Path) -> Path:
    """2 scripts (3 conversation requests), 1 context group and 1 tone group of 2 cases each: 7 requests."""
    sr = 16000
    t = np.arange(int(0.5 * sr)) / sr
    clip = {n: AudioRef(str(write_wav(tmp / f"{n}.wav", 0.3 * np.sin(2 * np.pi * f * t), sr)))
            for n, f in (("target", 180), ("neutral", 120), ("tone_a", 200), ("tone_b", 110), ("ctx", 150))}
    bench = Benchmark("space-judge", "1", scripts=[
        Script("s1", "I finished the report today.", "sad", "work",
               {"target": Variant("target", "sad", clip["target"]),
                "neutral": Variant("neutral", "neutral", clip["neutral"])}),
        Script("s2", "The bus was late again.", "happy", "travel",
               {"target": Variant("target", "happy", clip["target"])})],
        context_groups=[ContextGroup("g1", "I got the results.", clip["ctx"],
                                     [ContextCase("a", "The user has been waiting for medical test results."),
                                      ContextCase("b", "The user entered a baking contest.")])],
        tone_groups=[ToneGroup("t1", "It is raining again.", "Planning a picnic.",
                               [ToneCase("x", "sad", clip["tone_a"]), ToneCase("y", "happy", clip["tone_b"])])])
    return save_benchmark(bench, tmp / "bench")


def wait_for(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def form(srv: Endpoint, name: str) -> SubmissionForm:
    return SubmissionForm(name=name, base_url=srv.base_url, model_id="fault", audio_output=True, voice="v",
                          licence="apache-2.0", open_weights=True)


def test_space_worker_judges_within_budget_and_visitors_cannot_call_the_judge(tmp_path, monkeypatch):
    import app
    from eval_backend.scoring.judges import JudgeCache, JudgeClient
    from eval_backend.submissions.worker import start_worker_thread
    from leaderboard.about_tab import judge_rows, judge_status

    t0 = time.monotonic()
    folder = small_benchmark(tmp_path)
    with ScriptedJudge() as judge, Endpoint("Oh no, that sounds hard.", 220.0) as first, \
            Endpoint("Hmm, tell me more about it.", 330.0) as second:
        judge.responder = answer
        env = {"EMPATHY_ARENA_BOOTSTRAP": "0", "EMPATHY_ARENA_BENCHMARK": str(folder),
               "EMPATHY_ARENA_SUBMIT_BENCHMARK": str(folder),
               "EMPATHY_ARENA_ALLOW_ADDRESSES": f"127.0.0.1:{first.port},127.0.0.1:{second.port}",
               "EMPATHY_ARENA_JUDGE_BASE_URL": judge.base_url, "EMPATHY_ARENA_JUDGE_MODEL": TEXT_JUDGE,
               "EMPATHY_ARENA_JUDGE_API_KEY_ENV": "SPACE_JUDGE_KEY", "SPACE_JUDGE_KEY": "sk-space-judge-key",
               "EMPATHY_ARENA_AUDIO_JUDGE_BASE_URL": judge.base_url,
               "EMPATHY_ARENA_AUDIO_JUDGE_MODEL": AUDIO_JUDGE,
               "EMPATHY_ARENA_JUDGE_CALLS_PER_DAY": str(BUDGET)}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("EMPATHY_ARENA_JUDGE_CONFIG", raising=False)
        monkeypatch.delenv("EMPATHY_ARENA_AUDIO_JUDGE_API_KEY_ENV", raising=False)
        ctx = app.SpaceContext(tmp_path / "data")
        assert ctx.judge_error is None and ctx.submissions.judge_config
        assert ctx.submissions.benchmark == str(folder)
        # the Space's worker settings, kept small: three tasks, the judge metrics only
        ctx.submissions = ctx.submissions.with_(tasks=TASKS, metrics=METRIC_PATTERNS, lease_s=20.0,
                                                heartbeat_s=1.0, call_timeout_s=20.0)

        # ---- visitors: the built page's events never reach a judge ------------------------------------
        constructed = []
        real_init = JudgeClient.__init__

        def spy_init(self, *a, **kw):
            constructed.append(a[0].model if a else kw.get("settings"))
            real_init(self, *a, **kw)
        monkeypatch.setattr(JudgeClient, "__init__", spy_init)
        demo = app.build_blocks(ctx)
        fns = list(demo.fns.values())
        assert fns, "the built page has no events"
        # (events with no Python function are page-side scripts only, e.g. app.py's ?tab= picker: no server call)
        page_events = [f for f in fns if any(ev in ("load", "tick") for _, ev in f.targets) and f.fn is not None]
        assert len(page_events) >= 3                         # status tick, browse, health, About's judges ...
        visitor = gr.Request(headers={"user-agent": "a visitor"}, query_params={}, cookies={}, session_hash="visitor")
        rendered = 0
        for f in page_events:
            args, *_ = special_args(f.fn, [getattr(i, "value", None) for i in f.inputs], request=visitor)
            out = f.fn(*args)
            if hasattr(out, "__next__"):                     # a generator event: run it through
                for _ in out:
                    pass
            rendered += 1
        assert rendered == len(page_events)
        about = [f for f in page_events if getattr(f.fn, "__qualname__", "").startswith("build_about_tab")]
        assert about, "the About tab's judge lines are not rendered on load"
        assert constructed == [] and judge.requests == []   # opening the page built no judge, sent nothing
        # and no event function of the page (load, click, submit ...) is a scoring or judge entry point
        judge_modules = ("eval_backend.scoring", "eval_backend.submissions.worker")
        for f in fns:
            mod = getattr(f.fn, "__module__", "") or ""
            assert not mod.startswith(judge_modules), (f.name, mod)
        monkeypatch.setattr(JudgeClient, "__init__", real_init)

        # ---- job 1: within the budget, every judge metric is computed ----------------------------------
        svc = SubmissionService(ctx.store, ctx.submissions)
        out = svc.submit(form(first, "Judged Model"), Submitter("alice"))
        assert out.accepted, out.errors
        judge_before_worker = len(judge.requests)
        assert judge_before_worker == 0                      # submitting (and its preflight) calls no judge
        handle = start_worker_thread(store=ctx.store, settings=ctx.submissions)   # as app.main starts it
        try:
            wait_for(lambda: svc.job(out.job_id).state in ("FINISHED", "FAILED", "CANCELLED"), 60, "job 1")
            job = svc.job(out.job_id)
            assert job.state == "FINISHED", (job.state, job.reason, job.log_excerpt)
            assert sum(first.counts.values()) >= 7          # the endpoint was asked every request
            models = [b["model"] for b in judge.requests]
            assert models.count(TEXT_JUDGE) == TEXT_CALLS and models.count(AUDIO_JUDGE) == AUDIO_CALLS, models
            audio_parts = [p for b in judge.requests if b["model"] == AUDIO_JUDGE
                           for p in b["messages"][-1]["content"] if isinstance(p, dict)
                           and p.get("type") == "input_audio"]
            assert audio_parts                               # the audio judge heard the replies
            doc = json.loads(Path(job.results_path).read_text())
            man = doc["manifest"]
            assert man["judge"]["text_judge"]["model"] == TEXT_JUDGE
            assert man["judge"]["audio_judge"]["model"] == AUDIO_JUDGE
            assert "sk-space-judge-key" not in json.dumps(doc)
            m = doc["metrics"]
            for name in JUDGE_METRICS:
                assert m[name]["value"] is not None, (name, m[name].get("reason"))
                assert "not computed" not in str(m[name].get("reason") or ""), (name, m[name].get("reason"))
                assert not (m[name].get("failures") or {}), (name, m[name]["failures"])
            assert m["l3.judge.c1"]["value"] == 5 and m["l3.judge.c4"]["value"] == 3
            assert m["l3.judge.c1c4"]["value"] == 4 and m["l3.ves"]["value"] == 3
            assert m["aeq.coherence"]["value"] == 3 and m["aeq.supportiveness"]["value"] == 2
            assert m["aeq.naturalness"]["value"] == 4 and m["aeq.modality_reliance"]["value"] == 1.0
            assert m["aeq.delivery"]["value"] == 3 and m["aeq.discrimination"]["value"] == pytest.approx(0.8)
            status = judge_status(ctx)
            assert f"`{TEXT_JUDGE}`: {TEXT_CALLS} of {BUDGET} calls used today" in status, status
            assert "budget is reached" not in status

            # ---- job 2: the same Space, another model: the budget stops the judge at the limit -----------
            out2 = svc.submit(form(second, "Second Model"), Submitter("bob"))
            assert out2.accepted, out2.errors
            wait_for(lambda: svc.job(out2.job_id).state in ("FINISHED", "FAILED", "CANCELLED"), 60, "job 2")
        finally:
            handle.stop()
        job2 = svc.job(out2.job_id)
        assert job2.state == "FINISHED", (job2.state, job2.reason, job2.log_excerpt)
        models = [b["model"] for b in judge.requests]
        assert models.count(TEXT_JUDGE) == BUDGET and models.count(AUDIO_JUDGE) == BUDGET, models   # not one more
        cache = JudgeCache(ctx.store.root / "cache" / "judge_cache.sqlite3")
        assert cache.calls_today(TEXT_JUDGE) == BUDGET and cache.calls_today(AUDIO_JUDGE) == BUDGET
        m2 = json.loads(Path(job2.results_path).read_text())["metrics"]
        stopped = {n: (m2[n].get("failures") or {}).get("judge_budget", 0) for n in JUDGE_METRICS}
        assert sum(stopped.values()) > 0, {n: m2[n] for n in JUDGE_METRICS}
        assert any(m2[n]["value"] is None and "budget" in (m2[n].get("reason") or "") for n in JUDGE_METRICS), m2
        status = judge_status(ctx)
        assert "the budget is reached: judge calls are stopped until 00:00 UTC" in status, status
        assert f"`{TEXT_JUDGE}`: {BUDGET} of {BUDGET} calls used today" in status
        rows = {r[0]: r for r in judge_rows(ctx.store)}
        assert rows["Second Model"][2] == TEXT_JUDGE and rows["Second Model"][5] == sum(stopped.values())
        assert rows["Judged Model"][5] == 0
    assert time.monotonic() - t0 < 90
