"""Battles and votes: serve a battle, answer its clips, check and record a vote (a part of ArenaService).

The integrity rules and reason codes are described in arena/services/service.py; the SQL is in arena/tables/storage.py.
`Battles(store, settings, clock, rng, index, vote_log, ...)` receives every part it uses: arena/services/service.py makes
them once and hands the same ones to the other parts.
"""
from __future__ import annotations

import hashlib
import logging
import random
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from arena.config import ArenaSettings
from arena.core import covariates, distinct, listening
from arena.core.abuse import BattleGate, Ticket
from arena.core.clip_urls import battle_clip_url
from arena.core.matchmaking import MatchParams, choose_pair
from arena.core.ratings import Rating
from arena.core.vote_types import NoBattleAvailable, NotYet, Revealed, SkipRefused, VoteRefused, VoteResult
from arena.services import gold, live_heard
from arena.services.battle_audio import HeardAudio
from arena.services.candidates import CandidateIndex
from arena.services.gold import GoldBattles
from arena.services.pow import MESSAGES as POW_MESSAGES
from arena.services.pow import PowGate
from arena.services.vote_log import VoteLog
from arena.tables import battle_clips, live_store, storage
from arena.tables.storage import SLOTS, SUB_SLOTS
from eval_backend.audio.io import BadAudio
from eval_backend.benchmark.model import dimension_of
from eval_backend.moderation.texts import REASON, screen_later
from eval_backend.safety import crisis_notice_markdown
from eval_backend.store import Store

log = logging.getLogger(__name__)
MAX_REASON_CHARS = 2000


@dataclass(frozen=True)
class BattleView:
    """What the voter may see before voting: no model names, no transcripts."""
    battle_id: str
    context_text: str | None
    user_audio: str            # URLs of the battle's clips (arena/web/media.py): the battle id, no path, no name
    audio_a: str
    audio_b: str
    min_listen_s: dict         # {"user": s, "A": s, "B": s}: seconds of each clip the listening rule asks for
    first_heard: str           # the slot "play all" plays first ("A"); the vote stores the one actually heard first
    expires_at: float
    listening: dict = field(default_factory=dict)   # the rule's numbers for the page (ListenRule.payload)
    notice: str | None = None  # the crisis notice (markdown), when a reply in this battle was screened as crisis
    pow_required: bool = False  # the session owes a proof of work before this vote (arena/services/pow.py)

    @property
    def total_min_listen_s(self) -> float:
        return sum(self.min_listen_s.values())


def crisis_notice() -> str:
    """The calm help notice (eval_backend.safety's operator-editable resources)."""
    return crisis_notice_markdown()


