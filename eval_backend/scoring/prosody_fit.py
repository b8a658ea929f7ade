"""prosody_fit: does a spoken reply's delivery move the way the user's state calls for? (our own metric)

This is NOT EchoMind's EmoAlign (which classifies the reply's emotion with
emotion2vec). prosody_fit needs no model: it compares four prosodic measures of
a reply against a reference delivery and checks them against a table of
expected directions for the user's attribute.

- Measures (from `eval_backend.audio.features.extract`): speaking rate
  (syllable nuclei / s), pitch level (median F0), pitch range (10-90th
  percentile span in semitones) and loudness (level of speech-active frames).
- Reference: the same model's reply to the *neutral* variant of the same script
  (or the neutral tone of the same tone group) when there is one; otherwise
  espeak-ng's default voice reading the reply's own words. Against espeak only
  rate and pitch range are compared: pitch level and loudness depend on the
  voice and the output gain, not on a choice of delivery.
- Directions: `up` / `down` need a change beyond a tolerance (rate 5 %, pitch
  0.5 st, range 1 st, loudness 1 dB); `not_up` / `not_down` are met when the
  change stays within the tolerance or goes the other way ("calm, not louder").
- Score per reply: the share of expected directions met, in [0, 1]; None when
  the attribute sets no expectation (male, female, adult, neutral) or none of its
  measures could be compared (e.g. pitch of a whispered reply).

The table is a design choice written down here, not a finding: e.g. a sad,
sobbing or fearful user calls for a slower, softer, lower delivery; shouting or
anger for a calm one (not louder, not faster, not higher); a noisy place for a
louder, unhurried one; a child for a slower, higher, livelier one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

MEASURES = ("rate", "pitch", "range", "loudness")
TOLERANCE = {"rate": 0.05, "pitch": 0.5, "range": 1.0, "loudness": 1.0}
VOICE_INDEPENDENT = ("rate", "range")     # what an espeak-ng reference can be compared on

_SOFTER = {"rate": "down", "loudness": "down", "pitch": "down"}
_GENTLE = {"rate": "down", "loudness": "not_up"}
_CALM = {"loudness": "not_up", "rate": "not_up", "pitch": "not_up"}
_BRIGHT = {"pitch": "up", "range": "up"}
_NOISY = {"loudness": "up", "rate": "not_up"}

EXPECTED: dict[str, dict[str, str]] = {
    # speaker
    "child": {"rate": "down", "pitch": "up", "range": "up"},
    "elderly": {"rate": "down", "loudness": "up"},
    # paralinguistic
    "sad": _SOFTER, "sobbing": _SOFTER, "fear": _SOFTER,
    "sigh": {"rate": "down", "loudness": "down"},
    "hoarse": _GENTLE, "vocal fatigue": _GENTLE, "breathless": _GENTLE, "cough": _GENTLE, "yawn": _GENTLE,
    "moan": _GENTLE,
    "shout": _CALM, "angry": _CALM,
    "disgust": {"loudness": "not_up", "pitch": "not_up"},
    "whisper": {"loudness": "down", "pitch": "not_up"},
    "happy": _BRIGHT, "surprise": _BRIGHT, "laughter": _BRIGHT,
    "fast": {"rate": "up"}, "slow": {"rate": "down"},
    # environment: be heard over the noise, without rushing
    **{k: _NOISY for k in ("wind", "thunderstorm", "rain", "car", "subway", "sea waves", "basketball court",
                           "applause", "cheering", "crowd chatter", "children playing", "children speaking",
                           "alarm clock", "ringtone", "honking", "dogs barking")},
    "happy music": {"loudness": "up", "range": "up"}, "funny music": {"loudness": "up", "range": "up"},
    "exciting music": {"loudness": "up", "range": "up"},
    "sad music": {"loudness": "up", "rate": "down"},
    "angry music": {"loudness": "up", "rate": "not_up"},
}


@dataclass
class Prosody:
    """The four measures of one clip (None where unmeasurable, e.g. pitch of whisper)."""
    rate: float | None           # syllables per second of speech
    pitch: float | None          # median F0, Hz
    range: float | None          # semitones
    loudness: float | None       # dBFS over speech-active frames

    @classmethod
    def from_features(cls, f) -> "Prosody":
        return cls(rate=f.speaking_rate if f.speaking_rate > 0 else None, pitch=f.pitch_median_hz,
                   range=f.pitch_range_st, loudness=f.active_level_dbfs)


def deltas(reply: Prosody, ref: Prosody) -> dict[str, float | None]:
    """Reply minus reference: rate as a relative change, pitch in semitones, range in st, loudness in dB."""
    out: dict[str, float | None] = dict.fromkeys(MEASURES)
    if reply.rate and ref.rate:
        out["rate"] = reply.rate / ref.rate - 1.0
    if reply.pitch and ref.pitch:
        out["pitch"] = 12.0 * math.log2(reply.pitch / ref.pitch)
    if reply.range is not None and ref.range is not None:
        out["range"] = reply.range - ref.range
    if reply.loudness is not None and ref.loudness is not None:
        out["loudness"] = reply.loudness - ref.loudness
    return out


def direction_met(direction: str, delta: float, tol: float) -> bool:
    if direction == "up":
        return delta > tol
    if direction == "down":
        return delta < -tol
    if direction == "not_up":
        return delta <= tol
    if direction == "not_down":
        return delta >= -tol
    raise ValueError(f"unknown direction {direction!r}")


@dataclass
class Fit:
    score: float | None                                   # share of checks met; None = nothing to check
    checks: dict[str, dict] = field(default_factory=dict)  # measure -> {direction, delta, met}
    skipped: dict[str, str] = field(default_factory=dict)  # measure -> why it was not checked


def prosody_fit(attribute: str, reply: Prosody, ref: Prosody,
                measures: tuple[str, ...] = MEASURES) -> Fit:
    """Score one reply against its reference for the user's attribute (pure)."""
    expected = EXPECTED.get((attribute or "").strip().lower())
    if not expected:
        return Fit(None, skipped={"*": "no expectation for this attribute"})
    d = deltas(reply, ref)
    fit = Fit(None)
    for measure, direction in expected.items():
        if measure not in measures:
            fit.skipped[measure] = "not comparable with this reference"
        elif d[measure] is None:
            fit.skipped[measure] = "not measurable on one of the clips"
        else:
            met = direction_met(direction, d[measure], TOLERANCE[measure])
            fit.checks[measure] = {"direction": direction, "delta": round(d[measure], 4), "met": met}
    if fit.checks:
        fit.score = sum(c["met"] for c in fit.checks.values()) / len(fit.checks)
    return fit
