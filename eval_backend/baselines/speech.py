"""Speech out for the baselines: espeak-ng with a prosody style (rate, pitch, amplitude)."""
from __future__ import annotations

from dataclasses import dataclass

from ..audio.io import encode_wav


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
    from ..audio.synth import ESPEAK_SR, SynthError, espeak   # the project's one espeak-ng wrapper
    try:
        samples = espeak(text, style.voice, style.rate_wpm, style.pitch, style.amplitude, style.word_gap,
                         sr=ESPEAK_SR)
    except SynthError as exc:
        raise SpeechError(str(exc)) from None
    return encode_wav(samples, ESPEAK_SR)
