"""Live battles: the voter's own recording, answered live by two anonymous models, voted on like any battle.

    live = LiveService(arena, contestants=[spec, ...])          # settings: LiveSettings.from_env()
    battle = await live.battle(audio_bytes, session, ip, user=None, consent_store=True, consent_release=False)
    # -> LiveBattle (the arena's battle view + transcript, crisis notice) or raises LiveRefused(status, code, msg)

The service is composed of parts: the intake checks and settings (arena/services/live_intake.py, step 1), the contestants
and their replies (arena/services/live_replies.py, `LiveReplies`, step 3), the clips as heard (arena/services/live_heard.py) and the
battle's rows (arena/tables/live_store.py); this module runs the steps and hears the voter's clip.

Steps, in order, so bad input costs nothing and a refusal stores nothing:
1. consent (both answers must be given, yes or no), sign-in (when required: on Spaces), then the audio itself:
   decodable (wav, flac, ogg), not longer than `max_utterance_s`, not shorter than `min_utterance_s`, not
   silent. Each refusal is a 4xx with a code and a plain message.
2. limits: live battles per user (signed-in name, else client address) per hour, counted from the stored battles;
   the arena's open-battle and per-address limits (arena/core/abuse.py); a global cap on live battles in flight.
3. both contestants are asked at once (eval_backend/clients/openai_chat.py, its caps and failure classes), while
   the voter's clip is transcribed (the scorer's Whisper; `hear`) on one thread of lower CPU priority, started once
   the first good reply is in: on the Space's 2 cores the local baselines are CPU-bound, and a transcription
   running beside them made their replies ~0.4 s later at the median (docs/benchmarks.md). Each reply is screened
   as soon as it is in, on our Whisper transcript of its audio and on the words the model says it spoke
   (eval_backend/moderation/replies.py's `screen_reply_audio`, as benchmark replies are); with screening on, the
   voter's clip is transcribed after both replies, so it never holds the Whisper a reply waits for. A contestant
   that fails, times out, sends no audio or a reply the screen flags or cannot screen (or that names a model: the
   arena's IdentityScreen), or whose reply is the same as the other's (arena/services/live_heard.py, issue 22), is replaced
   by another contestant not yet tried; when none is left or the deadline passes, the battle is void (503, nothing
   stored). Never a one-sided battle. A *submitted* model that opted in to live battles (arena/services/live_submitted.py)
   is called through the SSRF guard and the submission caps; its failed or slow call voids the battle at once and
   counts towards its live pause.
4. the transcript is screened: a crisis utterance gets the help notice (it does not block the battle). The
   battle does not wait for it: when the transcript is not ready once both replies are, the battle is stored and
   returned with `transcript_pending`, and the transcript, its screen verdict and the notice follow
   (`heard(battle_id, session)`; the page asks right after the battle, and the reveal shows what was heard).
5. the three clips are written under `<data dir>/live/<battle id>/` and the battle stored (arena_battles with
   source='live', arena_live: transcript, the replies' words, consent, deletion date). Votes go to the arena's
   ordinary vote path; the listen rule applies to the clips as to any battle's.

Retention: without consent to store, the clips and the words are deleted `retention_s` after the battle (it
stays votable until then); with it, after `keep_days`. `sweep()` deletes what is due (a background thread runs
it every `sweep_every_s`, EMPATHY_ARENA_LIVE_SWEEP_EVERY_S). A recording sent from the page is deleted from Gradio's
upload folder as soon as its battle holds its own copy (arena/ui/live_ui.py), so the sweep's copy is the only one.

Screening takes an injected callable `screen(text) -> ScreenResult` (flagged, crisis, categories, reason,
screen: eval_backend.safety's interface); by default eval_backend.safety.screen_text.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import random
import secrets
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from arena.core import covariates
from arena.core.abuse import Refused
from arena.core.clip_urls import battle_clip_url
from arena.services.live_heard import LiveHeard
from arena.services.live_heard import seconds as heard_seconds
from arena.services.live_intake import LiveRefused, LiveSettings, check_consent, decode_utterance
from arena.services.live_replies import LiveReplies, contestants_from_models
from arena.services.writer import WRITER  # the process's one writer thread, shared with votes
from arena.tables import battle_clips, live_store, storage
from eval_backend.audio.io import encode_wav
from eval_backend.config import ModelSpec
from eval_backend.safety import crisis_notice_markdown, screen_text

log = logging.getLogger(__name__)
__all__ = ["Heard", "LiveBattle", "LiveRefused", "LiveService", "LiveSettings", "contestants_from_models"]

HEAR_NICE = 10        # the voter's transcription yields the CPU to the contestants (niceness added to its thread)


@dataclass(frozen=True)
class LiveBattle:
    session: str
    battle_id: str
    audio: dict[str, str]              # user | A | B -> the battle's clip URLs (arena/web/media.py)
    min_listen_s: dict[str, float]
    first_heard: str
    expires_at: float
    transcript: str | None             # what was heard (the voter's own words)
    crisis_notice: str | None          # markdown, when the utterance read as a crisis
    replaced: int                      # contestants replaced on the way (failed, late, flagged)
    timing: dict = field(default_factory=dict)
    listening: dict = field(default_factory=dict)   # the listening rule's numbers for the page (ListenRule.payload)
    transcript_pending: bool = False   # the transcript and the crisis notice follow: LiveService.heard


@dataclass(frozen=True)
class Heard:
    """What was heard in the voter's clip and what the screen made of it."""
    transcript: str | None
    crisis: bool = False
    screen: str | None = None
    pending: bool = False              # not ready yet (asked with a short wait)

    @property
    def crisis_notice(self) -> str | None:
        return crisis_notice() if self.crisis else None


