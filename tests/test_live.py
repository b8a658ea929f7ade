"""Live battles over HTTP (issue 13): the voter's recording, two contestants on loopback, the ordinary vote.

Real parts: the baseline server as a subprocess (Whisper + espeak-ng), the scorer's Whisper for the transcript,
loopback fault servers speaking the OpenAI protocol for failing and hanging contestants, the real app routes on
uvicorn, SQLite or PostgreSQL (EMPATHY_ARENA_TEST_DB).
"""
from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from arena.core.covariates import COLUMNS, measure_clip
from arena.services.live import LiveSettings
from tests.support.fault_server import FaultServer
from tests.support.live_fixtures import LiveApp, baseline_specs, post_live, spec, utterance, wav
from tests.support.baselines import BaselineServer


def wait_until(check, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def baselines():
    with BaselineServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def speech() -> bytes:
    # spoken slowly (90 words a minute): the cue-aware baseline answers the pace, so the two baselines' replies
    # differ; to a neutral voice they say the very same thing, and identical replies never battle (issue 22)
    return utterance(rate=90)


class Screen:
    """Behaves like eval_backend.safety.screen_text: flags texts holding `flag`, marks `crisis` phrases."""

    def __init__(self, flag: str | None = None, crisis: str = "end it all"):
        self.flag, self.crisis, self.seen = flag, crisis, []

    def __call__(self, text: str):
        from types import SimpleNamespace
        self.seen.append(text)
        flagged = bool(self.flag) and self.flag.lower() in text.lower()
        crisis = self.crisis in text.lower()
        return SimpleNamespace(flagged=flagged, crisis=crisis, categories={"self_harm": float(crisis)},
                               reason="test rule" if flagged or crisis else "", screen="test-screen@1")


def vote_after_listening(client, body: dict, overall: str = "A") -> httpx.Response:
    """Fetch the three clips, wait as long as a listener at 1x would, and report that listening (the listening
    rule, arena/core/listening.py, applies to live battles as to benchmark ones)."""
    for clip in ("user", "A", "B"):
        assert client.get(body["audio"][clip]).status_code == 200
    time.sleep(sum(body["min_listen_s"].values()) + 0.1)
    listen = {"played_s": dict(body["min_listen_s"]), "order": ["user", "A", "B"]}
    return client.post("/api/arena/vote", json={"battle_id": body["battle_id"], "session": body["session"],
                                                "overall": overall, "said": "A", "sounded": "B",
                                                "listen": listen})


def test_live_battle_against_the_baselines(tmp_path, baselines, speech):
    with LiveApp(tmp_path, baseline_specs(baselines.base_url), screen=Screen()) as app, \
            httpx.Client(base_url=app.url, timeout=60) as client:
        assert client.get("/api/arena/live/status").json() == {"ready": True, "contestants": 2}
        r = post_live(client, speech, consent_store="true", consent_release="false")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["source"] == "live" and body["replaced"] == 0 and body["crisis_notice"] is None
        for _ in range(6):              # pending: ask again (the scorer's Whisper loads on first use, at low priority)
            heard = client.get("/api/arena/live/heard", params={"battle_id": body["battle_id"],
                                                                 "session": body["session"]}).json()
            if not heard["pending"]:
                break
        assert "job" in heard["transcript"].lower()           # the scorer's Whisper heard the voter
        assert body["transcript"] in (None, heard["transcript"])
        other = client.get("/api/arena/live/heard", params={"battle_id": body["battle_id"], "session": "x" * 20})
        assert other.status_code == 404                       # only the voter's own session reads the transcript
        wait_until(lambda: app.store.query("SELECT transcript FROM arena_live WHERE battle_id=?",
                                           (body["battle_id"],))[0]["transcript"] == heard["transcript"])
        assert "cascade" not in r.text                        # no model name before the vote
        for clip in ("user", "A", "B"):
            audio = client.get(body["audio"][clip])
            assert audio.status_code == 200 and audio.content[:4] == b"RIFF"
        battle = app.store.query("SELECT source, model_a, model_b FROM arena_battles WHERE id=?",
                                 (body["battle_id"],))[0]
        assert battle["source"] == "live"
        assert {battle["model_a"], battle["model_b"]} == {"cascade-blind", "cascade-cue"}
        early = client.post("/api/arena/vote", json={"battle_id": body["battle_id"], "session": body["session"],
                                                     "overall": "A"})
        assert early.status_code == 425                       # the listen rule holds for live battles too
        vote = vote_after_listening(client, body)
        assert vote.status_code == 200, vote.text
        reveal = vote.json()
        assert {reveal["A"]["model"], reveal["B"]["model"]} == {"cascade-blind", "cascade-cue"}
        assert reveal["A"]["transcript"] and reveal["B"]["transcript"]   # the replies' words at the reveal
        row = app.store.query("SELECT source, battle_source, winner FROM arena_votes")[0]
        assert (row["source"], row["battle_source"]) == ("live", "live")
        # the style covariates of the heard replies and how long each took, in the battle and copied into the vote
        cov = dict(app.store.query(f"SELECT {', '.join(COLUMNS)} FROM arena_votes")[0])
        assert cov == dict(app.store.query(f"SELECT {', '.join(COLUMNS)} FROM arena_battles WHERE id=?",
                                           (body["battle_id"],))[0])
        assert cov["a_latency_s"] > 0 and cov["b_latency_s"] > 0 and cov["a_words"] > 0 and cov["b_words"] > 0
        assert cov["a_duration_s"] == measure_clip(app.arena.battle_clip(body["battle_id"], "A"))["duration_s"]
        live_rows = {r["model"]: r for r in app.arena.replayed_table(rounds=10, source="live")}
        assert live_rows[row["winner"]]["mu"] > 25 and live_rows[row["winner"]]["votes"] == 1
        assert app.arena.replayed_table(rounds=10, source="benchmark") == []
        board = {r["model"]: r for r in app.arena.ratings_table(rounds=10, source="live")}
        assert board[row["winner"]]["wins"] == 1
        api = client.get("/api/arena/ratings", params={"source": "live"}).json()
        assert {r["model"] for r in api["rows"]} == {"cascade-blind", "cascade-cue"}
        assert client.get("/api/arena/ratings", params={"source": "benchmark"}).json()["rows"] == []
        assert client.get("/api/arena/ratings", params={"source": "bogus"}).status_code == 422
        # the consented clip is kept past the short retention; the user's words are kept with it
        assert app.live.sweep() == []


@pytest.mark.parametrize("fault", ["500", "hang"])
def test_a_failing_contestant_is_replaced_within_the_deadline(tmp_path, baselines, speech, fault):
    settings = LiveSettings(deadline_s=20, call_timeout_s=4)
    with FaultServer(fault=fault, hang_s=60) as bad, \
            LiveApp(tmp_path, [spec("broken", bad.base_url), *baseline_specs(baselines.base_url)],
                    settings, screen=None, arena_overrides={"session_open_battles": 50}, rng=random.Random(25)) as app, \
            httpx.Client(base_url=app.url, timeout=60) as client:
        replaced = 0
        for _ in range(8):                       # the pair is drawn (seeded): keep going until "broken" was asked
            t0 = time.monotonic()
            r = post_live(client, speech)
            elapsed = time.monotonic() - t0
            assert r.status_code == 200, r.text
            assert elapsed < settings.deadline_s
            battle = app.store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?",
                                     (r.json()["battle_id"],))[0]
            assert "broken" not in (battle["model_a"], battle["model_b"])     # never a one-sided battle
            replaced += r.json()["replaced"]
            if sum(bad.counts.values()):
                break
        assert sum(bad.counts.values()) >= 1 and replaced >= 1


