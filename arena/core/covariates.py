"""Style covariates: what a voter hears besides what a reply says — how long it is, how loud, how fast, how many
words, and (live battles) how late it came. One place for which covariates exist, how each is measured on a clip,
how A and B become one difference for the style fit (arena/core/style_bt.py) and how its effect is said in words.

Measured when a battle is created, on the clip the voter will hear (`measure_clip(path, words)`: the one
function that reads audio here, so a change of which file is heard only changes the path passed in):
- duration_s: the clip's length in seconds;
- loudness_lufs: integrated loudness, ITU-R BS.1770-4 (pyloudnorm), of the heard clip. Once battle clips are
  loudness-normalised the differences shrink to ~0 and the fit then reports this covariate as not fitted
  ("the difference between the two heard clips never varied"), which is the truth about what voters heard;
- speech_rate: syllable nuclei per second of speech (eval_backend.audio.features.speaking_rate: the project's
  one measure of pace, the same as the scorer's `audio.speaking_rate`);
- words: whitespace-separated words of what the reply said (its transcript, else its text);
- latency_s: seconds from the voter's request to the reply (live battles only; a benchmark battle's replies
  were recorded beforehand, so its voter waited for neither: its difference is 0, not unknown).

The fit uses differences A - B: log2 ratios for duration, speech rate and words (so "twice as long" is one unit
whatever the typical length), dB for loudness, seconds for latency. A battle missing a measured covariate
(an imported vote without it, a clip too short for BS.1770's 400 ms block) is left out of the style fit.
"""
from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

SLOTS = ("a", "b")


@dataclass(frozen=True)
class Covariate:
    name: str                 # the style fit's name
    field: str                # the stored measure; columns a_<field>, b_<field>
    label: str                # a visitor's word for it
    log_ratio: bool           # difference = log2(A / B) (positive measures); else A - B
    step: float               # the change a sentence describes, in difference units
    change: str               # "is twice as long as the other": what one reply does, for `step`
    absent_is_equal: bool = False   # a missing pair of values means "no difference", not "unknown"


COVARIATES = (
    Covariate("duration", "duration_s", "length", True, 1.0, "is twice as long as the other"),
    Covariate("loudness", "loudness_lufs", "loudness", False, 10.0,
              "is 10 dB louder than the other (about twice as loud to the ear)"),
    Covariate("speech_rate", "speech_rate", "speaking rate", True, math.log2(1.25),
              "is spoken 25% faster than the other"),
    Covariate("words", "words", "word count", True, 1.0, "has twice as many words as the other"),
    Covariate("latency", "latency_s", "waiting time", False, 1.0, "came 1 s later than the other",
              absent_is_equal=True),
)
BY_NAME = {c.name: c for c in COVARIATES}
FIELDS = tuple(c.field for c in COVARIATES)
CLIP_FIELDS = ("duration_s", "loudness_lufs", "speech_rate", "words")     # measured on a clip and its words
COLUMNS = tuple(f"{slot}_{field}" for field in FIELDS for slot in SLOTS)   # a_duration_s, b_duration_s, ...
MIN_LOUDNESS_S = 0.4       # BS.1770 gates 400 ms blocks: a shorter clip has no integrated loudness


def difference(cov: Covariate, a: float | None, b: float | None) -> float:
    """The A - B difference in fit units; NaN when it cannot be formed (missing, or not positive for a ratio)."""
    if a is None or b is None:
        return 0.0 if cov.absent_is_equal and a is None and b is None else math.nan
    if cov.log_ratio:
        return math.log2(a / b) if a > 0 and b > 0 else math.nan
    return float(a) - float(b)


def differences(rows) -> np.ndarray:
    """(N, c) differences of rows carrying the a_*/b_* columns (attributes or mapping keys), in COVARIATES order."""
    def get(row, key):
        return row.get(key) if isinstance(row, dict) else getattr(row, key)
    return np.array([[difference(c, get(r, f"a_{c.field}"), get(r, f"b_{c.field}")) for c in COVARIATES]
                     for r in rows], dtype=float).reshape(-1, len(COVARIATES))


def win_share(cov: Covariate, coef: float) -> float:
    """P(the reply that differs by one `step` wins | all else equal), from a log-odds per difference unit."""
    return 1.0 / (1.0 + math.exp(-coef * cov.step))


