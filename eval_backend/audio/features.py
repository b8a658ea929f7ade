"""Acoustic features of one clip: level, pitch, rate, SNR, tremor, breathiness.

`extract(samples, sr)` is pure (no file I/O). The figures are meant for comparing
clips with each other (a target variant against its neutral one, a cue detector's
thresholds), not as calibrated measurements. Unvoiced speech (whisper) is
handled: pitch fields are None, level, rate and SNR still come from energy.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import parselmouth
from scipy import signal

FRAME_S = 0.025
HOP_S = 0.010
FLOOR_DB = -120.0          # level of digital silence
SNR_CAP_DB = 60.0          # clean synthetic speech has true-zero pauses: cap the estimate
PITCH_FLOOR_HZ = 60.0
PITCH_CEILING_HZ = 700.0
ANALYSIS_SR = 16000        # clips are resampled down to this before analysis


@dataclass
class Features:
    duration_s: float
    speech_s: float                       # time in speech-active frames (300-3400 Hz band)
    rms_dbfs: float                       # overall level
    active_level_dbfs: float              # level over speech-active frames
    peak_dbfs: float
    noise_floor_dbfs: float               # level of the quietest 10% of frames
    snr_db: float                         # active level vs noise floor, capped at SNR_CAP_DB
    voiced_fraction: float                # voiced frames / active frames (whisper ~0)
    pitch_median_hz: float | None         # None when (nearly) unvoiced
    pitch_range_st: float | None          # 10th-90th percentile span in semitones
    pitch_tremor_st: float | None         # RMS of fast (> ~3 Hz) F0 wobble inside voiced runs (sobbing, shaky)
    hnr_db: float | None                  # median harmonics-to-noise ratio of voiced frames (hoarse/breathy lower)
    speaking_rate: float                  # syllable nuclei per second of speech (0 when no speech)
    syllables: int
    am_depth_4_8: float                   # depth of 4-8 Hz amplitude modulation over the active span
    spectral_flatness: float | None       # mean over active frames (noise-like / whisper higher)
    hf_ratio: float | None                # energy share above 4 kHz in active frames
    spectral_centroid_hz: float | None    # active frames (effort, shouting higher)
    noise_centroid_hz: float | None       # quietest frames (wind low, rain high); None for digital silence
    noise_flatness: float | None          # quietest frames: tonal (beeps) low, broadband high
    pause_fraction: float                 # 1 - speech_s / duration_s
    # pauses inside the utterance: non-active share of the span from the first to the last active frame
    # (leading and trailing silence are a recording's framing, not a choice of delivery)
    inner_pause_fraction: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _db(power: np.ndarray | float) -> np.ndarray | float:
    return 10.0 * np.log10(np.maximum(power, 10 ** (FLOOR_DB / 10)))


def _frames(x: np.ndarray, sr: int) -> np.ndarray:
    n, hop = int(FRAME_S * sr), int(HOP_S * sr)
    if len(x) < n:
        x = np.pad(x, (0, n - len(x)))
    count = 1 + (len(x) - n) // hop
    idx = np.arange(n)[None, :] + hop * np.arange(count)[:, None]
    return x[idx]


def _active_mask(frame_db: np.ndarray, floor_db: float) -> np.ndarray:
    """Frames clearly above the noise floor and within 35 dB of the loud frames.

    A clip without quiet stretches (a steady tone, speech with no pause) has no floor
    to stand out from: then every non-silent frame counts as active.
    """
    loud = np.percentile(frame_db, 95)
    if loud - floor_db < 6.0:
        return frame_db > FLOOR_DB + 20.0
    mask = frame_db > max(floor_db + 6.0, loud - 35.0)
    # close 1-2 frame gaps so stop closures inside words count as speech
    return (signal.medfilt(mask.astype(float), 5) > 0.5) | mask


def _spectral(frames: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    win = np.hanning(frames.shape[1])
    spec = np.abs(np.fft.rfft(frames * win, axis=1)) ** 2 + 1e-12
    freqs = np.fft.rfftfreq(frames.shape[1], 1.0 / sr)
    return spec, freqs


def _flatness(spec: np.ndarray) -> float:
    if len(spec) == 0:
        return 0.0
    flat = np.exp(np.mean(np.log(spec), axis=1)) / np.mean(spec, axis=1)
    return float(np.mean(flat))


def _centroid(spec: np.ndarray, freqs: np.ndarray) -> float:
    if len(spec) == 0:
        return 0.0
    total = spec.sum()
    return float((spec.sum(axis=0) * freqs).sum() / total) if total > 0 else 0.0


def _pitch(x: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times, F0 (0 = unvoiced) and autocorrelation strength of Praat's AC tracker."""
    snd = parselmouth.Sound(x, sampling_frequency=sr)
    p = snd.to_pitch_ac(time_step=HOP_S, pitch_floor=PITCH_FLOOR_HZ, pitch_ceiling=PITCH_CEILING_HZ)
    arr = p.selected_array
    return p.xs(), arr["frequency"], arr["strength"]


