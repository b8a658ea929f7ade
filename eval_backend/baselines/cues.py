"""The baselines' cue detector: what a reply may name (`hear`) and forced-choice guesses (`detect`).

`hear(features, transcript) -> Heard` is what cascade-cue and cascade-advice-cue reply to. It was calibrated on
REAL recordings (the `calibration` rows of real_voices.csv; real_voices.md says what they are and how they were
labelled) and validated on the held-apart `validation` rows (tests/test_real_cues.py). It claims only what the
acoustics of a real recording support, and abstains otherwise:

    cue        claimed when                                               calibration (real recordings)
    raised     median F0 >= 300 Hz AND spectral centroid >= 1200 Hz AND    neutral speech: centroid 357-1010 Hz
               >= 60% of active frames voiced (a tense, high, bright       (10-90th pct.; a high female voice
               voice: shouting, crying out, cheering)                      reaches F0 390 Hz but stays under
                                                                           1000 Hz); cries / shouts / cheers:
                                                                           F0 ~300-490 Hz, centroid 1190-1730 Hz
    laughter   Whisper writes the laugh out ('ha ha', 'hahaha'); a laugh   3 of 4 laughs, and 4 other lines the
               is not also claimed as a raised voice                       actors laughed through
    whisper    < 8% of active frames voiced, and Whisper hears >= 2 words  neutral minimum 13% (no real whisper
                                                                           installs: not validated)
    fast/slow  > 7.0 / < 1.7 syllable nuclei per second over >= 1.5 s of   neutral speech (>= 1.5 s): 1.9-6.5
               speech with >= 4 words heard                                nuclei/s

    abstains on: loudness and softness (a recording's level is the microphone's gain as much as the voice's),
    sadness, sobbing, fear, hoarseness (pitch tremor and HNR of neutral real speech overlap the marked demo
    voices: tremor 0.5-1.7 st, HNR 3.7-10.9 dB), background noise (the SNR estimate reads 2-8 dB on clean read
    speech without pauses), gender and age (traits, not something a reply should name).

Each cue gets a confidence in 0..1 (the smallest of its conditions' logistic margins, so 0.5 sits on the
threshold); a cue is claimed at 0.5 or more. Calibration figures: `python benchmarks/calibrate_real_cues.py`.

`detect(features) -> Cues` (below) is the older detector: its thresholds were read from our synthetic espeak-ng
demo voices, and it always names something. It is kept ONLY for forced-choice answers (MCQ, selection), where a
guess is what is asked; no reply says or sounds what it guesses.

Pure: no audio I/O here. The thresholds sit between espeak-ng's neutral voice (the demo
benchmark's `Recipe()`: en-us, 160 wpm, pitch 50) and the demo's marked deliveries, as
measured with `eval_backend.audio.features.extract` on each demo recipe rendered over several
scripts (`python benchmarks/calibrate_cues.py` prints the table and what the detector hears):

    neutral           rate 4.1-6.1 syll/s, level -19.8..-21.2 dBFS, F0 ~101 Hz, centroid 800-930 Hz, tremor 0.3-0.6 st
    slow / fast       rate 3.1 / 7.6                    sad         level -24..-26, F0 80-85, centroid 560-640
    vocal fatigue     level -25..-27, F0 83-88, centroid 760-830
    shout / angry     level -11 / -15, centroid 1700 / 2800
    happy / surprise  F0 133-138, centroid 1100-1370 / F0 137-157, level -17.6, centroid ~890
    whisper           voiced fraction 0.0               hoarse      voiced 0.25, HNR 1.7 dB
    sobbing / elderly tremor 1.2 (level -24) / 1.6 (rate 4.1)
    breathless        HNR ~5 dB with HF share 0.065     laughter    pitch range ~17 st
    backgrounds       SNR 8-20 dB (steady) or 26-30 dB with a -45..-50 dBFS tonal floor (beeps, rings, barks)

Calibration split (held-apart data): these figures were read ONCE from the demo recipes spoken by
espeak-ng's en-us voice at the recipes' nominal rate, pitch and SNR (seed 0, the first scripts); nothing
is re-tuned per build. That makes the seed-0 demo the detector's own calibration data: any metric that
separates the baselines there is not evidence of validity. The known-groups test
(tests/test_known_groups.py) scores the seed-1 demo built with `--vary` instead: other voices (Scottish,
Caribbean, New York, Lancaster English and their variants), each speaker's own tempo (x0.85-1.18) and pitch
(+-10 steps), each clip's SNR moved by +-3 dB (eval_backend/benchmark/demo.py, VARIED_VOICES).

Speaking rate is not trusted in noise (noise adds spurious syllable peaks). The label order
puts states a reply must address (whisper, sobbing, anger, sadness) before traits.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# --- thresholds (see the module docstring for the espeak-ng figures they come from) ---
RATE_SLOW = 3.7            # syllables / s of speech; neutral sentences spread 4.1-6.1
RATE_FAST = 6.8
LEVEL_SOFT_DBFS = -23.5    # neutral -19.8..-21.2; sad / tired deliveries -24..-27
LEVEL_LOUD_DBFS = -16.0    # shouting -11, angry -15; a raised surprised voice reaches -16.5
WHISPER_VOICED = 0.12      # voiced share of active frames: whisper 0.0, hoarse ~0.25, speech 0.6-0.9
NOISY_SNR_DB = 25.0        # steady backgrounds at 6-8 dB SNR measure 8-20 dB
INTERMITTENT_SNR_DB = 35.0  # beeps, barks, rings measure 26-30 dB ...
NOISE_FLOOR_DBFS = -60.0   # ... but leave a noise floor clean synthetic speech never has (-120)
F0_FEMALE_HZ = 180.0       # espeak male voices 80-110 Hz (raised: up to 160), f3 female 210-240
F0_CHILD_HZ = 265.0        # en+f4, pitch 80, sped up: ~296 Hz
F0_LOW_HZ = 92.0           # a lowered male voice (pitch 28): 80-88 Hz against 100 neutral
F0_HAPPY_HZ = 118.0        # a raised male voice: happy 133-138 Hz, surprised 151-157 Hz
F0_SURPRISE_HZ = 145.0
BRIGHT_HZ = 1050.0         # spectral centroid of active speech: neutral 800-930, happy 1100-1370
ANGRY_CENTROID_HZ = 2000.0  # tense, bright delivery: angry ~2800, shout ~1700
DARK_HZ = 700.0            # sad (muffled) 560-640, tired 760-830
TREMOR_ST = 0.9            # shaky voice; neutral espeak 0.3-0.6, sobbing 1.2, elderly 1.6
HNR_HOARSE_DB = 3.5        # neutral espeak 6-13 dB; rough, creaky voice 1.7-2.3
BREATHY_HNR_DB = 6.5       # gasps and aspiration noise between words: breathless ~5 dB ...
BREATHY_HF = 0.04          # ... with energy above 4 kHz (breathless 0.065; neutral 0.01, fast 0.014)
LAUGH_RANGE_ST = 12.0      # a laugh after the words spreads the pitch to ~17 st (speech 3-7)


@dataclass(frozen=True)
class Cues:
    """What the detector heard. `labels` use the benchmark's attribute vocabulary."""
    labels: tuple[str, ...]          # detected attribute labels, most salient first
    pace: str                        # slow | normal | fast | unknown
    volume: str                      # whisper | soft | normal | loud
    gender: str | None               # male | female | None (unvoiced)
    age: str                         # child | adult | elderly
    noisy: bool
    noise_kind: str | None           # wind | rain | tonal | noise | None
    evidence: dict = field(default_factory=dict)

    @property
    def primary(self) -> str:
        """The cue a reply should address first ('neutral' when nothing stands out)."""
        return self.labels[0] if self.labels else "neutral"


