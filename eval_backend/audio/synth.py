"""Speech synthesis with espeak-ng plus signal-processing effects and procedural backgrounds.

`espeak()` is the only function that runs a program; everything else is a pure
function of (samples, sample rate, seeded RNG), so one seed gives the same audio.
`render(text, recipe, rng)` turns a `Recipe` (data: voice, rate, pitch, effects,
non-verbal sounds, background, SNR) into a clip; `eval_backend.benchmark.demo`
keeps its attribute -> recipe table as data.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np
import soundfile as sf
from scipy import signal
from scipy.ndimage import uniform_filter1d

SR = 16000
ESPEAK = "espeak-ng"
ESPEAK_SR = 22050


class SynthError(RuntimeError):
    """espeak-ng is missing or failed."""


def rng_for(seed: int, key: str) -> np.random.Generator:
    """An RNG that depends only on (seed, key): clips do not depend on build order."""
    return np.random.default_rng([int(seed), zlib.crc32(key.encode("utf-8"))])


# ------------------------------------------------------------------ espeak-ng
def check_espeak() -> None:
    if shutil.which(ESPEAK) is None:
        raise SynthError("espeak-ng is not installed (Debian package espeak-ng)")


def espeak(text: str, voice: str = "en-us", rate: int = 160, pitch: int = 50, amplitude: int = 100,
           word_gap: int = 0, sr: int = SR) -> np.ndarray:
    """Speak `text` with espeak-ng; float32 mono at `sr`. Raises SynthError when espeak-ng fails."""
    check_espeak()
    cmd = [ESPEAK, "-v", voice, "-s", str(int(rate)), "-p", str(int(pitch)), "-a", str(int(amplitude)),
           "-g", str(int(word_gap)), "--stdout", "--stdin"]
    proc = subprocess.run(cmd, input=text.encode("utf-8"), capture_output=True, timeout=60)
    if proc.returncode != 0 or len(proc.stdout) < 100:
        raise SynthError(f"espeak-ng failed for voice {voice!r}: {proc.stderr.decode(errors='replace')[:200]}")
    x, file_sr = sf.read(io.BytesIO(proc.stdout), dtype="float64")
    return resample(x, file_sr, sr).astype(np.float32)


@lru_cache(maxsize=16)
def _fir(up: int, down: int) -> np.ndarray:
    """resample_poly's default anti-alias filter, designed once per ratio (designing it dominated)."""
    m = max(up, down)
    return signal.firwin(2 * 10 * m + 1, 1.0 / m, window=("kaiser", 5.0))


