"""cascade-cue's acoustic-cue detector: Features -> the speaker's state, by fixed thresholds.

Pure: no audio I/O here. The thresholds are set relative to espeak-ng's neutral voice
(`espeak-ng` at its defaults: 175 wpm, pitch 50, amplitude 100), which is what the demo
benchmark is built from. Measured with `eval_backend.audio.features.extract` on plain
espeak-ng sentences (see docs/benchmarks.md, "Baselines"):

    neutral male  rate 5.2 syll/s, active level -20 dBFS, F0 100 Hz, range 3.3 st, SNR > 35 dB
    neutral f3    rate 4.9,        -20 dBFS,               F0 208 Hz
    -s 120        rate 3.9   -s 240  rate 6.6   -a 200  -15 dBFS   -a 50  -24..-26 dBFS   -a 30  -31 dBFS
    -p 30         F0 83-89 Hz   -p 20  F0 76 Hz   -p 90  F0 153 Hz   en+f4 -p 90  F0 277 Hz
    en+whisper    voiced fraction 0.0            white noise at 10 dB SNR  -> snr_db ~12

So each threshold sits about halfway between neutral and a clearly marked delivery.
Speaking rate is trusted only in clean audio: noise adds spurious syllable peaks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# --- thresholds (see the module docstring for the espeak-ng figures they come from) ---
RATE_SLOW = 4.4            # syllables / s of speech
RATE_FAST = 6.1
RATE_TRUST_SNR_DB = 25.0   # below this SNR the rate estimate is inflated by noise
LEVEL_SOFT_DBFS = -23.5     # espeak -a 50 lands at -24..-26
LEVEL_LOUD_DBFS = -17.0     # espeak -a 200 lands at -15
WHISPER_VOICED = 0.30      # voiced share of active frames
NOISY_SNR_DB = 25.0
F0_FEMALE_HZ = 165.0
F0_CHILD_HZ = 250.0
F0_LOW_MALE_HZ = 92.0      # under espeak's 100 Hz male voice (-p 30 gives 83-89 Hz): a low, sad delivery
F0_LOW_FEMALE_HZ = 180.0
RANGE_WIDE_ST = 6.0        # lively (happy / surprised) intonation
TREMOR_ST = 0.9            # shaky voice (sobbing / fear / elderly); neutral espeak ~0.3-0.5
HNR_HOARSE_DB = 4.0        # neutral espeak 7-12 dB


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
    centroid = getattr(f, "noise_centroid_hz", 0.0) or 0.0
    flatness = getattr(f, "noise_flatness", 1.0)
    if flatness is not None and flatness < 0.05:
        return "tonal"          # beeps, alarms, ringtones, music
    if centroid and centroid < 600:
        return "wind"
    if centroid and centroid > 3000:
        return "rain"
    return "noise"


def detect(f) -> Cues:
    """Cues from a `Features` (eval_backend.audio.features). Deterministic."""
    labels: list[str] = []
    noisy = f.snr_db < NOISY_SNR_DB
    whisper = f.voiced_fraction < WHISPER_VOICED
    f0 = f.pitch_median_hz

    pace = "unknown"
    if f.snr_db >= RATE_TRUST_SNR_DB:
        pace = "slow" if f.speaking_rate < RATE_SLOW else "fast" if f.speaking_rate > RATE_FAST else "normal"
    volume = ("whisper" if whisper else "soft" if f.active_level_dbfs < LEVEL_SOFT_DBFS
              else "loud" if f.active_level_dbfs > LEVEL_LOUD_DBFS else "normal")

    gender = None if f0 is None else ("female" if f0 >= F0_FEMALE_HZ else "male")
    age = "child" if f0 is not None and f0 >= F0_CHILD_HZ else "adult"
    tremor = f.pitch_tremor_st or 0.0
    shaky = tremor >= TREMOR_ST and not noisy
    low_pitch = f0 is not None and f0 < (F0_LOW_FEMALE_HZ if gender == "female" and age != "child"
                                         else F0_LOW_MALE_HZ)
    wide = (f.pitch_range_st or 0.0) >= RANGE_WIDE_ST
    if shaky and pace == "slow" and age == "adult" and not low_pitch and volume == "normal":
        age = "elderly"

    # most specific first: a state a reply must address outranks a plain trait
    if whisper:
        labels.append("whisper")
    if shaky and (volume == "soft" or pace == "slow" or low_pitch):
        labels.append("sobbing")
    if pace == "slow" and (volume in ("soft", "whisper") or low_pitch):
        labels.append("sad")
    if volume == "loud":
        labels += ["angry", "shout"] if (pace == "fast" or not wide) else ["shout"]
    if wide and pace == "fast" and volume != "loud":
        labels.append("happy")
    elif wide and volume != "loud" and not noisy:
        labels.append("surprise")
    if shaky and "sobbing" not in labels and age != "elderly":
        labels.append("fear")
    if (f.hnr_db is not None and f.hnr_db < HNR_HOARSE_DB and not noisy and not whisper):
        labels.append("hoarse")
    if noisy:
        labels.append({"wind": "wind", "rain": "rain", "tonal": "alarm clock"}.get(_noise_kind(f), "crowd chatter"))
    if pace in ("slow", "fast") and not any(x in labels for x in ("sad", "sobbing")):
        labels.append(pace)
    if age != "adult":
        labels.append(age)
    seen: list[str] = []
    for label in labels:
        if label not in seen:
            seen.append(label)
    evidence = {
        "speaking_rate": round(f.speaking_rate, 2), "active_level_dbfs": round(f.active_level_dbfs, 1),
        "pitch_median_hz": None if f0 is None else round(f0, 1), "snr_db": round(f.snr_db, 1),
        "voiced_fraction": round(f.voiced_fraction, 2), "pitch_tremor_st": round(tremor, 2),
    }
    return Cues(tuple(seen), pace, volume, gender, age, noisy, _noise_kind(f) if noisy else None, evidence)
