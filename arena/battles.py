"""Battles and votes: serve a battle, answer its clips, check and record a vote (ArenaService's first job).

The integrity rules and reason codes are described in arena/service.py; the SQL is in arena/storage.py.
`Battles` is a part of ArenaService (arena/service.py builds the state it uses: store, settings, clock, rng,
gate, the candidate index, the vote-log cache of VoteLog).
"""
from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from eval_backend.benchmark.model import Benchmark, dimension_of
from eval_backend.moderation import ledger
from eval_backend.moderation.replies import KIND, subject_of
from eval_backend.moderation.texts import REASON, screen_later
from eval_backend.store import Reply
from eval_backend.showcase import in_arena_pool
from eval_backend.tasks import SPOKEN_TASKS, build_requests

from . import battle_clips, covariates, distinct, listening, storage
from .abuse import Ticket
from .matchmaking import MatchParams, choose_pair
from .media import battle_clip_url
from .ratings import BOTH_BAD, TIE, Rating, apply_vote
from .storage import SLOTS, SUB_SLOTS

MAX_REASON_CHARS = 2000


class VoteRefused(Exception):
    def __init__(self, reason_code: str, message: str):
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message


class NotYet(VoteRefused):
    """An early vote (the listening does not cover the clips yet): answered, never logged as a refusal.
    `remaining_s`: per clip, seconds still to hear."""

    def __init__(self, message: str, remaining_s: dict):
        super().__init__(listening.NOT_YET, message)
        self.remaining_s = remaining_s


class SkipRefused(VoteRefused):
    """A skip the server cannot apply (unknown battle, another session's, already voted): answered, never logged
    as a refused vote (a skip is not a vote)."""


class NoBattleAvailable(RuntimeError):
    """No two unpaused models have servable replies to a common request (the message says why)."""


@dataclass(frozen=True)
class BattleView:
    """What the voter may see before voting: no model names, no transcripts."""
    battle_id: str
    context_text: str | None
    user_audio: str            # URLs of the battle's clips (arena/media.py): the battle id, no path, no name
    audio_a: str
    audio_b: str
    min_listen_s: dict         # {"user": s, "A": s, "B": s}: seconds of each clip the listening rule asks for
    first_heard: str           # the slot "play all" plays first ("A"); the vote stores the one actually heard first
    expires_at: float
    listening: dict = field(default_factory=dict)   # the rule's numbers for the page (ListenRule.payload)
    notice: str | None = None  # the crisis notice (markdown), when a reply in this battle was screened as crisis

    @property
    def total_min_listen_s(self) -> float:
        return sum(self.min_listen_s.values())


@dataclass(frozen=True)
class Revealed:
    model: str
    transcript: str | None
    rating: Rating
    votes: int


@dataclass(frozen=True)
class VoteResult:
    vote_id: int
    battle_id: str
    slot: str                  # A | B | tie | both_bad
    winner: str                # a model name, tie or both_bad
    a: Revealed
    b: Revealed


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


def crisis_notice() -> str:
    """The calm help notice (eval_backend.safety's operator-editable resources)."""
    from eval_backend.safety import crisis_notice_markdown
    return crisis_notice_markdown()


class IdentityScreen:
    """Flags reply text that names a model or vendor (it would unblind the battle)."""

    def __init__(self, patterns: Iterable[str], model_names: Iterable[str] = ()):
        parts = list(patterns)
        for name in model_names:
            # "warm-model" also matches "warm model" / "warm_model"
            tokens = [re.escape(t) for t in re.split(r"[-_\s/.:]+", name) if t]
            if tokens:
                parts.append(r"\b" + r"[-_\s/.:]*".join(tokens) + r"\b")
        self.regex = re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE) if parts else None

    def leaks(self, *texts: str | None) -> bool:
        return bool(self.regex) and any(t and self.regex.search(t) for t in texts)


