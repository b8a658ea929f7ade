"""Sanity of the acoustic features on signals whose truth is known by construction."""
import numpy as np
import pytest

from eval_backend.audio.features import extract

SR = 16000


def harmonic(f0, seconds, sr=SR, vibrato_st=0.0, vibrato_hz=6.0, amp=0.3):
    """A voiced-like tone: 5 harmonics of f0, optionally with a pitch vibrato."""
    t = np.arange(int(seconds * sr)) / sr
    inst = f0 * 2 ** (vibrato_st * np.sin(2 * np.pi * vibrato_hz * t) / 12)
    phase = 2 * np.pi * np.cumsum(inst) / sr
    return amp * sum(np.sin(k * phase) / k for k in range(1, 6)) / 1.5


def syllable_train(n, syl_s, gap_s, f0=140.0, sr=SR, noise=False, seed=0):
    """n Hann-shaped bursts separated by silence, with silence at both ends."""
    rng = np.random.default_rng(seed)
    parts = [np.zeros(int(0.4 * sr))]
    for _ in range(n):
        burst = rng.normal(0, 0.1, int(syl_s * sr)) if noise else harmonic(f0, syl_s, sr)
        parts += [burst * np.hanning(len(burst)), np.zeros(int(gap_s * sr))]
    parts.append(np.zeros(int(0.4 * sr)))
    return np.concatenate(parts)


@pytest.mark.parametrize("f0", [110.0, 220.0, 330.0])
def test_pitch_of_a_known_tone(f0):
    f = extract(harmonic(f0, 1.5), SR)
    assert f.pitch_median_hz == pytest.approx(f0, rel=0.03)
    assert f.voiced_fraction > 0.8
    assert f.pitch_range_st < 0.5


def test_pitch_survives_other_sample_rates():
    f = extract(harmonic(180.0, 1.0, sr=22050), 22050)
    assert f.pitch_median_hz == pytest.approx(180.0, rel=0.03)


def test_louder_signal_has_higher_level():
    quiet = extract(syllable_train(8, 0.15, 0.1), SR)
    loud = extract(4 * syllable_train(8, 0.15, 0.1), SR)
    assert loud.active_level_dbfs - quiet.active_level_dbfs == pytest.approx(12.0, abs=0.5)
    assert loud.rms_dbfs > quiet.rms_dbfs


def test_added_white_noise_lowers_snr_monotonically():
    clean = syllable_train(10, 0.15, 0.12)
    rng = np.random.default_rng(1)
    white = rng.normal(0, 1, len(clean))
    p = np.mean(clean[np.abs(clean) > 0.01] ** 2)
    snrs = [extract(clean, SR).snr_db]
    for target in (20, 10, 0):
        noisy = clean + white * np.sqrt(p / 10 ** (target / 10))
        snrs.append(extract(noisy, SR).snr_db)
    assert snrs == sorted(snrs, reverse=True)
    assert snrs[0] >= 40
    assert abs(snrs[2] - 10) < 6


def test_syllable_count_and_rate():
    slow = extract(syllable_train(10, 0.25, 0.15), SR)
    fast = extract(syllable_train(10, 0.12, 0.06), SR)
    assert 8 <= slow.syllables <= 12 and 8 <= fast.syllables <= 12
    assert fast.speaking_rate > 1.5 * slow.speaking_rate


def test_unvoiced_bursts_have_no_pitch():
    f = extract(syllable_train(8, 0.15, 0.1, noise=True), SR)
    assert f.pitch_median_hz is None and f.pitch_range_st is None and f.hnr_db is None
    assert f.voiced_fraction < 0.1
    assert f.speech_s > 0.5 and f.syllables >= 5


def test_vibrato_reads_as_tremor():
    steady = extract(harmonic(200.0, 2.0), SR)
    shaky = extract(harmonic(200.0, 2.0, vibrato_st=1.0), SR)
    assert shaky.pitch_tremor_st > steady.pitch_tremor_st + 0.3


def test_amplitude_tremor_reads_in_4_8_hz_band():
    base = harmonic(200.0, 3.0)
    t = np.arange(len(base)) / SR
    shaky = base * (1 + 0.6 * np.sin(2 * np.pi * 6 * t))
    assert extract(shaky, SR).am_depth_4_8 > extract(base, SR).am_depth_4_8 + 0.3


def test_silence_is_reported_not_invented():
    f = extract(np.zeros(SR), SR)
    assert f.speech_s == 0 and f.syllables == 0 and f.pitch_median_hz is None
    assert f.spectral_flatness is None and f.rms_dbfs <= -100


@pytest.mark.parametrize("bad", [np.array([]), np.array([0.1, np.nan, 0.2] * 1000)])
def test_bad_input_raises(bad):
    with pytest.raises(ValueError):
        extract(bad, SR)