def default_screen() -> Callable | None:
    return screen_text


def crisis_notice() -> str:
    return crisis_notice_markdown()


def default_transcribe(samples: np.ndarray, sr: int) -> str:
    """The scorer's ASR (Whisper tiny.en, one per process: eval_backend/scoring/audio_metrics.py)."""
    from eval_backend.scoring.audio_metrics import transcriber  # why: loads Whisper and torch, only when used
    digest = hashlib.sha256(samples.tobytes() + str(sr).encode()).hexdigest()
    return transcriber().transcribe(digest, samples, sr)


def _yield_cpu() -> None:
    """Lower this thread's CPU priority (Linux nices threads one by one; elsewhere this does nothing)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HEAR_NICE)
    except (AttributeError, OSError):
        pass


# ---------------------------------------------------------------- the service
class LiveService:
    def __init__(self, arena, contestants: Iterable[ModelSpec] | Callable[[], list[ModelSpec]],
                 settings: LiveSettings | None = None, screen: Callable | None | str = "default",
                 transcribe: Callable[[np.ndarray, int], str] = default_transcribe,
                 transcribe_reply: Callable[[np.ndarray, int], str] = default_transcribe,
                 clock: Callable[[], float] = time.time, rng: random.Random | None = None,
                 submitted=None):
        """`submitted`: the submitted models that opted in to live battles (arena/services/live_submitted.py), or None."""
        self.arena = arena
        self.store = arena.store
        self.settings = settings or LiveSettings()
        self.screen = default_screen() if screen == "default" else screen
        self.transcribe = transcribe
        self.clock = clock
        # the contestants and their replies (arena/services/live_replies.py)
        self.replies = LiveReplies(arena.store, arena.settings, self.settings,
                                   contestants if callable(contestants) else (lambda c=list(contestants): c),
                                   arena.paused, self.screen, transcribe_reply, rng or random.SystemRandom(),
                                   submitted)
        self.contestants, self.reachable = self.replies.contestants, self.replies.reachable
        self._slots = threading.BoundedSemaphore(self.settings.concurrency)
        self._sweeper: threading.Thread | None = None
        # one thread for the voter's transcripts (the Whisper runs one clip at a time anyway), at low priority
        self._hear_pool = ThreadPoolExecutor(1, thread_name_prefix="live-hear", initializer=_yield_cpu)
        self._pending: dict[str, tuple[str, Future]] = {}    # battle id -> (session, Heard future)
        self._pending_lock = threading.Lock()

    # --------------------------------------------------------- status
    def ready(self) -> bool:
        return len(self.reachable()) >= 2

    # --------------------------------------------------------- retention
    def sweep(self) -> list[str]:
        """Delete the clips and words of live battles past their date (see the module doc)."""
        return live_store.delete_due(self.store, self.clock())

    def start_sweeper(self) -> None:
        def loop():
            while True:
                try:
                    self.sweep()
                except Exception:   # a failed sweep must not stop the next one
                    log.exception("live retention sweep failed")
                time.sleep(self.settings.sweep_every_s)
        if self._sweeper is None:
            self._sweeper = threading.Thread(target=loop, name="live-retention", daemon=True)
            self._sweeper.start()

    # --------------------------------------------------------- a battle
    def admit(self, session: str, ip: str | None, user: str | None):
        """Sign-in and the per-user limit (stored battles), then the arena's in-memory limits. Returns the ticket."""
        s = self.settings
        if s.require_sign_in and not user:
            raise LiveRefused(401, "sign_in", "sign in with Hugging Face to use your voice")
        since = self.clock() - 3600
        column, key = ('"user"', user) if user else ("ip_hash", self.arena.ip_hash(ip))
        if live_store.recent_count(self.store, column, key, since) >= s.user_per_hour:
            who = "this account" if user else "this network address"
            raise LiveRefused(429, "rate_limited", f"{who} has started {s.user_per_hour} live battles in the last "
                                                   "hour; please wait a little", retry_after_s=600)
        try:
            return self.arena.admit_battle(session, ip)
        except Refused as exc:
            raise LiveRefused(429, exc.reason_code, exc.message, exc.retry_after_s) from None

    async def battle(self, audio: bytes, session: str, ip: str | None, user: str | None = None,
                     consent_store=None, consent_release=None) -> LiveBattle:
        t0 = time.perf_counter()
        store_ok, release_ok = check_consent(consent_store, consent_release)
        if self.settings.require_sign_in and not user:
            raise LiveRefused(401, "sign_in", "sign in with Hugging Face to use your voice")
        samples, sr = decode_utterance(audio, self.settings)
        ticket = self.admit(session, ip, user)
        if not self._slots.acquire(blocking=False):
            self.arena.gate.release(ticket)
            raise LiveRefused(503, "busy", "live battles are busy right now; try again in a few seconds",
                              retry_after_s=5)
        try:
            result = await self._battle(samples, sr, session, ip, user, store_ok, release_ok, t0)
        except BaseException:
            self.arena.gate.release(ticket)
            raise
        finally:
            self._slots.release()
        self.arena.gate.opened(ticket, result.battle_id, result.expires_at)
        return result

    def battle_sync(self, *args, **kwargs) -> LiveBattle:
        """For synchronous callers (the Gradio tab's worker threads)."""
        return asyncio.run(self.battle(*args, **kwargs))

    def warm_up(self) -> None:
        """Load the transcriber on its low-priority thread now (one discarded pass over a second of a quiet tone),
        not on the first voter's clip: loading Whisper on 2 busy cores takes seconds."""
        tone = (0.01 * np.sin(np.arange(16000) * 2 * np.pi * 220 / 16000)).astype(np.float32)

        def warm() -> None:
            _yield_cpu()
            self.hear(tone, 16000)
        # a daemon thread, not the hearing pool: the interpreter joins a pool's threads at exit, so a SIGTERM
        # right after start would wait for Whisper to finish loading (the model's loader is locked: a voter's
        # first clip meanwhile waits for the same load, it does not start a second one)
        threading.Thread(target=warm, name="live-hear-warm", daemon=True).start()

    def hear(self, samples: np.ndarray, sr: int) -> Heard:
        """Transcribe and screen the voter's clip (on the low-priority thread). Never raises: no transcript is a
        smaller loss than no battle."""
        try:
            transcript = (self.transcribe(samples, sr) or "").strip() or None
        except Exception:
            return Heard(None)
        if not transcript or self.screen is None:
            return Heard(transcript)
        try:
            verdict = self.screen(transcript)
        except Exception:
            return Heard(transcript)
        return Heard(transcript, bool(verdict.crisis), getattr(verdict, "screen", None))

    def heard(self, battle_id: str, session: str, wait_s: float = 10.0) -> Heard | None:
        """The voter's transcript and its screen verdict, waiting up to `wait_s` while it is being made; None
        when the battle is unknown or not this session's (the same answer: no oracle)."""
        with self._pending_lock:
            entry = self._pending.get(battle_id)
        if entry is not None:
            owner, future = entry
            if not secrets.compare_digest(owner.encode(), str(session).encode()):
                return None
            try:
                return future.result(timeout=max(0.0, wait_s))
            except FutureTimeout:
                return Heard(None, pending=True)
        owner = storage.battle_session(self.store, battle_id)
        found = live_store.heard(self.store, battle_id)
        if found is None or owner is None or not secrets.compare_digest(owner.encode(), str(session).encode()):
            return None
        return Heard(found["transcript"], bool(found["crisis"]), found["screen"])

    def _heard_later(self, battle_id: str, session: str, future: Future) -> None:
        """Store the transcript when it is ready (the battle row is already written), then forget the future."""
        with self._pending_lock:
            self._pending[battle_id] = (session, future)

        def write(done: Future) -> None:
            try:
                h = done.result()
                with self.store.transaction() as conn:
                    live_store.set_heard(conn, battle_id, h.transcript, h.crisis, h.screen)
            except Exception:
                log.exception("storing the transcript of live battle %s failed", battle_id)
            finally:
                with self._pending_lock:
                    self._pending.pop(battle_id, None)
        future.add_done_callback(lambda done: WRITER.submit(write, done))

    async def _battle(self, samples, sr, session, ip, user, store_ok, release_ok, t0) -> LiveBattle:
        battle_id = secrets.token_urlsafe(24)
        folder = live_store.battle_dir(self.store.root, battle_id)
        folder.mkdir(parents=True)
        hearing: Future | None = None
        try:
            user_wav = encode_wav(samples, sr)
            (folder / "user.wav").write_bytes(user_wav)
            loop = asyncio.get_running_loop()

            def start_hearing() -> None:
                nonlocal hearing
                if hearing is None:
                    hearing = self._hear_pool.submit(self.hear, samples, sr)
            t_asked = time.perf_counter()
            heard_clips = LiveHeard()      # the clips as heard, made once: the replies' check and the folder
            heard_clips.start(user_wav)    # the voter's clip is made while the models answer
            # with reply screening, each reply is transcribed by the same Whisper (one clip at a time): the voter's
            # clip waits until both replies are screened, so it never delays a reply (it is off the path anyway)
            early = start_hearing if self.screen is None else (lambda: None)
            replies, replaced = await self.replies.answer(battle_id, folder / "user.wav", user_wav, early, heard_clips)
            start_hearing()
            t_replies = time.perf_counter()
            pending = not hearing.done()      # the battle does not wait for the voter's transcript
            heard = Heard(None, pending=True) if pending else hearing.result()
            a, b = replies
            (folder / "A.wav").write_bytes(a.audio)
            (folder / "B.wav").write_bytes(b.audio)
            rule = self.arena.settings.listen_rule     # the same listening rule as benchmark battles
            sources = {"user": user_wav, "A": a.audio, "B": b.audio}
            clips = {c: heard_seconds(data) for c, data in sources.items()}   # as heard (arena/services/battle_audio.py)
            listen = rule.needs(clips)
            now = self.clock()
            expires = now + self.arena.settings.battle_ttl_s
            keep = self.settings.keep_days * 86400 if store_ok else self.settings.retention_s

            def write():
                ip_hash = self.arena.ip_hash(ip)
                with self.store.transaction() as conn:
                    storage.insert_battle(conn, live_store.battle_values(
                        battle_id=battle_id, session_id=session, user=user, ip_hash=ip_hash, model_a=a.model,
                        model_b=b.model, min_listen_s=sum(listen.values()), served_at=now, expires_at=expires),
                        source="live")       # covariates: _store_covariates, once the clips as heard exist
                    battle_clips.add_clips(conn, battle_id, clips)
                    live_store.insert_live(
                        conn, battle_id=battle_id, user=user, ip_hash=ip_hash, served_at=now,
                        transcript=heard.transcript, text_a=a.text, text_b=b.text, consent_store=store_ok,
                        consent_release=release_ok, crisis=heard.crisis, screen=heard.screen, replaced=replaced,
                        delete_after=now + keep)
            t_write = time.perf_counter()
            await loop.run_in_executor(WRITER, write)
            heard_clips.write_later(folder, sources)    # the clip route waits for them (live_heard.wait_written)
            # the style covariates are measured on the clips as heard, once written (the vote copies them; a voter
            # must first fetch and hear the clips, which wait for the same writes)
            heard_clips.when_written(folder, ("A", "B"), lambda: self._store_covariates(battle_id, folder, a, b))
            t_stored = time.perf_counter()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)     # a battle not made leaves nothing behind
            if hearing is not None:
                hearing.cancel()                          # not started yet: no need to hear a void battle
            raise
        if pending:
            self._heard_later(battle_id, session, hearing)
        t_done = time.perf_counter()
        return LiveBattle(session, battle_id, {c: battle_clip_url(battle_id, c) for c in ("user", "A", "B")},
                          listen, "A", expires, heard.transcript, heard.crisis_notice, len(replaced),
                          {"replies_s": t_replies - t0, "total_s": t_done - t0,
                           "slowest_model_s": max(a.latency_s, b.latency_s),
                           "asked_s": t_asked - t0, "store_s": t_stored - t_write}, rule.payload(clips), pending)

    def _store_covariates(self, battle_id: str, folder: Path, a, b) -> None:
        cov = covariates.measure_battle((folder / "A.heard.wav", a.text), (folder / "B.heard.wav", b.text),
                                        (a.latency_s, b.latency_s))

        def write() -> None:
            with self.store.transaction() as conn:
                storage.set_battle_covariates(conn, battle_id, cov)
        WRITER.submit(write).result()

    # --------------------------------------------------------- the contestants