def test_a_battle_with_no_spare_contestant_is_void_within_the_deadline(tmp_path, baselines, speech):
    settings = LiveSettings(deadline_s=5, call_timeout_s=3)
    with FaultServer(fault="hang", hang_s=60) as bad, \
            LiveApp(tmp_path, [spec("broken", bad.base_url), baseline_specs(baselines.base_url)[0]], settings,
                    screen=None) as app, httpx.Client(base_url=app.url, timeout=60) as client:
        t0 = time.monotonic()
        r = post_live(client, speech)
        assert r.status_code == 503 and r.json()["error"] == "void", r.text
        assert time.monotonic() - t0 < settings.deadline_s + 1
        assert app.stored() == {"battles": 0, "live": 0, "votes": 0, "files": []}


def test_a_flagged_reply_voids_and_a_crisis_utterance_shows_the_notice(tmp_path):
    with FaultServer() as a, FaultServer(tone_hz=330.0) as b:     # two voices: the replies differ (issue 22)
        specs = [spec("alpha-voice", a.base_url), spec("beta-voice", b.base_url)]
        # every reply of the fault server says "I hear you": flagged -> no spare contestant -> void
        with LiveApp(tmp_path / "flag", specs, screen=Screen(flag="hear you"),
                     transcribe=lambda s, sr: "hello") as app, httpx.Client(base_url=app.url, timeout=30) as c:
            r = post_live(c, wav(0.3 * np.sin(np.arange(16000) / 5)))
            assert r.status_code == 503 and r.json()["error"] == "void"
            assert app.stored()["battles"] == 0 and app.stored()["files"] == []
        screen = Screen()
        with LiveApp(tmp_path / "crisis", specs, screen=screen,
                     transcribe=lambda s, sr: "I just want to end it all") as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            r = post_live(c, wav(0.3 * np.sin(np.arange(16000) / 5)))
            assert r.status_code == 200, r.text
            body = r.json()
            heard = c.get("/api/arena/live/heard", params={"battle_id": body["battle_id"],
                                                          "session": body["session"]}).json()
            assert heard["crisis_notice"]                    # shown, and the battle goes on
            assert body["crisis_notice"] in (None, heard["crisis_notice"])
            assert "I just want to end it all" in screen.seen
            wait_until(lambda: app.store.query("SELECT crisis FROM arena_live")[0][0] == 1)