class Battles:
    """Battles, votes and paused models."""

    # ------------------------------------------------------------------ helpers
    def ip_hash(self, ip: str | None) -> str:
        return hashlib.sha256(f"{self.settings.salt}|{ip or ''}".encode()).hexdigest()

    # Sessions are issued by the server and signed (eval_backend/signing.py), so a client cannot pick one:
    # the HTTP API refuses a session that does not verify, the Gradio tab keeps its own in server-side state.
    SESSION_PURPOSE = "arena-session"

    @property
    def signer(self):
        if self._signer is None:
            from eval_backend.signing import Signer
            self._signer = Signer.for_data_dir(self.store.root)
        return self._signer

    def new_session(self) -> str:
        return self.signer.new_token(self.SESSION_PURPOSE)

    def session_valid(self, session) -> bool:
        return self.signer.unsign(self.SESSION_PURPOSE, session) is not None

    def admit_battle(self, session_id: str, ip: str | None) -> Ticket:
        """The in-memory limits (arena/abuse.py) for one more battle; raises abuse.Refused. Call it on the
        request's own thread, before handing `serve_battle(..., ticket=)` to the writer."""
        return self.gate.admit_battle(session_id, ip)

    def admit_skip(self, ip: str | None) -> None:
        """The in-memory skip limit per address (its own budget, not the votes'); raises abuse.Refused."""
        self.gate.admit_skip(ip)

    def admit_vote(self, ip: str | None) -> None:
        """The in-memory vote-attempt limit per address; raises abuse.Refused."""
        self.gate.admit_vote(ip)

    def set_benchmarks(self, benchmarks: Iterable[Benchmark]) -> None:
        """Serve these benchmarks from now on (the Space calls it once its background preparation ends)."""
        with self._lock:
            self._benchmarks = list(benchmarks)
            self.benchmark_errors.clear()
            self._index = None
            self._index_key = None

    def _load_benchmarks(self) -> list[Benchmark]:
        if self._benchmarks is None:
            from eval_backend.benchmark.loaders import load_benchmark
            loaded = []
            for spec in self.settings.benchmark_specs:
                try:
                    loaded.append(load_benchmark(spec, self.store.root))
                except (ValueError, OSError) as exc:   # BenchmarkSpecError is a ValueError
                    self.benchmark_errors[spec] = str(exc)
            self._benchmarks = loaded
        return self._benchmarks

    def _index_version(self) -> tuple:
        """What the battle index depends on: the replies table, and (screening on) the screening decisions' version
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

    def _candidates(self) -> tuple[list[_Candidate], set[tuple[str, str]]]:
        """Servable requests and the model pairs they offer, rebuilt when the replies table (or, with screening
        on, a screening decision) changes."""
        key = self._index_version()
        with self._lock:
            if self._index is not None and key == self._index_key:
                return self._index, self._pairs
            benchmarks = self._load_benchmarks()
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

    def can_serve(self) -> bool:
        """Whether a battle could be served now: two unpaused models share a servable request (the opening
        banner, arena/opening_banner.py, asks it until the answer is yes)."""
        paused = storage.paused_models(self.store)
        _, pairs = self._candidates()
        return any(a not in paused and b not in paused for a, b in pairs)

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
        candidates, all_pairs = self._servable_index(paused)      # arena/service.py (issue 22)
        pairs = [p for p in all_pairs if p[0] not in paused and p[1] not in paused]
        if not pairs:
            why = "; ".join(f"{k}: {v}" for k, v in self.benchmark_errors.items())
            raise NoBattleAvailable("no two unpaused models have usable spoken replies to the same request"
                                    + (f" (benchmarks not loaded: {why})" if why else "")
                                    + (" (only replies the safety screen cleared are played; new replies wait "
                                       "for it)" if self.settings.screen_replies else ""))
        current = storage.stored_ratings(self.store)
        ratings = {m: Rating(r["mu"], r["sigma"]) for m, r in current.items()}
        counts = {m: r["votes"] for m, r in current.items()}
        self._refresh_votes()
        edges = list(self._edges)
        params = MatchParams(self.settings.new_model_boost, self.settings.bridge_boost,
                             trueskill=self.settings.trueskill)
        pair = choose_pair(pairs, ratings, counts, edges, self.rng, paused, params)
        shared = [c for c in candidates if pair[0] in c.replies and pair[1] in c.replies]
        cand = distinct.pick_request(shared, pair, self.rng)
        model_a, model_b = pair if self.rng.random() < 0.5 else (pair[1], pair[0])
        audio_a = str(self.store.abspath(cand.replies[model_a].audio_path))
        audio_b = str(self.store.abspath(cand.replies[model_b].audio_path))
        heard_a, heard_b = self.heard.clip(audio_a), self.heard.clip(audio_b)    # as heard (arena/battle_audio.py)
        said = {m: r.transcript or r.text for m, r in cand.replies.items()}     # style covariates of the heard clips
        cov = covariates.measure_battle((heard_a.path, said[model_a]), (heard_b.path, said[model_b]),
                                        measure=self._measures.get)
        rule = self.settings.listen_rule
        clips = {"user": self.heard.clip(cand.user_audio).seconds, "A": heard_a.seconds, "B": heard_b.seconds}
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
        urls = [battle_clip_url(battle_id, clip) for clip in ("user", "A", "B")]
        notice = crisis_notice() if cand.crisis & {model_a, model_b} else None
        return BattleView(battle_id, cand.context_text, *urls, listen, "A", now + self.settings.battle_ttl_s,
                          rule.payload(clips), notice)

    def battle_clip(self, battle_id: str, clip: str) -> Path | None:
        """The file behind clip user | A | B of a served, unexpired battle, from the battle's row (so any
        replica on the database can answer); None for anything else."""
        if not storage.plausible_id(battle_id) or clip not in ("user", "A", "B"):
            return None
        battle = storage.battle_clip_row(self.store, battle_id)
        if battle is None or self.clock() > battle["expires_at"]:
            return None
        if battle["source"] == "live":          # the voter's own clip and the live replies (arena/live_store.py)
            from . import live_store
            return live_store.clip_path(self.store, battle_id, clip)
        if clip == "user":
            key = (battle["benchmark_hash"], battle["request_id"])
            if key not in self._user_audio:
                self._candidates()              # a replica that has not served yet builds its index first
            path = self._user_audio.get(key)
            return self._heard_path(path) if path else None
        model = battle["model_a"] if clip == "A" else battle["model_b"]
        if self.settings.screen_replies:      # held since the battle was served (the operator kept it hidden)
            reply = self.store.reply(model, battle["benchmark_hash"], battle["request_id"])
            if not self.reply_cleared(reply):
                return None
        rel = self.store.reply_audio_path(model, battle["benchmark_hash"], battle["request_id"])
        return self._heard_path(self.store.abspath(rel)) if rel else None

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
                    listen=None) -> VoteResult:
        """`listen`: what the client heard (listening.parse_report: {"played_s": {clip: s}, "order": [...]})."""
        ip_hash = self.ip_hash(ip)
        try:
            result = self._submit(battle_id, session_id, ip_hash, overall, said, sounded, reason, user,
                                  claimed_models, listen)
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

    def _submit(self, battle_id, session_id, ip_hash, overall, said, sounded, reason, user, claimed, listen):
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
            winner = {"A": battle["model_a"], "B": battle["model_b"]}.get(overall, overall)
            row = {"battle_id": battle_id, "model_a": battle["model_a"], "model_b": battle["model_b"],
                   "winner": winner, "slot": overall, "said": said, "sounded": sounded,
                   "reason": (reason or "").strip() or None, "session_id": session_id, "user": user,
                   "ip_hash": ip_hash, "first_heard": report.first_of(), "attribute": battle["attribute"],
                   "dimension": battle["dimension"], "benchmark_hash": battle["benchmark_hash"],
                   "request_id": battle["request_id"], "created_at": now, "source": "live",
                   "battle_source": battle["source"], **{c: battle[c] for c in covariates.COLUMNS}}
            vote_id, new = self._record(conn, row)
            storage.mark_voted(conn, battle_id)
            counts = storage.overall_vote_counts(conn, battle["model_a"], battle["model_b"])
        if battle["source"] == "live":          # live replies' words live beside the battle (arena/live_store.py)
            from . import live_store
            words = live_store.reply_texts(self.store, battle_id)
            said_text = {battle["model_a"]: words.get("A"), battle["model_b"]: words.get("B")}
        else:
            said_text = self.store.reply_texts(battle["benchmark_hash"], battle["request_id"],
                                               (battle["model_a"], battle["model_b"]))

        def reveal(model: str) -> Revealed:
            return Revealed(model, said_text.get(model), new[model], counts.get(model, 0))

        return VoteResult(vote_id, battle_id, overall, winner, reveal(battle["model_a"]), reveal(battle["model_b"]))

    def _record(self, conn, row: dict) -> tuple[int, dict[str, Rating]]:
        """Insert one vote and update every axis it bears on, inside the caller's transaction."""
        vote_id = storage.insert_vote(conn, row)
        a, b = row["model_a"], row["model_b"]
        fresh = Rating(self.settings.trueskill.mu, self.settings.trueskill.sigma)
        overall: dict[str, Rating] = {}
        for axis, outcome in storage.axes_for(row["slot"], row["said"], row["sounded"], row["dimension"]):
            ra = storage.read_rating(conn, axis, a, fresh)
            rb = storage.read_rating(conn, axis, b, fresh)
            na, nb = apply_vote(ra, rb, outcome, self.settings.trueskill)
            res_a = {"A": "win", "B": "loss", TIE: "tie", BOTH_BAD: "both_bad"}[outcome]
            res_b = {"A": "loss", "B": "win", TIE: "tie", BOTH_BAD: "both_bad"}[outcome]
            storage.write_rating(conn, axis, a, na, res_a, vote_id, row["created_at"])
            storage.write_rating(conn, axis, b, nb, res_b, vote_id, row["created_at"])
            if axis == "overall":
                overall = {a: na, b: nb}
        return vote_id, overall

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
