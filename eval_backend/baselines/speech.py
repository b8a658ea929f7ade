"""Speech out for the baselines: espeak-ng with a prosody style (rate, pitch, amplitude)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from ..audio.io import decode_wav_bytes, encode_wav


@dataclass(frozen=True)
class Style:
    """espeak-ng prosody: words per minute, pitch 0-99, amplitude 0-200, extra gap between words (10 ms units)."""
    name: str = "neutral"
    rate_wpm: int = 175
    pitch: int = 50
    amplitude: int = 100
    word_gap: int = 0
    voice: str = "en-us"


NEUTRAL = Style()


class SpeechError(RuntimeError):
    pass


def synthesize(text: str, style: Style = NEUTRAL, timeout_s: float = 30.0) -> bytes:
    """Wav bytes (22.05 kHz mono 16-bit) of `text` spoken in `style`."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise SpeechError("espeak-ng is not installed (apt-get install espeak-ng)")
    cmd = [exe, "--stdout", "--stdin", "-v", style.voice, "-s", str(style.rate_wpm), "-p", str(style.pitch),
           "-a", str(style.amplitude), "-g", str(style.word_gap)]
    # text goes through stdin so a reply starting with '-' is never read as an option
    proc = subprocess.run(cmd, input=text.encode("utf-8"), capture_output=True, timeout=timeout_s)
    if proc.returncode != 0 or len(proc.stdout) <= 44:
        raise SpeechError(f"espeak-ng failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[:200]}")
    # espeak-ng writes to a pipe with open-ended chunk sizes (0x7ffff000); rewrite a proper header
    samples, sr = decode_wav_bytes(proc.stdout)
    return encode_wav(samples, sr)
