"""No battle between identical replies (issue 22, arena/core/distinct.py): the rule, the index, live mode, the health view.

Real parts: espeak-ng replies stored through the store, the arena service and its background measurement, the demo
run through both baselines (the `demo_run` fixture) for the 200-battle sample, loopback OpenAI-compatible servers for
live battles.
"""
from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from arena.core import distinct
from arena.services.battle_audio import Delivery
from arena.services.service import ArenaService
from eval_backend.showcase import in_arena_pool
from eval_backend.store import Reply, Store
from tests.support.arena_fixtures import build_benchmark, espeak_wav, spoken_request_ids
from tests.support.battle_sample import sample_battles
from tests.support.fault_server import FaultServer
from tests.support.live_fixtures import LiveApp, post_live, spec, wav

ROOT = Path(__file__).resolve().parents[1]


def d(duration=3.0, speech=2.5, lufs=-16.0, pitch=120.0, rate=5.0) -> Delivery:
    return Delivery(duration, speech, lufs, pitch, rate)


def test_the_rule():
    words = distinct.words_key
    assert words("Oh no — that's HARD!") == words("oh no, that\u2019s hard") == "oh no that s hard"
    assert words("I'm sorry.") == words("i'm   SORRY") and words("") is None and words(None) is None
    a = distinct.ClipFacts("oh no", "h1", d())
    assert distinct.verdict(a, distinct.ClipFacts("other words", "h2", None)) is None      # words decide alone
    assert distinct.verdict(a, distinct.ClipFacts("anything", "h1", None)) == distinct.IDENTICAL_AUDIO
    assert distinct.verdict(a, distinct.ClipFacts("oh no", "h2", None)) == distinct.NOT_MEASURED
    assert distinct.verdict(a, distinct.ClipFacts("oh no", "h2", d(3.05, 2.45, -16.4, 121, 5.1))) == \
        distinct.SAME_DELIVERY
    for other in (d(duration=3.4), d(pitch=135.0), d(rate=5.6), d(lufs=-18.0), d(pitch=None), d(speech=2.0)):
        assert distinct.verdict(a, distinct.ClipFacts("oh no", "h2", other)) is None, other
    # words unknown on one side: only the audio can tell
    assert distinct.verdict(a, distinct.ClipFacts(None, "h2", d())) == distinct.SAME_DELIVERY


def _seed(tmp: Path) -> tuple[Store, object, dict]:
    """Three models on every spoken request: `echo` sends `blind`'s very bytes; `resaid` says blind's words with
    blind's samples re-encoded (other bytes, same delivery); `kind` says other words in another voice."""
    store = Store(tmp / "data")
    bench = build_benchmark(tmp / "data" / "benchmarks" / "demo", n_scripts=2)
    line = "Okay. Let me know if you need anything else."
    blind = espeak_wav(line, tmp / "blind.wav").read_bytes()
    x, sr = sf.read(io.BytesIO(blind), dtype="float32")
    buf = io.BytesIO()
    sf.write(buf, x, sr, format="WAV", subtype="FLOAT")
    kind_line = "That sounds like a lot to carry. I am here if you want to talk about it."
    kind = espeak_wav(kind_line, tmp / "kind.wav", voice="en+f3").read_bytes()
    audio = {"blind": (blind, line), "echo": (blind, line), "resaid": (buf.getvalue(), line + " "),
             "kind": (kind, kind_line)}
    for model, (data, words) in audio.items():
        rel = store.save_reply_audio(model, data)
        for rid, task, item, variant in spoken_request_ids(bench):
            store.put_reply(Reply(model=model, benchmark_hash=bench.hash, request_id=rid, task=task, item_id=item,
                                  variant=variant, status="ok", text=words, transcript=words, audio_path=rel))
    return store, bench, audio


