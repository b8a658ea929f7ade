"""The offline contestants: audio in -> ASR (+ cue detection) -> reply words -> speech.

`Engine.answer` takes decoded clips and the parsed prompt and returns words plus a
delivery style; the HTTP layer (server.py) only translates the OpenAI protocol.
Per-clip work (transcript, features) is cached by the clip's sha256: the runner sends
the same clip for ASR, conversation and several MCQs, and every contestant hears the same clips.

Adding a contestant is one `Contestant` entry in `CONTESTANTS` (and one models.yaml entry to run it).
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from eval_backend.audio.asr import DECODE, Transcriber, to_16k

from ..audio.io import decode_wav_bytes
from . import cues as cue_mod
from . import replies, strategies
from .speech import NEURAL, NEUTRAL, Style, synthesize


@dataclass(frozen=True)
class Contestant:
    """One offline stand-in: how it words a reply, whose voice speaks it, and whether the delivery follows the cue
    the detector claims. `hears_cues`: MCQ and selection answers use the detector's guesses (else words only)."""
    name: str
    description: str
    wording: str            # blind | cue | reflective | advice
    voice: str              # an espeak-ng voice, or "neural" (eval_backend/baselines/neural_voice.py)
    matched_delivery: bool  # the claimed cue sets the delivery (else one flat delivery)
    hears_cues: bool
    blurb: str = ""         # what a visitor is told it does (the About tab), one clause


CONTESTANTS = {c.name: c for c in (
    Contestant("cascade-blind", "baseline: Whisper tiny.en ASR -> word-only reply templates -> flat espeak-ng "
                                "speech (en-us)", "blind", "en-us", False, False,
               "answers the words alone in a flat espeak-ng voice"),
    Contestant("cascade-cue", "baseline: Whisper tiny.en ASR + a cue detector calibrated on real voices (it "
                              "abstains when unsure) -> a reply naming the cue it claims -> espeak-ng speech "
                              "with matching prosody", "cue", "en-us", True, True,
               "also names a vocal cue when its detector is sure of one (whispering, laughter, a raised voice, a "
               "very fast or slow pace) and matches its espeak-ng delivery to it"),
    Contestant("cascade-reflect-piper", "baseline: Whisper tiny.en ASR -> reflective listening (hands the "
                                        "speaker's words back, asks an open question; cue-blind) -> flat speech "
                                        "in a neural voice (Piper en_US-joe-medium)", "reflective", NEURAL,
               False, False, "hands your own words back and asks an open question, in a neural voice (Piper)"),
    Contestant("cascade-advice-cue", "baseline: Whisper tiny.en ASR + the cue detector -> advice first, then a "
                                     "word on the claimed cue -> espeak-ng speech (en-gb-x-rp, female variant) "
                                     "with prosody matched to the claimed cue", "advice", "en-gb-x-rp+f4", True,
               True, "gives a practical suggestion first, in a female espeak-ng voice matched to a cue it is sure of"),
)}
MODELS = {name: c.description for name, c in CONTESTANTS.items()}


def contestants_sentence() -> str:
    """One sentence naming what each offline contestant does (the About tab, README's "Baselines")."""
    parts = [f"**{c.name}** {c.blurb}" for c in CONTESTANTS.values()]
    return "; ".join(parts[:-1]) + "; and " + parts[-1] + "."
