"""Live battles: the voter's own recording, answered live by two anonymous models, voted on like any battle.

    live = LiveService(arena, contestants=[spec, ...])          # settings: LiveSettings.from_env()
    battle = await live.battle(audio_bytes, session, ip, user=None, consent_store=True, consent_release=False)
    # -> LiveBattle (the arena's battle view + transcript, crisis notice) or raises LiveRefused(status, code, msg)

Steps, in order, so bad input costs nothing and a refusal stores nothing:
1. consent (both answers must be given, yes or no), sign-in (when required: on Spaces), then the audio itself:
   decodable (wav, flac, ogg), not longer than `max_utterance_s`, not shorter than `min_utterance_s`, not
   silent. Each refusal is a 4xx with a code and a plain message.
2. limits: live battles per user (signed-in name, else client address) per hour, counted from the stored battles;
   the arena's open-battle and per-address limits (arena/abuse.py); a global cap on live battles in flight.
3. both contestants are asked at once (eval_backend/clients/openai_chat.py, its caps and failure classes), while
   the voter's clip is transcribed (the scorer's Whisper; `hear`) on one thread of lower CPU priority, started once
   the first good reply is in: on the Space's 2 cores the local baselines are CPU-bound, and a transcription
   running beside them made their replies ~0.4 s later at the median (docs/benchmarks.md). Each reply is screened
   as soon as it is in, on our Whisper transcript of its audio and on the words the model says it spoke
   (eval_backend/moderation/replies.py's `screen_reply_audio`, as benchmark replies are); with screening on, the
   voter's clip is transcribed after both replies, so it never holds the Whisper a reply waits for. A contestant
   that fails, times out, sends no audio or a reply the screen flags or cannot screen (or that names a model: the
   arena's IdentityScreen), or whose reply is the same as the other's (arena/live_heard.py, issue 22), is replaced
   by another contestant not yet tried; when none is left or the deadline passes, the battle is void (503, nothing
   stored). Never a one-sided battle. A *submitted* model that opted in to live battles (arena/live_submitted.py)
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
upload folder as soon as its battle holds its own copy (arena/live_ui.py), so the sweep's copy is the only one.

Screening takes an injected callable `screen(text) -> ScreenResult` (flagged, crisis, categories, reason,
screen: eval_backend.safety's interface); by default eval_backend.safety.screen_text when that module exists.
"""
from __future__ import annotations

import asyncio
import hashlib
import io
import math
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
import soundfile as sf

from eval_backend.audio.io import b64_wav, encode_wav
from eval_backend.benchmark.model import AudioRef
from eval_backend.clients import openai_chat
from eval_backend.clients.failures import CallFailure
from eval_backend.clients.limits import ReplyLimits
from eval_backend.config import ModelSpec
from eval_backend.moderation.replies import screen_reply_audio
from eval_backend.tasks import SYSTEM_CONVERSATION, Request

from . import battle_clips, covariates, distinct, live_store, storage
from .abuse import Refused
from .live_heard import VOID_SAME, LiveHeard
from .live_heard import seconds as heard_seconds
from .live_submitted import SubmittedFailed, is_submitted
from .matchmaking import MatchParams, choose_pair
from .media import battle_clip_url
from .ratings import Rating

MiB = 2 ** 20
HEAR_NICE = 10        # the voter's transcription yields the CPU to the contestants (niceness added to its thread)
LIVE_PREFIX = "EMPATHY_ARENA_LIVE_"
FALLBACK_CRISIS_NOTICE = (
    "**If you are in danger or thinking about harming yourself, please reach out now.** Call your local "
    "emergency number, or find a free, confidential helpline in your country at https://findahelpline.com. "
    "You do not have to go through this alone.")