def test_the_battle_does_not_wait_for_the_voters_transcript(tmp_path):
    """A slow transcription of the voter's clip is off the critical path: the battle is returned once both
    replies are in, and the transcript, its screen verdict and the crisis notice follow (GET /heard, the row)."""
    release = threading.Event()

    def slow(samples, sr):
        release.wait(30)
        return "I just want to end it all"
    with FaultServer() as a, FaultServer(tone_hz=330.0) as b:     # two voices: the replies differ (issue 22)
        specs = [spec("alpha-voice", a.base_url), spec("beta-voice", b.base_url)]
        with LiveApp(tmp_path, specs, screen=Screen(), transcribe=slow) as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            r = post_live(c, wav(0.3 * np.sin(np.arange(16000) / 5)))
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["transcript_pending"] and body["transcript"] is None and body["crisis_notice"] is None
            params = {"battle_id": body["battle_id"], "session": body["session"]}
            early = c.get("/api/arena/live/heard", params={**params, "wait_s": 0.2}).json()
            assert early == {"battle_id": body["battle_id"], "transcript": None, "crisis_notice": None,
                             "pending": True}
            assert app.store.query("SELECT transcript FROM arena_live")[0][0] is None
            release.set()
            heard = c.get("/api/arena/live/heard", params=params).json()
            assert heard["transcript"] == "I just want to end it all" and heard["crisis_notice"]
            wait_until(lambda: tuple(app.store.query("SELECT transcript, crisis FROM arena_live")[0]) ==
                       ("I just want to end it all", 1))
            again = c.get("/api/arena/live/heard", params=params).json()      # now read from the stored row
            assert again["transcript"] == heard["transcript"] and again["crisis_notice"]


def _bad_inputs(tone: bytes):
    silent = wav(np.zeros(32000))
    too_long = wav(0.3 * np.sin(np.arange(16000 * 31) / 5))
    return [
        ("not audio", dict(audio=b"%PDF-1.4 this is not audio at all" * 10), 415, "not_audio"),
        ("text file as audio", dict(audio=b"hello", filename="x.txt", content_type="text/plain"), 415, "not_audio"),
        ("too long", dict(audio=too_long), 413, "too_long"),
        ("silent", dict(audio=silent), 422, "silent"),
        ("too short", dict(audio=wav(0.3 * np.sin(np.arange(1600) / 5))), 422, "too_short"),
        ("no audio", dict(audio=None), 422, "no_audio"),
        ("missing consent", dict(audio=tone, consent_store=None), 422, "missing_consent"),
        ("consent not a yes/no", dict(audio=tone, consent_release="maybe"), 422, "missing_consent"),
        ("release without store", dict(audio=tone, consent_store="false", consent_release="true"), 422,
         "bad_consent"),
        ("forged session", dict(audio=tone, session="not-a-session"), 403, "bad_session"),
    ]


def test_bad_input_is_refused_and_nothing_is_stored(tmp_path):
    tone = wav(0.3 * np.sin(np.arange(16000) / 5))
    with FaultServer() as a, LiveApp(tmp_path, [spec("alpha-voice", a.base_url), spec("beta-voice", a.base_url)],
                                     screen=None, transcribe=lambda s, sr: "x") as app, \
            httpx.Client(base_url=app.url, timeout=30) as c:
        for name, kw, status, code in _bad_inputs(tone):
            r = post_live(c, **kw)
            assert (r.status_code, r.json().get("error")) == (status, code), (name, r.text)
            assert r.json()["message"]
        r = c.post("/api/arena/live/battle", content=b"x" * (9 * 2**20),
                   headers={"Content-Type": "multipart/form-data; boundary=zz"})
        assert r.status_code == 413                                    # the body cap in front of the app
        r = c.post("/api/arena/live/battle", content=b"garbage", headers={"Content-Type": "text/plain"})
        assert r.status_code in (400, 415, 422)
        assert app.stored() == {"battles": 0, "live": 0, "votes": 0, "files": []}
        assert sum(a.counts.values()) == 0                             # and no model was asked
        ok = post_live(c, tone)                                        # the same app still serves good input
        assert ok.status_code == 200, ok.text


