"""The arena's API (plain Python; the Gradio UI and the HTTP load test call it).

    svc = ArenaService(Store(data_dir))                 # settings: arena.config.ArenaSettings
    view = svc.serve_battle(session_id, ip)            # BattleView: audio URLs only, no names, no paths
    svc.battle_clip(view.battle_id, "A")               # the file behind a clip URL (arena/web/media.py serves it)
    svc.clip_sent(view.battle_id, "A", 0, n, size)     # the audio route: bytes sent; fetched once they cover
                                                        # what the listening rule asks (clip_fetched: all of it)
    result = svc.submit_vote(view.battle_id, session_id, ip, "A", said="B", sounded="A",
                             listen={"played_s": {"user": 2.4, "A": 3, "B": 3}, "order": ["user", "B", "A"]})
    # -> VoteResult (names, transcripts, new ratings) or raises VoteRefused(reason_code, message);
    #    NotYet (a VoteRefused) when the listening does not cover the clips yet

Integrity rules, checked in one write transaction (BEGIN IMMEDIATE) so two racing
votes on one battle cannot both pass: the battle must exist, belong to the
voting session, be unvoted, unexpired, name the same models if the client sends
them, pass the listening rule (arena/core/listening.py: the reported listening covers
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

The service is composed of parts that receive their state when it makes them (no part reaches into another's):
the candidate index (arena/services/candidates.py), battles and votes (arena/services/battles.py), the vote log (arena/services/vote_log.py:
recording, import/export, the flags' weights) and rating queries (arena/services/rating_queries.py). ArenaService makes
each once, holds them (`svc.index`, `svc.battles`, `svc.vote_log`, `svc.ratings`) and exposes their public
methods under the names it always had; the names they define are importable from here as before. The writer
thread for battles and votes is arena/services/writer.py.
"""
from __future__ import annotations

import random
import time
from typing import Callable, Iterable

from arena.config import ArenaSettings
from arena.core import covariates
from arena.core.abuse import BattleGate
from arena.core.identity_screen import IdentityScreen
from arena.core.ratings import Rating
from arena.core.vote_types import NoBattleAvailable, NotYet, Revealed, SkipRefused, VoteRefused, VoteResult
from arena.services import vote_flags
from arena.services.battle_audio import HeardAudio, HeardClip, named_clip
from arena.services.battles import MAX_REASON_CHARS, Battles, BattleView, crisis_notice
from arena.services.candidates import CandidateIndex, _Candidate
from arena.services.gold import GoldBattles
from arena.services.pow import PowGate, purge_spent
from arena.services.rating_queries import RatingQueries, _num, board_order
from arena.services.vote_log import VoteLog
from arena.tables import battle_clips
from eval_backend import showcase
from eval_backend.benchmark.model import Benchmark
from eval_backend.store import Store
from space_shell.signing import Signer

__all__ = ["MAX_REASON_CHARS", "ArenaService", "BattleView", "IdentityScreen", "NoBattleAvailable", "Revealed",
           "SkipRefused", "VoteRefused", "NotYet", "VoteResult", "board_order", "crisis_notice", "_Candidate", "_num"]


