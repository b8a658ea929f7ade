"""What a voter hears in a battle: every clip in one format, at one loudness, with no metadata (issue 22).

Neither loudness nor file format may decide a vote or tell A from B (a louder reply wins more often; a 44.1 kHz
flac beside a 24 kHz wav names a provider). So every battle clip (the user's utterance and both replies, benchmark
and live battles alike) is served as its *heard* version:

- one format: 16-bit PCM mono WAV at `RATE` Hz, written with Python's `wave` module (a `fmt ` and a `data` chunk,
  nothing else: no LIST/INFO, id3, cue, PEAK or bext chunk, whatever the source carried);
- loudness-normalised to `TARGET_LUFS` integrated loudness (ITU-R BS.1770-4 K-weighted, gated; `pyloudnorm`),
  with a true-peak ceiling of `PEAK_DBTP` (peaks estimated on a 4x oversampled signal): a look-ahead peak limiter
  (`limit`) holds the peaks under the ceiling, and the gain is set again after limiting, so peaky clips reach the
  same loudness as smooth ones instead of being turned down whole. A silent clip stays silent (no gain).

The stored originals stay as they are (scoring, Browse and releases read them). The heard version is made once per
source content (sha256) and kept in `<data dir>/battle_audio/<hh>/<sha256>.wav`, with its measured facts beside it
(`<sha256>.json`): its length (the listening rule's durations), its loudness and peak, the source's loudness, and
(when asked, `measure=True`) its delivery: speech time, median pitch, speaking rate (eval_backend/audio/features.py).
A live battle's clips are made in the battle's own folder instead (arena/tables/live_store.py), so retention deletes them.

    heard = HeardAudio(data_dir)
    clip = heard.clip(path, measure=True)     # HeardClip: path, seconds, lufs, peak_dbtp, source_lufs, delivery
    clip.covariates()                         # the numbers a per-battle record wants (duration, LUFS, rate, ...)
    heard.known(path)                         # the cached HeardClip or None: never does any work
    heard.prepare_later(paths)                # a low-priority background thread makes and measures them

Cost per clip: docs/benchmarks.md ("Battle audio"), `python benchmarks/bench_battle_audio.py`.
"""
from __future__ import annotations

import atexit
import hashlib
import io
import json
import logging
import math
import os
import threading
import wave
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pyloudnorm
import soundfile as sf
from scipy.ndimage import minimum_filter1d, uniform_filter1d
from scipy.signal import resample_poly

from eval_backend.audio.io import BadAudio

log = logging.getLogger(__name__)

RATE = 24000                # every heard clip's sample rate
TARGET_LUFS = -16.0         # integrated loudness of every heard clip (EBU R128 / BS.1770-4, a common web target)
PEAK_DBTP = -1.0            # true-peak ceiling
HEARD_DIR = "battle_audio"  # under the data dir; served only by the battle clip route (arena/web/media.py)
RECIPE = 3                  # bump when the recipe changes: the cache key includes it, so clips are made again
LUFS_TOLERANCE = 0.05       # how close to TARGET_LUFS the gain search stops
MAX_GAIN_STEPS = 6          # limiter passes at most per clip (speech takes one to four)
SILENT_LUFS = -70.0         # BS.1770's absolute gate: below it there is nothing to normalise
LOOKAHEAD_S = 0.005
RELEASE_S = 0.05
BATCH = 25                  # awaited clips measured in the background between two rebuilds of the battle index


@dataclass(frozen=True)
class Delivery:
    """How a heard clip sounds, for telling near-identical replies apart (arena/core/distinct.py)."""
    duration_s: float
    speech_s: float
    lufs: float | None
    pitch_median_hz: float | None
    speaking_rate: float                  # syllable nuclei per second of speech


@dataclass(frozen=True)
class HeardClip:
    path: Path                            # the heard file
    source_sha256: str                    # of the source file's bytes
    seconds: float                        # the heard file's length (the listening rule reads it)
    lufs: float | None                    # measured on the heard file (None: silent)
    peak_dbtp: float | None               # true peak of the heard file
    source_lufs: float | None             # the source's loudness before normalisation
    source_rate: int
    delivery: Delivery | None = None      # measured when asked (measure=True)

    def covariates(self) -> dict:
        """Per-battle covariates of this clip as the voter hears it (duration, loudness, peak, speaking rate,
        pitch); None where not measured."""
        d = self.delivery
        return {"seconds": self.seconds, "lufs": self.lufs, "peak_dbtp": self.peak_dbtp,
                "source_lufs": self.source_lufs, "speech_s": d.speech_s if d else None,
                "speaking_rate": d.speaking_rate if d else None,
                "pitch_median_hz": d.pitch_median_hz if d else None}