def _noise_kind(f) -> str:
    """A coarse guess of the background from the quiet frames' spectrum (an environment label)."""
    centroid = f.noise_centroid_hz or 0.0
    if centroid >= 3000:
        return "rain"
    if centroid >= 1300:
        return "applause" if (f.noise_flatness or 0.0) >= 0.1 else "alarm clock"
    if centroid >= 700:
        return "crowd chatter"
    if centroid >= 300:
        return "wind"
    return "car"


def detect(f) -> Cues:
    """Cues from a `Features` (eval_backend.audio.features). Deterministic."""
    # an intermittent background (beeps, rings, barks) leaves a tonal, mid-frequency floor; the
    # quiet frames of clean speech without pauses are low and noise-like (centroid ~200 Hz, flatness ~0.8)
    intermittent = (f.snr_db < INTERMITTENT_SNR_DB and f.noise_floor_dbfs > NOISE_FLOOR_DBFS
                    and (f.noise_centroid_hz or 0.0) > 1000.0 and (f.noise_flatness or 1.0) < 0.3)
    noisy = f.snr_db < NOISY_SNR_DB or intermittent
    whisper = f.voiced_fraction < WHISPER_VOICED
    f0 = f.pitch_median_hz
    level, centroid = f.active_level_dbfs, f.spectral_centroid_hz

    pace = "unknown" if noisy else ("slow" if f.speaking_rate < RATE_SLOW
                                    else "fast" if f.speaking_rate > RATE_FAST else "normal")
    volume = ("whisper" if whisper else "soft" if level < LEVEL_SOFT_DBFS
              else "loud" if level > LEVEL_LOUD_DBFS else "normal")
    gender = None if f0 is None else ("female" if f0 >= F0_FEMALE_HZ else "male")
    age = "child" if f0 is not None and f0 >= F0_CHILD_HZ else "adult"
    tremor = f.pitch_tremor_st or 0.0
    hnr = f.hnr_db
    low_pitch = f0 is not None and f0 < F0_LOW_HZ
    shaky = tremor >= TREMOR_ST and not noisy and not whisper
    hoarse = (not whisper and not noisy and hnr is not None and hnr < HNR_HOARSE_DB and f.voiced_fraction < 0.6
              and f.hf_ratio > 0.03)   # rough and breathy; an elderly voice is as noisy but darker (HF ~0.015)

    labels: list[str] = []
    # states a reply must address come first, then traits and the surroundings
    if whisper:
        labels.append("whisper")
    if hoarse:
        labels.append("hoarse")
    elif shaky and level < -22.5:
        labels.append("sobbing")
    elif shaky and f.speaking_rate < 4.6 and gender != "female":
        age = "elderly"
    elif shaky:
        labels.append("fear")
    if centroid > ANGRY_CENTROID_HZ and level > LEVEL_LOUD_DBFS - 2.0:
        labels += ["angry", "shout"]
    elif volume == "loud":
        labels.append("shout")
    if volume == "soft" and low_pitch:
        labels += ["sad"] if centroid < DARK_HZ else ["vocal fatigue", "sad"]
    if gender == "male" and volume != "loud" and not noisy:
        if f0 >= F0_SURPRISE_HZ:
            labels.append("surprise")
        elif f0 >= F0_HAPPY_HZ and centroid > BRIGHT_HZ:
            labels.append("happy")          # raised and bright
        elif f0 >= F0_HAPPY_HZ and level > LEVEL_LOUD_DBFS - 3.0:
            labels.append("surprise")       # raised and a little louder, not brighter
    if (not (whisper or noisy or hoarse or shaky) and volume != "loud" and "angry" not in labels and (hnr or 99.0) < BREATHY_HNR_DB
            and f.hf_ratio > BREATHY_HF and f.voiced_fraction < 0.7):
        labels.append("breathless")
    if (f.pitch_range_st or 0.0) >= LAUGH_RANGE_ST and not noisy and not hoarse and (hnr or 0.0) > 6.0:
        labels.append("laughter")
    if noisy:
        labels.append(_noise_kind(f))
    if pace in ("slow", "fast"):
        labels.append(pace)
    if age != "adult":
        labels.append(age)
    seen: list[str] = []
    for label in labels:
        if label not in seen:
            seen.append(label)
    evidence = {
        "speaking_rate": round(f.speaking_rate, 2), "active_level_dbfs": round(level, 1),
        "pitch_median_hz": None if f0 is None else round(f0, 1), "snr_db": round(f.snr_db, 1),
        "voiced_fraction": round(f.voiced_fraction, 2), "pitch_tremor_st": round(tremor, 2),
        "spectral_centroid_hz": round(centroid), "noise_floor_dbfs": round(f.noise_floor_dbfs, 1),
    }
    return Cues(tuple(seen), pace, volume, gender, age, noisy, _noise_kind(f) if noisy else None, evidence)


