"""Style covariates measured on real (espeak-ng) clips, stored with each battle when it is served, copied into its
vote and its export; how they become differences and sentences."""
import json
import math
import random

import numpy as np
import pytest
import soundfile as sf

from arena.core import covariates
from arena.config import ArenaSettings
from arena.services.service import ArenaService
from eval_backend.store import Store
from tests.support.arena_fixtures import espeak_wav, seed

SENTENCE = "I am so sorry to hear that, it sounds like a really hard week for you."


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    d = tmp_path_factory.mktemp("clips")
    slow = espeak_wav(SENTENCE, d / "slow.wav", rate=110)
    espeak_wav(SENTENCE, d / "fast.wav", rate=260)
    x, sr = sf.read(str(slow))
    sf.write(str(d / "quiet.wav"), x * 0.5, sr)                    # -6.02 dB
    sf.write(str(d / "short.wav"), x[: int(0.2 * sr)], sr)
    sf.write(str(d / "silence.wav"), np.zeros(sr * 2), sr)
    (d / "broken.wav").write_bytes(b"RIFF\x00\x00not a wav")
    return d


def test_measures_of_real_clips(clips):
    slow, fast = covariates.measure_clip(clips / "slow.wav", SENTENCE), covariates.measure_clip(clips / "fast.wav")
    assert slow["words"] == 16 and fast["words"] is None
    assert slow["duration_s"] > 1.8 * fast["duration_s"]
    assert fast["speech_rate"] > 1.5 * slow["speech_rate"] > 0
    assert -40 < slow["loudness_lufs"] < -5
    quiet = covariates.measure_clip(clips / "quiet.wav")
    assert quiet["loudness_lufs"] - slow["loudness_lufs"] == pytest.approx(20 * math.log10(0.5), abs=0.05)
    assert quiet["speech_rate"] == pytest.approx(slow["speech_rate"])
    short = covariates.measure_clip(clips / "short.wav")
    assert short["loudness_lufs"] is None and short["duration_s"] == pytest.approx(0.2, abs=0.01)
    silent = covariates.measure_clip(clips / "silence.wav")
    assert silent["loudness_lufs"] is None and silent["speech_rate"] is None and silent["duration_s"] == 2.0
    # a clip that cannot be read: the battle goes on, its measures are None (the style fit leaves it out)
    cols = covariates.measure_battle((clips / "broken.wav", "two words"), (clips / "fast.wav", None), (1.5, None))
    assert cols["a_duration_s"] is None and cols["a_words"] == 2 and cols["a_latency_s"] == 1.5
    assert cols["b_duration_s"] == fast["duration_s"] and cols["b_latency_s"] is None
    assert list(cols) == list(covariates.COLUMNS)


def test_differences_and_sentences():
    rows = [{"a_duration_s": 8.0, "b_duration_s": 4.0, "a_loudness_lufs": -20.0, "b_loudness_lufs": -26.0,
             "a_speech_rate": 5.0, "b_speech_rate": 4.0, "a_words": 30, "b_words": 10,
             "a_latency_s": None, "b_latency_s": None},
            {**{c: None for c in covariates.COLUMNS}, "a_latency_s": 2.0, "b_latency_s": 0.5, "a_words": 0,
             "b_words": 3}]
    d = covariates.differences(rows)
    assert d[0].tolist() == pytest.approx([1.0, 6.0, math.log2(1.25), math.log2(3), 0.0])   # latency: nobody waited
    assert math.isnan(d[1][0]) and math.isnan(d[1][3]) and d[1][4] == 1.5
    share = 0.54
    coef = math.log(share / (1 - share))                       # per doubling of length
    text = covariates.effect_sentence("duration", {"coef": coef, "low": coef / 2, "high": coef * 1.5})
    assert text.startswith("All else equal, when one reply is twice as long as the other, it wins 54.0% of the time")
    assert "95% interval 52.0–56.0%" in text and "50% would mean length makes no difference" in text
    assert "not estimated (the difference between the two heard clips never varied)" in covariates.effect_sentence(
        "loudness", {"coef": None, "not_fitted": "the difference between the two heard clips never varied"})


def test_battles_store_their_clips_covariates_and_votes_and_exports_carry_them(tmp_path):
    seed(tmp_path, ("warm-model", "flat-model"), n_scripts=1)
    now = [1_700_000_000.0]
    svc = ArenaService(Store(tmp_path), ArenaSettings(), clock=lambda: now[0], rng=random.Random(3))
    view = svc.serve_battle("s1", "10.0.0.1")
    row = dict(svc.store.query("SELECT * FROM arena_battles WHERE id=?", (view.battle_id,))[0])
    for slot, model in (("A", row["model_a"]), ("B", row["model_b"])):
        reply = svc.store.reply(model, row["benchmark_hash"], row["request_id"])
        heard = covariates.measure_clip(svc.battle_clip(view.battle_id, slot), reply.transcript or reply.text)
        assert all(row[f"{slot.lower()}_{k}"] == v for k, v in heard.items()), (slot, heard)
        assert heard["duration_s"] > 1 and heard["words"] > 3 and heard["loudness_lufs"] < 0
    assert row["a_latency_s"] is None and row["b_latency_s"] is None          # nobody waited for benchmark replies
    for clip in view.min_listen_s:
        svc.clip_fetched(view.battle_id, clip)
    now[0] += view.total_min_listen_s + 1
    svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A",
                    listen={"played_s": dict(view.min_listen_s), "order": ["user", "A", "B"]})
    vote = svc.votes()[0]
    assert all(getattr(vote, c) == row[c] for c in covariates.COLUMNS) and vote.weight == 1.0
    exported = json.loads(svc.export_votes("jsonl").split("\n")[0])
    assert all(exported[c] == row[c] for c in covariates.COLUMNS)