class ArenaService:
    # Sessions are issued by the server and signed (space_shell/signing.py), so a client cannot pick one:
    # the HTTP API refuses a session that does not verify, the Gradio tab keeps its own in server-side state.
    SESSION_PURPOSE = "arena-session"

    def __init__(self, store: Store, settings: ArenaSettings | None = None,
                 benchmarks: Iterable[Benchmark] | None = None,
                 clock: Callable[[], float] = time.time, rng: random.Random | None = None):
        """`benchmarks`: the benchmarks whose spoken requests may be served; by default
        `settings.benchmark_specs` are loaded (lazily, on the first battle) from the store's data dir."""
        self.store = store
        self.settings = s = (settings or ArenaSettings()).with_salt(store.root)
        self.clock = clock
        self.rng = rng or random.SystemRandom()
        self._signer: Signer | None = None
        measures = covariates.ClipMeasures()          # the style covariates of each heard clip
        # what voters hear: normalised clips (arena/services/battle_audio.py), each measured for the covariates as it is made
        self.heard = HeardAudio(store.root, also_measure=measures.audio)
        self.gate = BattleGate(s.ip_battles_per_minute, s.session_open_battles, s.ip_vote_attempts_per_minute,
                               s.battle_ttl_s, clock)
        self.fetches = battle_clips.FetchLog(store, clock)
        # integrity (issue 23): gold battles, proof of work, and the flags' weights the public fit applies
        self.gold = GoldBattles(store, s.gold_share, s.gold_constructions, Rating(s.trueskill.mu, s.trueskill.sigma),
                                self.heard.clip, measures.get, clock)
        self.pow = PowGate(lambda: self.signer, s, clock)
        # the parts, each given the state it uses
        self.index = CandidateIndex(store, s, self.heard, benchmarks)
        self.vote_log = VoteLog(store, clock, s.trueskill)
        self.ratings = RatingQueries(store, s, clock, self.vote_log)
        self.battles = Battles(store, s, clock, self.rng, self.index, self.vote_log, self.heard, measures,
                               self.gate, self.gold, self.pow, self.fetches)
        # blinding (eval_backend/showcase.py): models whose arena-pool replies battles may play
        self.arena_models = showcase.ArenaModels(store, lambda: [b.hash for b in self.index.benchmarks()])
        # the public API, each method answered by the part that owns it
        self.benchmark_errors = self.index.benchmark_errors
        self.set_benchmarks = self.index.set_benchmarks
        self.reply_cleared = self.index.reply_cleared
        self.can_serve = self.index.can_serve
        self.left_out_pairs = self.index.left_out_pairs
        b = self.battles
        self.ip_hash, self.admit_battle, self.admit_skip, self.admit_vote = (b.ip_hash, b.admit_battle,
                                                                             b.admit_skip, b.admit_vote)
        self.serve_battle, self.battle_clip, self.clip_fetched = b.serve_battle, b.battle_clip, b.clip_fetched
        self.skip_battle, self.submit_vote = b.skip_battle, b.submit_vote
        self.pause_model, self.unpause_model, self.paused = b.pause_model, b.unpause_model, b.paused
        v = self.vote_log
        self.import_votes, self.append_votes, self.votes = v.import_votes, v.append_votes, v.votes
        self.vote_weights, self.weighted_votes, self.public_votes = v.vote_weights, v.weighted_votes, v.public_votes
        self.reason_screening, self.export_votes, self.vote_log_hash = (v.reason_screening, v.export_votes,
                                                                        v.vote_log_hash)
        r = self.ratings
        self.replay_ratings, self.stored_ratings, self.pair_counts = r.replay_ratings, r.stored_ratings, r.pair_counts
        self.bradley_terry, self.board, self.ratings_table = r.bradley_terry, r.board, r.ratings_table
        self.replayed_table, self.style_effects, self.attribute_grid = (r.replayed_table, r.style_effects,
                                                                        r.attribute_grid)
        self.position_bias, self.slot_bias, self.pairwise_matrices = (r.position_bias, r.slot_bias,
                                                                      r.pairwise_matrices)
        self.rating_history, self.integrity_health = r.rating_history, r.integrity_health

    @property
    def signer(self) -> Signer:
        if self._signer is None:
            self._signer = Signer.for_data_dir(self.store.root)
        return self._signer

    def new_session(self) -> str:
        return self.signer.new_token(self.SESSION_PURPOSE)

    def session_valid(self, session) -> bool:
        return self.signer.unsign(self.SESSION_PURPOSE, session) is not None

    def integrity_upkeep(self) -> vote_flags.SweepReport:
        """The periodic integrity job (app_context.py's health loop, every 5 minutes; `python -m arena sweep`):
        flag the votes the rules catch now (arena/core/sweeps.py, arena/services/vote_flags.py), forget spent proof-of-work
        challenges that have expired, delete the check clips of expired gold battles."""
        now = self.clock()
        report = vote_flags.run_sweep(self.store, now=now)
        purge_spent(self.store, now)
        self.gold.delete_expired_clips(self.settings.battle_ttl_s + 3600.0, now)
        return report

    # ------------------------------------------------------------------ what the voter hears (issue 22)
    def heard_clip(self, battle_id: str, clip: str, measure: bool = True) -> HeardClip | None:
        """One battle clip (user | A | B) as the voter hears it: its normalised file and measured features
        (HeardClip.covariates()), for benchmark and live battles alike; None for an unknown or expired battle."""
        path = self.battle_clip(battle_id, clip)
        if path is None:
            return None
        if path.parent.parent == self.heard.folder:
            return self.heard.for_heard_file(path, measure)
        return named_clip(path.parent, clip, measure=measure)      # a live battle's folder (live_store.py)

    def reply_blinded(self, reply) -> bool:
        """Must this reply stay nameless? True when a battle can play it: a reply to an arena-pool request by a
        model in the arena (eval_backend/showcase.py). Browse, the model page and /media/reply show it only when
        False, so nothing public names a battle's audio."""
        return reply is not None and not showcase.publishable(reply.request_id, reply.model, self.arena_models())

    def clip_sent(self, battle_id: str, clip: str, start: int, end: int, size: int) -> None:
        """The audio route sent bytes [start, end) of a clip's `size`-byte file: the clip counts as fetched once
        what was sent covers what the listening rule asks (arena/tables/battle_clips.py)."""
        self.fetches.sent(battle_id, clip, start, end, size, lambda: battle_clips.need_share(
            self.store, battle_id, clip, self.settings.listen_rule.need))