# --- the real-speech detector (see the module docstring) -------------------------------------------------------
RAISED_F0_HZ = 300.0
RAISED_CENTROID_HZ = 1200.0
RAISED_VOICED = 0.6
WHISPER_MAX_VOICED = 0.08
FAST_RATE = 7.0
SLOW_RATE = 1.7
RATE_MIN_SPEECH_S = 1.5
RATE_MIN_WORDS = 4
CLAIM_AT = 0.5
LAUGH = re.compile(r"\b(?:ha|he|hah|heh)(?:[\s,!.-]+(?:ha|he|hah|heh)\b)+|\b(?:ha){2,}h?\b|\b(?:he){3,}\b|"
                   r"[(\[]\s*laugh", re.IGNORECASE)
ABSTAINS = {
    "loud / soft": "a recording's level is the microphone's gain as much as the voice",
    "sad / sobbing / fear / hoarse": "pitch tremor and voice quality of neutral real speech overlap marked voices",
    "background noise": "the SNR estimate is unreliable on real recordings without pauses",
    "gender / age": "traits, not something a reply should name",
}
ORDER = ("whisper", "laughter", "raised", "fast", "slow")   # a reply names the first claimed


@dataclass(frozen=True)
class Heard:
    """What `hear` claims (confidence >= CLAIM_AT, most salient first) and every cue's confidence."""
    claims: tuple[str, ...]
    confidence: dict[str, float]
    evidence: dict = field(default_factory=dict)

    @property
    def cue(self) -> str | None:
        return self.claims[0] if self.claims else None

    def to_dict(self) -> dict:
        return {"claims": list(self.claims), "cue": self.cue, "confidence": self.confidence,
                "abstains_on": ABSTAINS, "evidence": self.evidence}