def _tremor_st(f0: np.ndarray) -> float | None:
    """RMS of the F0 contour (semitones) after removing its slow (>~300 ms) trend, over voiced runs."""
    voiced = f0 > 0
    residuals = []
    edges = np.flatnonzero(np.diff(np.r_[0, voiced.astype(int), 0]))
    for start, stop in zip(edges[::2], edges[1::2]):
        if stop - start < 12:           # runs shorter than 120 ms hold no 4-8 Hz cycle
            continue
        st = 12 * np.log2(f0[start:stop] / 100.0)
        trend = np.convolve(np.pad(st, 15, mode="edge"), np.ones(31) / 31, mode="valid")
        residuals.append(st - trend)
    if not residuals:
        return None
    r = np.concatenate(residuals)
    return float(np.sqrt(np.mean(r ** 2)))


def _band(x: np.ndarray, sr: int) -> np.ndarray:
    """The 300-3400 Hz band, where speech energy sits and wind rumble or hiss mostly do not."""
    sos = signal.butter(4, [300, min(3400, 0.45 * sr)], btype="band", fs=sr, output="sos")
    return signal.sosfiltfilt(sos, x)


def _syllables(band_db: np.ndarray, active: np.ndarray, band_floor_db: float) -> int:
    """Syllable nuclei: peaks of the smoothed band envelope with >=2.5 dB dips between them."""
    win = np.hanning(7)
    env = np.convolve(band_db, win / win.sum(), mode="same")    # ~60 ms smoothing
    peaks, _ = signal.find_peaks(env, prominence=2.5, distance=int(0.07 / HOP_S))
    loud = np.percentile(env[active], 90) if active.any() else band_floor_db
    keep = [p for p in peaks if active[p] and env[p] > max(loud - 25.0, band_floor_db + 6.0)]
    return len(keep)


def _am_depth(frame_pow: np.ndarray, active: np.ndarray) -> float:
    """Depth of 4-8 Hz amplitude modulation (sqrt(2) x RMS of the band-passed, mean-normalised
    envelope) over the active span: ~0.6 for a 60% sinusoidal AM, ~0 for a steady tone."""
    idx = np.flatnonzero(active)
    if len(idx) < 50:
        return 0.0
    env = np.sqrt(frame_pow[idx[0]: idx[-1] + 1])       # 100 Hz envelope
    env = env / (env.mean() + 1e-12) - 1.0
    spec = np.fft.rfft(env * np.hanning(len(env)))
    f = np.fft.rfftfreq(len(env), HOP_S)
    spec[(f < 4) | (f > 8)] = 0
    band = np.fft.irfft(spec, len(env)) / np.sqrt(np.mean(np.hanning(len(env)) ** 2))
    return float(np.sqrt(2 * np.mean(band ** 2)))


def _inner_pauses(active: np.ndarray) -> float:
    idx = np.flatnonzero(active)
    if len(idx) < 2:
        return 0.0
    span = active[idx[0]: idx[-1] + 1]
    return float(1.0 - span.mean())


