"""The two cascades: audio in -> ASR (+ cue detection) -> reply words -> espeak-ng speech.

`Engine.answer` takes decoded clips and the parsed prompt and returns words plus a
delivery style; the HTTP layer (server.py) only translates the OpenAI protocol.
Per-clip work (transcript, features) is cached by the clip's sha256: the runner sends
the same clip for ASR, conversation and several MCQs.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from . import cues as cue_mod
from . import replies
from .speech import NEUTRAL, Style, synthesize

MODELS = {
    "cascade-blind": "baseline: Whisper tiny.en ASR -> word-only reply templates -> neutral espeak-ng speech",
    "cascade-cue": "baseline: Whisper tiny.en ASR + acoustic-cue detector -> cue-aware reply -> espeak-ng "
                   "speech with matching prosody",
}
FINGERPRINT = "baseline-cascade-v1"


@dataclass(frozen=True)
class Clip:
    digest: str
    samples: np.ndarray
    sr: int


@dataclass
class Answer:
    text: str
    style: Style
    task: str
    detail: dict = field(default_factory=dict)


class _Cache:
    def __init__(self, size: int = 20_000):
        self.data: OrderedDict = OrderedDict()
        self.size = size
        self.lock = threading.Lock()

    def get_or(self, key, make):
        with self.lock:
            if key in self.data:
                return self.data[key]
        value = make()           # computed outside the lock: features are cheap and pure
        with self.lock:
            self.data[key] = value
            if len(self.data) > self.size:
                self.data.popitem(last=False)
        return value


class Engine:
    def __init__(self, transcriber=None):
        self._transcriber = transcriber
        self._init_lock = threading.Lock()
        self._features = _Cache()
        self._speech = _Cache(2_000)

    @property
    def transcriber(self):
        with self._init_lock:
            if self._transcriber is None:
                from .asr import Transcriber
                self._transcriber = Transcriber()
        return self._transcriber

    def warm_up(self) -> None:
        """One pass through ASR, features and speech (first calls pay JIT/allocation costs)."""
        from ..audio.features import extract
        from ..audio.io import decode_wav_bytes
        from .asr import to_16k
        samples, sr = decode_wav_bytes(synthesize("Hello, this is a warm up.", NEUTRAL))
        list(self.transcriber.model.transcribe(to_16k(samples, sr), language="en", beam_size=1,
                                               temperature=0.0, without_timestamps=True)[0])
        extract(samples, sr)

    def transcript(self, clip: Clip) -> str:
        return self.transcriber.transcribe(clip.digest, clip.samples, clip.sr)

    def features(self, clip: Clip):
        from ..audio.features import extract
        return self._features.get_or(clip.digest, lambda: extract(clip.samples, clip.sr))

    def cues(self, clip: Clip) -> cue_mod.Cues:
        return cue_mod.detect(self.features(clip))

    def speak(self, text: str, style: Style) -> bytes:
        return self._speech.get_or((text, style), lambda: synthesize(text, style))

    def stats(self) -> dict:
        t = self._transcriber
        return {"asr_cache": {"hits": t.hits if t else 0, "misses": t.misses if t else 0},
                "feature_cache_size": len(self._features.data)}

    def answer(self, model: str, prompt: replies.Prompt, clips: list[Clip]) -> Answer:
        if model not in MODELS:
            raise KeyError(model)
        use_cues = model == "cascade-cue"
        user = clips[0]
        said = self.transcript(user)
        if prompt.task == "asr":
            return Answer(said, NEUTRAL, "asr", {"transcript": said})
        found = self.cues(user) if use_cues else None
        detail = {"transcript": said}
        if found is not None:
            detail.update(cues=list(found.labels), evidence=found.evidence)
        if prompt.task == "mcq":
            if use_cues:
                letter, why = replies.mcq_cue(prompt.question, prompt.options, said, found)
            else:
                letter, why = replies.mcq_blind(prompt.question, prompt.options, said)
            return Answer(replies.mcq_answer_text(letter, why), NEUTRAL, "mcq", detail)
        if prompt.task == "selection":
            letters = _option_letters(prompt.text, len(clips) - 1)
            texts = [(letter, self.transcript(c)) for letter, c in zip(letters, clips[1:])]
            if use_cues:
                opts = []
                for (letter, text), c in zip(texts, clips[1:]):
                    f = self.features(c)
                    opts.append((letter, text, replies.Delivery(f.speaking_rate, f.active_level_dbfs,
                                                                f.pitch_median_hz)))
                letter, why = replies.selection_cue(prompt.context, said, found, opts)
            else:
                letter, why = replies.selection_blind(prompt.context, said, texts)
            return Answer(replies.mcq_answer_text(letter, why), NEUTRAL, "selection", detail)
        if use_cues:
            text, style = replies.cue_reply(said, prompt.context, found)
        else:
            text, style = replies.blind_reply(said, prompt.context), NEUTRAL
        detail["style"] = style.name
        return Answer(text, style, prompt.task, detail)


def _option_letters(text: str, n: int) -> list[str]:
    """Letters named on an 'Options: A, B, C' line, else A, B, C... in order."""
    m = re.search(r"options:\s*([A-H](?:\s*,\s*[A-H])*)", text or "", flags=re.IGNORECASE)
    named = [x.strip().upper() for x in m.group(1).split(",")] if m else []
    if len(named) == n:
        return named
    return [chr(ord("A") + i) for i in range(n)]