def _margin(value: float, threshold: float, scale: float) -> float:
    """Logistic confidence that `value` is past `threshold` (scale > 0: above, < 0: below); 0.5 at the threshold."""
    z = max(-30.0, min(30.0, (value - threshold) / scale))
    return 1.0 / (1.0 + math.exp(-z))


def hear(f, transcript: str = "") -> Heard:
    """Cues a reply may name, from a `Features` and Whisper's transcript of the same clip. Deterministic."""
    n_words = len(re.findall(r"[A-Za-z']+", transcript or ""))
    f0, centroid = f.pitch_median_hz, f.spectral_centroid_hz or 0.0
    conf = {"raised": 0.0 if f0 is None else round(min(
                _margin(f0, RAISED_F0_HZ, 25.0), _margin(centroid, RAISED_CENTROID_HZ, 80.0),
                _margin(f.voiced_fraction, RAISED_VOICED, 0.05)), 3),
            "laughter": 0.9 if LAUGH.search(transcript or "") else 0.0,
            "whisper": round(min(_margin(f.voiced_fraction, WHISPER_MAX_VOICED, -0.02),
                                 _margin(n_words, 1.5, 0.25)), 3)}
    rate_ok = f.speech_s >= RATE_MIN_SPEECH_S and n_words >= RATE_MIN_WORDS
    conf["fast"] = round(_margin(f.speaking_rate, FAST_RATE, 0.3), 3) if rate_ok else 0.0
    conf["slow"] = round(_margin(f.speaking_rate, SLOW_RATE, -0.2), 3) if rate_ok else 0.0
    if conf["whisper"] >= CLAIM_AT or conf["laughter"] >= CLAIM_AT:
        conf["raised"] = 0.0          # no pitch to raise in an unvoiced voice; a laugh's own pitch and brightness
    claims = tuple(c for c in ORDER if conf[c] >= CLAIM_AT)
    evidence = {"pitch_median_hz": None if f0 is None else round(f0, 1), "spectral_centroid_hz": round(centroid),
                "voiced_fraction": round(f.voiced_fraction, 2), "speaking_rate": round(f.speaking_rate, 2),
                "speech_s": round(f.speech_s, 2), "words_heard": n_words}
    return Heard(claims, conf, evidence)