def _analysis_rate(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    if sr > ANALYSIS_SR:                 # speed: nothing here needs more than 8 kHz of bandwidth
        g = np.gcd(int(sr), ANALYSIS_SR)
        return signal.resample_poly(x, ANALYSIS_SR // g, int(sr) // g), ANALYSIS_SR
    return x, sr


def _speech_activity(x: np.ndarray, sr: int) -> tuple[np.ndarray, float, np.ndarray]:
    """(speech-band level per frame in dB, its floor, speech-active frames)."""
    band_db = _db(np.mean(_frames(_band(x, sr), sr) ** 2, axis=1))
    band_floor = float(np.percentile(band_db, 5))
    return band_db, band_floor, _active_mask(band_db, band_floor)


def speaking_rate(samples: np.ndarray, sr: int) -> tuple[float, float]:
    """(syllable nuclei per second of speech, seconds of speech): `extract`'s speaking_rate and speech_s without
    its pitch and spectral analysis (a fifth of the time), for callers that need only these (arena/core/covariates.py).
    Expects what `extract` checked: a finite, non-empty mono array and a positive rate."""
    x, sr = _analysis_rate(np.asarray(samples, dtype=np.float64), sr)
    band_db, band_floor, active = _speech_activity(x, sr)
    speech_s = float(active.sum() * HOP_S)
    syllables = _syllables(band_db, active, band_floor)
    return (float(syllables / speech_s) if speech_s > 0 else 0.0), speech_s


def extract(samples: np.ndarray, sr: int) -> Features:
    """Features of a mono clip (float samples in [-1, 1]); raises ValueError on unusable input."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("audio must be a non-empty mono array")
    if sr <= 0:
        raise ValueError(f"bad sample rate {sr}")
    if not np.all(np.isfinite(x)):
        raise ValueError("audio contains NaN or infinite samples")
    duration = len(x) / sr
    x, sr = _analysis_rate(x, sr)
    frames = _frames(x, sr)
    frame_pow = np.mean(frames ** 2, axis=1)
    frame_db = _db(frame_pow)
    band_db, band_floor, active = _speech_activity(x, sr)
    quiet = frame_db <= np.percentile(frame_db, 10)

    rms_db = float(_db(np.mean(x ** 2)))
    noise_pow = float(np.mean(frame_pow[quiet]))
    noise_db = float(_db(noise_pow))
    speech_s = float(active.sum() * HOP_S)
    if active.any():
        active_pow = float(np.mean(frame_pow[active]))
        active_db = float(_db(active_pow))
        excess = active_pow - noise_pow
        snr = float(min(SNR_CAP_DB, _db(excess) - noise_db)) if excess > 0 else 0.0
    else:
        active_db, snr = FLOOR_DB, 0.0

    spec, freqs = _spectral(frames, sr)
    spec_active, spec_quiet = spec[active], spec[quiet]
    hf = float(spec_active[:, freqs >= 4000].sum() / spec_active.sum()) if active.any() else None

    # pitch: Praat's autocorrelation tracker; voicing counted only inside active frames
    times, f0, strength = _pitch(x, sr)
    frame_idx = np.clip(np.round((times - FRAME_S / 2) / HOP_S).astype(int), 0, len(active) - 1)
    in_active = active[frame_idx]
    f0 = np.where(in_active, f0, 0.0)
    voiced = f0 > 0
    voiced_fraction = float(voiced.sum() / in_active.sum()) if in_active.any() else 0.0
    pitch_median = pitch_range = tremor = hnr = None
    if voiced.sum() >= 10 and voiced_fraction >= 0.1:
        fv = f0[voiced]
        pitch_median = float(np.median(fv))
        p10, p90 = np.percentile(fv, [10, 90])
        pitch_range = float(12 * np.log2(p90 / p10))
        tremor = _tremor_st(f0)
        # Praat's harmonicity is 10*log10(r / (1 - r)) of the autocorrelation peak r
        r = np.clip(strength[voiced], 1e-6, 1 - 1e-6)
        hnr = float(np.median(10 * np.log10(r / (1 - r))))

    syllables = _syllables(band_db, active, band_floor)
    return Features(
        duration_s=float(duration),
        speech_s=speech_s,
        rms_dbfs=rms_db,
        active_level_dbfs=active_db,
        peak_dbfs=float(_db(np.max(x ** 2))),
        noise_floor_dbfs=noise_db,
        snr_db=snr,
        voiced_fraction=voiced_fraction,
        pitch_median_hz=pitch_median,
        pitch_range_st=pitch_range,
        pitch_tremor_st=tremor,
        hnr_db=hnr,
        speaking_rate=float(syllables / speech_s) if speech_s > 0 else 0.0,
        syllables=int(syllables),
        am_depth_4_8=_am_depth(frame_pow, active),
        spectral_flatness=_flatness(spec_active) if active.any() else None,
        hf_ratio=hf,
        spectral_centroid_hz=_centroid(spec_active, freqs) if active.any() else None,
        noise_centroid_hz=_centroid(spec_quiet, freqs) if noise_pow > 10 ** (FLOOR_DB / 10) else None,
        noise_flatness=_flatness(spec_quiet) if noise_pow > 10 ** (FLOOR_DB / 10) else None,
        pause_fraction=float(max(0.0, 1.0 - speech_s / duration)),
        inner_pause_fraction=_inner_pauses(active),
    )
