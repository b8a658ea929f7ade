"""The candidate index: which requests the arena can serve, with the models whose replies to them are usable, and
the model pairs worth a battle (a part of ArenaService, arena/services/service.py).

`CandidateIndex(store, settings, heard)` holds the benchmarks it serves and the index built from them; the index
is rebuilt when the replies table, the heard clips or (screening on) a screening decision change.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from arena.config import ArenaSettings
from arena.core import distinct
from arena.core.identity_screen import IdentityScreen
from arena.services.battle_audio import HeardAudio
from arena.tables import storage
from eval_backend.audio.io import BadAudio
from eval_backend.benchmark.loaders import load_benchmark
from eval_backend.benchmark.model import Benchmark
from eval_backend.moderation import ledger
from eval_backend.moderation.replies import KIND, subject_of
from eval_backend.showcase import in_arena_pool
from eval_backend.store import Reply, Store
from eval_backend.tasks import SPOKEN_TASKS, build_requests

log = logging.getLogger(__name__)
SYNC_MEASURE = 8           # clips measured while a voter waits, when nothing else is servable (CandidateIndex.servable)


@dataclass
class _Candidate:
    """A request the arena can serve, with the models whose replies to it are usable."""
    benchmark_hash: str
    request_id: str
    task: str
    item_id: str
    variant: str
    user_audio: str
    context_text: str | None
    attribute: str | None
    replies: dict[str, Reply] = field(default_factory=dict)
    crisis: set[str] = field(default_factory=set)   # models whose reply here read as a crisis (the notice)
    left_out: dict = field(default_factory=dict)    # {(model, model): reason}: pairs not worth a vote (distinct.py)
    same_words: set = field(default_factory=set)    # servable pairs saying the same words (served last)


class CandidateIndex:
    """The servable requests of the benchmarks the arena serves, and the model pairs they offer."""

    def __init__(self, store: Store, settings: ArenaSettings, heard: HeardAudio,
                 benchmarks: Iterable[Benchmark] | None = None):
        """`benchmarks`: None loads `settings.benchmark_specs` from the store's data dir on first use."""
        self.store = store
        self.settings = settings
        self.heard = heard
        self._benchmarks = list(benchmarks) if benchmarks is not None else None
        self.benchmark_errors: dict[str, str] = {}
        self._lock = threading.Lock()
        self._index: list[_Candidate] | None = None
        self._index_key: tuple | None = None
        self._pairs: set[tuple[str, str]] = set()      # model pairs sharing a servable request
        self._user_audio: dict[tuple[str, str], str] = {}   # (benchmark hash, request id) -> user clip

    def set_benchmarks(self, benchmarks: Iterable[Benchmark]) -> None:
        """Serve these benchmarks from now on (the Space calls it once its background preparation ends)."""
        with self._lock:
            self._benchmarks = list(benchmarks)
            self.benchmark_errors.clear()
            self._index = None
            self._index_key = None

    def benchmarks(self) -> list[Benchmark]:
        if self._benchmarks is None:
            loaded = []
            for spec in self.settings.benchmark_specs:
                try:
                    loaded.append(load_benchmark(spec, self.store.root))
                except (ValueError, OSError) as exc:   # BenchmarkSpecError is a ValueError
                    self.benchmark_errors[spec] = str(exc)
            self._benchmarks = loaded
        return self._benchmarks

    def _version(self) -> tuple:
        """What the index depends on: the replies table, and (screening on) the screening decisions' version
        token: two reads of the database per battle, no screening (that runs when replies are stored)."""
        key = tuple(self.store.replies_version()) + (self.heard.version,)   # + the replies measured since
        return key + (ledger.version(self.store),) if self.settings.screen_replies else key

    def _screened(self, replies: list[Reply]) -> tuple[list[Reply], set[str]]:
        """(the replies a voter may hear, the reply subjects that read as a crisis). Screening on: only replies
        screened clean or released by the operator (eval_backend/moderation); unscreened ones wait."""
        if not self.settings.screen_replies:
            return replies, set()
        states = ledger.states(self.store, KIND, [subject_of(r) for r in replies])
        keep = [r for r in replies if states[subject_of(r)].cleared]
        return keep, {subject_of(r) for r in keep if states[subject_of(r)].crisis}

    def reply_cleared(self, reply: Reply | None) -> bool:
        """May this stored reply be played (Browse, the model page, the reply media route)?"""
        if reply is None or reply.status != "ok":
            return False
        return not self.settings.screen_replies or ledger.state(self.store, KIND, subject_of(reply)).cleared

    def candidates(self) -> tuple[list[_Candidate], set[tuple[str, str]]]:
        """Servable requests and the model pairs they offer, rebuilt when the replies table (or, with screening
        on, a screening decision) changes."""
        key = self._version()
        with self._lock:
            if self._index is not None and key == self._index_key:
                return self._index, self._pairs
            benchmarks = self.benchmarks()
            screen = IdentityScreen(self.settings.identity_patterns, self.store.models_with_replies())
            index: list[_Candidate] = []
            user_audio: dict[tuple[str, str], str] = {}
            for b in benchmarks:
                by_id = {}
                for req in build_requests(b, SPOKEN_TASKS):
                    if req.usable and req.audios and in_arena_pool(req.id) and Path(req.audios[0].path).is_file():
                        text = req.text.strip() or None
                        by_id[req.id] = _Candidate(b.hash, req.id, req.task, req.item_id, req.variant,
                                                   str(Path(req.audios[0].path).resolve()), text, req.voice)
                for task in SPOKEN_TASKS:
                    usable = [r for r in self.store.replies(benchmark_hash=b.hash, task=task, status="ok")
                              if r.request_id in by_id and r.audio_path and self.store.abspath(r.audio_path).is_file()
                              and not screen.leaks(r.text, r.transcript)]
                    usable, crisis = self._screened(usable)
                    for r in usable:
                        cand = by_id[r.request_id]
                        cand.replies[r.model] = r
                        if subject_of(r) in crisis:
                            cand.crisis.add(r.model)
                index += [c for c in by_id.values() if len(c.replies) >= 2]
                user_audio.update(((b.hash, c.request_id), c.user_audio) for c in by_id.values())
            pairs = self._distinct_pairs(index)
            self._index, self._pairs, self._index_key = index, pairs, key
            self._user_audio = user_audio
            return index, pairs

    def user_audio(self, benchmark_hash: str, request_id: str) -> str | None:
        """The user clip of one request (the index is built first on a replica that has not served yet)."""
        key = (benchmark_hash, request_id)
        if key not in self._user_audio:
            self.candidates()
        return self._user_audio.get(key)

    def _distinct_pairs(self, index: list[_Candidate]) -> set[tuple[str, str]]:
        """The model pairs worth a battle on some request (arena/core/distinct.py), marking each candidate's left-out
        pairs; the clips whose delivery must be measured first are queued for the background (urgent), then every
        clip of the index (so serving finds them made)."""
        def path(r) -> str:
            return str(self.store.abspath(r.audio_path))

        def delivery(r):
            clip = self.heard.known(path(r), measured=True)
            return clip.delivery if clip else None
        pairs, pending = distinct.screen(index, lambda r: distinct.words_key(r.transcript or r.text),
                                         lambda r: self.heard.sha(path(r)), delivery)
        self.heard.prepare_later([path(r) for r in pending], urgent=True)
        self.heard.prepare_later([c.user_audio for c in index] + [path(r) for c in index for r in c.replies.values()])
        return pairs

    def servable(self, paused: set[str]) -> tuple[list[_Candidate], set[tuple[str, str]]]:
        """The candidate index. When no unpaused pair is servable yet but some same-word pairs wait for their
        delivery to be measured, up to SYNC_MEASURE of their clips are measured now: the voter waits a few seconds
        rather than seeing no battle (a model the worker just handed off is servable at once)."""
        index, pairs = self.candidates()
        if any(a not in paused and b not in paused for a, b in pairs):
            return index, pairs
        waiting = [str(self.store.abspath(c.replies[m].audio_path)) for c in index
                   for pair, why in c.left_out.items() if why == distinct.NOT_MEASURED and not set(pair) & paused
                   for m in pair]
        waiting = list(dict.fromkeys(waiting))[:SYNC_MEASURE]
        if not waiting:
            return index, pairs
        for path in waiting:
            try:
                self.heard.clip(path, measure=True)
            except (BadAudio, OSError) as exc:
                log.warning("battle clip %s cannot be measured: %s", Path(path).name, exc)
        self.heard.bump()
        return self.candidates()

    def can_serve(self) -> bool:
        """Whether a battle could be served now: two unpaused models share a servable request (the opening
        banner, arena/ui/opening_banner.py, asks it until the answer is yes)."""
        paused = storage.paused_models(self.store)
        _, pairs = self.candidates()
        return any(a not in paused and b not in paused for a, b in pairs)

    def left_out_pairs(self) -> dict:
        """The health view: request pairs servable and left out of matchmaking, by reason (arena/core/distinct.py);
        pairs of paused models are not counted."""
        paused = storage.paused_models(self.store)
        index, _ = self.candidates()
        live = [c for c in index if sum(m not in paused for m in c.replies) >= 2]
        if paused:
            live = [_Candidate(**{**c.__dict__, "replies": {m: r for m, r in c.replies.items() if m not in paused},
                                  "left_out": {p: w for p, w in c.left_out.items() if not set(p) & paused},
                                  "same_words": {p for p in c.same_words if not set(p) & paused}})
                    for c in live]
        return distinct.left_out_counts(live)