FINGERPRINT = "baseline-cascade-v2"


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
                self._transcriber = Transcriber()
        return self._transcriber

    def warm_up(self) -> None:
        """One pass through ASR, features and speech (first calls pay JIT/allocation costs)."""
        from ..audio.features import extract  # why: parselmouth (~0.35 s) off the app's start-up
        samples, sr = decode_wav_bytes(synthesize("Hello, this is a warm up.", NEUTRAL))
        if any(c.voice == NEURAL for c in CONTESTANTS.values()):
            synthesize("Hello.", replace(NEUTRAL, voice=NEURAL))    # loads the neural voice's ONNX model
        list(self.transcriber.model.transcribe(to_16k(samples, sr), **DECODE)[0])   # the settings every clip gets
        extract(samples, sr)

    def transcript(self, clip: Clip) -> str:
        return self.transcriber.transcribe(clip.digest, clip.samples, clip.sr)

    def features(self, clip: Clip):
        from ..audio.feature_cache import measure  # why: parselmouth (~0.35 s) off the app's start-up
        return self._features.get_or(clip.digest, lambda: measure(clip.samples, clip.sr))

    def cues(self, clip: Clip) -> cue_mod.Cues:
        """Best guesses for forced choices (MCQ, selection): the thresholds read from our synthetic voices."""
        return cue_mod.detect(self.features(clip))

    def heard(self, clip: Clip) -> cue_mod.Heard:
        """What a reply may name: the detector calibrated on real voices, which abstains when unsure."""
        return cue_mod.hear(self.features(clip), self.transcript(clip))

    def speak(self, text: str, style: Style) -> bytes:
        return self._speech.get_or((text, style), lambda: synthesize(text, style))

    def stats(self) -> dict:
        t = self._transcriber
        return {"asr_cache": {"hits": t.hits if t else 0, "misses": t.misses if t else 0},
                "feature_cache_size": len(self._features.data)}

    def answer(self, model: str, prompt: replies.Prompt, clips: list[Clip]) -> Answer:
        who = CONTESTANTS[model]           # KeyError for an unknown model: the server answers 404 first
        user = clips[0]
        said = self.transcript(user)
        if prompt.task == "asr":
            return Answer(said, NEUTRAL, "asr", {"transcript": said})
        detail: dict = {"transcript": said}
        guess = heard = None
        if who.hears_cues:
            guess, heard = self.cues(user), self.heard(user)
            detail.update(cues=list(heard.claims), confidence=heard.confidence, guesses=list(guess.labels),
                          evidence=guess.evidence)
        if prompt.task in ("mcq", "selection"):
            return Answer(replies.mcq_answer_text(*self._choose(prompt, clips, said, guess)), NEUTRAL,
                          prompt.task, detail)
        claim = heard.cue if heard is not None else None
        if who.wording == "cue":
            text, style = replies.cue_reply(said, prompt.context, claim)
        elif who.wording == "reflective":
            text, style = strategies.reflective_reply(said, prompt.context), NEUTRAL
        elif who.wording == "advice":
            text, style = strategies.advice_reply(said, prompt.context, claim), NEUTRAL
        else:
            text, style = replies.blind_reply(said, prompt.context), NEUTRAL
        if who.matched_delivery:
            style = replies.cue_style(claim, prompt.context)
        style = replace(style, voice=who.voice)
        detail["style"] = style.name
        return Answer(text, style, prompt.task, detail)

    def _choose(self, prompt: replies.Prompt, clips: list[Clip], said: str,
                guess: cue_mod.Cues | None) -> tuple[str, str]:
        """(letter, why) of an MCQ or a selection: the detector's guesses when the contestant hears cues."""
        if prompt.task == "mcq":
            if guess is not None:
                return replies.mcq_cue(prompt.question, prompt.options, said, guess)
            return replies.mcq_blind(prompt.question, prompt.options, said)
        letters = _option_letters(prompt.text, len(clips) - 1)
        texts = [(letter, self.transcript(c)) for letter, c in zip(letters, clips[1:])]
        if guess is None:
            return replies.selection_blind(prompt.context, said, texts)
        opts = []
        for (letter, text), c in zip(texts, clips[1:]):
            f = self.features(c)
            opts.append((letter, text, replies.Delivery(f.speaking_rate, f.active_level_dbfs, f.pitch_median_hz)))
        return replies.selection_cue(prompt.context, said, guess, opts)


def _option_letters(text: str, n: int) -> list[str]:
    """Letters named on an 'Options: A, B, C' line, else A, B, C... in order."""
    m = re.search(r"options:\s*([A-H](?:\s*,\s*[A-H])*)", text or "", flags=re.IGNORECASE)
    named = [x.strip().upper() for x in m.group(1).split(",")] if m else []
    if len(named) == n:
        return named
    return [chr(ord("A") + i) for i in range(n)]