@dataclass(frozen=True)
class LiveSettings:
    max_utterance_s: float = 30.0       # the voter's clip
    min_utterance_s: float = 0.5
    silence_dbfs: float = -45.0         # a clip whose loudest 50 ms window is quieter than this is "silent"
    deadline_s: float = 30.0            # from the upload to both replies ready, replacements included
    call_timeout_s: float = 20.0        # one contestant's call (never past the deadline)
    retention_s: float = 3600.0         # clips and words kept without consent to store
    keep_days: float = 365.0            # clips and words kept with consent to store
    user_per_hour: int = 20             # live battles per signed-in user (else per client address) per hour
    concurrency: int = 2                # live battles in flight in this process (each costs two model calls)
    require_sign_in: bool = False       # on Spaces: live mode needs the Hub sign-in
    max_upload_bytes: int = 8 * MiB     # the upload (also the body cap of the live route)
    reply_audio_s: float = 60.0         # one reply's audio
    sweep_every_s: float = 300.0

    @classmethod
    def from_env(cls, env: dict | None = None, spaces: bool | None = None) -> "LiveSettings":
        env = os.environ if env is None else env
        if spaces is None:
            # Gradio's own test, as leaderboard/identity.py:on_spaces (not imported: arena never imports leaderboard)
            from gradio.utils import get_space
            spaces = get_space() is not None

        def num(name: str, default: float, kind=float):
            raw = env.get(LIVE_PREFIX + name)
            if raw is None or not raw.strip():
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise ValueError(f"{LIVE_PREFIX}{name} must be a number, got {raw!r}") from None
            if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"{LIVE_PREFIX}{name} must be a finite number >= 0, got {raw!r}")
            return value
        d = cls()
        return cls(max_utterance_s=num("MAX_S", d.max_utterance_s), deadline_s=num("DEADLINE_S", d.deadline_s),
                   call_timeout_s=num("CALL_TIMEOUT_S", d.call_timeout_s),
                   retention_s=num("RETENTION_S", d.retention_s), keep_days=num("KEEP_DAYS", d.keep_days),
                   user_per_hour=num("PER_USER_HOUR", d.user_per_hour, int),
                   concurrency=max(1, num("CONCURRENCY", d.concurrency, int)),
                   sweep_every_s=max(0.5, num("SWEEP_EVERY_S", d.sweep_every_s)),
                   require_sign_in=spaces or env.get(LIVE_PREFIX + "SIGN_IN", "0") == "1")