def test_limits_per_user_and_sign_in(tmp_path):
    tone = wav(0.3 * np.sin(np.arange(16000) / 5))
    with FaultServer() as a:
        specs = [spec("alpha-voice", a.base_url), spec("beta-voice", a.base_url)]
        with LiveApp(tmp_path / "limit", specs, LiveSettings(user_per_hour=1), screen=None,
                     transcribe=lambda s, sr: "x") as app, httpx.Client(base_url=app.url, timeout=30) as c:
            assert post_live(c, tone).status_code == 200
            r = post_live(c, tone)
            assert r.status_code == 429 and r.json()["error"] == "rate_limited" and r.headers["Retry-After"]
            assert app.stored()["battles"] == 1
        with LiveApp(tmp_path / "signin", specs, LiveSettings(require_sign_in=True), screen=None,
                     transcribe=lambda s, sr: "x") as app, httpx.Client(base_url=app.url, timeout=30) as c:
            before = app.stored()      # (on PostgreSQL both apps of this test share one database)
            r = post_live(c, tone)
            assert r.status_code == 401 and r.json()["error"] == "sign_in"
            assert app.stored() == before


def test_the_global_concurrency_cap(tmp_path):
    import threading
    tone = wav(0.3 * np.sin(np.arange(16000) / 5))
    with FaultServer(latency=2.0) as slow, \
            LiveApp(tmp_path, [spec("alpha-voice", slow.base_url), spec("beta-voice", slow.base_url)],
                    LiveSettings(concurrency=1), screen=None, transcribe=lambda s, sr: "x") as app, \
            httpx.Client(base_url=app.url, timeout=30) as c:
        first = {}
        t = threading.Thread(target=lambda: first.update(r=post_live(httpx.Client(base_url=app.url, timeout=30),
                                                                     tone)))
        t.start()
        time.sleep(0.8)
        r = post_live(c, tone)
        assert r.status_code == 503 and r.json()["error"] == "busy" and r.headers["Retry-After"]
        t.join(30)
        assert first["r"].status_code == 200


def test_retention_deletes_what_was_not_consented_for(tmp_path):
    tone = wav(0.3 * np.sin(np.arange(16000) / 5))
    now = [time.time()]
    with FaultServer() as a, LiveApp(tmp_path, [spec("alpha-voice", a.base_url), spec("beta-voice", a.base_url)],
                                     LiveSettings(retention_s=600, keep_days=30), screen=None,
                                     transcribe=lambda s, sr: "my private words", clock=lambda: now[0],
                                     arena_overrides={"battle_ttl_s": 10**9}) as app, \
            httpx.Client(base_url=app.url, timeout=30) as c:
        kept = post_live(c, tone, consent_store="true", consent_release="true").json()
        gone = post_live(c, tone, consent_store="false", consent_release="false").json()
        root = Path(app.store.root) / "live"
        assert (root / gone["battle_id"] / "user.wav").is_file()
        now[0] += 599
        assert app.live.sweep() == []                                  # not yet due
        now[0] += 2
        assert app.live.sweep() == [gone["battle_id"]]
        assert not (root / gone["battle_id"]).exists(), list((root / gone["battle_id"]).rglob("*"))
        for clip in ("user", "A", "B"):
            assert c.get(gone["audio"][clip]).status_code == 404
            assert c.get(kept["audio"][clip]).status_code == 200
        row = app.store.query("SELECT transcript, text_a, text_b, deleted_at FROM arena_live WHERE battle_id=?",
                              (gone["battle_id"],))[0]
        assert (row["transcript"], row["text_a"], row["text_b"]) == (None, None, None) and row["deleted_at"]
        assert app.store.query("SELECT transcript FROM arena_live WHERE battle_id=?",
                               (kept["battle_id"],))[0][0] == "my private words"
        now[0] += 30 * 86400
        assert app.live.sweep() == [kept["battle_id"]]                 # consented: kept for keep_days, then gone
        assert not (root / kept["battle_id"]).exists()


