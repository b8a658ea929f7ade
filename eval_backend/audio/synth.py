"""Speech synthesis with espeak-ng, the signal helpers, voice effects (`EFFECTS`) and non-verbal sounds
(`NONVERBAL`).

`espeak()` is the only function that runs a program; everything else is a pure
function of (samples, sample rate, seeded RNG), so one seed gives the same audio.
The procedural backgrounds are in eval_backend/audio/backgrounds.py; `render(text, recipe, rng)`
(eval_backend/audio/recipes.py) turns a `Recipe` (data: voice, rate, pitch, effects, non-verbal sounds,
background, SNR) into a clip; `eval_backend.benchmark.demo` keeps its attribute -> recipe table as data.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import zlib
from functools import lru_cache
from typing import Callable

import numpy as np
import soundfile as sf
from scipy import signal

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