class LiveRefused(Exception):
    """A live battle not made: HTTP `status`, a `code`, a plain `message`; nothing was stored."""

    def __init__(self, status: int, code: str, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after_s = status, code, message, retry_after_s


@dataclass(frozen=True)
class LiveBattle:
    session: str
    battle_id: str
    audio: dict[str, str]              # user | A | B -> the battle's clip URLs (arena/media.py)
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


@dataclass
class _Reply:
    model: str
    text: str | None
    audio: bytes
    latency_s: float


def default_screen() -> Callable | None:
    try:
        from eval_backend.safety import screen_text
    except ImportError:
        return None
    return screen_text


def crisis_notice() -> str:
    try:
        from eval_backend.safety import crisis_notice_markdown
    except ImportError:
        return FALLBACK_CRISIS_NOTICE
    return crisis_notice_markdown()


def record_live_reply(store, battle_id: str, model: str, words: str, verdict) -> None:
    """Record a live reply the screen held (replaced in the battle) for the operator's queue. Only replies are
    recorded: the voter's own words follow the live retention rules and are not copied into the records."""
    try:
        from eval_backend.moderation import ledger
        ledger.record(store, "live_reply", f"{battle_id}/{model}", words, verdict)
    except Exception:        # the screen's records are optional here (a bare test screen, no safety package)
        import logging
        logging.getLogger(__name__).exception("could not record a held live reply")


def default_transcribe(samples: np.ndarray, sr: int) -> str:
    """The scorer's ASR (Whisper tiny.en, one per process: eval_backend/scoring/audio_metrics.py)."""
    from eval_backend.scoring.audio_metrics import transcriber
    digest = hashlib.sha256(samples.tobytes() + str(sr).encode()).hexdigest()
    return transcriber().transcribe(digest, samples, sr)


def _yield_cpu() -> None:
    """Lower this thread's CPU priority (Linux nices threads one by one; elsewhere this does nothing)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HEAR_NICE)
    except (AttributeError, OSError):
        pass


def contestants_from_models(models_file: str | None = None, baseline_url: str | None = None) -> list[ModelSpec]:
    """The configured models that take audio and speak (models.yaml by default); `baseline_url` replaces the
    baselines' base URL (the app's baseline server listens on its own port)."""
    import dataclasses

    from eval_backend.config import load_models
    out = []
    for spec in load_models(models_file).values():
        if not spec.audio_output:
            continue
        if spec.baseline and baseline_url:
            spec = dataclasses.replace(spec, base_url=baseline_url)
        out.append(spec)
    return out


# ---------------------------------------------------------------- input checks (pure)
def check_consent(consent_store, consent_release) -> tuple[bool, bool]:
    """Both answers are required (yes or no): the consent step must have been seen."""
    values = []
    for name, raw in (("consent_store", consent_store), ("consent_release", consent_release)):
        if isinstance(raw, bool):
            values.append(raw)
        elif isinstance(raw, str) and raw.strip().lower() in ("true", "1", "yes", "on"):
            values.append(True)
        elif isinstance(raw, str) and raw.strip().lower() in ("false", "0", "no", "off"):
            values.append(False)
        else:
            raise LiveRefused(422, "missing_consent", f"answer the consent question '{name}' (true or false) "
                                                      "before recording")
    store, release = values
    if release and not store:
        raise LiveRefused(422, "bad_consent", "a recording can enter the public data only if it may be stored")
    return store, release


def decode_utterance(data: bytes, settings: LiveSettings) -> tuple[np.ndarray, int]:
    """Mono float32 and its rate, or LiveRefused: not audio (415), too long (413), too short or silent (422)."""
    if not data:
        raise LiveRefused(422, "no_audio", "send a recording in the 'audio' field")
    if len(data) > settings.max_upload_bytes:
        raise LiveRefused(413, "too_large", f"the recording is larger than {settings.max_upload_bytes:,} bytes")
    try:
        info = sf.info(io.BytesIO(data))
    except Exception:     # libsndfile raises several types for what it cannot read
        raise LiveRefused(415, "not_audio", "this is not audio we can read (send wav, flac or ogg)") from None
    if info.samplerate <= 0 or info.frames <= 0:
        raise LiveRefused(415, "not_audio", "the audio has no samples")
    seconds = info.frames / info.samplerate
    if seconds > settings.max_utterance_s + 0.05:    # checked from the header, before decoding it all
        raise LiveRefused(413, "too_long", f"the recording is {seconds:.1f} s long; the limit is "
                                           f"{settings.max_utterance_s:g} s")
    try:
        samples, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception:
        raise LiveRefused(415, "not_audio", "this audio cannot be decoded") from None
    mono = samples.mean(axis=1)
    seconds = len(mono) / sr
    if seconds > settings.max_utterance_s + 0.05:
        raise LiveRefused(413, "too_long", f"the recording is {seconds:.1f} s long; the limit is "
                                           f"{settings.max_utterance_s:g} s")
    if seconds < settings.min_utterance_s:
        raise LiveRefused(422, "too_short", f"the recording is {seconds:.2f} s long; say at least a few words "
                                            f"(at least {settings.min_utterance_s:g} s)")
    if not np.all(np.isfinite(mono)):
        raise LiveRefused(415, "not_audio", "the audio holds invalid samples")
    if loudest_dbfs(mono, sr) < settings.silence_dbfs:
        raise LiveRefused(422, "silent", "the recording is silent: check the microphone and try again")
    return mono.astype(np.float32), int(sr)


def loudest_dbfs(mono: np.ndarray, sr: int, window_s: float = 0.05) -> float:
    """RMS level (dBFS) of the loudest 50 ms window."""
    n = max(1, int(sr * window_s))
    usable = len(mono) // n * n
    frames = mono[:usable].reshape(-1, n) if usable else mono.reshape(1, -1)
    rms = float(np.sqrt(np.max(np.mean(frames.astype(np.float64) ** 2, axis=1))))
    return 20 * math.log10(rms) if rms > 0 else -math.inf


# ---------------------------------------------------------------- the service
class LiveService:
    def __init__(self, arena, contestants: Iterable[ModelSpec] | Callable[[], list[ModelSpec]],
                 settings: LiveSettings | None = None, screen: Callable | None | str = "default",
                 transcribe: Callable[[np.ndarray, int], str] = default_transcribe,
                 transcribe_reply: Callable[[np.ndarray, int], str] = default_transcribe,
                 clock: Callable[[], float] = time.time, rng: random.Random | None = None,
                 submitted=None):
        """`submitted`: the submitted models that opted in to live battles (arena/live_submitted.py), or None."""
        self.arena = arena
        self.submitted = submitted
        self.store = arena.store
        self._contestants = contestants if callable(contestants) else (lambda c=list(contestants): c)
        self.settings = settings or LiveSettings()
        self.screen = default_screen() if screen == "default" else screen
        self.transcribe = transcribe
        self.transcribe_reply = transcribe_reply     # our transcript of each reply's audio, for the screen
        self.clock = clock
        self.rng = rng or random.SystemRandom()
        self._slots = threading.BoundedSemaphore(self.settings.concurrency)
        self._reachable: tuple[float, list[str]] = (0.0, [])
        self._sweeper: threading.Thread | None = None
        # one thread for the voter's transcripts (the Whisper runs one clip at a time anyway), at low priority
        self._hear_pool = ThreadPoolExecutor(1, thread_name_prefix="live-hear", initializer=_yield_cpu)
        self._pending: dict[str, tuple[str, Future]] = {}    # battle id -> (session, Heard future)
        self._pending_lock = threading.Lock()

    # --------------------------------------------------------- status
    def contestants(self) -> list[ModelSpec]:
        paused = self.arena.paused()
        own = [s for s in self._contestants() if s.name not in paused]
        names = {s.name for s in own}
        return own + [s for s in (self.submitted.specs() if self.submitted else []) if s.name not in names]

    def reachable(self, max_age_s: float = 5.0) -> list[str]:
        """Contestants whose server accepts a connection now (checked at most every `max_age_s`): live mode is
        offered as soon as two answer, whatever the benchmark bootstrap is doing."""
        import socket
        from urllib.parse import urlsplit

        checked_at, names = self._reachable
        if time.monotonic() - checked_at < max_age_s:
            return names
        names = []
        for spec in self.contestants():
            if is_submitted(spec):            # never probed from here: their calls go through the SSRF guard only
                names.append(spec.name)
                continue
            url = urlsplit(spec.base_url)
            try:
                with socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)),
                                              timeout=0.5):
                    names.append(spec.name)
            except (OSError, ValueError):
                pass
        self._reachable = (time.monotonic(), names)
        return names

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
                    import logging
                    logging.getLogger(__name__).exception("live retention sweep failed")
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
        from .writer import WRITER
        with self._pending_lock:
            self._pending[battle_id] = (session, future)

        def write(done: Future) -> None:
            try:
                h = done.result()
                with self.store.transaction() as conn:
                    live_store.set_heard(conn, battle_id, h.transcript, h.crisis, h.screen)
            except Exception:
                import logging
                logging.getLogger(__name__).exception("storing the transcript of live battle %s failed", battle_id)
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
            replies, replaced = await self._answer(battle_id, folder / "user.wav", user_wav, early, heard_clips)
            start_hearing()
            t_replies = time.perf_counter()
            pending = not hearing.done()      # the battle does not wait for the voter's transcript
            heard = Heard(None, pending=True) if pending else hearing.result()
            a, b = replies
            (folder / "A.wav").write_bytes(a.audio)
            (folder / "B.wav").write_bytes(b.audio)
            rule = self.arena.settings.listen_rule     # the same listening rule as benchmark battles
            sources = {"user": user_wav, "A": a.audio, "B": b.audio}
            clips = {c: heard_seconds(data) for c, data in sources.items()}   # as heard (arena/battle_audio.py)
            listen = rule.needs(clips)
            now = self.clock()
            expires = now + self.arena.settings.battle_ttl_s
            keep = self.settings.keep_days * 86400 if store_ok else self.settings.retention_s
            from .writer import WRITER   # the process's one writer thread, shared with votes

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
        from .writer import WRITER

        def write() -> None:
            with self.store.transaction() as conn:
                storage.set_battle_covariates(conn, battle_id, cov)
        WRITER.submit(write).result()

    # --------------------------------------------------------- the contestants
    def _pair(self, specs: dict[str, ModelSpec]) -> tuple[str, str]:
        names = sorted(specs)
        pairs = [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
        stored = storage.stored_ratings(self.arena.store)        # one read for both ratings and vote counts
        current = {m: Rating(r["mu"], r["sigma"]) for m, r in stored.items()}
        counts = {m: r["votes"] for m, r in stored.items()}
        params = MatchParams(self.arena.settings.new_model_boost, self.arena.settings.bridge_boost,
                             trueskill=self.arena.settings.trueskill)
        pair = choose_pair(pairs, current, counts, [], self.rng, set(), params)
        return pair if self.rng.random() < 0.5 else (pair[1], pair[0])

    async def _answer(self, battle_id: str, user_wav: Path, wav: bytes, on_first: Callable[[], None] = lambda: None,
                      heard: LiveHeard | None = None) -> tuple[tuple[_Reply, _Reply], list]:
        """Both replies (replacing failed contestants, and one of two replies that do not differ: `heard`);
        `on_first()` runs when the first good reply is in."""
        heard = heard or LiveHeard()
        specs = {s.name: s for s in self.contestants()}
        if len(specs) < 2:
            raise LiveRefused(503, "no_contestants", "live mode needs two models that listen and speak; fewer "
                                                     "than two are configured")
        deadline = time.monotonic() + self.settings.deadline_s
        request = Request(live_store.request_id(battle_id), "live", "-", "-", SYSTEM_CONVERSATION, "",
                          (AudioRef(str(user_wav)),), True)
        audio_b64 = [b64_wav(wav)]             # the bytes just written to `user_wav`, not read back
        limits = ReplyLimits(max_audio_s=self.settings.reply_audio_s, show_body=False)
        from .identity_screen import IdentityScreen
        from .config import DEFAULT_IDENTITY_PATTERNS
        leak = IdentityScreen(self.arena.settings.identity_patterns or DEFAULT_IDENTITY_PATTERNS, list(specs))
        tried: set[str] = set()
        replaced: list[dict] = []

        async def ask(name: str) -> _Reply:
            spec = specs[name]
            left = deadline - time.monotonic()
            timeout = max(0.0, min(self.settings.call_timeout_s, spec.timeout_s, left))
            if is_submitted(spec):              # untrusted: guarded, capped, recorded; a failure voids the battle
                answer = await self.submitted.call(spec, request, audio_b64, timeout, self.settings.reply_audio_s)
            else:
                async with asyncio.timeout(timeout):
                    answer = await openai_chat.call(session, spec, request, audio_b64, limits)
            if not answer.audio:
                raise CallFailure("bad_audio", "the reply has no audio")
            words = answer.transcript or answer.text
            if leak.leaks(answer.text, answer.transcript):
                raise CallFailure("screened", "the reply names a model or vendor")
            if self.screen is not None:
                # our transcript of the audio and the model's words, like a benchmark reply (issue 26); each
                # reply is transcribed as soon as it is in, so the first one's overlaps the other contestant
                loop = asyncio.get_running_loop()
                shown, verdict = await loop.run_in_executor(None, screen_reply_audio, answer.audio, words,
                                                            self.screen, self.transcribe_reply)
                if verdict.flagged or getattr(verdict, "status", "screened") != "screened":
                    # the operator's queue shows which contestant said what (the model's words, not the voter's)
                    await loop.run_in_executor(None, record_live_reply, self.store, battle_id, name, shown, verdict)
                    raise CallFailure("screened", f"the reply was flagged by the screen ({verdict.screen})")
            return _Reply(name, words, answer.audio, answer.latency_s)

        first = self._pair(specs)
        loop = asyncio.get_running_loop()
        async with openai_chat.new_session(4) as session:
            tasks = {}
            slot_model = dict(zip(("A", "B"), first))
            for slot, name in slot_model.items():
                tried.add(name)
                tasks[asyncio.ensure_future(ask(name))] = slot
            done_replies: dict[str, _Reply] = {}
            try:
                while tasks:
                    finished, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                    for task in finished:
                        slot = tasks.pop(task)
                        try:
                            reply = task.result()
                            other = done_replies.get("B" if slot == "A" else "A")
                            same = other and await loop.run_in_executor(
                                None, heard.same, reply.text, reply.audio, other.text, other.audio)
                            if not same:
                                done_replies[slot] = reply
                                heard.start(reply.audio)
                                on_first()
                                continue
                            cls = same               # the same reply as the other slot's: replace this one
                        except (CallFailure, TimeoutError) as exc:
                            cls = exc.error_class if isinstance(exc, CallFailure) else "timeout"
                        except SubmittedFailed as exc:   # a submitted model failed: the battle is void
                            raise LiveRefused(503, "void", str(exc)) from None
                        except Exception as exc:     # any other failure of one contestant: replace it
                            cls = type(exc).__name__
                        replaced.append({"slot": slot, "model": slot_model[slot], "class": cls})
                        spare = [n for n in sorted(specs) if n not in tried]
                        if not spare or time.monotonic() >= deadline:
                            raise LiveRefused(503, "void", VOID_SAME if cls in distinct.REASONS else
                                              "one of the two models could not answer in time and no other was "
                                              "free, so this battle is void (nothing was kept); please try again")
                        pick = self.rng.choice(spare)
                        tried.add(pick)
                        slot_model[slot] = pick
                        tasks[asyncio.ensure_future(ask(pick))] = slot
            finally:
                for task in tasks:
                    task.cancel()
                if tasks:
                    await asyncio.gather(*tasks, return_exceptions=True)
        return (done_replies["A"], done_replies["B"]), replaced

