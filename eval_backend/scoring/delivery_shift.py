"""delivery_shift_agreement: does a model change its delivery across a script's variants the way the
benchmark's spoken reference replies do? (our own metric; pure core, no I/O)

EchoMind ships a spoken reference reply for every variant of a script (the same words said plainly,
with a target attribute, with a contrasting one). How the reference reply's delivery changes from the
neutral variant to the target variant is the benchmark's own answer to "how should a reply sound
different here"; no hand-written table of expected directions is read (unlike `prosody_fit`).

Measures of a clip (from `eval_backend.audio.features.extract`), each counted in a unit of a clearly
audible change so that they can be compared with each other:

    rate      log of syllable nuclei per second of speech   unit 0.10 (about 10 %)
    pitch     median F0 in semitones                        unit 1 st
    range     10-90th percentile F0 span in semitones       unit 1.5 st
    loudness  level of speech-active frames in dB           unit 2 dB
    pauses    non-active share inside the utterance         unit 0.05
    hnr       median harmonics-to-noise ratio (voice quality), dB   unit 2 dB

Change of a pair of clips (the reply to the base variant, the reply to the other variant): the
difference of their measures MINUS the difference between espeak-ng neutral readings (en-us, 175 wpm)
of their two texts. Longer or differently worded replies change rate, range and pauses by themselves;
this keeps only what the delivery changed beyond the words. A side whose words are unknown is compared
uncontrolled (recorded per pair).

Pairs per script: neutral -> target and neutral -> alternative; without a neutral variant (EchoMind's
conversation task drops it for speaker traits) alternative -> target.

Pair score, over the measures both sides have (at least MIN_MEASURES):
- the reference's change is under 1 unit (vector norm): the pair is skipped, there is nothing to agree
  with (counted as `reference_unchanged`);
- the model's change is under 1 unit: 0 (not changing is not agreeing);
- otherwise the cosine of the two change vectors, in [-1, 1] (1: changes the way the reference does,
  -1: the opposite way).
Script score: mean of its pairs; value: mean over scripts, with a 95% bootstrap interval over scripts.
Per measure, `sign agreement` is the share of pairs where the reference moved that measure by at least
1 unit and the model moved it at least half a unit the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

MEASURES = ("rate", "pitch", "range", "loudness", "pauses", "hnr")
UNITS = {"rate": 0.10, "pitch": 1.0, "range": 1.5, "loudness": 2.0, "pauses": 0.05, "hnr": 2.0}
NOTICEABLE = 1.0          # norm of a change vector (in units) below which it counts as no change
MIN_MEASURES = 2
SIGN_FOLLOW = 0.5         # units the model must move a measure to count as following the reference's sign
SILENT_DBFS = -100.0      # below this the clip is digital silence: no loudness to compare

Vector = dict[str, "float | None"]


def measures_of(f) -> Vector:
    """The six measures of a `Features` (None where unmeasurable, e.g. pitch of a whisper)."""
    return {
        "rate": math.log(f.speaking_rate) if f.speaking_rate and f.speaking_rate > 0 else None,
        "pitch": 12.0 * math.log2(f.pitch_median_hz) if f.pitch_median_hz else None,
        "range": f.pitch_range_st,
        "loudness": f.active_level_dbfs if f.active_level_dbfs > SILENT_DBFS else None,
        "pauses": f.inner_pause_fraction,
        "hnr": f.hnr_db,
    }


def change(other: Vector, base: Vector, other_plain: Vector | None = None,
           base_plain: Vector | None = None) -> Vector:
    """(other - base) in units, minus (other_plain - base_plain) when both plain readings are given."""
    out: Vector = {}
    control = other_plain is not None and base_plain is not None
    for k in MEASURES:
        vals = [other.get(k), base.get(k)] + ([other_plain.get(k), base_plain.get(k)] if control else [])
        if any(v is None for v in vals):
            out[k] = None
            continue
        d = vals[0] - vals[1] - ((vals[2] - vals[3]) if control else 0.0)
        out[k] = d / UNITS[k]
    return out


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@dataclass
class PairScore:
    score: float | None                     # None = skipped (see `why`)
    why: str = ""                           # reference_unchanged | too_few_measures | model_unchanged | ""
    measures: tuple[str, ...] = ()
    model: dict = field(default_factory=dict)       # measure -> change in units (rounded)
    reference: dict = field(default_factory=dict)
    signs: dict = field(default_factory=dict)       # measure -> followed the reference's sign (bool)


def pair_agreement(model: Vector, reference: Vector) -> PairScore:
    """Score one pair of change vectors (both in units)."""
    keys = tuple(k for k in MEASURES if model.get(k) is not None and reference.get(k) is not None)
    m = [model[k] for k in keys]
    r = [reference[k] for k in keys]
    out = PairScore(None, measures=keys, model={k: round(x, 3) for k, x in zip(keys, m)},
                    reference={k: round(x, 3) for k, x in zip(keys, r)})
    if len(keys) < MIN_MEASURES:
        out.why = "too_few_measures"
        return out
    nr, nm = _norm(r), _norm(m)
    if nr < NOTICEABLE:
        out.why = "reference_unchanged"
        return out
    out.signs = {k: (mk * rk > 0 and abs(mk) >= SIGN_FOLLOW) for k, mk, rk in zip(keys, m, r) if abs(rk) >= 1.0}
    if nm < NOTICEABLE:
        out.score, out.why = 0.0, "model_unchanged"
        return out
    out.score = sum(a * b for a, b in zip(m, r)) / (nm * nr)
    return out


def pairs_for(variants: list[str]) -> list[tuple[str, str]]:
    """(base, other) variant pairs of a script whose replies can be compared."""
    have = set(variants)
    if "neutral" in have:
        return [("neutral", v) for v in ("target", "alternative") if v in have]
    if {"alternative", "target"} <= have:
        return [("alternative", "target")]
    return []
