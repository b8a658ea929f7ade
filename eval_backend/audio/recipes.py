"""A `Recipe` (data: espeak settings, effects, non-verbal sounds, background, SNR) and `render`, which turns a text
and a recipe into a clip: speech (eval_backend/audio/synth.py), its effects and sounds, then the background
(eval_backend/audio/backgrounds.py). `eval_backend.benchmark.demo` keeps its attribute -> recipe table as data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .backgrounds import background, mix_at_snr
from .synth import EFFECTS, NONVERBAL, SR, espeak


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
