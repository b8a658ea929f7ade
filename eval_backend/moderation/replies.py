"""Reply screening at storage time: every playable reply is transcribed, screened and its decision recorded.

A playable reply is an ok reply of a spoken task with an audio file (what the arena, Browse and the model page can
play). Its words for the screen are *our* Whisper transcript of the audio (a model's own text may say something
else than its audio) plus the words the model says it spoke, when they differ; the reply is flagged when either
is. Whisper runs through the scorer's `asr_transcript` and its process-wide cache, so a reply the scorer has just
transcribed (consistency WER) is not decoded twice.

Callers: the worker's hand-off (eval_backend/submissions/handoff.py, after scoring) and the start-up bootstrap
(space_shell/bootstrap.py, the baselines and anything stored before screening existed). Serving only reads the
recorded decisions (arena/services/battles.py), so no screening runs between a vote and the next battle.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

import numpy as np

from ..audio.io import decode_wav_bytes
from ..tasks import SPOKEN_TASKS
from . import ledger

log = logging.getLogger(__name__)
KIND = "reply"


def reply_subject(model: str, benchmark_hash: str, request_id: str, audio_path: str | None) -> str:
    """A reply's stable id in the screening records: the replies table's key plus its (content-addressed) audio
    file, as JSON, so a reply whose audio is replaced is a new subject, unscreened until screened again."""
    return json.dumps([model, benchmark_hash, request_id, audio_path or ""], ensure_ascii=False,
                      separators=(",", ":"))


def subject_of(reply) -> str:
    return reply_subject(reply.model, reply.benchmark_hash, reply.request_id, reply.audio_path)


def parse_subject(subject: str) -> tuple[str, str, str, str] | None:
    """(model, benchmark hash, request id, audio path) of a reply subject; None for anything else."""
    try:
        key = json.loads(subject)
    except (TypeError, ValueError):
        return None
    if isinstance(key, list) and len(key) == 4 and all(isinstance(x, str) for x in key):
        return key[0], key[1], key[2], key[3]
    return None


def playable(store, reply) -> bool:
    return (reply.status == "ok" and reply.task in SPOKEN_TASKS and bool(reply.audio_path)
            and store.abspath(reply.audio_path).is_file())


def our_transcript(store, reply) -> str:
    """Whisper tiny.en of the reply's audio, through the scorer's cached transcriber (raises on bad audio)."""
    from ..scoring.audio_clips import asr_transcript  # why: the scorer's audio code (parselmouth) off start-up
    return asr_transcript(SimpleNamespace(store=store, cache={}), reply)


def _safety():
    """The safety package (eval_backend/safety), loaded when a reply is first screened."""
    from .. import safety  # why: the safety screens (~0.5 s to import) stay off the app's start-up
    return safety


def _not_screened(why: str):
    """The screen's "not screened" decision (the reply is held), named after the screen in use."""
    safety = _safety()
    return safety.core.not_screened(safety.screen_name(), why)


def combine(results: list, screen: str):
    """One decision from several texts' decisions: flagged / crisis / not screened if any is (a reply that could
    not be screened is held whatever EMPATHY_ARENA_SCREEN_REQUIRED says); each category's highest score; the
    reasons joined."""
    cats: dict[str, float] = {}
    for r in results:
        for c, v in r.categories.items():
            cats[c] = max(cats.get(c, 0.0), v)
    reasons = [r.reason for r in results if r.reason]
    unscreened = any(getattr(r, "status", "screened") != "screened" for r in results)
    return _safety().ScreenResult(flagged=unscreened or any(r.flagged for r in results),
                                  crisis=any(r.crisis for r in results), categories=cats,
                                  reason="; ".join(dict.fromkeys(reasons)),
                                  screen=results[0].screen if results else screen,
                                  status="not_screened" if unscreened else "screened")


def screen_reply(store, reply, transcribe: Callable | None = None, screen: Callable | None = None):
    """(text recorded, ScreenResult) for one playable reply. A transcription failure is "not screened"
    (the reply is held), never served unscreened."""
    transcribe = transcribe or our_transcript
    claimed = (reply.transcript or reply.text or "").strip()
    try:
        heard = (transcribe(store, reply) or "").strip()
    except Exception as exc:     # bad audio, Whisper missing: held as not screened, with the reason
        log.warning("reply %s/%s not transcribed: %s", reply.model, reply.request_id, exc)
        text = f"model's words: {claimed}" if claimed else ""
        return text, _not_screened(f"transcription failed ({type(exc).__name__})")
    return screen_heard_and_claimed(heard, claimed, screen)


