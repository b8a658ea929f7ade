"""audio.delivery_shift_agreement: the pure core by hand, the loaders carrying spoken reference replies, and the
metric on real espeak-ng clips stored through the Store (the seed-1 known-groups run is in test_known_groups)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from eval_backend.audio.io import encode_wav
from eval_backend.benchmark.dataset import _canonical, audio_ref_from_file, load_project_folder, save_benchmark
from eval_backend.benchmark.loaders import load_benchmark
from eval_backend.benchmark.model import AudioRef, Benchmark, Script, Variant
from eval_backend.scoring.delivery_shift import (
    MEASURES, NOTICEABLE, UNITS, change, pair_agreement, pairs_for,
)
from eval_backend.scoring.registry import METRICS, ScoringContext
from eval_backend.store import Reply, Store

import eval_backend.scoring.audio_metrics  # noqa: F401  (registers the audio metrics)


def vec(**kw) -> dict:
    return {k: kw.get(k) for k in MEASURES}


# ---------------------------------------------------------------- pure core
def test_change_is_in_units_and_takes_out_the_words_own_change():
    base = vec(rate=math.log(4.0), pitch=50.0, range=4.0, loudness=-20.0, pauses=0.1, hnr=10.0)
    other = vec(rate=math.log(4.4), pitch=48.0, range=7.0, loudness=-26.0, pauses=0.2, hnr=10.0)
    d = change(other, base)
    assert d["rate"] == pytest.approx(math.log(1.1) / UNITS["rate"])
    assert d["pitch"] == pytest.approx(-2.0) and d["range"] == pytest.approx(2.0) and d["loudness"] == pytest.approx(-3.0)
    assert d["pauses"] == pytest.approx(2.0) and d["hnr"] == 0.0
    # the plain readings of the two texts differ by the same range and pauses: only the rest is delivery
    plain_b = vec(rate=0.0, pitch=0.0, range=4.0, loudness=0.0, pauses=0.1, hnr=0.0)
    plain_o = vec(rate=0.0, pitch=0.0, range=7.0, loudness=0.0, pauses=0.2, hnr=0.0)
    d = change(other, base, plain_o, plain_b)
    assert d["range"] == pytest.approx(0.0) and d["pauses"] == pytest.approx(0.0)
    assert d["loudness"] == pytest.approx(-3.0)
    # a measure missing on any of the four clips is left out
    assert change(other, base, vec(**{**plain_o, "hnr": None}), plain_b)["hnr"] is None


def test_pair_agreement_same_opposite_none_and_skips():
    ref = vec(rate=-2.0, pitch=-1.0, loudness=-2.0)
    same = pair_agreement(vec(rate=-4.0, pitch=-2.0, loudness=-4.0), ref)
    assert same.score == pytest.approx(1.0) and same.measures == ("rate", "pitch", "loudness")
    assert same.signs == {"rate": True, "pitch": True, "loudness": True}
    opposite = pair_agreement(vec(rate=2.0, pitch=1.0, loudness=2.0), ref)
    assert opposite.score == pytest.approx(-1.0) and not any(opposite.signs.values())
    orthogonal = pair_agreement(vec(rate=1.0, pitch=0.0, loudness=-1.0), vec(rate=1.0, pitch=0.0, loudness=1.0))
    assert orthogonal.score == pytest.approx(0.0)
    still = pair_agreement(vec(rate=0.3, pitch=0.2, loudness=-0.1), ref)        # under one unit: no change
    assert still.score == 0.0 and still.why == "model_unchanged"
    flat_ref = pair_agreement(vec(rate=-4.0, pitch=-2.0, loudness=-4.0), vec(rate=0.5, pitch=0.1, loudness=0.2))
    assert flat_ref.score is None and flat_ref.why == "reference_unchanged"
    few = pair_agreement(vec(rate=-4.0), vec(rate=-2.0, pitch=-1.0))            # only rate on both sides
    assert few.score is None and few.why == "too_few_measures"
    assert NOTICEABLE == 1.0


def test_pairs_follow_the_neutral_variant_else_alternative_to_target():
    assert pairs_for(["target", "neutral", "alternative"]) == [("neutral", "target"), ("neutral", "alternative")]
    assert pairs_for(["target", "alternative"]) == [("alternative", "target")]
    assert pairs_for(["target"]) == [] and pairs_for(["neutral", "target"]) == [("neutral", "target")]


# ---------------------------------------------------------------- loaders carry the spoken reference
def _wav(path: Path, f0: float = 220.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(8000) / 16000
    sf.write(path, (0.3 * np.sin(2 * np.pi * f0 * t)).astype(np.float32), 16000)
    return path


def test_project_format_round_trip_keeps_reference_audio_and_old_hashes(tmp_path):
    src = tmp_path / "src"
    v = {"target": Variant("target", "sad", audio_ref_from_file(_wav(src / "t.wav", 200)), "Oh no.",
                           audio_ref_from_file(_wav(src / "t ref.wav", 300))),
         "neutral": Variant("neutral", "neutral", audio_ref_from_file(_wav(src / "n.wav", 210)), "I see.",
                            AudioRef(str(src / "gone.wav"), None, "neutral reference reply audio: file not found"))}
    b = Benchmark("unit", "1", scripts=[Script("s1", "Hello.", "sad", "t", v)])
    save_benchmark(b, tmp_path / "bench")
    again = load_project_folder(tmp_path / "bench")
    assert again.hash == b.hash and _canonical(again) == _canonical(b)
    got = again.scripts[0].variants
    assert got["target"].reference_audio.ok and got["target"].reference_audio.sha256 == v["target"].reference_audio.sha256
    assert Path(got["target"].reference_audio.path).read_bytes() == (src / "t ref.wav").read_bytes()
    assert not got["neutral"].reference_audio.ok and "file not found" in got["neutral"].reference_audio.error
    assert "neutral reference reply audio: file not found" in again.scripts[0].flags
    # a benchmark without spoken references hashes as before the field existed
    plain = Benchmark("unit", "1", scripts=[Script("s1", "Hello.", "sad", "t", {
        "target": Variant("target", "sad", v["target"].audio, "Oh no.")})])
    assert "reference_audio" not in json.dumps(_canonical(plain))
    save_benchmark(plain, tmp_path / "plain")
    assert load_project_folder(tmp_path / "plain").scripts[0].variants["target"].reference_audio is None


def test_echomind_reads_a_spoken_reference_reply_per_variant(tmp_path):
    sub = tmp_path / "echo" / "data_human"
    for name in ("id_7_sad_work_target.wav", "id_7_sad_work_neutral.wav", "replies/id_7_target_reply.wav"):
        _wav(sub / "audio" / name)
    (sub / "script_info_paralinguistic.json").write_text(json.dumps([{
        "case_id": 7, "spoken_info": "The meeting moved.", "topic": "work",
        "target_audio_info": {"target_input_audio_file": "id_7_sad_work_target.wav",
                              "response": "I'm sorry, that sounds tiring.",
                              "target_response_audio_file": "id_7_target_reply.wav"},
        "neutral_audio_info": {"neutral_input_audio_file": "id_7_sad_work_neutral.wav"},
        "neutral_response_audio": "missing reply.wav",
    }]))
    b = load_benchmark(f"echomind:{tmp_path / 'echo'}")
    s = b.scripts[0]
    t, n = s.variants["target"], s.variants["neutral"]
    assert t.audio.ok and Path(t.audio.path).name == "id_7_sad_work_target.wav"     # the input, not the reply
    assert t.reference_reply == "I'm sorry, that sounds tiring."
    assert t.reference_audio.ok and Path(t.reference_audio.path).name == "id_7_target_reply.wav"
    assert n.reference_audio is not None and not n.reference_audio.ok and "missing reply.wav" in n.reference_audio.error
    assert any("missing reply.wav" in f for f in s.flags)


# ---------------------------------------------------------------- the metric on real clips
@pytest.fixture
def scripted(tmp_path):
    """One script (sad target, happy alternative); reference replies softer/slower and brighter/faster."""
    from eval_backend.audio.synth import espeak
    sr = 16000
    src = tmp_path / "refs"
    src.mkdir()
    words = {"neutral": "I see. Tell me more about the meeting.",
             "target": "I'm sorry. Tell me more about the meeting.",
             "alternative": "How lovely! Tell me more about the meeting."}
    styles = {"neutral": dict(rate=170, pitch=50, amplitude=100), "target": dict(rate=120, pitch=30, amplitude=50),
              "alternative": dict(rate=210, pitch=80, amplitude=150)}
    variants = {}
    for name in words:
        p = src / f"{name}.wav"
        p.write_bytes(encode_wav(espeak(words[name], voice="en+f3", sr=sr, **styles[name]), sr))
        variants[name] = Variant(name, {"neutral": "neutral", "target": "sad", "alternative": "happy"}[name],
                                 AudioRef(None, None, "user audio not needed here"), words[name],
                                 audio_ref_from_file(p))
    bench = Benchmark("b", "1", scripts=[Script("s1", "The meeting moved.", "sad", "work", variants)], hash="hb")
    return bench, Store(tmp_path / "data"), words


def _score(bench, store, model: str, clips: dict) -> object:
    replies = {}
    for variant, (text, samples) in clips.items():
        rid = f"conversation/s1/{variant}"
        rel = store.save_reply_audio(model, encode_wav(samples, 16000))
        replies[rid] = Reply(model, "hb", rid, "conversation", "s1", variant, "ok", text=text, audio_path=rel)
    return METRICS["audio.delivery_shift_agreement"].compute(ScoringContext(model, bench, replies, Store(store.root)))


@pytest.mark.slow
def test_metric_rewards_following_the_reference_and_not_the_words(scripted):
    from eval_backend.audio.synth import espeak
    bench, store, words = scripted
    say = lambda v, **st: (words[v], espeak(words[v], voice="en-us", sr=16000, **st))  # noqa: E731
    follows = _score(bench, store, "follows", {
        "neutral": say("neutral", rate=175), "target": say("target", rate=125, pitch=32, amplitude=55),
        "alternative": say("alternative", rate=215, pitch=78, amplitude=150)})
    assert follows.value > 0.5 and follows.n == 2, (follows.value, follows.raw)
    assert follows.raw["conversation/s1/target"]["words_control"] == {"model": True, "reference": True}
    opposite = _score(bench, store, "opposite", {
        "neutral": say("neutral", rate=175), "target": say("target", rate=215, pitch=78, amplitude=150),
        "alternative": say("alternative", rate=125, pitch=32, amplitude=55)})
    assert opposite.value < -0.5, (opposite.value, opposite.raw)
    # the same words as the references, read plainly: the words change, the delivery does not
    flat = _score(bench, store, "flat", {v: say(v, rate=175) for v in words})
    assert flat.value == 0.0 and flat.breakdown["pairs"]["model_unchanged"] == 1.0
    assert flat.ci95 == (0.0, 0.0) or flat.ci95 is None        # one script: no interval to speak of


def test_not_computed_without_spoken_references(tmp_path):
    bench = Benchmark("b", "1", scripts=[Script("s", "x", "sad", "t", {
        "target": Variant("target", "sad", AudioRef(None), "hi"), "neutral": Variant("neutral", "neutral",
                                                                                    AudioRef(None), "hi")})])
    res = METRICS["audio.delivery_shift_agreement"].compute(ScoringContext("m", bench, {}, Store(tmp_path / "d")))
    assert res.value is None and "no spoken reference replies" in res.reason
    assert METRICS["audio.delivery_shift_agreement"].headline and not METRICS["audio.prosody_fit"].headline