def resample(x: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    if sr_in == sr_out:
        return np.asarray(x, dtype=np.float64)
    g = np.gcd(int(sr_in), int(sr_out))
    up, down = sr_out // g, sr_in // g
    return signal.resample_poly(np.asarray(x, dtype=np.float64), up, down, window=_fir(up, down))


# ------------------------------------------------------------------ helpers
def _t(n: int, sr: int) -> np.ndarray:
    return np.arange(n) / sr


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else 0.0


def active_power(x: np.ndarray, sr: int) -> float:
    """Mean power of 25 ms frames within 30 dB of the loudest: the level of the speech itself."""
    n = int(0.025 * sr)
    frames = x[: len(x) // n * n].reshape(-1, n) if len(x) >= n else x[None, :]
    p = np.mean(frames ** 2, axis=1)
    return float(np.mean(p[p >= p.max() * 1e-3])) if p.max() > 0 else 0.0


def _filt(x: np.ndarray, sr: int, lo: float | None, hi: float | None, order: int = 4) -> np.ndarray:
    nyq = 0.5 * sr
    if lo and hi:
        sos = signal.butter(order, [lo, min(hi, 0.95 * nyq)], btype="band", fs=sr, output="sos")
    elif lo:
        sos = signal.butter(order, lo, btype="high", fs=sr, output="sos")
    else:
        sos = signal.butter(order, min(hi, 0.95 * nyq), btype="low", fs=sr, output="sos")
    return signal.sosfilt(sos, x)


def _norm(x: np.ndarray) -> np.ndarray:
    r = rms(x)
    return x / r if r > 0 else x


def _smooth_random(n: int, sr: int, rng: np.random.Generator, rate_hz: float) -> np.ndarray:
    """A slowly varying random curve in [0, 1] (gusts, swells)."""
    k = max(2, int(n / sr * rate_hz) + 2)
    pts = rng.random(k)
    return np.interp(np.linspace(0, k - 1, n), np.arange(k), pts)


def _place(out: np.ndarray, clip: np.ndarray, start: int) -> None:
    end = min(len(out), start + len(clip))
    if end > start >= 0:
        out[start:end] += clip[: end - start]


def _tone(freqs: list[float], seconds: float, sr: int, decay: float | None = None, harmonics: int = 3) -> np.ndarray:
    t = _t(int(round(seconds * sr)), sr)
    y = sum(np.sin(2 * np.pi * f * k * t) / k for f in freqs for k in range(1, harmonics + 1))
    env = np.exp(-t / decay) if decay else np.ones_like(t)
    attack = min(len(t), int(0.005 * sr))
    env[:attack] *= np.linspace(0, 1, attack)
    env[-attack:] *= np.linspace(1, 0, attack)
    return y * env


# ------------------------------------------------------------------ speech effects
def gain(x, sr, rng, db: float):
    return x * 10 ** (db / 20)


def soft_clip(x, sr, rng, drive: float = 3.0):
    """Loud, compressed delivery: drive into tanh, keep the peak near 0.9."""
    peak = np.max(np.abs(x)) or 1.0
    y = np.tanh(drive * x / peak)
    return 0.9 * y / (np.max(np.abs(y)) or 1.0)


def bright(x, sr, rng, amount: float = 0.85):
    """Pre-emphasis tilt: more high-frequency energy (effort, shouting, anger)."""
    y = np.append(x[0], x[1:] - amount * x[:-1])
    return y * (rms(x) / (rms(y) or 1.0))


def dark(x, sr, rng, cutoff: float = 2200.0):
    """Muffled, low-energy timbre (sadness, fatigue)."""
    y = _filt(x, sr, None, cutoff, order=2)
    return y * (rms(x) / (rms(y) or 1.0))


def speed(x, sr, rng, factor: float):
    """Resample: pitch, formants and tempo all rise by `factor` (a child's shorter vocal tract)."""
    return resample(x, int(round(sr * factor)), sr)


def vibrato(x, sr, rng, hz: float = 6.0, st: float = 1.0):
    """F0 wobble of +-`st` semitones at `hz` (shaky, sobbing, elderly voice).

    Done with Praat's PSOLA resynthesis, which moves F0 only: a modulated delay line would
    also shift the formants (a warble that made the words unintelligible to ASR)."""
    import parselmouth
    from parselmouth.praat import call

    snd = parselmouth.Sound(np.asarray(x, dtype=np.float64), sampling_frequency=sr)
    manip = call(snd, "To Manipulation", 0.01, 60, 600)
    tier = call(manip, "Extract pitch tier")
    phase = float(rng.uniform(0, 2 * np.pi))
    call(tier, "Formula", f"self * 2 ^ ({st} * sin(2 * pi * {hz} * x + {phase}) / 12)")
    call([tier, manip], "Replace pitch tier")
    out = call(manip, "Get resynthesis (overlap-add)").values[0]
    return out[: len(x)] if len(out) >= len(x) else np.pad(out, (0, len(x) - len(out)))


def tremolo(x, sr, rng, hz: float = 6.0, depth: float = 0.5):
    t = _t(len(x), sr)
    return x * (1 - depth / 2 + depth / 2 * np.sin(2 * np.pi * hz * t + rng.uniform(0, 2 * np.pi)))


def _envelope(x: np.ndarray, sr: int, smooth_s: float = 0.02) -> np.ndarray:
    n = max(1, int(smooth_s * sr))
    return np.sqrt(np.convolve(x ** 2, np.ones(n) / n, mode="same"))


def breathy(x, sr, rng, level_db: float = -12.0, lo: float = 1000.0, hi: float = 6000.0):
    """Aspiration noise following the speech envelope (breathy, hoarse, breathless voices)."""
    noise = _filt(rng.normal(size=len(x)), sr, lo, hi)
    noise = _norm(noise) * _envelope(x, sr)
    return x + noise * 10 ** (level_db / 20)


def roughness(x, sr, rng, depth: float = 0.5):
    """Irregular fast amplitude fluctuation (shimmer-like, 30-90 Hz): a rough, hoarse voice."""
    n = len(x)
    k = int(n / sr * 60) + 2
    curve = np.interp(np.linspace(0, k - 1, n), np.arange(k), rng.random(k))
    return x * (1 - depth + depth * 2 * curve)


EFFECTS: dict[str, Callable] = {
    "gain": gain, "soft_clip": soft_clip, "bright": bright, "dark": dark, "speed": speed,
    "vibrato": vibrato, "tremolo": tremolo, "breathy": breathy, "roughness": roughness,
}


# ------------------------------------------------------------------ non-verbal sounds
def gasp(sr, rng, seconds: float = 0.3):
    """A quick inhalation: band-limited noise with a rising envelope."""
    n = int(seconds * sr)
    env = np.linspace(0.2, 1, n) ** 2 * np.hanning(n) ** 0.3
    return 0.12 * _norm(_filt(rng.normal(size=n), sr, 900, 4500)) * env


def sob(sr, rng):
    """A sobbing inhalation: a gasp broken by a 7 Hz stutter."""
    g = gasp(sr, rng, 0.45)
    return g * (0.5 + 0.5 * np.sign(np.sin(2 * np.pi * 7 * _t(len(g), sr)))) * 1.4


def cough(sr, rng):
    parts = []
    for i in range(int(rng.integers(2, 4))):
        n = int(rng.uniform(0.16, 0.22) * sr)
        t = _t(n, sr)
        burst = _filt(rng.normal(size=n), sr, 250, 4000) * np.exp(-t / 0.07)
        burst[: int(0.004 * sr)] *= np.linspace(0, 1, int(0.004 * sr))
        parts += [burst / (np.max(np.abs(burst)) or 1.0) * rng.uniform(0.5, 0.7),
                  np.zeros(int(rng.uniform(0.08, 0.15) * sr))]
    return np.concatenate(parts)


def sigh(sr, rng):
    n = int(1.1 * sr)
    env = np.sin(np.pi * np.linspace(0, 1, n)) ** 1.5
    voiced = _tone([rng.uniform(140, 170)], n / sr, sr, harmonics=4) * np.linspace(1, 0.6, n)
    return 0.08 * _norm(_filt(rng.normal(size=n), sr, 400, 2500)) * env + 0.02 * voiced * env


def laughter(sr, rng):
    return 1.1 * tremolo(espeak("ha ha ha ha", "en+f2", rate=230, pitch=85), sr, rng, 5.0, 0.6)


def yawn(sr, rng):
    return 0.9 * dark(espeak("aaaaah", "en-us", rate=80, pitch=25), sr, rng, 1500)


NONVERBAL: dict[str, Callable] = {"gasp": gasp, "sob": sob, "cough": cough, "sigh": sigh,
                                  "laughter": laughter, "yawn": yawn}


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


# ------------------------------------------------------------------ recipes
@dataclass(frozen=True)
class Recipe:
    """How to speak a text: espeak settings, effects in order, extra sounds, background."""
    voice: str = "en-us"
    rate: int = 160
    pitch: int = 50
    amplitude: int = 100
    word_gap: int = 0
    effects: tuple[tuple[str, dict], ...] = ()
    chunk_words: int = 0            # >0: speak in chunks of this many words with `between` in the gaps
    between: str | None = None      # non-verbal sound between chunks (gasp, sob)
    before: str | None = None       # non-verbal sound before / after the words
    after: str | None = None
    background: str | None = None
    snr_db: float = 8.0
    lead_s: float = 0.5             # silence (or background alone) before the speech
    tail_s: float = 0.4
    extra: dict = field(default_factory=dict)


def speak(text: str, r: Recipe, sr: int = SR) -> np.ndarray:
    """espeak-ng alone (no effects)."""
    return espeak(text, r.voice, r.rate, r.pitch, r.amplitude, r.word_gap, sr=sr).astype(np.float64)


def render(text: str, r: Recipe, rng: np.random.Generator, sr: int = SR) -> np.ndarray:
    """The clip for `text` under recipe `r`, float32 in [-1, 1]."""
    if r.chunk_words > 0:
        words = text.split()
        chunks = [" ".join(words[i: i + r.chunk_words]) for i in range(0, len(words), r.chunk_words)]
        parts = []
        for i, chunk in enumerate(chunks):
            if i and r.between:
                parts.append(NONVERBAL[r.between](sr, rng))
            parts.append(speak(chunk, r, sr))
        x = np.concatenate(parts)
    else:
        x = speak(text, r, sr)
    for name, kwargs in r.effects:
        x = EFFECTS[name](x, sr, rng, **kwargs)
    gap = np.zeros(int(0.15 * sr))
    if r.before:
        x = np.concatenate([NONVERBAL[r.before](sr, rng), gap, x])
    if r.after:
        x = np.concatenate([x, gap, NONVERBAL[r.after](sr, rng)])
    x = np.concatenate([np.zeros(int(r.lead_s * sr)), x, np.zeros(int(r.tail_s * sr))])
    if r.background:
        x = mix_at_snr(x, background(r.background, len(x), sr, rng), r.snr_db, sr)
    peak = np.max(np.abs(x))
    if peak > 0.98:                  # keep relative loudness, only guard against clipping
        x = x * (0.98 / peak)
    return x.astype(np.float32)
