"""Live replies are screened on our transcript of their audio as well as their stated words (issue 26).

Real parts: a loopback OpenAI-compatible server whose models speak with espeak-ng (tests/support/speaking_server.py),
the scorer's Whisper for the replies' audio, the offline screen, the live route on uvicorn, SQLite or PostgreSQL.
"rude-model" says an abusive sentence while its text and transcript claim a kind one: only our transcript of its
audio can catch it, so before issue 26 it was played in live battles.
"""
from __future__ import annotations

import random

import httpx
import numpy as np

from arena.services.live import LiveSettings, default_transcribe
from eval_backend.moderation import ledger
from eval_backend.moderation.replies import screen_reply_audio
from eval_backend.safety import screen_text
from tests.support.live_fixtures import LiveApp, post_live, spec, wav
from tests.support.speaking_server import SpeakingServer

KIND = "I am so sorry you lost your job. That sounds really hard, and I am here to listen."
KIND_TOO = "That must feel awful. Do you want to tell me what happened at work?"
RUDE = "Shut up, you stupid worthless idiot. Nobody cares about your pathetic problems."
RUDE_CLAIMS = "I hear you, that must be hard."
LINES = {"kind-model": lambda rid: (KIND, None), "warm-model": lambda rid: (KIND_TOO, None),
         "rude-model": lambda rid: (RUDE, RUDE_CLAIMS)}


def test_a_live_reply_whose_audio_is_abusive_is_replaced_and_queued(tmp_path):
    screen_text("warm up")                              # load the screen's models and Whisper before the clock runs
    default_transcribe(0.1 * np.ones(16000, dtype=np.float32), 16000)
    with SpeakingServer(LINES) as srv, \
            LiveApp(tmp_path, [spec(name, srv.base_url) for name in LINES],
                    LiveSettings(deadline_s=120, call_timeout_s=100), screen=screen_text,
                    transcribe=lambda s, sr: "I lost my job today", rng=random.Random(7),
                    arena_overrides={"session_open_battles": 50}) as app, \
            httpx.Client(base_url=app.url, timeout=120) as client:
        battles = []
        for _ in range(10):             # the pair is drawn: go on until rude-model has been asked
            r = post_live(client, wav(0.3 * np.sin(np.arange(16000) / 5)))
            assert r.status_code == 200, r.text
            battles.append(r.json())
            if any(model == "rude-model" for model, _ in srv.spoken):
                break
        assert any(model == "rude-model" for model, _ in srv.spoken), "rude-model was never drawn"
        for body in battles:
            row = app.store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (body["battle_id"],))[0]
            assert "rude-model" not in (row["model_a"], row["model_b"])       # never played
        assert sum(b["replaced"] for b in battles) >= 1
        held = [h for h in ledger.held(app.store, "live_reply") if h.subject.endswith("/rude-model")]
        assert held and held[0].result.flagged
        assert "heard:" in held[0].text and "idiot" in held[0].text.lower()     # caught on our transcript
        assert RUDE_CLAIMS in held[0].text                                      # beside the model's own words


def test_a_live_reply_that_cannot_be_transcribed_is_not_screened(tmp_path):
    text, verdict = screen_reply_audio(b"RIFF not a wav", "Hello there.", screen_text, lambda s, sr: "x")
    assert verdict.status == "not_screened" and verdict.flagged and "transcription failed" in verdict.reason
    assert text == "model's words: Hello there."

    def broken(samples, sr):
        raise RuntimeError("whisper missing")
    _, verdict = screen_reply_audio(wav(0.1 * np.ones(16000)), "Hello there.", screen_text, broken)
    assert verdict.status == "not_screened" and "RuntimeError" in verdict.reason


def test_heard_and_claimed_words_are_both_screened():
    text, verdict = screen_reply_audio(wav(0.1 * np.ones(16000)), RUDE_CLAIMS, screen_text, lambda s, sr: RUDE)
    assert verdict.flagged and verdict.status == "screened"
    assert text == f"heard: {RUDE}\nmodel's words: {RUDE_CLAIMS}"
    clean, verdict = screen_reply_audio(wav(0.1 * np.ones(16000)), KIND, screen_text, lambda s, sr: KIND.lower())
    assert not verdict.flagged and clean == f"heard: {KIND.lower()}"       # the same words are screened once
