"""The arena's API (plain Python; the Gradio UI and the HTTP load test call it).

    svc = ArenaService(Store(data_dir))                 # settings: arena.config.ArenaSettings
    view = svc.serve_battle(session_id, ip)            # BattleView: audio URLs only, no names, no paths
    svc.battle_clip(view.battle_id, "A")               # the file behind a clip URL (arena/media.py serves it)
    svc.clip_sent(view.battle_id, "A", 0, n, size)     # the audio route: bytes sent; fetched once they cover
                                                        # what the listening rule asks (clip_fetched: all of it)
    result = svc.submit_vote(view.battle_id, session_id, ip, "A", said="B", sounded="A",
                             listen={"played_s": {"user": 2.4, "A": 3, "B": 3}, "order": ["user", "B", "A"]})
    # -> VoteResult (names, transcripts, new ratings) or raises VoteRefused(reason_code, message);
    #    NotYet (a VoteRefused) when the listening does not cover the clips yet

Integrity rules, checked in one write transaction (BEGIN IMMEDIATE) so two racing
votes on one battle cannot both pass: the battle must exist, belong to the
voting session, be unvoted, unexpired, name the same models if the client sends
them, pass the listening rule (arena/listening.py: the reported listening covers
each clip, and is possible given when each clip's audio was fetched), and the
session and IP must be under their rate limits. Every refusal is logged with its
reason in arena_refused_votes, except `not_yet` (an honest early vote: no abuse).
The vote insert and the rating update commit together; the vote is acknowledged
(returned) only after the commit.

Reason codes: unknown_battle, wrong_session, already_voted, skipped, expired, not_yet (not
logged), impossible, tampered, rate_limited, bad_value.

`svc.skip_battle(battle_id, session_id)` closes an unvoted battle without a vote (the tab's "Skip"): no rating,
no refusal row, no abuse counter; a later vote on it is refused `skipped`.

Ratings are online TrueSkill per axis (overall, said, sounded, and the user's
vocal dimension: speaker, paralinguistic, environment), replayable exactly from
the vote log in id order (`replay_ratings`), with an order-free Bradley-Terry fit
beside them (`bradley_terry`).

The class is assembled from its three jobs: battles and votes (arena/battles.py), rating queries
(arena/rating_queries.py) and the vote log's import/export (arena/vote_log.py); the names they define are
importable from here as before. The writer thread for battles and votes is arena/writer.py.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from eval_backend.audio.io import BadAudio
from eval_backend.benchmark.model import Benchmark
from eval_backend import showcase
from eval_backend.store import Store

from . import battle_clips, covariates, distinct, storage
from .battle_audio import HeardAudio, HeardClip, named_clip
from .abuse import BattleGate
from .battles import (MAX_REASON_CHARS, Battles, BattleView, IdentityScreen, NoBattleAvailable, Revealed,
                      SkipRefused, VoteRefused, VoteResult, _Candidate, NotYet)
from .config import ArenaSettings
from . import vote_flags
from .gold import GoldBattles
from .pow import PowGate, purge_spent
from .ratings import Rating
from .rating_queries import RatingQueries, _num, board_order
from .storage import VoteRow
from .vote_log import VoteLog

log = logging.getLogger(__name__)
SYNC_MEASURE = 8           # clips measured while a voter waits, when nothing else is servable (_servable_index)
__all__ = ["MAX_REASON_CHARS", "ArenaService", "BattleView", "IdentityScreen", "NoBattleAvailable", "Revealed",
           "SkipRefused", "VoteRefused", "NotYet", "VoteResult", "board_order", "_Candidate", "_num"]


class ArenaService(Battles, VoteLog, RatingQueries):
    def __init__(self, store: Store, settings: ArenaSettings | None = None,
                 benchmarks: Iterable[Benchmark] | None = None,
                 clock: Callable[[], float] = time.time, rng: random.Random | None = None):
        """`benchmarks`: the benchmarks whose spoken requests may be served; by default
        `settings.benchmark_specs` are loaded (lazily, on the first battle) from the store's data dir."""
        self.store = store
        self.settings = (settings or ArenaSettings()).with_salt(store.root)
        self.clock = clock
        self.rng = rng or random.SystemRandom()
        self._benchmarks = list(benchmarks) if benchmarks is not None else None
        self.benchmark_errors: dict[str, str] = {}
        self._lock = threading.Lock()
        self._index: list[_Candidate] | None = None
        self._index_key: tuple | None = None
        self._measures = covariates.ClipMeasures()          # the style covariates of each heard clip
        # what voters hear: normalised clips (arena/battle_audio.py), each measured for the covariates as it is made
        self.heard = HeardAudio(store.root, also_measure=self._measures.audio)
        self._user_audio: dict[tuple[str, str], str] = {}   # (benchmark hash, request id) -> user clip
        self._pairs: set[tuple[str, str]] = set()      # model pairs sharing a servable request
        self._votes_lock = threading.RLock()
        self._votes_seen: list[VoteRow] = []
        self._edges: set[tuple[str, str]] = set()     # pairs compared at least once (matchmaking's graph)
        self._bt_cache: dict[str, tuple] = {}
        s = self.settings
        self.gate = BattleGate(s.ip_battles_per_minute, s.session_open_battles, s.ip_vote_attempts_per_minute,
                               s.battle_ttl_s, clock)
        self._signer = None
        self.fetches = battle_clips.FetchLog(store, clock)
        # integrity (issue 23): gold battles, proof of work, and the flags' weights the public fit applies
        self.gold = GoldBattles(store, s.gold_share, s.gold_constructions, Rating(s.trueskill.mu, s.trueskill.sigma),
                                self.heard.clip, self._measures.get, clock)
        self.pow = PowGate(lambda: self.signer, s, clock)
        self._weights_cache: tuple | None = None
        # blinding (eval_backend/showcase.py): models whose arena-pool replies battles may play
        self.arena_models = showcase.ArenaModels(store, lambda: [b.hash for b in self._load_benchmarks()])

    def integrity_upkeep(self) -> vote_flags.SweepReport:
        """The periodic integrity job (app_context.py's health loop, every 5 minutes; `python -m arena sweep`):
        flag the votes the rules catch now (arena/sweeps.py, arena/vote_flags.py), forget spent proof-of-work
        challenges that have expired, delete the check clips of expired gold battles."""
        now = self.clock()
        report = vote_flags.run_sweep(self.store, now=now)
        purge_spent(self.store, now)
        self.gold.delete_expired_clips(self.settings.battle_ttl_s + 3600.0, now)
        return report

    # ------------------------------------------------------------------ what the voter hears (issue 22)
    def _distinct_pairs(self, index: list[_Candidate]) -> set[tuple[str, str]]:
        """The model pairs worth a battle on some request (arena/distinct.py), marking each candidate's left-out
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

    def _servable_index(self, paused: set[str]) -> tuple[list[_Candidate], set[tuple[str, str]]]:
        """The candidate index. When no unpaused pair is servable yet but some same-word pairs wait for their
        delivery to be measured, up to SYNC_MEASURE of their clips are measured now: the voter waits a few seconds
        rather than seeing no battle (a model the worker just handed off is servable at once)."""
        index, pairs = self._candidates()
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
        return self._candidates()

    def _heard_path(self, source) -> Path | None:
        """The file a voter gets for a battle clip: the source's heard version (made now if the background has not
        made it yet); None when the source cannot be decoded."""
        try:
            return self.heard.clip(source).path
        except (BadAudio, OSError) as exc:
            log.warning("battle clip %s cannot be normalised: %s", Path(source).name, exc)
            return None

    def heard_clip(self, battle_id: str, clip: str, measure: bool = True) -> HeardClip | None:
        """One battle clip (user | A | B) as the voter hears it: its normalised file and measured features
        (HeardClip.covariates()), for benchmark and live battles alike; None for an unknown or expired battle."""
        path = self.battle_clip(battle_id, clip)
        if path is None:
            return None
        if path.parent.parent == self.heard.folder:
            return self.heard.for_heard_file(path, measure)
        return named_clip(path.parent, clip, measure=measure)      # a live battle's folder (live_store.py)

    def left_out_pairs(self) -> dict:
        """The health view: request pairs servable and left out of matchmaking, by reason (arena/distinct.py);
        pairs of paused models are not counted."""
        paused = storage.paused_models(self.store)
        index, _ = self._candidates()
        live = [c for c in index if sum(m not in paused for m in c.replies) >= 2]
        if paused:
            live = [_Candidate(**{**c.__dict__, "replies": {m: r for m, r in c.replies.items() if m not in paused},
                                  "left_out": {p: w for p, w in c.left_out.items() if not set(p) & paused},
                                  "same_words": {p for p in c.same_words if not set(p) & paused}})
                    for c in live]
        return distinct.left_out_counts(live)


    def reply_blinded(self, reply) -> bool:
        """Must this reply stay nameless? True when a battle can play it: a reply to an arena-pool request by a
        model in the arena (eval_backend/showcase.py). Browse, the model page and /media/reply show it only when
        False, so nothing public names a battle's audio."""
        return reply is not None and not showcase.publishable(reply.request_id, reply.model, self.arena_models())

    def clip_sent(self, battle_id: str, clip: str, start: int, end: int, size: int) -> None:
        """The audio route sent bytes [start, end) of a clip's `size`-byte file: the clip counts as fetched once
        what was sent covers what the listening rule asks (arena/battle_clips.py)."""
        self.fetches.sent(battle_id, clip, start, end, size, lambda: battle_clips.need_share(
            self.store, battle_id, clip, self.settings.listen_rule.need))