def effect_sentence(name: str, effect: dict) -> str:
    """A covariate's effect (StyleResult.effects()[name]: coef, low, high per difference unit; not_fitted) in
    words a visitor understands; plain text (the caller renders it)."""
    cov = BY_NAME[name]
    if effect.get("coef") is None:
        why = effect.get("not_fitted") or "not enough battles"
        if cov.absent_is_equal and "never varied" in why:       # benchmark battles have no waiting time at all
            why = "no battle here made its voter wait longer for one reply than for the other"
        return f"{cov.label.capitalize()}: not estimated ({why})."
    share = win_share(cov, effect["coef"])
    text = f"All else equal, when one reply {cov.change}, it wins {100 * share:.1f}% of the time"
    if effect.get("low") is not None and effect.get("high") is not None:
        text += (f" (95% interval {100 * win_share(cov, effect['low']):.1f}–"
                 f"{100 * win_share(cov, effect['high']):.1f}%")
    else:
        text += " (no interval: no bootstrap rounds"
    return text + f"; 50% would mean {cov.label} makes no difference)."


def word_count(text: str | None) -> int | None:
    return len(text.split()) if isinstance(text, str) else None


def _loudness(x: np.ndarray, sr: int) -> float | None:
    import pyloudnorm
    if len(x) < MIN_LOUDNESS_S * sr:
        return None
    value = float(pyloudnorm.Meter(sr).integrated_loudness(x))
    return value if math.isfinite(value) else None          # digital silence: -inf, not a loudness


def measure_clip(path: str | Path, words: str | None = None) -> dict[str, float | None]:
    """{duration_s, loudness_lufs, speech_rate, words} of one clip as the voter hears it (None where not
    measurable). Raises OSError / RuntimeError (soundfile) for an unreadable file."""
    from eval_backend.audio.features import speaking_rate  # why: parselmouth (Praat) loads only once a clip is measured
    x, sr = sf.read(str(path), dtype="float64", always_2d=True)
    duration = x.shape[0] / sr if sr else 0.0
    if not x.size or not np.all(np.isfinite(x)):
        return {"duration_s": duration or None, "loudness_lufs": None, "speech_rate": None,
                "words": word_count(words)}
    rate, speech_s = speaking_rate(x.mean(axis=1), int(sr))
    return {"duration_s": duration, "loudness_lufs": _loudness(x, int(sr)),
            "speech_rate": rate if speech_s > 0 and rate > 0 else None, "words": word_count(words)}


def measure_battle(clip_a: tuple[str | Path, str | None], clip_b: tuple[str | Path, str | None],
                   latency: tuple[float | None, float | None] = (None, None), measure=measure_clip
                   ) -> dict[str, float | None]:
    """The a_*/b_* columns of a new battle from its two heard clips ((path, words) each; `measure`: measure_clip
    or a ClipMeasures' get). A clip that cannot be read gives None: the battle goes on, the style fit leaves it
    out (a broken clip is the battle's problem, reported where it is served, not the covariates')."""
    measured = []
    for path, words in (clip_a, clip_b):
        try:
            measured.append(measure(path, words))
        except (OSError, RuntimeError, ValueError):
            measured.append({"words": word_count(words)})
    return battle_columns(measured[0], measured[1], latency)


def battle_columns(a: dict | None, b: dict | None, latency: tuple[float | None, float | None] = (None, None)
                   ) -> dict[str, float | None]:
    """The a_*/b_* values of a battle from its two clips' measures (and the live replies' latencies)."""
    out: dict[str, float | None] = {}
    for slot, measured, late in (("a", a or {}, latency[0]), ("b", b or {}, latency[1])):
        for field in CLIP_FIELDS:
            value = measured.get(field)
            out[f"{slot}_{field}"] = None if value is None else float(value)
        out[f"{slot}_latency_s"] = None if late is None else float(late)
    return {k: out[k] for k in COLUMNS}


class ClipMeasures:
    """measure_clip, remembered per file (path, size, modification time: a replaced file is measured again), for
    the benchmark replies that recur in many battles. Bounded (LRU); thread-safe. `audio(path)` measures a clip
    ahead (the battle-audio thread does, for every servable clip), so serving a battle finds it measured: the
    first battle of a reply costs what any other does (a gold battle's check clip is measured ahead too)."""

    def __init__(self, maxsize: int = 50_000):
        self.maxsize = maxsize
        self._cache: OrderedDict[tuple, dict] = OrderedDict()
        self._lock = threading.Lock()

    def audio(self, path: str | Path) -> dict[str, float | None]:
        """The clip's own measures (everything but `words`)."""
        st = os.stat(path)
        key = (str(path), st.st_size, st.st_mtime_ns)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        value = {k: v for k, v in measure_clip(path).items() if k != "words"}
        with self._lock:
            self._cache[key] = value
            while len(self._cache) > self.maxsize:
                self._cache.popitem(last=False)
        return value

    def get(self, path: str | Path, words: str | None = None) -> dict[str, float | None]:
        return {**self.audio(path), "words": word_count(words)}
