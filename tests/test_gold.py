"""Gold battles (issue 23): a real reply against a known-bad clip made from it, served like any battle, recorded
apart from the vote log, and a voter who fails them loses their votes' weight.

Real parts: espeak-ng replies in a seeded data dir, a real Store (SQLite or PostgreSQL), the service's own battle
and vote paths; tests/test_gold_http.py runs the real app on loopback (tests/support/arena_app.py).
"""
from __future__ import annotations

import io
import struct

import numpy as np
import pytest
import soundfile as sf

from arena.services import battle_audio
from arena.services import gold
from arena.core import gold_clips
from arena.core import sweeps
from arena.services import vote_flags
from arena.services.gold import is_gold
from arena.core.sweeps import GoldRecord
from tests.support.arena_fixtures import seed
from tests.support.integrity import battle_row, good_slot, maker, serve, vote_after_listening

MODELS = ("warm-model", "flat-model", "third-model")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    root = tmp_path_factory.mktemp("gold_seed")
    seed(root, MODELS, n_scripts=2)
    return root


@pytest.fixture
def make(seeded, tmp_path, copy_database, module_database_url):
    return maker(seeded, tmp_path, lambda: copy_database(module_database_url))


def data_chunk(raw: bytes) -> int:
    """Offset of a RIFF/WAVE file's sample data."""
    pos = 12
    while raw[pos:pos + 4] != b"data":
        pos += 8 + struct.unpack("<I", raw[pos + 4:pos + 8])[0]
    return pos + 8


# ---------------------------------------------------------------- the constructions
@pytest.mark.parametrize("name", [n for n, c in gold_clips.CONSTRUCTIONS.items() if c.build])
def test_each_construction_keeps_the_length_and_the_file_shape_but_not_the_speech(name, seeded):
    src = next((seeded / "replies" / MODELS[0]).glob("*.wav"))
    x, sr = gold_clips.read_like(src)
    rng = np.random.default_rng(1)
    bad = gold_clips.dithered(gold_clips.CONSTRUCTIONS[name].build(x, sr, rng), rng)
    assert bad.shape == x.shape
    raw, out = src.read_bytes(), gold_clips.wav_like(src, bad)
    assert len(out) == len(raw) and out[:data_chunk(raw)] == raw[:data_chunk(raw)]   # the reply's own header
    y, sr2 = sf.read(io.BytesIO(out), dtype="float32", always_2d=True)
    assert sr2 == sr and y.shape == x.shape
    # the speech is gone: far from the reply sample by sample (a copy would be near 1); the silence-padded clip
    # keeps the first second and nothing of the rest (a reply that stops)
    if name == "silence_padded":
        start = int(np.flatnonzero(np.abs(x[:, 0]) > 0.02)[0])
        assert float(np.sum(y[start + sr:] ** 2)) < 1e-4 * float(np.sum(x[start + sr:] ** 2))
    else:
        corr = float(np.corrcoef(x[:, 0], y[:, 0])[0, 1])
        assert abs(corr) < 0.5, f"{name}: correlation {corr:.2f} with the real reply"
    # and no two gold clips of one reply are the same bytes, even from a deterministic construction
    again = gold_clips.wav_like(src, gold_clips.dithered(gold_clips.CONSTRUCTIONS[name].build(x, sr, rng), rng))
    assert again != out


def test_silence_padded_stops_after_a_second_and_noise_buried_is_mostly_noise(seeded):
    src = next((seeded / "replies" / MODELS[0]).glob("*.wav"))
    x, sr = gold_clips.read_like(src)
    cut = gold_clips.silence_padded(x, sr, np.random.default_rng(0))
    start = int(np.flatnonzero(np.abs(x[:, 0]) > 0.02)[0])
    assert np.all(cut[start + sr:] == 0) and np.any(cut[:start + sr] != 0)
    noisy = gold_clips.noise_buried(x, sr, np.random.default_rng(0))
    k = float(np.sum(noisy * x) / np.sum(x * x))               # the speech left in the mix (noise is uncorrelated)
    snr_db = 20 * np.log10(np.std(k * x) / np.std(noisy - k * x))
    assert snr_db < -6 and np.max(np.abs(noisy)) == pytest.approx(np.max(np.abs(x)), rel=1e-3)   # same peak level


# ---------------------------------------------------------------- serving and voting
def test_gold_votes_never_enter_the_log_or_a_rating_and_the_reveal_says_so(make):
    svc, clock = make(gold_share=1.0)
    for k in range(8):
        view = serve(svc, "s1", "10.0.0.1")
        row = battle_row(svc, view.battle_id)
        assert is_gold(row["model_a"]) != is_gold(row["model_b"])          # one real side, one check clip
        real = row["model_b"] if is_gold(row["model_a"]) else row["model_a"]
        assert real in MODELS
        good = good_slot(svc, view.battle_id)
        choice = [good, "B" if good == "A" else "A", "tie", "both_bad"][k % 4]
        res = vote_after_listening(svc, clock, view, "s1", "10.0.0.1", choice)
        assert res.gold == ["pass", "fail", "fail", "neutral"][k % 4]
        check = res.a if res.a.rating is None else res.b
        assert check.model == "check clip" and check.transcript in {c.describe for c in
                                                                   gold_clips.CONSTRUCTIONS.values()}
        assert (res.a if check is res.b else res.b).model == real
    assert svc.votes() == [] and svc.stored_ratings() == {}
    assert svc.store.query("SELECT COUNT(*) AS n FROM arena_gold_votes")[0]["n"] == 8
    # battles were served once each: a vote again on one of them is refused as any voted battle
    assert svc.store.query("SELECT COUNT(*) AS n FROM arena_battles WHERE voted=1")[0]["n"] == 8