def screen_reply_audio(audio: bytes, words: str | None, screen: Callable | None,
                       transcribe: Callable[[np.ndarray, int], str]):
    """(text recorded, ScreenResult) for a reply that is not stored yet (a live reply: arena/services/live.py): our
    transcript of its wav bytes and the words the model says it spoke. Audio that cannot be decoded or transcribed
    gives "not screened": the caller replaces the reply, never plays it."""
    try:
        heard = transcribe(*decode_wav_bytes(audio))
    except Exception as exc:        # bad audio, Whisper missing
        return (f"model's words: {words}" if words else ""), _not_screened(
            f"transcription failed ({type(exc).__name__})")
    return screen_heard_and_claimed(heard, words or "", screen)


def screen_heard_and_claimed(heard: str, claimed: str, screen: Callable | None = None):
    """(text recorded, ScreenResult) for a reply's words: our transcript of its audio (`heard`) and the words the
    model says it spoke (`claimed`), each screened when they differ; flagged or crisis if either is. Both empty:
    "not screened" (held). Shared by benchmark replies (screen_reply) and live replies (arena/services/live.py)."""
    screen = screen or _safety().screen_text
    heard, claimed = (heard or "").strip(), (claimed or "").strip()
    texts = [heard] + ([claimed] if claimed and claimed.lower() != heard.lower() else [])
    results = [screen(t) for t in texts if t]
    if not results:
        return "", _not_screened("the audio has no words to screen")
    shown = f"heard: {heard}" + (f"\nmodel's words: {claimed}" if len(texts) > 1 else "")
    return shown, combine(results, _safety().screen_name())


def held_count(store, benchmark_hash: str, model: str) -> tuple[int, int]:
    """(playable replies of the model, how many of them may not be played now) from the recorded decisions."""
    replies = [r for t in SPOKEN_TASKS for r in store.replies(model=model, benchmark_hash=benchmark_hash, task=t,
                                                               status="ok") if playable(store, r)]
    states = ledger.states(store, KIND, [subject_of(r) for r in replies])
    return len(replies), sum(1 for s in states.values() if not s.cleared)


@dataclass
class ScreenSummary:
    """What one pass screened: counts, and the seconds it took (for the docs' cost figure)."""
    screened: int = 0
    held: int = 0
    already: int = 0
    seconds: float = 0.0
    held_subjects: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"{self.screened} replies screened ({self.held} held for the operator), "
                f"{self.already} already screened, {self.seconds:.1f} s")


def screen_replies(store, benchmark_hash: str, models: list[str] | None = None,
                   transcribe: Callable | None = None, screen: Callable | None = None,
                   on_progress: Callable[[int], None] | None = None) -> ScreenSummary:
    """Screen every playable reply on `benchmark_hash` (of `models`, default all) that has no decision yet;
    resumable (a rerun screens only what is new). `on_progress(n)`: replies decided so far (the opening banner).
    Request by request (every model's reply to one request, then the next): the arena can play a pair once both of
    its replies are decided, so on a fresh Space the first battle waits for two decisions, not for one model's all."""
    t0 = time.perf_counter()
    out = ScreenSummary()
    names = models if models is not None else store.models_with_replies(benchmark_hash)
    replies = [reply for model in names for task in SPOKEN_TASKS
               for reply in store.replies(model=model, benchmark_hash=benchmark_hash, task=task, status="ok")]
    first_seen: dict[str, int] = {}
    for reply in replies:
        first_seen.setdefault(reply.request_id, len(first_seen))
    replies.sort(key=lambda r: first_seen[r.request_id])          # stable: the models' order within a request
    for reply in replies:
        if not playable(store, reply):
            continue
        subject = subject_of(reply)
        if ledger.decided(store, KIND, subject):
            out.already += 1
            continue
        text, result = screen_reply(store, reply, transcribe, screen)
        ledger.record(store, KIND, subject, text, result)
        out.screened += 1
        if result.flagged or result.status != "screened":
            out.held += 1
            out.held_subjects.append(subject)
        if on_progress is not None:
            on_progress(out.screened)
    out.seconds = time.perf_counter() - t0
    return out