# ---------------------------------------------------------------- pure core
def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def loudness(samples: np.ndarray, rate: int) -> float | None:
    """Integrated loudness (LUFS, BS.1770-4); None for silence. Clips shorter than the standard 400 ms block
    are measured with one block of their own length."""
    if len(samples) < 2 or not np.any(samples):
        return None
    block = min(0.4, (len(samples) - 1) / rate)
    value = pyloudnorm.Meter(rate, block_size=block).integrated_loudness(samples.astype(np.float64))
    value = _finite(value)
    return value if value is not None and value > SILENT_LUFS else None


def true_peak_dbtp(samples: np.ndarray) -> float | None:
    """Peak of the 4x oversampled signal (BS.1770-4 Annex 2's estimate), in dBTP; None for silence."""
    if not len(samples):
        return None
    peak = float(np.max(np.abs(resample_poly(samples.astype(np.float64), 4, 1))))
    return 20 * math.log10(peak) if peak > 0 else None


def oversampled_peaks(x: np.ndarray) -> np.ndarray:
    """Each sample's largest |value| among its four neighbours in the 4x oversampled signal (what the limiter keeps
    under the ceiling). Linear in the signal's gain: peaks of x * g are g * peaks of x."""
    over = np.abs(resample_poly(x, 4, 1))[: 4 * len(x)]
    over = np.pad(over, (0, 4 * len(x) - len(over)))
    # the maximum of four strided views (what reshape(-1, 4).max(axis=1) gives, bit for bit, at an eighth of its
    # time: numpy reduces a short last axis slowly)
    return np.maximum(np.maximum(over[0::4], over[1::4]), np.maximum(over[2::4], over[3::4]))


def limit(samples: np.ndarray, rate: int, ceiling_dbtp: float = PEAK_DBTP,
          peaks: np.ndarray | None = None) -> np.ndarray:
    """A look-ahead peak limiter: each sample's gain is what keeps its oversampled neighbourhood under the
    ceiling, held over the look-ahead window and released smoothly (never above what the peaks allow). `peaks`:
    `oversampled_peaks(samples)` when the caller has it (the gain search scales one source's)."""
    x = samples.astype(np.float64)
    ceiling = 10 ** (ceiling_dbtp / 20)
    over = oversampled_peaks(x) if peaks is None else peaks
    need = np.minimum(1.0, ceiling / np.maximum(over, 1e-12))
    if need.min() >= 1.0:
        return x
    hold = max(1, int(LOOKAHEAD_S * rate))
    held = minimum_filter1d(need, size=2 * hold + 1)          # reach each peak's gain before it, keep it after
    return x * np.minimum(uniform_filter1d(held, size=max(1, int(RELEASE_S * rate))), held)   # smooth edges


