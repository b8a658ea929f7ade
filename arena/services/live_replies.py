"""Live mode's replies: which contestants are offered and reachable, the pair asked, and both replies made
(replacing a contestant that fails, is flagged or says the same as the other; arena/services/live.py, step 3 of its module
doc). `LiveReplies` is a part of LiveService and receives its state."""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import numpy as np

from arena.config import DEFAULT_IDENTITY_PATTERNS, ArenaSettings
from arena.core import distinct
from arena.core.identity_screen import IdentityScreen
from arena.core.matchmaking import MatchParams, choose_pair
from arena.core.ratings import Rating
from arena.services.live_heard import VOID_SAME, LiveHeard
from arena.services.live_intake import LiveRefused, LiveSettings
from arena.services.live_submitted import SubmittedFailed, is_submitted
from arena.tables import live_store, storage
from eval_backend.audio.io import b64_wav
from eval_backend.benchmark.model import AudioRef
from eval_backend.clients import openai_chat
from eval_backend.clients.failures import CallFailure
from eval_backend.clients.limits import ReplyLimits
from eval_backend.config import ModelSpec, load_models
from eval_backend.moderation import ledger
from eval_backend.moderation.replies import screen_reply_audio
from eval_backend.store import Store
from eval_backend.tasks import SYSTEM_CONVERSATION, Request

log = logging.getLogger(__name__)


@dataclass
class _Reply:
    model: str
    text: str | None
    audio: bytes
    latency_s: float


def record_live_reply(store, battle_id: str, model: str, words: str, verdict) -> None:
    """Record a live reply the screen held (replaced in the battle) for the operator's queue. Only replies are
    recorded: the voter's own words follow the live retention rules and are not copied into the records."""
    try:
        ledger.record(store, "live_reply", f"{battle_id}/{model}", words, verdict)
    except Exception:        # the screen's records are optional here (a bare test screen, no safety package)
        log.exception("could not record a held live reply")


def contestants_from_models(models_file: str | None = None, baseline_url: str | None = None) -> list[ModelSpec]:
    """The configured models that take audio and speak (models.yaml by default); `baseline_url` replaces the
    baselines' base URL (the app's baseline server listens on its own port)."""
    out = []
    for spec in load_models(models_file).values():
        if not spec.audio_output:
            continue
        if spec.baseline and baseline_url:
            spec = dataclasses.replace(spec, base_url=baseline_url)
        out.append(spec)
    return out


class LiveReplies:
    """The contestants and their replies for one live battle."""

    def __init__(self, store: Store, arena_settings: ArenaSettings, settings: LiveSettings,
                 contestants: Callable[[], list[ModelSpec]], paused: Callable[[], set[str]],
                 screen: Callable | None, transcribe_reply: Callable[[np.ndarray, int], str], rng: random.Random,
                 submitted=None):
        """`paused`: the arena's paused models; `submitted`: the submitted models that opted in to live battles
        (arena/services/live_submitted.py), or None."""
        self.store = store
        self.arena_settings = arena_settings
        self.settings = settings
        self._contestants = contestants
        self._paused = paused
        self.screen = screen
        self.transcribe_reply = transcribe_reply     # our transcript of each reply's audio, for the screen
        self.rng = rng
        self.submitted = submitted
        self._reachable: tuple[float, list[str]] = (0.0, [])

    def contestants(self) -> list[ModelSpec]:
        paused = self._paused()
        own = [s for s in self._contestants() if s.name not in paused]
        names = {s.name for s in own}
        return own + [s for s in (self.submitted.specs() if self.submitted else []) if s.name not in names]

    def reachable(self, max_age_s: float = 5.0) -> list[str]:
        """Contestants whose server accepts a connection now (checked at most every `max_age_s`): live mode is
        offered as soon as two answer, whatever the benchmark bootstrap is doing."""
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

    def pair(self, specs: dict[str, ModelSpec]) -> tuple[str, str]:
        names = sorted(specs)
        pairs = [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
        stored = storage.stored_ratings(self.store)        # one read for both ratings and vote counts
        current = {m: Rating(r["mu"], r["sigma"]) for m, r in stored.items()}
        counts = {m: r["votes"] for m, r in stored.items()}
        params = MatchParams(self.arena_settings.new_model_boost, self.arena_settings.bridge_boost,
                             trueskill=self.arena_settings.trueskill)
        pair = choose_pair(pairs, current, counts, [], self.rng, set(), params)
        return pair if self.rng.random() < 0.5 else (pair[1], pair[0])

    async def answer(self, battle_id: str, user_wav: Path, wav: bytes, on_first: Callable[[], None] = lambda: None,
                      heard: LiveHeard | None = None) -> tuple[tuple[_Reply, _Reply], list]:
        """Both replies (replacing failed contestants, and one of two replies that do not differ: `heard`);
        `on_first()` runs when the first good reply is in."""
        heard = heard or LiveHeard()
        specs = {s.name: s for s in self.contestants()}
        if len(specs) < 2:
            raise LiveRefused(503, "no_contestants", "live mode needs two models that listen and speak; fewer "
                                                     "than two are configured")
        started = time.monotonic()
        deadline = started + self.settings.deadline_s
        request = Request(live_store.request_id(battle_id), "live", "-", "-", SYSTEM_CONVERSATION, "",
                          (AudioRef(str(user_wav)),), True)
        audio_b64 = [b64_wav(wav)]             # the bytes just written to `user_wav`, not read back
        limits = ReplyLimits(max_audio_s=self.settings.reply_audio_s, show_body=False)
        leak = IdentityScreen(self.arena_settings.identity_patterns or DEFAULT_IDENTITY_PATTERNS, list(specs))
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

        first = self.pair(specs)
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
                            # the operator's only trace of a void battle (nothing of it is stored)
                            log.warning("live battle void after %.1f s (deadline %.0f s): %s",
                                        time.monotonic() - started, self.settings.deadline_s, replaced)
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