def test_the_check_clip_is_made_from_the_real_reply_and_shaped_like_it(make):
    svc, clock = make(gold_share=1.0)
    for _ in range(6):
        view = serve(svc, "s1", "10.0.0.1")
        row = battle_row(svc, view.battle_id)
        bad_slot = "A" if is_gold(row["model_a"]) else "B"
        real_slot = "B" if bad_slot == "A" else "A"
        bad, real = svc.battle_clip(view.battle_id, bad_slot), svc.battle_clip(view.battle_id, real_slot)
        assert bad.parent.name == "gold" and real.parent.parent.name == battle_audio.HEARD_DIR  # both as heard
        assert bad.read_bytes()[:data_chunk(real.read_bytes())] == real.read_bytes()[:data_chunk(real.read_bytes())]
        assert view.listening["clips"][bad_slot]["seconds"] == pytest.approx(view.listening["clips"][real_slot]["seconds"])
        samples, rate = battle_audio.decode(bad.read_bytes())     # at the loudness of every heard clip
        assert battle_audio.loudness(samples, rate) == pytest.approx(battle_audio.TARGET_LUFS, abs=0.5)


def test_a_careless_voter_fails_gold_checks_and_their_votes_leave_the_fit(make):
    """Three voters meet six or more gold battles each, then twelve ordinary ones. The careful one hears which clip is the
    check and picks the real reply; a lazy one always presses Tie; a hasty one always presses A. After the sweep
    the lazy voter (every check failed) is excluded from Bradley-Terry and the replayed table, the hasty one holds
    the weight the gold rule gives their record (down-weighted with any failure), the careful one counts in
    full. Before the sweep every vote counts (the assertion on the fit before it)."""
    svc, clock = make(gold_share=1.0, session_votes_per_minute=1000, ip_votes_per_minute=1000)
    voters = {"careful": "10.0.0.1", "lazy": "10.0.0.2", "hasty": "10.0.0.3"}
    hasty_results = []
    for _ in range(40):           # six checks each at least, until the hasty voter has both passed and failed one
        for voter, ip in voters.items():
            view = serve(svc, voter, ip)
            pick = {"careful": good_slot(svc, view.battle_id), "lazy": "tie", "hasty": "A"}[voter]
            res = vote_after_listening(svc, clock, view, voter, ip, pick)
            hasty_results += [res.gold] if voter == "hasty" else []
        if len(hasty_results) >= 6 and {"pass", "fail"} <= set(hasty_results):
            break
    svc.gold.share = 0.0                               # then ordinary battles
    for _ in range(12):
        for voter, ip in voters.items():
            view = serve(svc, voter, ip)
            row = battle_row(svc, view.battle_id)
            pick = {"careful": "A" if row["model_a"] == "warm-model" else "B", "lazy": "tie", "hasty": "A"}[voter]
            vote_after_listening(svc, clock, view, voter, ip, pick)
    assert svc.pair_counts().battles == 36 and svc.vote_weights() == {}
    svc.integrity_upkeep()
    records = gold.records(svc.store, vote_flags.voter_subject)
    checks = len(hasty_results)
    assert records[vote_flags.voter_subject(None, "lazy")] == GoldRecord(0, checks)
    assert records[vote_flags.voter_subject(None, "careful")] == GoldRecord(checks, 0)
    hasty = records[vote_flags.voter_subject(None, "hasty")]
    assert hasty.fails > 0 and hasty.passes > 0 and hasty.passes + hasty.fails == checks

    weights = svc.vote_weights()
    ids = {voter: {r["id"] for r in svc.store.query("SELECT id FROM arena_votes WHERE session_id=?", (voter,))}
           for voter in voters}
    assert {weights[i] for i in ids["lazy"]} == {0.0}
    rule = sweeps.gold_weight(hasty)          # down-weighted unless 3 passes per failure
    assert {weights.get(i, 1.0) for i in ids["hasty"]} == {rule[0] if rule else 1.0}
    assert rule is not None or hasty.passes >= 3 * hasty.fails
    assert not ids["careful"] & set(weights)
    counted = 12 if rule and rule[0] == 0 else 24
    assert svc.pair_counts().battles == counted                   # the lazy voter's 12 votes are out of the fit
    assert sum(r["votes"] for r in svc.replayed_table(rounds=10)) == 2 * counted


def test_other_reply_is_the_same_models_reply_to_another_request(make):
    svc, clock = make(gold_share=1.0, gold_constructions=("other_reply",))
    view = serve(svc, "s1", "10.0.0.1")
    row = battle_row(svc, view.battle_id)
    bad_slot = "A" if is_gold(row["model_a"]) else "B"
    real = row["model_b"] if bad_slot == "A" else row["model_a"]
    clip, _ = gold_clips.read_like(svc.battle_clip(view.battle_id, bad_slot))
    assert svc.battle_clip(view.battle_id, bad_slot).parent.name == "gold"      # a new file (dithered), not the reply
    same = []
    for r in svc.store.replies(benchmark_hash=row["benchmark_hash"]):
        x, _ = gold_clips.read_like(svc.heard.clip(svc.store.abspath(r.audio_path)).path)     # as voters hear it
        if r.model == real and x.shape == clip.shape and np.max(np.abs(x - clip)) <= 2 / 32768:
            same.append(r.request_id)
    assert same and row["request_id"] not in same, "the check clip is not the model's reply to another request"