def heard_frames(frames: int, sr: int, rate: int = RATE) -> int:
    """How many samples a clip of `frames` at `sr` has once resampled to `rate` (resample_poly's output length),
    so a clip's heard length is known from its header alone."""
    if sr == rate:
        return int(frames)
    g = math.gcd(int(sr), int(rate))
    return -(-int(frames) * (rate // g) // (int(sr) // g))


def to_rate(samples: np.ndarray, sr: int, rate: int = RATE) -> np.ndarray:
    if sr == rate:
        return samples.astype(np.float64)
    g = math.gcd(int(sr), int(rate))
    return resample_poly(samples.astype(np.float64), rate // g, int(sr) // g)


def normalise(samples: np.ndarray, sr: int) -> tuple[np.ndarray, dict]:
    """Mono samples at any rate -> (heard samples at RATE, {lufs, peak_dbtp, source_lufs}). Pure.

    The limiter runs once, on the source at a gain: the gain is found by measuring loudness(limit(source x gain))
    and moving it by a secant step (the limiter only takes loudness away, so that curve's slope is at most 1), until
    the loudness is within LUFS_TOLERANCE of the target (three or four steps on our baselines' replies, one to three
    on most benchmark clips; at most MAX_GAIN_STEPS, so a 30 s clip costs well under a second). Recipe 2 limited
    the limited clip again at each of four steps (up to 0.17 LU off on our demo's clips, in more time:
    docs/benchmarks.md, "Battle audio and distinct pairs")."""
    source_x = to_rate(np.asarray(samples, dtype=np.float64), sr)
    x = source_x
    source = loudness(source_x, RATE)
    measured: tuple[float | None, float | None] | None = None     # (lufs, peak_dbtp) of x, while x is unchanged
    if source is not None:
        source_peaks = oversampled_peaks(source_x)        # once: the limiter's peaks at a gain are these scaled

        def at(gain_db: float) -> np.ndarray:
            g = 10 ** (gain_db / 20)
            return limit(source_x * g, RATE, peaks=source_peaks * g)
        gain = TARGET_LUFS - source             # dB
        x = at(gain)
        now = loudness(x, RATE)
        before: tuple[float, float] | None = None
        for _ in range(MAX_GAIN_STEPS - 1):
            if now is None or abs(now - TARGET_LUFS) < LUFS_TOLERANCE:
                break               # a clip at the target with peaks over the ceiling (clicks) is limited, not trimmed
            slope = 1.0
            if before is not None and gain != before[0]:
                slope = min(1.0, max(0.2, (now - before[1]) / (gain - before[0])))
            before = (gain, now)
            gain += (TARGET_LUFS - now) / slope
            x = at(gain)
            now = loudness(x, RATE)
        peak = true_peak_dbtp(x)
        measured = (now, peak)
        if peak is not None and peak > PEAK_DBTP:      # the limiter's estimate missed by a hair: trim it whole
            x = x * 10 ** ((PEAK_DBTP - peak - 0.01) / 20)
            measured = None
    heard = np.clip(x, -1.0, 1.0)
    if measured is None or not np.array_equal(heard, x):        # measured again only when the samples changed
        measured = (loudness(heard, RATE), true_peak_dbtp(heard))
    return heard, {"lufs": measured[0], "peak_dbtp": measured[1], "source_lufs": source}


def plain_wav(samples: np.ndarray, rate: int = RATE) -> bytes:
    """16-bit PCM mono WAV with only the `fmt ` and `data` chunks (no metadata of any kind)."""
    pcm = np.round(np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return buf.getvalue()


def decode(data: bytes) -> tuple[np.ndarray, int]:
    """Any format soundfile reads (wav, flac, ogg, mp3), as mono float; raises BadAudio."""
    try:
        samples, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception as exc:    # soundfile raises several types for what it cannot read
        raise BadAudio(f"cannot decode audio: {exc}") from None
    if samples.size == 0 or sr <= 0:
        raise BadAudio("audio has no samples")
    mono = samples.mean(axis=1)
    if not np.all(np.isfinite(mono)):
        raise BadAudio("audio contains NaN or infinite samples")
    return mono, int(sr)


def measure_delivery(samples: np.ndarray, rate: int, lufs: float | None) -> Delivery:
    from eval_backend.audio.features import extract  # why: parselmouth (Praat) loads only once a clip is measured
    f = extract(samples.astype(np.float32), rate)
    return Delivery(f.duration_s, f.speech_s, lufs, f.pitch_median_hz, f.speaking_rate)


def make_heard(data: bytes, do_measure: bool = False) -> tuple[bytes, dict]:
    """Source bytes -> (heard wav bytes, facts for the sidecar). Pure apart from the CPU it takes."""
    samples, sr = decode(data)
    heard, stats = normalise(samples, sr)
    facts = {"recipe": RECIPE, "seconds": len(heard) / RATE, "source_rate": sr, **stats}
    if do_measure:
        facts["delivery"] = asdict(measure_delivery(heard, RATE, stats["lufs"]))
    return plain_wav(heard), facts


def clip_from_facts(path: Path, sha: str, facts: dict) -> HeardClip:
    d = facts.get("delivery")
    return HeardClip(path, sha, float(facts["seconds"]), facts.get("lufs"), facts.get("peak_dbtp"),
                     facts.get("source_lufs"), int(facts.get("source_rate") or RATE), Delivery(**d) if d else None)


# ---------------------------------------------------------------- the cache in the data dir
def _write_atomic(path: Path, data: bytes, mkdir: bool = True) -> None:
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _sidecar(wav_path: Path) -> Path:
    return wav_path.with_suffix(".json")


def remeasured(clip: HeardClip) -> HeardClip:
    """A clip made without its delivery, measured now from its heard file (the sidecar is updated)."""
    samples, rate = decode(clip.path.read_bytes())
    facts = json.loads(_sidecar(clip.path).read_text())
    facts["delivery"] = asdict(measure_delivery(samples, rate, clip.lufs))
    _write_atomic(_sidecar(clip.path), json.dumps(facts).encode())
    return clip_from_facts(clip.path, clip.source_sha256, facts)


def named_clip(folder: Path, name: str, data: bytes | None = None, measure: bool = False) -> HeardClip:
    """A live battle's clip (`folder/<name>.wav`) as heard: `folder/<name>.heard.wav` and its facts, made when
    missing (from `data`, else the stored original). They live in the battle's folder, so retention deletes them."""
    wav_path = Path(folder) / f"{name}.heard.wav"
    try:
        facts = json.loads(_sidecar(wav_path).read_text())
        clip = clip_from_facts(wav_path, facts["source_sha256"], facts)
        return remeasured(clip) if measure and clip.delivery is None else clip
    except (OSError, ValueError, KeyError):
        pass
    data = data if data is not None else (Path(folder) / f"{name}.wav").read_bytes()
    heard, facts = make_heard(data, measure)
    return write_named(folder, name, hashlib.sha256(data).hexdigest(), heard, facts)


def write_named(folder: Path, name: str, sha: str, heard: bytes, facts: dict) -> HeardClip:
    """Write `folder/<name>.heard.wav` and its facts (a live battle's clip)."""
    wav_path = Path(folder) / f"{name}.heard.wav"
    facts = {**facts, "source_sha256": sha}
    _write_atomic(wav_path, heard, mkdir=False)         # a folder deleted meanwhile (retention) is not made again
    _write_atomic(_sidecar(wav_path), json.dumps(facts).encode(), mkdir=False)
    return clip_from_facts(wav_path, sha, facts)


_WORKING: weakref.WeakSet = weakref.WeakSet()    # caches whose worker was started (stopped at exit)


@atexit.register
def stop_workers() -> None:
    """Drop every started worker's queue and let it finish its clip (at exit; tests/support/background_workers.py
    after each test module). Why at exit: a daemon thread still inside native code that
    released the GIL (ONNX Runtime, Praat through pybind11) when the interpreter finalizes is ended by
    pthread_exit, whose unwinding through a noexcept C++ destructor aborts the whole process with "terminate called
    without an active exception": `python -m arena health` exited with SIGABRT after printing its report."""
    for heard in list(_WORKING):
        heard.stop()


class HeardAudio:
    """The heard versions of benchmark battle clips, cached by content hash in the data dir (see the module doc)."""

    def __init__(self, root: str | Path, also_measure: Callable[[Path], object] | None = None):
        """`also_measure(heard path)`: run on the background thread after each clip it makes (the service's
        style covariates, arena/core/covariates.py ClipMeasures.audio), so serving a battle measures nothing."""
        self.root = Path(root)
        self.also_measure = also_measure
        self._also_done: set[str] = set()    # sources whose heard clip `also_measure` has seen (this process)
        self.folder = self.root / HEARD_DIR
        self._sha: dict[str, tuple[int, int, str]] = {}      # path -> (size, mtime_ns, sha256)
        self._clips: dict[str, HeardClip] = {}               # sha256 -> clip (measured or not)
        self._lock = threading.Lock()
        self._queue: list[str] = []
        self._worker: threading.Thread | None = None
        self._failed: set[str] = set()       # sources that could not be decoded (never queued again)
        self._urgent: set[str] = set()       # queued because the battle index waits for their delivery
        self.version = 0            # grows when clips the index waits for were measured (the index reads it)

    def sha(self, source: str | Path) -> str:
        """sha256 of the file's bytes, remembered while its size and mtime stay."""
        key = str(source)
        st = os.stat(key)
        got = self._sha.get(key)
        if got and got[:2] == (st.st_size, st.st_mtime_ns):
            return got[2]
        digest = hashlib.sha256(Path(key).read_bytes()).hexdigest()
        self._sha[key] = (st.st_size, st.st_mtime_ns, digest)
        return digest

    def _paths(self, sha: str) -> tuple[Path, Path]:
        wav_path = self.folder / sha[:2] / f"{sha}.r{RECIPE}.wav"
        return wav_path, _sidecar(wav_path)

    def known(self, source: str | Path, measured: bool = False) -> HeardClip | None:
        """The heard clip if it was made already (and measured, when asked); never makes anything."""
        try:
            sha = self.sha(source)
        except OSError:
            return None
        clip = self._clips.get(sha)
        if clip is None:
            wav_path, json_path = self._paths(sha)
            try:
                facts = json.loads(json_path.read_text())
            except (OSError, ValueError):
                return None
            if facts.get("recipe") != RECIPE or not wav_path.is_file():
                return None
            clip = self._clips[sha] = clip_from_facts(wav_path, sha, facts)
        return clip if clip.delivery is not None or not measured else None

    def clip(self, source: str | Path, measure: bool = False) -> HeardClip:
        """The heard clip of `source`, made (and measured) now if it is not in the cache. Raises BadAudio/OSError."""
        found = self.known(source, measure)
        if found is not None:
            return found
        made = self.known(source)
        if made is not None:                       # made before without its delivery: measure the heard file
            return self._remember(made.source_sha256, remeasured(made))
        data = Path(source).read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        wav_path, json_path = self._paths(sha)
        heard, facts = make_heard(data, measure)
        _write_atomic(wav_path, heard)
        _write_atomic(json_path, json.dumps(facts).encode())
        return self._remember(sha, clip_from_facts(wav_path, sha, facts))

    def _remember(self, sha: str, clip: HeardClip) -> HeardClip:
        self._clips[sha] = clip
        return clip

    def for_heard_file(self, path: Path, measure: bool = False) -> HeardClip | None:
        """The HeardClip of a file this cache made (the battle clip route's file), measured when asked."""
        sha = Path(path).name.split(".")[0]
        wav_path, json_path = self._paths(sha) if len(sha) == 64 else (None, None)
        if wav_path is None or Path(path) != wav_path:
            return None
        clip = self._clips.get(sha)
        if clip is None:
            try:
                clip = clip_from_facts(wav_path, sha, json.loads(json_path.read_text()))
            except (OSError, ValueError):
                return None
        if measure and clip.delivery is None:
            clip = remeasured(clip)
        return self._remember(sha, clip)

    # ------------------------------------------------------------ background preparation
    def prepare_later(self, sources: Iterable[str | Path], urgent: bool = False) -> None:
        """Make and measure these clips on a low-priority daemon thread (the battle index asks for the ones it
        cannot judge yet, `urgent`: first in the queue; serving a battle then finds its clips made)."""
        todo = [s for s in dict.fromkeys(map(str, sources)) if s not in self._failed
                and (self.known(s, measured=True) is None
                     or (self.also_measure is not None and s not in self._also_done))]
        if not todo:
            return
        with self._lock:
            new = set(todo)
            if urgent:
                self._urgent |= new
            rest = [s for s in self._queue if s not in new]
            self._queue = todo + rest if urgent else rest + todo
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._drain, name="battle-audio", daemon=True)
                self._worker.start()
                _WORKING.add(self)

    def _drain(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        done = 0
        while True:
            with self._lock:
                if not self._queue:
                    self._worker = None
                    return
                source = self._queue.pop(0)
            try:
                made = self.clip(source, measure=True)
                if self.also_measure is not None and source not in self._also_done:
                    self.also_measure(made.path)
                    self._also_done.add(source)
            except (BadAudio, OSError, RuntimeError, ValueError) as exc:   # not asked again (serving it fails alike)
                log.warning("battle audio: %s cannot be prepared: %s", Path(source).name, exc)
                self._failed.add(source)
            with self._lock:             # only what the index waits for makes it look again, per batch
                if source in self._urgent:
                    self._urgent.discard(source)
                    done += 1
                    if not self._urgent or done % BATCH == 0:
                        self.version += 1

    def stop(self, timeout_s: float = 10.0) -> None:
        """Drop what is queued and let the worker finish the clip it is on (at exit: `stop_workers`)."""
        with self._lock:
            self._queue.clear()
            self._urgent.clear()
            worker = self._worker
        if worker is not None:
            worker.join(timeout_s)

    def bump(self) -> None:
        """Something was measured outside the background thread: the battle index should look again."""
        with self._lock:
            self.version += 1

    def wait_idle(self, timeout_s: float = 600.0) -> bool:
        """For tests, benchmarks and the CLI: wait until the background queue is empty."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout_s)
        return self._worker is None or not self._worker.is_alive()
