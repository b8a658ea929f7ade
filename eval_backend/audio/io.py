"""Reading, writing and validating wav audio. Every decoder error becomes BadAudio."""
from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import threading
from pathlib import Path

import numpy as np
import soundfile as sf


class BadAudio(ValueError):
    """Audio that cannot be decoded or is unusable (empty, silent-length, corrupt)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def samples_key(prefix: str, samples: np.ndarray, sr: int) -> str:
    """sha256 of `prefix` (what measures the samples), the rate, dtype and shape, and the samples' bytes: the name
    of a measurement kept on disk (eval_backend/audio/asr.py's transcripts, feature_cache.py's features)."""
    x = np.ascontiguousarray(samples)
    h = hashlib.sha256(prefix.encode())
    h.update(f"|{sr}|{x.dtype.str}|{x.shape}|".encode())
    h.update(x.tobytes())
    return h.hexdigest()


def write_text_atomically(path: Path, text: str) -> None:
    """Write `text` whole, then rename: a concurrent reader (another process, another thread) never sees half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def decode_wav_bytes(data: bytes, min_seconds: float = 0.05) -> tuple[np.ndarray, int]:
    """Mono float32 in [-1, 1] and the sample rate; raises BadAudio with a reason."""
    if not data:
        raise BadAudio("empty audio")
    try:
        samples, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises several types for corrupt input
        raise BadAudio(f"cannot decode audio: {exc}") from None
    if samples.size == 0 or sr <= 0:
        raise BadAudio("audio has no samples")
    mono = samples.mean(axis=1)
    if len(mono) / sr < min_seconds:
        raise BadAudio(f"audio too short ({len(mono) / sr:.3f} s)")
    if not np.all(np.isfinite(mono)):
        raise BadAudio("audio contains NaN or infinite samples")
    return mono, int(sr)


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadAudio(f"cannot read {path}: {exc.strerror or exc}") from None
    return decode_wav_bytes(data)


def encode_wav(samples: np.ndarray, sr: int) -> bytes:
    """16-bit PCM wav bytes (clipped to [-1, 1])."""
    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0), sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def write_wav(path: str | Path, samples: np.ndarray, sr: int) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_wav(samples, sr))
    return path


def b64_wav(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode_b64_wav(text: str) -> bytes:
    """Strict base64 -> wav bytes that decode; raises BadAudio otherwise."""
    if not isinstance(text, str) or not text:
        raise BadAudio("audio data is empty or not a string")
    if text.startswith("data:"):
        text = text.split(",", 1)[-1]
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadAudio(f"audio is not valid base64: {exc}") from None
    decode_wav_bytes(data)
    return data