class Battles:
    """Battles, votes and paused models."""

    def __init__(self, store: Store, settings: ArenaSettings, clock: Callable[[], float], rng: random.Random,
                 index: CandidateIndex, vote_log: VoteLog, heard: HeardAudio, measures: covariates.ClipMeasures,
                 gate: BattleGate, gold: GoldBattles, pow: PowGate, fetches: battle_clips.FetchLog):
        self.store = store
        self.settings = settings
        self.clock = clock
        self.rng = rng
        self.index = index                # the servable requests (arena/services/candidates.py)
        self.vote_log = vote_log          # records each vote and its rating update (arena/services/vote_log.py)
        self.heard = heard                # what voters hear (arena/services/battle_audio.py)
        self.measures = measures          # the style covariates of each heard clip
        self.gate = gate                  # the in-memory limits (arena/core/abuse.py)
        self.gold = gold                  # gold battles (arena/services/gold.py)
        self.pow = pow                    # proof of work (arena/services/pow.py)
        self.fetches = fetches            # each clip's first fetch (arena/tables/battle_clips.py)

    # ------------------------------------------------------------------ helpers
    def ip_hash(self, ip: str | None) -> str:
        return hashlib.sha256(f"{self.settings.salt}|{ip or ''}".encode()).hexdigest()

    def admit_battle(self, session_id: str, ip: str | None) -> Ticket:
        """The in-memory limits (arena/core/abuse.py) for one more battle; raises abuse.Refused. Call it on the
        request's own thread, before handing `serve_battle(..., ticket=)` to the writer."""
        return self.gate.admit_battle(session_id, ip)

    def admit_skip(self, ip: str | None) -> None:
        """The in-memory skip limit per address (its own budget, not the votes'); raises abuse.Refused."""
        self.gate.admit_skip(ip)

    def admit_vote(self, ip: str | None) -> None:
        """The in-memory vote-attempt limit per address; raises abuse.Refused."""
        self.gate.admit_vote(ip)

    # ------------------------------------------------------------------ battles
    def serve_battle(self, session_id: str, ip: str | None, user: str | None = None,
                     ticket: Ticket | None = None) -> BattleView:
        """`ticket`: from `admit_battle` (the HTTP API and the Gradio tab); the battle then holds its
        session's open-battle slot until voted on or expired. Direct callers (CLI, tests) pass none."""
        if ticket is None:
            return self._serve(session_id, ip, user)
        try:
            view = self._serve(session_id, ip, user)
        except BaseException:
            self.gate.release(ticket)
            raise
        self.gate.opened(ticket, view.battle_id, view.expires_at)
        return view

    def _serve(self, session_id: str, ip: str | None, user: str | None) -> BattleView:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError("a battle needs a session id")
        paused = storage.paused_models(self.store)
        candidates, all_pairs = self.index.servable(paused)      # arena/services/candidates.py (issue 22)
        pairs = [p for p in all_pairs if p[0] not in paused and p[1] not in paused]
        if not pairs:
            why = "; ".join(f"{k}: {v}" for k, v in self.index.benchmark_errors.items())
            raise NoBattleAvailable("no two unpaused models have usable spoken replies to the same request"
                                    + (f" (benchmarks not loaded: {why})" if why else "")
                                    + (" (only replies the safety screen cleared are played; new replies wait "
                                       "for it)" if self.settings.screen_replies else ""))
        current = storage.stored_ratings(self.store)
        ratings = {m: Rating(r["mu"], r["sigma"]) for m, r in current.items()}
        counts = {m: r["votes"] for m, r in current.items()}
        edges = self.vote_log.edges()
        params = MatchParams(self.settings.new_model_boost, self.settings.bridge_boost,
                             trueskill=self.settings.trueskill)
        pair = choose_pair(pairs, ratings, counts, edges, self.rng, paused, params)
        shared = [c for c in candidates if pair[0] in c.replies and pair[1] in c.replies]
        cand = distinct.pick_request(shared, pair, self.rng)
        model_a, model_b = pair if self.rng.random() < 0.5 else (pair[1], pair[0])
        plan = self.gold.plan(self.rng, candidates, paused)    # a gold battle (arena/services/gold.py)?
        if plan is not None:
            cand, model_a, model_b = plan.cand, plan.model_a, plan.model_b
        heard = {m: plan.heard if plan and m == plan.bad else     # as heard (arena/services/battle_audio.py)
                 self.heard.clip(str(self.store.abspath(cand.replies[m].audio_path))) for m in (model_a, model_b)}
        said = {m: r.transcript or r.text for m, r in cand.replies.items()}     # style covariates of the heard clips
        cov = covariates.measure_battle((heard[model_a].path, said.get(model_a)), (heard[model_b].path,
                                        said.get(model_b)), measure=self.measures.get)
        rule = self.settings.listen_rule
        clips = {"user": self.heard.clip(cand.user_audio).seconds, "A": heard[model_a].seconds,
                 "B": heard[model_b].seconds}
        listen = rule.needs(clips)
        now = self.clock()
        battle_id = secrets.token_urlsafe(24)
        attribute = cand.attribute
        with self.store.transaction() as conn:
            storage.insert_battle(
                conn, (battle_id, session_id, user, self.ip_hash(ip), cand.benchmark_hash, cand.request_id, cand.task,
                 cand.item_id, cand.variant, attribute, dimension_of(attribute) if attribute else None,
                 model_a, model_b, "A", sum(listen.values()), now, now + self.settings.battle_ttl_s), covariates=cov)
            battle_clips.add_clips(conn, battle_id, clips)
            pow_required = self.pow.needed(conn, session_id, user)
        urls = [battle_clip_url(battle_id, clip) for clip in ("user", "A", "B")]
        notice = crisis_notice() if cand.crisis & {model_a, model_b} else None
        return BattleView(battle_id, cand.context_text, *urls, listen, "A", now + self.settings.battle_ttl_s,
                          rule.payload(clips), notice, pow_required)

    def battle_clip(self, battle_id: str, clip: str) -> Path | None:
        """The file behind clip user | A | B of a served, unexpired battle, from the battle's row (so any
        replica on the database can answer); None for anything else."""
        if not storage.plausible_id(battle_id) or clip not in ("user", "A", "B"):
            return None
        battle = storage.battle_clip_row(self.store, battle_id)
        if battle is None or self.clock() > battle["expires_at"]:
            return None
        if battle["source"] == "live":          # the voter's own clip and the live replies (arena/tables/live_store.py)
            return live_heard.live_clip_path(self.store, battle_id, clip)
        if clip == "user":
            path = self.index.user_audio(battle["benchmark_hash"], battle["request_id"])
            return self._heard_path(path) if path else None
        model = battle["model_a"] if clip == "A" else battle["model_b"]
        bad = self.gold.clip(model) if gold.is_gold(model) else None   # a gold battle's check clip (arena/services/gold.py)
        if bad is not None:
            model = battle["model_b"] if clip == "A" else battle["model_a"]
        if self.settings.screen_replies:      # held since the battle was served (the operator kept it hidden)
            reply = self.store.reply(model, battle["benchmark_hash"], battle["request_id"])
            if not self.index.reply_cleared(reply):
                return None
        if bad is not None:
            return bad
        rel = self.store.reply_audio_path(model, battle["benchmark_hash"], battle["request_id"])
        return self._heard_path(self.store.abspath(rel)) if rel else None

    def _heard_path(self, source) -> Path | None:
        """The file a voter gets for a battle clip: the source's heard version (made now if the background has not
        made it yet); None when the source cannot be decoded."""
        try:
            return self.heard.clip(source).path
        except (BadAudio, OSError) as exc:
            log.warning("battle clip %s cannot be normalised: %s", Path(source).name, exc)
            return None

    def clip_fetched(self, battle_id: str, clip: str) -> None:
        """The audio route served this clip of this battle: record its first fetch (the listening rule)."""
        self.fetches.fetched(battle_id, clip)

    # ------------------------------------------------------------------ skips
    def skip_battle(self, battle_id: str, session_id: str) -> None:
        """Close the session's unvoted battle without a vote ("Skip": the voter wants another battle). Nothing
        enters the ratings or the refusal log; the battle's open-battle slot is freed; a later vote on it is
        refused (`skipped`). Skipping a skipped battle again is a no-op. Raises SkipRefused."""
        if not storage.plausible_id(battle_id) or not storage.plausible_id(session_id):
            raise SkipRefused("bad_value", "battle id and session id must be text")
        with self.store.transaction() as conn:
            _unvoted_battle_of(conn, battle_id, session_id, SkipRefused, "")
            storage.mark_skipped(conn, battle_id, self.clock())
        self.gate.closed(session_id, battle_id)

    # ------------------------------------------------------------------ votes
    def submit_vote(self, battle_id: str, session_id: str, ip: str | None, overall: str,
                    said: str | None = None, sounded: str | None = None, reason: str | None = None,
                    user: str | None = None, claimed_models: tuple[str, str] | list[str] | None = None,
                    listen=None, pow=None) -> VoteResult:
        """`listen`: what the client heard (listening.parse_report: {"played_s": {clip: s}, "order": [...]});
        `pow`: an ALTCHA solution (arena/services/pow.py), needed from an anonymous session when its proof is due."""
        ip_hash = self.ip_hash(ip)
        try:
            result = self._submit(battle_id, session_id, ip_hash, overall, said, sounded, reason, user,
                                  claimed_models, listen, self.pow.check(pow))
            self.gate.closed(session_id, battle_id)
            if isinstance(reason, str) and reason.strip():   # screened after the vote, off its path
                screen_later(self.store, REASON, reason.strip())
            return result
        except NotYet:
            raise                                  # early, not abuse: no refusal row
        except VoteRefused as refusal:
            storage.log_refusal(self.store, battle_id if storage.plausible_id(battle_id) else None,
                                session_id if storage.plausible_id(session_id) else None, ip_hash,
                                refusal.reason_code, refusal.message)
            raise

    def _submit(self, battle_id, session_id, ip_hash, overall, said, sounded, reason, user, claimed, listen, proof):
        if overall not in SLOTS:
            raise VoteRefused("bad_value", f"the vote must be one of {', '.join(SLOTS)}, got {overall!r}")
        for name, value in (("said", said), ("sounded", sounded)):
            if value is not None and value not in SUB_SLOTS:
                raise VoteRefused("bad_value", f"'{name}' must be A, B, tie or empty, got {value!r}")
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
            raise VoteRefused("bad_value", f"the reason must be text of at most {MAX_REASON_CHARS} characters")
        if not storage.plausible_id(battle_id) or not storage.plausible_id(session_id):
            raise VoteRefused("bad_value", "battle id and session id must be text")
        if claimed is not None and (not isinstance(claimed, (tuple, list)) or len(claimed) != 2):
            raise VoteRefused("bad_value", "claimed models must be a pair of names")
        try:
            report = listening.parse_report(listen)
        except ValueError as exc:
            raise VoteRefused("bad_value", str(exc)) from None
        s = self.settings
        with self.store.transaction() as conn:
            now = self.clock()
            battle = _unvoted_battle_of(conn, battle_id, session_id, VoteRefused, "; load a new battle")
            if battle["skipped_at"] is not None:
                raise VoteRefused("skipped", "this battle was skipped; load a new battle")
            if now > battle["expires_at"]:
                raise VoteRefused("expired", f"this battle expired after {s.battle_ttl_s / 60:.0f} minutes; "
                                             "load a new battle")
            if claimed is not None and tuple(claimed) != (battle["model_a"], battle["model_b"]):
                raise VoteRefused("tampered", "the models sent with the vote are not the ones in this battle")
            clips, fetched = battle_clips.read(conn, battle_id)
            if not clips:
                raise VoteRefused("expired", "this battle was served before its clips were recorded; "
                                             "load a new battle")
            try:
                report = listening.parse_report(report, clips)
            except ValueError as exc:
                raise VoteRefused("bad_value", str(exc)) from None
            decision = listening.decide(s.listen_rule, clips, fetched, report, now)
            if decision.verdict == listening.NOT_YET:
                raise NotYet(decision.message, decision.remaining_s)
            if decision.verdict == listening.IMPOSSIBLE:
                raise VoteRefused(listening.IMPOSSIBLE, f"impossible listening ({decision.why}): {decision.message}")
            user = user or battle["user"]
            code = self.pow.admit(conn, session_id, user, proof, now)
            if code:
                raise VoteRefused(code, POW_MESSAGES[code])
            limits = [("session_id", session_id, s.session_votes_per_minute, s.session_votes_per_day),
                      ("ip_hash", ip_hash, s.ip_votes_per_minute, s.ip_votes_per_day)]
            if user:
                limits.append(('"user"', user, s.session_votes_per_minute, s.user_votes_per_day))
            for col, key, per_min, per_day in limits:
                n_min, n_day = storage.recent_votes(conn, col, key, now)
                who = {"session_id": "this session", "ip_hash": "this network address"}.get(col, "this account")
                if (n_min or 0) >= per_min:
                    raise VoteRefused("rate_limited", f"{who} has voted {per_min} times in the last minute; "
                                                      "please wait a little")
                if n_day >= per_day:
                    raise VoteRefused("rate_limited", f"{who} has reached {per_day} votes today")
            if gold.is_gold_battle(battle):     # a check: recorded apart, never in the vote log or a rating
                storage.mark_voted(conn, battle_id)
                return self.gold.record_vote(conn, battle, overall, session_id, user, ip_hash, now)
            winner = {"A": battle["model_a"], "B": battle["model_b"]}.get(overall, overall)
            row = {"battle_id": battle_id, "model_a": battle["model_a"], "model_b": battle["model_b"],
                   "winner": winner, "slot": overall, "said": said, "sounded": sounded,
                   "reason": (reason or "").strip() or None, "session_id": session_id, "user": user,
                   "ip_hash": ip_hash, "first_heard": report.first_of(), "attribute": battle["attribute"],
                   "dimension": battle["dimension"], "benchmark_hash": battle["benchmark_hash"],
                   "request_id": battle["request_id"], "created_at": now, "source": "live",
                   "battle_source": battle["source"], **{c: battle[c] for c in covariates.COLUMNS}}
            vote_id, new = self.vote_log.record(conn, row)
            storage.mark_voted(conn, battle_id)
            counts = storage.overall_vote_counts(conn, battle["model_a"], battle["model_b"])
        if battle["source"] == "live":          # live replies' words live beside the battle (arena/tables/live_store.py)
            words = live_store.reply_texts(self.store, battle_id)
            said_text = {battle["model_a"]: words.get("A"), battle["model_b"]: words.get("B")}
        else:
            said_text = self.store.reply_texts(battle["benchmark_hash"], battle["request_id"],
                                               (battle["model_a"], battle["model_b"]))

        def reveal(model: str) -> Revealed:
            return Revealed(model, said_text.get(model), new[model], counts.get(model, 0))

        return VoteResult(vote_id, battle_id, overall, winner, reveal(battle["model_a"]), reveal(battle["model_b"]))

    # ------------------------------------------------------------------ admin
    def pause_model(self, model: str, reason: str | None = None) -> None:
        storage.set_paused(self.store, model, True, reason)

    def unpause_model(self, model: str) -> None:
        storage.set_paused(self.store, model, False)

    def paused(self) -> set[str]:
        return storage.paused_models(self.store)


def _unvoted_battle_of(conn, battle_id: str, session_id: str, refused: type, hint: str):
    """The battle row, when it exists, was served to `session_id` and has no vote; else `refused(code, message)`
    (the same checks for a vote and a skip; `hint` ends the messages that invite loading a new battle)."""
    battle = storage.battle_row(conn, battle_id)
    if battle is None:
        raise refused("unknown_battle", "this battle does not exist" + hint)
    if battle["session_id"] != session_id:
        raise refused("wrong_session", "this battle was served to another session")
    if battle["voted"]:
        raise refused("already_voted", "this battle already has a vote" + hint)
    return battle
