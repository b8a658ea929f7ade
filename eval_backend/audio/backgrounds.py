"""Procedural backgrounds (`BACKGROUNDS`: rain, wind, traffic, crowds, music...) and mixing at a speech-to-noise
ratio. Pure functions of (samples, sample rate, seeded RNG), built on the helpers of eval_backend/audio/synth.py
(the babble speaks through its espeak-ng wrapper).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import signal
from scipy.ndimage import uniform_filter1d

from .synth import _filt, _norm, _place, _smooth_random, _t, _tone, active_power, espeak, speed

# ------------------------------------------------------------------ backgrounds
_BABBLE_LINES = (
    "did you see the game last night", "we should get some lunch soon", "the train was late again today",
    "I think it opens at ten", "can you pass me that one", "they moved the meeting to friday",
    "my sister lives near the park", "let us try the other door", "is this seat taken",
    "where did you park the car", "the shop on the corner closed", "I will call you later tonight",
)


def _room(n, sr, rng, level: float = 0.05):
    """A faint pink-ish room tone, so intermittent backgrounds still have a floor."""
    return level * _norm(_filt(np.cumsum(rng.normal(size=n)) * 0.02 + rng.normal(size=n), sr, 60, 3000))


def _babble(n, sr, rng, voices, pitch_range=(30, 70), rate_range=(150, 190), count: int = 6, factor: float = 1.0):
    out = np.zeros(n)
    for _ in range(count):
        line = " ".join(rng.choice(_BABBLE_LINES, size=3, replace=False))
        v = espeak(line, str(rng.choice(voices)), rate=int(rng.integers(*rate_range)),
                   pitch=int(rng.integers(*pitch_range)), sr=sr)
        if factor != 1.0:
            v = speed(v, sr, rng, factor)
        v = np.tile(v, int(np.ceil(n / len(v))) + 1)
        off = int(rng.integers(0, len(v) - n))
        out += rng.uniform(0.5, 1.0) * v[off: off + n]
    return out


def rain(n, sr, rng):
    hiss = _filt(rng.normal(size=n), sr, 1500, 7000)
    drops = np.zeros(n)
    idx = rng.integers(0, n, size=int(n / sr * 250))
    drops[idx] = rng.uniform(-1, 1, size=len(idx))
    drops = _filt(drops, sr, 2000, 7000, order=2)
    return _norm(_norm(hiss) + 1.5 * _norm(drops))


def wind(n, sr, rng):
    brown = np.cumsum(rng.normal(size=n))
    brown = _filt(brown - uniform_filter1d(brown, sr), sr, 40, 500)   # drop the random walk's drift
    gusts = 0.25 + _smooth_random(n, sr, rng, 0.6) ** 2
    whistle = _filt(rng.normal(size=n), sr, 600, 900) * _smooth_random(n, sr, rng, 0.4)
    return _norm(_norm(brown) * gusts + 0.3 * _norm(whistle))


def thunderstorm(n, sr, rng):
    out = rain(n, sr, rng)
    for _ in range(max(1, int(n / sr / 3))):
        m = int(rng.uniform(1.5, 2.5) * sr)
        t = _t(m, sr)
        rumble = _filt(rng.normal(size=m), sr, 25, 180) * (np.exp(-t / 0.6) * (1 - np.exp(-t / 0.02)))
        _place(out, 4 * _norm(rumble), int(rng.integers(0, max(1, n - m // 2))))
    return _norm(out)


def sea_waves(n, sr, rng):
    noise = rng.normal(size=n)
    swell = _smooth_random(n, sr, rng, 0.35) ** 2 * (0.6 + 0.4 * np.sin(2 * np.pi * 0.15 * _t(n, sr)))
    low = _filt(noise, sr, 60, 900)
    high = _filt(rng.normal(size=n), sr, 900, 5000)
    return _norm(_norm(low) * (0.2 + swell) + 0.5 * _norm(high) * swell)


def car(n, sr, rng):
    t = _t(n, sr)
    rpm = 32 * (1 + 0.05 * _smooth_random(n, sr, rng, 0.3))
    phase = 2 * np.pi * np.cumsum(rpm) / sr
    engine = sum(np.sin(k * phase) / k for k in range(1, 6))
    road = _filt(rng.normal(size=n), sr, 40, 350)
    return _norm(0.6 * _norm(engine) + _norm(road) + 0.1 * np.sin(2 * np.pi * 0.2 * t) * _norm(road))


def subway(n, sr, rng):
    out = 1.2 * _norm(_filt(rng.normal(size=n), sr, 30, 250)) + 0.3 * _norm(_filt(rng.normal(size=n), sr, 500, 3000))
    step = int(0.9 * sr)
    for start in range(int(rng.integers(0, step)), n, step):
        for gap in (0, int(0.12 * sr)):
            m = int(0.05 * sr)
            _place(out, 2.5 * _norm(_filt(rng.normal(size=m), sr, 100, 1500)) * np.exp(-_t(m, sr) / 0.015),
                   start + gap)
    squeal = _tone([rng.uniform(2200, 2800)], n / sr, sr, harmonics=1) * _smooth_random(n, sr, rng, 0.5) ** 4
    return _norm(out + 0.6 * squeal)


def basketball_court(n, sr, rng):
    out = _room(n, sr, rng, 0.3)
    step = int(rng.uniform(0.4, 0.5) * sr)
    for start in range(int(rng.integers(0, step)), n, step):
        m = int(0.08 * sr)
        _place(out, 2.0 * np.sin(2 * np.pi * 110 * _t(m, sr)) * np.exp(-_t(m, sr) / 0.02), start)
    for _ in range(int(n / sr * 0.8)):
        m = int(0.12 * sr)
        f = np.linspace(2200, 3400, m)
        chirp = np.sin(2 * np.pi * np.cumsum(f) / sr) * np.hanning(m)
        _place(out, 0.8 * chirp, int(rng.integers(0, n)))
    return _norm(out)


def applause(n, sr, rng):
    """Many hands: random clap onsets convolved with a few short noise-burst clap shapes."""
    m = int(0.03 * sr)
    out = np.zeros(n + m)
    for _ in range(4):
        clap = _filt(rng.normal(size=m), sr, 700, 4500) * np.exp(-_t(m, sr) / 0.006)
        onsets = np.zeros(n)
        idx = rng.integers(0, n, size=int(n / sr * 15))
        onsets[idx] = rng.uniform(0.3, 1.0, size=len(idx))
        out[: n + m - 1] += signal.fftconvolve(onsets, clap)
    return _norm(out[:n])


def crowd_chatter(n, sr, rng):
    return _norm(_filt(_babble(n, sr, rng, ["en-us", "en+f3", "en+m3", "en+f2", "en+m1", "en-gb"]), sr, 100, 3500))


def cheering(n, sr, rng):
    voices = _babble(n, sr, rng, ["en+f2", "en+m3", "en+f4"], pitch_range=(70, 99), rate_range=(200, 260), count=5)
    return _norm(_norm(voices) + 0.8 * applause(n, sr, rng))


def children_speaking(n, sr, rng):
    return _norm(_babble(n, sr, rng, ["en+f2", "en+f4", "en+f5"], pitch_range=(80, 99), count=4, factor=1.2))


def children_playing(n, sr, rng):
    out = _norm(children_speaking(n, sr, rng))
    for _ in range(max(1, int(n / sr / 2))):
        shriek = speed(espeak("wheee", "en+f4", rate=120, pitch=99, sr=sr), sr, rng, 1.3)
        _place(out, 1.5 * _norm(shriek) * 0.7, int(rng.integers(0, n)))
    return _norm(out + 0.5 * basketball_court(n, sr, rng))


def alarm_clock(n, sr, rng):
    out = _room(n, sr, rng)
    f = rng.choice([2000.0, 2400.0, 2800.0])
    beep = _tone([f], 0.08, sr, harmonics=3)
    period = int(1.0 * sr)
    for start in range(int(rng.integers(0, period)), n, period):
        for i in range(4):
            _place(out, beep, start + int(i * 0.13 * sr))
    return _norm(out)


def ringtone(n, sr, rng):
    out = _room(n, sr, rng)
    lo, hi = rng.uniform(900, 1100), rng.uniform(1250, 1450)
    ring = np.concatenate([_tone([lo if i % 2 else hi], 0.05, sr, harmonics=2) for i in range(24)])
    period = int(2.0 * sr)
    for start in range(int(rng.integers(0, sr)), n, period):
        _place(out, ring, start)
    return _norm(out)


def honking(n, sr, rng):
    out = 0.5 * car(n, sr, rng)
    for _ in range(max(2, int(n / sr / 1.5))):
        m = int(rng.uniform(0.3, 0.7) * sr)
        horn = _tone([rng.uniform(380, 420), rng.uniform(480, 520)], m / sr, sr, harmonics=6)
        _place(out, 1.2 * _norm(_filt(horn, sr, None, 3000)), int(rng.integers(0, n)))
    return _norm(out)


def dogs_barking(n, sr, rng):
    out = _room(n, sr, rng)
    start = int(rng.integers(0, sr // 2))
    while start < n:
        for _ in range(int(rng.integers(2, 4))):
            m = int(rng.uniform(0.1, 0.16) * sr)
            f = np.linspace(rng.uniform(500, 650), rng.uniform(300, 380), m)
            ph = 2 * np.pi * np.cumsum(f) / sr
            bark = sum(np.sin(k * ph) / k for k in range(1, 7)) + 0.3 * rng.normal(size=m)
            _place(out, 2.5 * bark * np.hanning(m), start)
            start += m + int(rng.uniform(0.08, 0.2) * sr)
        start += int(rng.uniform(0.6, 1.4) * sr)
    return _norm(out)


# music: (scale semitones from the root, root Hz, beats per minute, note length in beats, distortion, drums)
_MUSIC = {
    "happy music": ([0, 4, 7, 12, 7, 4], 262.0, 140, 0.5, 0.0, True),
    "sad music": ([0, 3, 7, 3, 0, -2], 220.0, 60, 1.0, 0.0, False),
    "exciting music": ([0, 4, 7, 11, 12, 7], 294.0, 170, 0.25, 0.0, True),
    "angry music": ([0, 0, 3, 0, 6, 5], 82.0, 130, 0.5, 4.0, True),
    "funny music": ([0, 12, 7, 12, 4, 16], 196.0, 150, 0.25, 0.0, False),
}


def music(n, sr, rng, kind: str):
    scale, root, bpm, beats, distortion, drums = _MUSIC[kind]
    beat = 60.0 / bpm
    out = np.zeros(n)
    step = int(beats * beat * sr)
    decay = 0.15 if beats < 1 else 0.8
    i = int(rng.integers(0, len(scale)))
    for start in range(0, n, step):
        f = root * 2 ** (scale[i % len(scale)] / 12)
        fifth = f if kind == "funny music" else f * 2 ** (7 / 12)
        note = _tone([f, fifth], beats * beat * 1.5, sr, decay=decay, harmonics=4)
        if distortion:
            note = np.tanh(distortion * note)
        _place(out, note, start)
        i += 1
    if drums:
        m = int(0.12 * sr)
        kick = np.sin(2 * np.pi * np.cumsum(np.linspace(120, 45, m)) / sr) * np.exp(-_t(m, sr) / 0.05)
        hat = _filt(rng.normal(size=m // 3), sr, 5000, 7800) * np.exp(-_t(m // 3, sr) / 0.01)
        for start in range(0, n, int(beat * sr)):
            _place(out, 3 * kick, start)
            _place(out, 0.6 * hat, start + int(beat * sr / 2))
    return _norm(out)


BACKGROUNDS: dict[str, Callable] = {
    "rain": rain, "wind": wind, "thunderstorm": thunderstorm, "sea waves": sea_waves, "car": car,
    "subway": subway, "basketball court": basketball_court, "applause": applause, "cheering": cheering,
    "crowd chatter": crowd_chatter, "children speaking": children_speaking, "children playing": children_playing,
    "alarm clock": alarm_clock, "ringtone": ringtone, "honking": honking, "dogs barking": dogs_barking,
    **{k: (lambda n, sr, rng, _k=k: music(n, sr, rng, _k)) for k in _MUSIC},
}


def background(name: str, n: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    """`n` samples of a named background at unit RMS; KeyError lists the known names."""
    if name not in BACKGROUNDS:
        raise KeyError(f"unknown background {name!r}; known: {', '.join(sorted(BACKGROUNDS))}")
    return _norm(BACKGROUNDS[name](n, sr, rng))


def mix_at_snr(speech: np.ndarray, noise: np.ndarray, snr_db: float, sr: int) -> np.ndarray:
    """speech + noise scaled so the speech's active power is `snr_db` above the noise's mean power."""
    p_s, p_n = active_power(speech, sr), float(np.mean(noise ** 2))
    if p_n <= 0 or p_s <= 0:
        return speech.copy()
    return speech + noise * np.sqrt(p_s / (p_n * 10 ** (snr_db / 10)))
