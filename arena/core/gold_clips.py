"""Known-bad clips for gold battles (arena/services/gold.py): plain functions from a real reply to a reply nobody listening
could prefer, and the writer that makes the result look like the reply it came from.

A construction takes the reply's samples (float32 in [-1, 1], shape (frames, channels)), its sample rate and a
random generator, and returns as many frames (same length class: the battle's listening rule and the page's
players see a clip as long as the real one). arena/services/gold.py adds one 16-bit step of random dither (`dithered`)
to every result, so no two gold clips are the same bytes: a voter (or a script) who learns after one gold
battle what its clip was cannot recognise the next one by a hash.

    CONSTRUCTIONS["reversed"].build(samples, sr, rng)  -> samples
    wav_like(source_path, samples)                       -> bytes (the source's own header, new samples)

`DEFAULT_CONSTRUCTIONS` are the ones no careful listener can prefer: speech played backwards, speech cut into
0.2 s pieces and shuffled, speech buried 10 dB under noise, and the first second of the reply followed by
silence. `other_reply` (the same model's reply to another request) is built by arena/services/gold.py from another stored
file, and is off by default: the demo's templated baselines answer many requests with near-identical words, so
"the reply to another request" can be a fine answer there, and a gold check must never fail an honest voter.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import soundfile as sf

PIECE_S = 0.2          # scrambled: syllable-sized pieces, so the words are gone but it still sounds like speech
NOISE_SNR_DB = -10.0   # noise 10 dB louder than the speech: the words cannot be followed
KEEP_S = 1.0           # silence_padded: the reply's first second, then silence to the reply's length


@dataclass(frozen=True)
class Construction:
    name: str
    describe: str          # for the reveal after the vote ("a check clip: the reply played backwards")
    build: Callable[[np.ndarray, int, np.random.Generator], np.ndarray] | None  # None: built from another file


def reversed_speech(x: np.ndarray, sr: int, rng: np.random.Generator) -> np.ndarray:
    return x[::-1].copy()


def scrambled(x: np.ndarray, sr: int, rng: np.random.Generator, piece_s: float = PIECE_S) -> np.ndarray:
    """Cut into `piece_s` pieces (the last one shorter) and put them back in a random order."""
    step = max(1, int(round(piece_s * sr)))
    pieces = [x[i:i + step] for i in range(0, len(x), step)]
    order = rng.permutation(len(pieces))
    if len(pieces) > 1 and np.all(order == np.arange(len(pieces))):
        order = np.roll(order, 1)          # a permutation that changes nothing would be a real reply
    return np.concatenate([pieces[k] for k in order])


def noise_buried(x: np.ndarray, sr: int, rng: np.random.Generator, snr_db: float = NOISE_SNR_DB) -> np.ndarray:
    """White noise `-snr_db` dB above the speech's RMS, then scaled back to the reply's own peak level."""
    rms = float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) or 1e-3
    noise = rng.standard_normal(x.shape).astype(np.float32) * rms * 10 ** (-snr_db / 20)
    mixed = x + noise
    peak, own = float(np.max(np.abs(mixed))), float(np.max(np.abs(x))) or 0.5
    return (mixed * (own / peak if peak else 1.0)).astype(np.float32)


def silence_padded(x: np.ndarray, sr: int, rng: np.random.Generator, keep_s: float = KEEP_S) -> np.ndarray:
    """The reply's first `keep_s` seconds of sound, then silence to the reply's length: a reply that stops."""
    loud = np.flatnonzero(np.max(np.abs(x), axis=1) > 0.02) if x.ndim == 2 else np.flatnonzero(np.abs(x) > 0.02)
    start = int(loud[0]) if len(loud) else 0
    out = np.zeros_like(x)
    end = min(len(x), start + int(keep_s * sr))
    out[:end] = x[:end]
    return out


CONSTRUCTIONS: dict[str, Construction] = {c.name: c for c in (
    Construction("reversed", "the reply played backwards", reversed_speech),
    Construction("scrambled", "the reply cut into short pieces and shuffled", scrambled),
    Construction("noise_buried", "the reply buried under loud noise", noise_buried),
    Construction("silence_padded", "the reply's first second, then silence", silence_padded),
    Construction("other_reply", "the same model's reply to a different request", None),
)}
DEFAULT_CONSTRUCTIONS = ("reversed", "scrambled", "noise_buried", "silence_padded")


def dithered(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random noise of one 16-bit step added to every sample: inaudible, but no two gold clips are the same bytes,
    even from a deterministic construction (reversed) of the same reply."""
    return (x + rng.uniform(-1.0, 1.0, x.shape).astype(np.float32) / 32768.0).astype(np.float32)


# ---------------------------------------------------------------- writing: the source's own format
def _chunks(data: bytes) -> dict[bytes, tuple[int, int]] | None:
    """{chunk id: (offset of its body, body length)} of a RIFF/WAVE file, or None when it is not one."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    out: dict[bytes, tuple[int, int]] = {}
    pos = 12
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = pos + 8
        size = min(size, len(data) - body)          # a streaming writer may leave the size unset or too large
        out.setdefault(cid, (body, size))
        pos = body + size + (size & 1)
    return out


def _pcm16_layout(data: bytes) -> tuple[int, int, int] | None:
    """(channels, data offset, data length) of a 16-bit PCM wav, else None."""
    chunks = _chunks(data)
    if not chunks or b"fmt " not in chunks or b"data" not in chunks:
        return None
    off, size = chunks[b"fmt "]
    if size < 16:
        return None
    tag, channels, _, _, _, bits = struct.unpack("<HHIIHH", data[off:off + 16])
    if bits != 16 or channels < 1 or (tag != 1 and not (tag == 0xFFFE and size >= 40
                                                        and data[off + 24:off + 26] == b"\x01\x00")):
        return None
    doff, dsize = chunks[b"data"]
    return channels, doff, dsize - dsize % (2 * channels)


def read_like(path: str | Path) -> tuple[np.ndarray, int]:
    """The reply's samples as float32 (frames, channels) and its sample rate."""
    samples, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return samples, int(sr)


def wav_like(source: str | Path, samples: np.ndarray) -> bytes:
    """`samples` (as many frames as the source) as the bytes of a file shaped like `source`: for a 16-bit PCM
    wav, the source's header and every other chunk byte for byte with only the samples replaced (a gold clip
    must not differ from its model's replies by how it was written); otherwise soundfile with the source's
    format and subtype."""
    raw = Path(source).read_bytes()
    x = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    layout = _pcm16_layout(raw)
    if layout is not None:
        channels, off, size = layout
        pcm = np.clip(np.round(x * 32768.0), -32768, 32767).astype("<i2")   # soundfile reads k as k / 32768
        if pcm.ndim == 1:
            pcm = pcm[:, None]
        body = np.repeat(pcm[:, :1], channels, axis=1) if pcm.shape[1] != channels else pcm
        new = body.tobytes()
        if len(new) == size:
            return raw[:off] + new + raw[off + size:]
    info = sf.info(str(source))
    buf = io.BytesIO()
    sf.write(buf, x, info.samplerate, format=info.format, subtype=info.subtype)
    return buf.getvalue()
