"""Safety end to end (issue 14): what the screen holds never reaches a voter, Browse, the media routes or a release.

Real parts: a loopback OpenAI-compatible server whose test-only models speak with espeak-ng (tests/support/
speaking_server.py), the project's runner and the worker's hand-off (eval_backend/submissions/handoff.py, which
screens), the scorer's Whisper, the offline screen (eval_backend.safety), the real app (app.py: AppContext +
build_app) on uvicorn, the `python -m arena` commands, SQLite or PostgreSQL (EMPATHY_ARENA_TEST_DB).

- "rude-model" says an abusive sentence while its text and transcript claim a kind one: only our own transcript
  of the audio can catch it. Its replies are held; no battle plays them, the reply media route refuses them, the
  operator's queue lists them (with an operator-only, expiring audio link), and an operator release makes one
  playable again (so the hold, not chance, kept it out).
- "carer-model" sometimes says a first-person crisis sentence: not flagged, so it plays, and exactly the battles
  that play it carry the calm notice in the battle JSON.
- A voter's abusive reason is absent from `python -m arena export` and from `python -m arena release`; the vote
  itself is counted in both.
- A live utterance saying the user wants to die (espeak-ng, real Whisper, real screen) gets the crisis notice.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from eval_backend.showcase import in_showcase
from tests.support.arena_fixtures import build_benchmark
from tests.support.live_fixtures import LiveApp, post_live, spec, utterance
from tests.support.processes import free_port
from tests.support.speaking_server import SpeakingServer

ROOT = Path(__file__).resolve().parents[1]
KIND = "I am so sorry you are going through this. That sounds really hard, and I am here to listen."
CRISIS = "Honestly, I want to die. I cannot go on anymore."
RUDE = "Shut up, you stupid worthless idiot. Nobody cares about your pathetic problems."
RUDE_CLAIMS = "I hear you, that must be hard."
OPERATOR_TOKEN = "op-" + "x" * 40


def crisis_request(rid: str) -> bool:
    return int(hashlib.sha256(rid.encode()).hexdigest(), 16) % 2 == 0


LINES = {
    "kind-model": lambda rid: (KIND, None),
    "carer-model": lambda rid: (CRISIS if crisis_request(rid) else KIND.replace("sorry", "sad"), None),
    "rude-model": lambda rid: (RUDE, RUDE_CLAIMS),
}


def store_replies(data: Path, folder: Path, srv: SpeakingServer):
    """The runner stores each model's replies; the worker's hand-off screens them (as a job's end does)."""
    from arena.services.handoff import arena_handoff
    from eval_backend.benchmark.loaders import load_benchmark
    from eval_backend.runner import run_model
    from eval_backend.store import Store
    from eval_backend.submissions.handoff import hand_off

    store = Store(data)
    bench = load_benchmark(str(folder))
    outcome = {}
    for name in LINES:
        asyncio.run(run_model(spec(name, srv.base_url), bench, store, concurrency=2, progress=False,
                              tasks=["conversation", "context", "tone"]))
        outcome[name] = hand_off(store, bench, name, arena_specs=(str(folder),), handoff=arena_handoff)
    return store, bench, outcome


class RealApp:
    """app.py's AppContext and build_app on a loopback port (no baselines, no worker: replies are already in)."""

    def __init__(self, data: Path):
        from app import build_app
        from app_context import AppContext
        import uvicorn

        self.ctx = AppContext.from_env(data)
        self.ctx.bootstrap.start()            # loads the benchmark, screens what has no decision yet
        assert self.ctx.bootstrap.ready.wait(300), "bootstrap did not finish"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(build_app(self.ctx), host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="off", proxy_headers=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 60
        while not self.server.started:
            assert time.time() < deadline, "app did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_spoken_abusive_reply_is_held_never_played_and_queued_for_the_operator(tmp_path, monkeypatch):
    from eval_backend.moderation import ledger
    from eval_backend.moderation.replies import subject_of
    from eval_backend.safety import crisis_notice_markdown, records
    from leaderboard.moderation_tab import held_frame

    data, folder = tmp_path / "data", tmp_path / "bench"
    monkeypatch.setenv("EMPATHY_ARENA_SCREEN_REPLIES", "1")     # the production default (the suite's is 0)
    build_benchmark(folder, n_scripts=2)
    with SpeakingServer(LINES) as srv:
        store, bench, outcome = store_replies(data, folder, srv)

    # --- held at storage time, from the audio's words (the text claimed something kind)
    replies = {m: [r for r in store.replies(model=m, benchmark_hash=bench.hash, status="ok")
                   if r.task in ("conversation", "context", "tone")] for m in LINES}
    assert all(len(v) >= 4 for v in replies.values()), {m: len(v) for m, v in replies.items()}
    assert all(r.text == RUDE_CLAIMS for r in replies["rude-model"])
    held = {it.subject: it for it in ledger.held(store, "reply")}
    assert {subject_of(r) for r in replies["rude-model"]} <= set(held)
    assert not {subject_of(r) for m in ("kind-model", "carer-model") for r in replies[m]} & set(held)
    one = held[subject_of(replies["rude-model"][0])]
    assert one.result.flagged and one.result.categories["abuse"] >= 0.85
    assert "idiot" in one.text.lower() and RUDE_CLAIMS in one.text        # what was heard, and what was claimed
    assert outcome["rude-model"]["servable"] is False and "held" in outcome["rude-model"]["why"]
    assert outcome["kind-model"]["servable"] and outcome["kind-model"]["held"] == 0
    crisis_ids = {r.request_id for r in replies["carer-model"] if ledger.state(store, "reply", subject_of(r)).crisis}
    assert crisis_ids and crisis_ids == {r.request_id for r in replies["carer-model"] if crisis_request(r.request_id)}
    frame = held_frame(ledger.held(store))
    assert set(frame["kind"]) == {"reply"} and "abuse" in set(frame["category"])

    monkeypatch.setenv("EMPATHY_ARENA_BENCHMARK", str(folder))
    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    monkeypatch.setenv("EMPATHY_ARENA_LISTEN_S", "0")
    monkeypatch.setenv("EMPATHY_ARENA_OPERATOR_TOKEN", OPERATOR_TOKEN)
    from arena.services.battle_audio import make_heard        # battles play each reply as heard (normalised: issue 22)
    audio_of = {m: {sha(make_heard(store.abspath(r.audio_path).read_bytes())[0]) for r in replies[m]} for m in LINES}
    assert not audio_of["rude-model"] & (audio_of["kind-model"] | audio_of["carer-model"])
    with RealApp(data) as app, httpx.Client(base_url=app.url, timeout=60) as client:
        # --- many battles: the rude model's audio never plays; the notice follows the crisis replies exactly
        heard: set[str] = set()
        votes = []
        session = None
        for i in range(30):
            if i % 12 == 0:
                session = None                # a fresh session now and then (open battles per session)
            r = client.post("/api/arena/battle", json={"session": session} if session else {})
            assert r.status_code == 200, r.text
            body = r.json()
            session = body["session"]
            clips = {slot: client.get(body["audio"][slot]) for slot in ("A", "B")}
            assert all(c.status_code == 200 for c in clips.values())
            heard |= {sha(c.content) for c in clips.values()}
            row = app.ctx.store.query("SELECT request_id, model_a, model_b FROM arena_battles WHERE id=?",
                                      (body["battle_id"],))[0]
            assert "rude-model" not in (row[1], row[2])
            assert (body["notice"] is not None) == (row[0] in crisis_ids), (row[0], body["notice"])
            if body["notice"]:
                assert body["notice"] == crisis_notice_markdown()
            if len(votes) < 2:
                votes.append(body)
        assert not heard & audio_of["rude-model"]
        assert heard & audio_of["kind-model"] and heard & audio_of["carer-model"]   # the check can see audio

        # --- the reply media route (Browse, model page) refuses a held reply, serves a clean one (of the showcase
        # set: a reply battles can play is never served with its model's name, eval_backend/showcase.py)
        rude, kind = (next(r for r in replies[m] if in_showcase(r.request_id)) for m in ("rude-model", "kind-model"))
        assert client.get(app.ctx.media.reply_url(rude.model, bench.hash, rude.request_id)).status_code == 404
        assert client.get(app.ctx.media.reply_url(kind.model, bench.hash, kind.request_id)).status_code == 200
        pooled = next(r for r in replies["kind-model"] if not in_showcase(r.request_id))
        assert client.get(app.ctx.media.reply_url(pooled.model, bench.hash, pooled.request_id)).status_code == 404
        # --- the operator's audio link: expiring, signed, the held reply's bytes
        link = app.ctx.media.held_url(subject_of(rude), time.time())
        got = client.get(link)
        assert got.status_code == 200 and got.content == store.abspath(rude.audio_path).read_bytes()
        assert client.get(app.ctx.media.held_url(subject_of(rude), time.time() - 3600)).status_code == 404
        assert client.get(link[:-3] + "AAA").status_code == 404

        # --- a voter's abusive reason stays out of the export and the release; the vote counts
        reasons = ["You are a worthless idiot, shut up.", "B sounded kinder and calmer."]
        for body, reason in zip(votes, reasons):
            v = client.post("/api/arena/vote", json={"battle_id": body["battle_id"], "session": body["session"],
                                                     "overall": "A", "reason": reason})
            assert v.status_code == 200, v.text

        # --- the operator releases one held reply: it becomes playable (the hold is what kept it out)
        ledger.act(app.ctx.store, "reply", subject_of(rude), "release", "operator", "test: false positive")
        assert client.get(app.ctx.media.reply_url(rude.model, bench.hash, rude.request_id)).status_code == 200
        assert records.actions(app.ctx.store, "reply")[-1]["action"] == "release"     # logged
        # (the showcase reply just released is never battled: release one of the arena pool too)
        pooled_rude = next(r for r in replies["rude-model"] if not in_showcase(r.request_id))
        ledger.act(app.ctx.store, "reply", subject_of(pooled_rude), "release", "operator", "test: false positive")
        played = False
        for _ in range(20):
            r = client.post("/api/arena/battle", json={})
            row = app.ctx.store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?",
                                      (r.json()["battle_id"],))[0]
            if "rude-model" in row:
                played = True
                break
        assert played

    # --- the public vote log and the release (commands, as an operator runs them)
    env = {**os.environ, "EMPATHY_ARENA_DATA_DIR": str(data)}
    out = tmp_path / "votes.jsonl"
    subprocess.run([sys.executable, "-m", "arena", "export", "--format", "jsonl", "--out", str(out),
                    "--data-dir", str(data)], cwd=ROOT, env=env, check=True, capture_output=True, timeout=300)
    exported = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert len(exported) == 2                                   # both votes count
    assert {v["reason"] for v in exported} == {None, reasons[1]}
    assert "idiot" not in out.read_text()
    rel = tmp_path / "release"
    subprocess.run([sys.executable, "-m", "arena", "release", "--out", str(rel), "--data-dir", str(data),
                    "--rounds", "20"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=300)
    released = (rel / "votes.jsonl").read_text()
    assert released == out.read_text() and "idiot" not in released
    manifest = json.loads((rel / "manifest.json").read_text())
    from eval_backend.safety import screen_name
    assert manifest["reason_screening"] == {"screens": {screen_name(): 2}, "published": 1, "withheld": 1}
    assert any(it.kind == "reason" and "idiot" in it.text for it in ledger.held(store, "reason"))


def heard_notice(client, body: dict):
    """The battle's crisis notice: in its response, or (the battle does not wait for the voter's transcript,
    issue 13) from GET /api/arena/live/heard once the transcript is made."""
    if not body.get("transcript_pending"):
        return body["crisis_notice"]
    for _ in range(12):
        heard = client.get("/api/arena/live/heard", params={"battle_id": body["battle_id"], "session": body["session"],
                                                          "wait_s": 10}).json()
        if not heard["pending"]:
            return heard["crisis_notice"]
    raise AssertionError("the voter's transcript was never made")


def test_a_live_utterance_saying_the_user_wants_to_die_shows_the_crisis_notice(tmp_path):
    """Real Whisper, the real offline screen; the contestants are loopback models that speak kindly."""
    from eval_backend.safety import crisis_notice_markdown

    with SpeakingServer(LINES) as srv:
        # two models that say different kind things (identical replies never battle: issue 22)
        specs = [spec("kind-model", srv.base_url), spec("carer-model", srv.base_url)]
        with LiveApp(tmp_path / "live", specs) as app, httpx.Client(base_url=app.url, timeout=120) as c:
            r = post_live(c, utterance(text="I just want to die."))
            assert r.status_code == 200, r.text
            assert heard_notice(c, r.json()) == crisis_notice_markdown()
            calm = post_live(c, utterance(), session=r.json()["session"])
            assert calm.status_code == 200, calm.text
            assert heard_notice(c, calm.json()) is None


@pytest.mark.parametrize("reason", ["You are a worthless idiot, shut up."])
def test_a_reason_is_screened_after_the_vote_not_before_it(tmp_path, reason):
    """The vote is acknowledged without screening; the decision arrives from the background thread."""
    from eval_backend.moderation import ledger
    from eval_backend.moderation.texts import REASON, screen_later, text_subject
    from eval_backend.store import Store

    store = Store(tmp_path / "d")
    screen_later(store, REASON, reason)
    deadline = time.time() + 60
    while ledger.latest(store, REASON, text_subject(reason)) is None:
        assert time.time() < deadline
        time.sleep(0.05)
    assert not ledger.state(store, REASON, text_subject(reason)).cleared