def test_identical_and_near_identical_replies_never_meet(tmp_path):
    store, bench, _ = _seed(tmp_path)
    requests = sum(in_arena_pool(r[0]) for r in spoken_request_ids(bench))   # battles use the arena pool only
    svc = ArenaService(store, benchmarks=[bench])
    first = svc.left_out_pairs()              # before measuring: the same-word pairs wait, never served on a guess
    assert first["request_pairs"] == 6 * requests
    assert first["left_out"][distinct.IDENTICAL_AUDIO] == requests                       # blind-echo
    assert first["left_out"][distinct.NOT_MEASURED] == 2 * requests                      # resaid-blind, resaid-echo
    assert svc.heard.wait_idle(300)
    pairs = svc.left_out_pairs()
    assert pairs["left_out"] == {distinct.IDENTICAL_AUDIO: requests, distinct.SAME_DELIVERY: 2 * requests,
                                 distinct.NOT_MEASURED: 0}
    assert pairs["servable"] == 3 * requests and pairs["same_words_servable"] == 0
    met = Counter()
    for i in range(60):
        view = svc.serve_battle(f"s{i}", "1.2.3.4")
        battle = store.query("SELECT model_a, model_b FROM arena_battles WHERE id=?", (view.battle_id,))[0]
        met[frozenset((battle["model_a"], battle["model_b"]))] += 1
        a, b = svc.battle_clip(view.battle_id, "A"), svc.battle_clip(view.battle_id, "B")
        assert a.read_bytes() != b.read_bytes()
    assert set(met) <= {frozenset(("kind", m)) for m in ("blind", "echo", "resaid")}
    out = subprocess.run([sys.executable, "-m", "arena", "health", "--data-dir", str(store.root), "--json"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["battle_pairs"] == pairs


@pytest.mark.store_incidental("the clips and words of the battles served: the serving's queries are the arena tests'")
def test_two_hundred_battles_on_the_full_demo(demo_run):
    """The full demo run through the two baselines most alike (cascade-blind, cascade-cue), as a fresh Space would
    serve it: no battle plays one clip twice, and almost none has the same words on both sides (before issue 22: 14
    of 30 battles had byte-identical clips; pairs that would are left out and counted). The Space's own
    default, the compact demo with all four contestants: tests/test_default_battles.py."""
    sample = sample_battles(ArenaService(Store(demo_run.data)))
    pairs = sample.pairs
    print(f"\n200 battles: {sample.identical} identical clips, {sample.same_words} with the same words; pairs {pairs}")
    assert pairs["servable"] > 0 and pairs["left_out"][distinct.NOT_MEASURED] == 0
    assert sample.identical == 0 and sample.same_words <= 4


def test_live_replaces_a_contestant_whose_reply_is_the_same(tmp_path):
    """Two contestants on one server with one voice give the very same reply: the battle gets a third contestant
    instead, or is void with a message saying why when there is none."""
    tone = wav(0.3 * np.sin(np.arange(16000) / 5))
    with FaultServer(one_voice=True) as same, FaultServer(tone_hz=330.0) as other:
        twins = [spec("twin-one", same.base_url), spec("twin-two", same.base_url)]
        with LiveApp(tmp_path / "void", twins, screen=None, transcribe=lambda s, sr: "x") as app, \
                httpx.Client(base_url=app.url, timeout=30) as c:
            r = post_live(c, tone)
            assert r.status_code == 503 and r.json()["error"] == "void" and "same reply" in r.json()["message"]
            assert app.stored() == {"battles": 0, "live": 0, "votes": 0, "files": []}
        with LiveApp(tmp_path / "replaced", [*twins, spec("third-voice", other.base_url)], screen=None,
                     transcribe=lambda s, sr: "x", arena_overrides={"session_open_battles": 50},
                     rng=random.Random(22)) as app, httpx.Client(base_url=app.url, timeout=30) as c:
            # The pair is drawn at random, each of the three about a third of the time: keep going until the twins
            # were drawn. With the system's randomness 12 tries missed them once in CI ((2/3)^12, 0.8%); a seeded draw
            # makes the run the same every time.
            for _ in range(20):
                r = post_live(c, tone)
                assert r.status_code == 200, r.text
                body = r.json()
                a, b = (c.get(body["audio"][k]).content for k in ("A", "B"))
                assert a != b
                if body["replaced"]:
                    break
            assert body["replaced"] == 1
            row = app.store.query("SELECT model_a, model_b, replaced FROM arena_battles JOIN arena_live "
                                  "ON arena_live.battle_id = arena_battles.id WHERE id=?", (body["battle_id"],))[0]
            assert "third-voice" in (row["model_a"], row["model_b"])
            assert json.loads(row["replaced"])[0]["class"] == distinct.IDENTICAL_AUDIO