def test_live_mode_is_up_before_the_benchmark_bootstrap_ends(tmp_path, monkeypatch, speech):
    """The Space's own context: the bootstrap starts the baseline server first, and live battles are served while
    the benchmark is still being prepared (held here until the live battle is done)."""
    import threading

    import app as space
    from space_shell import bootstrap as boot
    from tests.support.fault_server import free_port

    monkeypatch.setenv("EMPATHY_ARENA_BASELINE_PORT", str(free_port()))
    hold, released = threading.Event(), threading.Event()

    def slow_benchmark(self):
        released.set()
        hold.wait(120)
        raise RuntimeError("stopped by the test")      # the bootstrap fails and stops its server

    monkeypatch.setattr(boot.Bootstrap, "_prepare_benchmark", slow_benchmark)
    ctx = space.SpaceContext(tmp_path / "data")
    ctx.bootstrap.start()
    try:
        assert released.wait(30)
        deadline = time.monotonic() + 120
        while not ctx.live.ready():
            assert time.monotonic() < deadline, "the live contestants never answered"
            time.sleep(0.5)
        assert ctx.bootstrap.status.stage not in ("ready", "running baselines")
        battle = ctx.live.battle_sync(speech, ctx.arena.new_session(), "127.0.0.1", consent_store=False,
                                      consent_release=False)
        models = ctx.store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (battle.battle_id,))[0]
        offline = {m.name for m in ctx.live.contestants()}      # the models file's offline contestants
        assert models[0] != models[1] and {models[0], models[1]} <= offline
        assert len(offline) >= 4                                  # issue 22: four stand-ins on the embedded default
    finally:
        hold.set()
        ctx.bootstrap.ready.wait(30)
    assert ctx.bootstrap.server is None or ctx.bootstrap.server.poll() is not None


def test_a_public_release_holds_only_the_live_clips_consented_for_it(tmp_path):
    """arena/services/release.py: the votes carry battle_source; live clips and words enter the release only with the
    voter's consent_release (and not once deleted), without battle ids, users or times."""
    from arena.services.release import load_release, rebuild, write_release
    with FaultServer() as a, FaultServer(tone_hz=330.0) as b:     # two voices: the replies differ (issue 22)
        specs = [spec("alpha-voice", a.base_url), spec("beta-voice", b.base_url)]
        with LiveApp(tmp_path / "data", specs, screen=None, transcribe=lambda s, sr: "my words",
                     arena_overrides={"session_open_battles": 50}) as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            tone = wav(0.3 * np.sin(np.arange(16000) / 5))
            bodies = {}
            for consent in (("true", "true"), ("true", "false"), ("false", "false"), ("true", "true")):
                r = post_live(c, tone, consent_store=consent[0], consent_release=consent[1])
                assert r.status_code == 200, r.text
                bodies.setdefault(consent, []).append(r.json())
            released, dropped = bodies[("true", "true")]
            assert vote_after_listening(c, released).status_code == 200
            wait_until(lambda: app.store.query("SELECT COUNT(*) FROM arena_live WHERE transcript IS NULL")[0][0] == 0)
            from arena.tables import live_store
            with app.store.transaction() as conn:      # the second consented battle's retention is due
                conn.execute("UPDATE arena_live SET delete_after=0 WHERE battle_id=?", (dropped["battle_id"],))
            assert app.live.sweep() == [dropped["battle_id"]]
            manifest = write_release(app.arena, tmp_path / "release")
            kept = live_store.battle_dir(app.store.root, released["battle_id"])
    out = tmp_path / "release"
    assert manifest["live_clips"]["battles"] == 1
    records = [json.loads(line) for line in (out / "live.jsonl").read_text().splitlines()]
    assert len(records) == 1 and set(records[0]) == {"clip", "transcript", "model_a", "model_b", "text_a", "text_b"}
    assert records[0]["clip"] == "live-00001" and records[0]["transcript"] == "my words"
    assert records[0]["text_a"].startswith("I hear you") and records[0]["text_b"].startswith("I hear you")
    assert {records[0]["model_a"], records[0]["model_b"]} == {"alpha-voice", "beta-voice"}
    assert sorted(p.relative_to(out).as_posix() for p in (out / "live").rglob("*.wav")) == \
        [f"live/live-00001/{c}.wav" for c in ("A", "B", "user")]
    for clip in ("user", "A", "B"):
        assert (out / "live" / "live-00001" / f"{clip}.wav").read_bytes() == (kept / f"{clip}.wav").read_bytes()
    text = "".join(p.read_text(errors="ignore") for p in out.rglob("*.json*"))
    for body in (b for group in bodies.values() for b in group):
        assert body["battle_id"] not in text and body["session"] not in text
    _, votes = load_release(out)
    assert [v.battle_source for v in votes] == ["live"]
    assert rebuild(out)[1]["identical"]
