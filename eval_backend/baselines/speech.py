"""Speech out for the baselines: espeak-ng with a prosody style (rate, pitch, amplitude), or the neural voice.

A `Style` whose voice is `NEURAL` is spoken by the Piper voice (neural_voice.py): its rate sets the pace
(175 wpm = the voice's own), its amplitude the gain (100 = as the model speaks); pitch and word gap are
espeak-ng's only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..audio.io import encode_wav
from ..audio.synth import ESPEAK_SR, SynthError, espeak
from .neural_voice import NeuralVoiceError, synthesize_neural

NEURAL = "neural"
ESPEAK_DEFAULT_WPM = 175


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
    """Wav bytes (mono 16-bit; 22.05 kHz) of `text` spoken in `style`."""
    if style.voice == NEURAL:
        try:
            samples, sr = synthesize_neural(text, length_scale=ESPEAK_DEFAULT_WPM / max(style.rate_wpm, 1),
                                            gain_db=20 * math.log10(max(style.amplitude, 1) / 100))
        except NeuralVoiceError as exc:
            raise SpeechError(str(exc)) from None
        return encode_wav(samples, sr)
    try:
        samples = espeak(text, style.voice, style.rate_wpm, style.pitch, style.amplitude, style.word_gap,
                         sr=ESPEAK_SR)
    except SynthError as exc:
        raise SpeechError(str(exc)) from None
    return encode_wav(samples, ESPEAK_SR)
