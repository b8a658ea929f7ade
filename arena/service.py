"""The arena's API (plain Python; the Gradio UI and the HTTP load test call it).

    svc = ArenaService(Store(data_dir))                 # settings: arena.config.ArenaSettings
    view = svc.serve_battle(session_id, ip)            # BattleView: audio URLs only, no names, no paths
    svc.battle_clip(view.battle_id, "A")               # the file behind a clip URL (arena/media.py serves it)
    result = svc.submit_vote(view.battle_id, session_id, ip, "A", said="B", sounded="A")
    # -> VoteResult (names, transcripts, new ratings) or raises VoteRefused(reason_code, message)

Integrity rules, checked in one write transaction (BEGIN IMMEDIATE) so two racing
votes on one battle cannot both pass: the battle must exist, belong to the
voting session, be unvoted, unexpired, not answered sooner than its clips'
minimum listening time, name the same models if the client sends them, and the
session and IP must be under their rate limits. Every refusal is logged with its
reason in arena_refused_votes. The vote insert and the rating update commit
together; the vote is acknowledged (returned) only after the commit.

Reason codes: unknown_battle, wrong_session, already_voted, expired, too_fast,
tampered, rate_limited, bad_value.

Ratings are online TrueSkill per axis (overall, said, sounded, and the user's
vocal dimension: speaker, paralinguistic, environment), replayable exactly from
the vote log in id order (`replay_ratings`), with an order-free Bradley-Terry fit
beside them (`bradley_terry`).
"""
from __future__ import annotations

import hashlib
import math
import random
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import soundfile as sf

from eval_backend.benchmark.model import Benchmark, dimension_of
from eval_backend.store import Reply, Store
from eval_backend.tasks import build_requests

from . import bradley_terry as bt
from . import storage, votes_io
from .media import battle_clip_url
from .abuse import BattleGate, Ticket
from .config import ArenaSettings
from .matchmaking import MatchParams, choose_pair
from .ratings import BOTH_BAD, TIE, Rating, apply_vote, replay
from .storage import AXES, SLOTS, SUB_SLOTS, VoteRow

MAX_REASON_CHARS = 2000


class VoteRefused(Exception):
    def __init__(self, reason_code: str, message: str):
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message


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
    min_listen_s: dict         # {"user": s, "A": s, "B": s}: min(settings.min_listen_s, clip length)
    first_heard: str           # the slot to play first ("A")
    expires_at: float

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


def _attribute(b: Benchmark, task: str, item_id: str, variant: str) -> str | None:
    """The user's vocal attribute for a spoken request (for the per-dimension ratings)."""
    if task == "conversation":
        for s in b.scripts:
            if s.id == item_id and variant in s.variants:
                return s.variants[variant].attribute
    elif task == "context":
        for g in b.context_groups:
            if g.id == item_id:
                return g.attribute
    elif task == "tone":
        for g in b.tone_groups:
            if g.id == item_id:
                return next((c.tone for c in g.cases if c.id == variant), None)
    return None


def board_order(row: dict) -> tuple:
    """The one headline order of every arena table (board, API, `ratings --json`, releases): ranked models by
    Bradley-Terry interval rank, then score; then models fitted but unranked; then provisional ones, most
    votes first. Ties broken by name, so the order is a pure function of the rows."""
    rank, score = row.get("bt_rank"), _num(row.get("bt"))
    if row.get("provisional"):
        return (2, 0, -row.get("votes", 0), row["model"])
    if rank is None:
        return (1, 0, -(score if score is not None else -math.inf), row["model"])
    return (0, rank, -score, row["model"])


def ratings_rows(ts: dict[str, Rating], fit: dict[str, dict], votes: dict[str, int]) -> list[dict]:
    """The rows of `python -m arena ratings --json`, in `board_order`. One function for the live table and
    the release rebuild, so the two cannot drift apart. A model missing from `fit` (only both-bad votes)
    is provisional."""
    out = []
    for model, r in ts.items():
        b = fit.get(model, {})
        out.append({"model": model, "mu": r.mu, "sigma": r.sigma, "conservative": r.conservative,
                    "bt": _num(b.get("bt")), "bt_low": _num(b.get("bt_low")), "bt_high": _num(b.get("bt_high")),
                    "bt_rank": b.get("bt_rank"), "provisional": bool(b.get("provisional", True)),
                    "votes": votes[model]})
    out.sort(key=board_order)
    return out


class ArenaService:
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
        self._durations: dict[str, float] = {}
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

    def _duration(self, path: str) -> float:
        if path not in self._durations:
            self._durations[path] = float(sf.info(path).duration)
        return self._durations[path]

    def _candidates(self) -> tuple[list[_Candidate], set[tuple[str, str]]]:
        """Servable requests and the model pairs they offer, rebuilt when the replies table changes."""
        key = tuple(self.store.query("SELECT COUNT(*), MAX(created_at) FROM replies")[0])
        with self._lock:
            if self._index is not None and key == self._index_key:
                return self._index, self._pairs
            benchmarks = self._load_benchmarks()
            screen = IdentityScreen(self.settings.identity_patterns, self.store.models_with_replies())
            index: list[_Candidate] = []
            user_audio: dict[tuple[str, str], str] = {}
            for b in benchmarks:
                by_id = {}
                for req in build_requests(b, self.settings.spoken_tasks):
                    if req.usable and req.audios and Path(req.audios[0].path).is_file():
                        text = req.text.strip() or None
                        by_id[req.id] = _Candidate(b.hash, req.id, req.task, req.item_id, req.variant,
                                                   str(Path(req.audios[0].path).resolve()), text,
                                                   _attribute(b, req.task, req.item_id, req.variant))
                for task in self.settings.spoken_tasks:
                    for r in self.store.replies(benchmark_hash=b.hash, task=task, status="ok"):
                        cand = by_id.get(r.request_id)
                        if (cand is None or not r.audio_path or not self.store.abspath(r.audio_path).is_file()
                                or screen.leaks(r.text, r.transcript)):
                            continue
                        cand.replies[r.model] = r
                index += [c for c in by_id.values() if len(c.replies) >= 2]
                user_audio.update(((b.hash, c.request_id), c.user_audio) for c in by_id.values())
            pairs = set()
            for c in index:
                models = sorted(c.replies)
                pairs.update((models[x], models[y]) for x in range(len(models)) for y in range(x + 1, len(models)))
            self._index, self._pairs, self._index_key = index, pairs, key
            self._user_audio = user_audio
            return index, pairs

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
        candidates, all_pairs = self._candidates()
        pairs = [p for p in all_pairs if p[0] not in paused and p[1] not in paused]
        if not pairs:
            why = "; ".join(f"{k}: {v}" for k, v in self.benchmark_errors.items())
            raise NoBattleAvailable("no two unpaused models have usable spoken replies to the same request"
                                    + (f" (benchmarks not loaded: {why})" if why else ""))
        current = storage.stored_ratings(self.store)
        ratings = {m: Rating(r["mu"], r["sigma"]) for m, r in current.items()}
        counts = {m: r["votes"] for m, r in current.items()}
        self._refresh_votes()
        edges = list(self._edges)
        params = MatchParams(self.settings.new_model_boost, self.settings.bridge_boost,
                             trueskill=self.settings.trueskill)
        pair = choose_pair(pairs, ratings, counts, edges, self.rng, paused, params)
        shared = [c for c in candidates if pair[0] in c.replies and pair[1] in c.replies]
        cand = self.rng.choice(shared)
        model_a, model_b = pair if self.rng.random() < 0.5 else (pair[1], pair[0])
        audio_a = str(self.store.abspath(cand.replies[model_a].audio_path))
        audio_b = str(self.store.abspath(cand.replies[model_b].audio_path))
        floor = self.settings.min_listen_s
        listen = {"user": min(floor, self._duration(cand.user_audio)),
                  "A": min(floor, self._duration(audio_a)), "B": min(floor, self._duration(audio_b))}
        now = self.clock()
        battle_id = secrets.token_urlsafe(24)
        attribute = cand.attribute
        with self.store.transaction() as conn:
            conn.execute(
                """INSERT INTO arena_battles (id, session_id, "user", ip_hash, benchmark_hash, request_id, task,
                       item_id, variant, attribute, dimension, model_a, model_b, first_heard, min_listen_s,
                       served_at, expires_at, voted) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0)""",
                (battle_id, session_id, user, self.ip_hash(ip), cand.benchmark_hash, cand.request_id, cand.task,
                 cand.item_id, cand.variant, attribute, dimension_of(attribute) if attribute else None,
                 model_a, model_b, "A", sum(listen.values()), now, now + self.settings.battle_ttl_s))
        urls = [battle_clip_url(battle_id, clip) for clip in ("user", "A", "B")]
        return BattleView(battle_id, cand.context_text, *urls, listen, "A", now + self.settings.battle_ttl_s)

    def battle_clip(self, battle_id: str, clip: str) -> Path | None:
        """The file behind clip user | A | B of a served, unexpired battle, from the battle's row (so any
        replica on the database can answer); None for anything else."""
        if not isinstance(battle_id, str) or clip not in ("user", "A", "B"):
            return None
        rows = self.store.query("SELECT benchmark_hash, request_id, model_a, model_b, expires_at, source "
                                "FROM arena_battles WHERE id=?", (battle_id,))
        if not rows or self.clock() > rows[0]["expires_at"]:
            return None
        battle = rows[0]
        if battle["source"] == "live":          # the voter's own clip and the live replies (arena/live_store.py)
            from . import live_store
            return live_store.clip_path(self.store, battle_id, clip)
        if clip == "user":
            key = (battle["benchmark_hash"], battle["request_id"])
            if key not in self._user_audio:
                self._candidates()              # a replica that has not served yet builds its index first
            path = self._user_audio.get(key)
            return Path(path) if path else None
        model = battle["model_a"] if clip == "A" else battle["model_b"]
        rows = self.store.query("SELECT audio_path FROM replies WHERE model=? AND benchmark_hash=? AND request_id=? "
                                "AND status='ok'", (model, battle["benchmark_hash"], battle["request_id"]))
        return self.store.abspath(rows[0][0]) if rows and rows[0][0] else None

    # ------------------------------------------------------------------ votes
    def submit_vote(self, battle_id: str, session_id: str, ip: str | None, overall: str,
                    said: str | None = None, sounded: str | None = None, reason: str | None = None,
                    user: str | None = None, claimed_models: tuple[str, str] | list[str] | None = None) -> VoteResult:
        ip_hash = self.ip_hash(ip)
        try:
            result = self._submit(battle_id, session_id, ip_hash, overall, said, sounded, reason, user,
                                  claimed_models)
            self.gate.closed(session_id, battle_id)
            return result
        except VoteRefused as refusal:
            storage.log_refusal(self.store, battle_id if isinstance(battle_id, str) else None,
                                session_id if isinstance(session_id, str) else None, ip_hash,
                                refusal.reason_code, refusal.message)
            raise

    def _submit(self, battle_id, session_id, ip_hash, overall, said, sounded, reason, user, claimed):
        if overall not in SLOTS:
            raise VoteRefused("bad_value", f"the vote must be one of {', '.join(SLOTS)}, got {overall!r}")
        for name, value in (("said", said), ("sounded", sounded)):
            if value is not None and value not in SUB_SLOTS:
                raise VoteRefused("bad_value", f"'{name}' must be A, B, tie or empty, got {value!r}")
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
            raise VoteRefused("bad_value", f"the reason must be text of at most {MAX_REASON_CHARS} characters")
        if not isinstance(battle_id, str) or not isinstance(session_id, str):
            raise VoteRefused("bad_value", "battle id and session id must be text")
        if claimed is not None and (not isinstance(claimed, (tuple, list)) or len(claimed) != 2):
            raise VoteRefused("bad_value", "claimed models must be a pair of names")
        s = self.settings
        with self.store.transaction() as conn:
            now = self.clock()
            battle = conn.execute("SELECT * FROM arena_battles WHERE id=?", (battle_id,)).fetchone()
            if battle is None:
                raise VoteRefused("unknown_battle", "this battle does not exist; load a new battle")
            if battle["session_id"] != session_id:
                raise VoteRefused("wrong_session", "this battle was served to another session")
            if battle["voted"]:
                raise VoteRefused("already_voted", "this battle already has a vote; load a new battle")
            if now > battle["expires_at"]:
                raise VoteRefused("expired", f"this battle expired after {s.battle_ttl_s / 60:.0f} minutes; "
                                             "load a new battle")
            if claimed is not None and tuple(claimed) != (battle["model_a"], battle["model_b"]):
                raise VoteRefused("tampered", "the models sent with the vote are not the ones in this battle")
            waited = now - battle["served_at"]
            if waited < battle["min_listen_s"]:
                raise VoteRefused("too_fast", f"please listen to all three clips first: the vote came "
                                              f"{waited:.1f} s after the battle was served, the clips need "
                                              f"{battle['min_listen_s']:.1f} s")
            user = user or battle["user"]
            limits = [("session_id", session_id, s.session_votes_per_minute, s.session_votes_per_day),
                      ("ip_hash", ip_hash, s.ip_votes_per_minute, s.ip_votes_per_day)]
            if user:
                limits.append(('"user"', user, s.session_votes_per_minute, s.user_votes_per_day))
            for col, key, per_min, per_day in limits:
                n_min, n_day = conn.execute(
                    f"SELECT SUM(CASE WHEN created_at > ? THEN 1 ELSE 0 END), COUNT(*) FROM arena_votes "
                    f"WHERE {col}=? AND created_at > ?",
                    (now - 60, key, now - 86400)).fetchone()
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
                   "ip_hash": ip_hash, "first_heard": battle["first_heard"], "attribute": battle["attribute"],
                   "dimension": battle["dimension"], "benchmark_hash": battle["benchmark_hash"],
                   "request_id": battle["request_id"], "created_at": now, "source": "live",
                   "battle_source": battle["source"]}
            vote_id, new = self._record(conn, row)
            conn.execute("UPDATE arena_battles SET voted=1 WHERE id=?", (battle_id,))
            counts = {r["model"]: r["votes"] for r in conn.execute(
                "SELECT model, votes FROM arena_ratings WHERE axis='overall' AND model IN (?, ?)",
                (battle["model_a"], battle["model_b"]))}
        if battle["source"] == "live":          # live replies' words live beside the battle (arena/live_store.py)
            from . import live_store
            words = live_store.reply_texts(self.store, battle_id)
            said_text = {battle["model_a"]: words.get("A"), battle["model_b"]: words.get("B")}
        else:
            said_text = {r["model"]: r["transcript"] or r["text"] for r in self.store.query(
                "SELECT model, transcript, text FROM replies WHERE benchmark_hash=? AND request_id=? "
                "AND model IN (?, ?)", (battle["benchmark_hash"], battle["request_id"], battle["model_a"],
                                        battle["model_b"]))}

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

    # ------------------------------------------------------------------ import / export
    def import_votes(self, path: str | Path) -> int:
        """Append every vote of a CSV/JSONL file (all or nothing); returns how many. See arena.votes_io."""
        path = Path(path)
        try:
            content = path.read_bytes().decode("utf-8-sig")   # no newline translation: a CR in a reason stays
        except (OSError, UnicodeDecodeError) as exc:
            raise votes_io.VoteImportError(str(path), [(0, f"cannot read the file: {exc}")]) from None
        rows = votes_io.parse(str(path), content, default_time=self.clock())
        with self.store.transaction() as conn:
            for r in rows:
                self._record(conn, {**r, "battle_id": None, "session_id": None, "user": None, "ip_hash": None,
                                    "source": "import"})
        return len(rows)

    def append_votes(self, rows: Iterable[dict], conn=None) -> int:
        """Record votes from a backup (the Hub restore) as live ones are recorded, ratings included; a row's
        `id` is kept when given. Pass `conn` to join the caller's transaction."""
        if conn is None:
            with self.store.transaction() as conn:
                return self.append_votes(rows, conn)
        n = 0
        for row in rows:
            self._record(conn, row)
            n += 1
        self.store.sync_ids(conn, "arena_votes")
        return n

    def votes(self) -> list[VoteRow]:
        """The vote log in id order. The log is append-only and ids are assigned under the write lock,
        so only rows after the last one seen need reading."""
        with self._votes_lock:
            self._refresh_votes()
            return list(self._votes_seen)

    def _refresh_votes(self) -> None:
        """Read the votes added since the last call; keep the comparison graph (matchmaking) up to date."""
        with self._votes_lock:
            after = self._votes_seen[-1].id if self._votes_seen else 0
            new = storage.load_votes(self.store, after_id=after)
            self._votes_seen.extend(new)
            self._edges.update((v.model_a, v.model_b) for v in new if v.slot != BOTH_BAD)

    def export_votes(self, fmt: str = "jsonl", path: str | Path | None = None) -> str:
        """The public vote log (no session ids, IP hashes or user names) as JSONL or CSV text."""
        text = votes_io.format_votes(self.votes(), fmt)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8", newline="")   # bytes as formatted (CRs in reasons)
        return text

    def vote_log_hash(self) -> dict:
        """sha256 of the public JSONL export and its last vote id: stamp leaderboard snapshots with it so
        anyone can check a published table against the released votes."""
        votes = self.votes()
        digest = hashlib.sha256(votes_io.format_votes(votes, "jsonl").encode()).hexdigest()
        return {"sha256": digest, "votes": len(votes), "last_vote_id": votes[-1].id if votes else None}

    # ------------------------------------------------------------------ ratings and statistics
    def replay_ratings(self, axis: str = "overall", votes: list[VoteRow] | None = None) -> dict[str, Rating]:
        """TrueSkill recomputed from the vote log in id order; equals the stored ratings exactly."""
        if axis not in AXES:
            raise ValueError(f"axis {axis!r} is not one of {', '.join(AXES)}")
        votes = self.votes() if votes is None else votes
        return replay([v for v in (row.as_vote(axis) for row in votes) if v is not None], self.settings.trueskill)

    def stored_ratings(self, axis: str = "overall") -> dict[str, Rating]:
        return {m: Rating(r["mu"], r["sigma"]) for m, r in storage.stored_ratings(self.store, axis).items()}

    def pair_counts(self, axis: str = "overall", votes: list[VoteRow] | None = None) -> bt.PairCounts:
        votes = self.votes() if votes is None else votes
        return bt.counts_from_votes((v.model_a, v.model_b, v.winner) for v in
                                    (row.as_vote(axis) for row in votes) if v is not None)

    def bradley_terry(self, axis: str = "overall", rounds: int | None = None, seed: int = 0,
                      votes: list[VoteRow] | None = None) -> bt.BTResult:
        rounds = self.settings.bootstrap_rounds if rounds is None else rounds
        votes = self.votes() if votes is None else votes
        key = (axis, rounds, seed, votes[-1].id if votes else 0, len(votes))
        cached = self._bt_cache.get(axis)
        if cached is None or cached[0] != key:       # refit only when the log has grown
            cached = self._bt_cache[axis] = (key, bt.bootstrap(self.pair_counts(axis, votes), rounds, seed,
                                                               min_votes=self.settings.provisional_votes))
        return cached[1]

    def ratings_table(self, axis: str = "overall", rounds: int | None = None, source: str | None = None
                      ) -> list[dict]:
        """Leaderboard rows in `board_order` (Bradley-Terry interval rank, then score; provisional models
        last). TrueSkill (mu, sigma, conservative) rides along: it is the live rating and drives
        matchmaking, but it does not order the board. BT columns are NaN and bt_rank None where not fitted.
        `source` benchmark | live: the same rows over that kind of battle only (arena/by_source.py)."""
        from . import by_source
        if by_source.check(source) != "all":
            return by_source.board_table(self, axis, rounds, source)
        votes = self.votes()
        bt_rows = self.bradley_terry(axis, rounds, votes=votes).as_dict()
        paused = self.paused()
        rows = []
        for model, r in storage.stored_ratings(self.store, axis).items():
            b = bt_rows.get(model, {"bt": math.nan, "bt_low": math.nan, "bt_high": math.nan, "bt_rank": None,
                                    "provisional": True, "bt_votes": 0})
            rows.append({"model": model, "mu": r["mu"], "sigma": r["sigma"],
                         "conservative": r["mu"] - 3 * r["sigma"], **b,
                         "votes": r["votes"], "wins": r["wins"], "losses": r["losses"], "ties": r["ties"],
                         "both_bad": r["both_bad"], "paused": model in paused})
        rows.sort(key=board_order)
        return rows

    def replayed_table(self, rounds: int | None = None, axis: str = "overall", source: str | None = None
                       ) -> list[dict]:
        """The CLI's `ratings --json`: replayed TrueSkill, BT with interval, votes on the axis (incl. both-bad).
        `source` benchmark | live: over that kind of battle only."""
        from . import by_source
        if by_source.check(source) != "all":
            return by_source.replayed_table(self, axis, rounds, source)
        votes = self.votes()
        ts = self.replay_ratings(axis, votes)
        fit = self.bradley_terry(axis, rounds, votes=votes).as_dict()
        n = {m: 0 for m in ts}
        for v in votes:
            if v.outcome(axis) is not None:
                n[v.model_a] += 1
                n[v.model_b] += 1
        return ratings_rows(ts, fit, n)

    def position_bias(self) -> bt.Proportion:
        """Share of decisive live votes won by the first-heard reply, with a 95% Wilson interval."""
        return bt.position_bias((v.first_heard, v.slot) for v in self.votes())

    def pairwise_matrices(self, axis: str = "overall") -> dict:
        """{'models', 'win_rate' (row beat column; ties half; None where never met), 'battles'}."""
        counts = self.pair_counts(axis)
        rate, n = bt.pairwise(counts)
        return {"models": counts.models,
                "win_rate": [[None if math.isnan(x) else float(x) for x in row] for row in rate],
                "battles": n.astype(int).tolist()}

    def rating_history(self, axis: str = "overall", points: int = 100) -> list[dict]:
        """Ratings of every model after each of ~`points` evenly spaced prefixes of the vote log."""
        rated = [(row, v) for row in self.votes() if (v := row.as_vote(axis)) is not None]
        if not rated:
            return []
        step = max(1, math.ceil(len(rated) / points))
        out, current = [], {}
        for start in range(0, len(rated), step):
            chunk = rated[start:start + step]
            current = replay([v for _, v in chunk], self.settings.trueskill, current)
            last = chunk[-1][0]
            out += [{"vote_id": last.id, "created_at": last.created_at, "votes_so_far": start + len(chunk),
                     "model": m, "mu": r.mu, "sigma": r.sigma, "conservative": r.conservative}
                    for m, r in sorted(current.items())]
        return out

    def integrity_health(self, window_s: float = 86400.0) -> dict:
        """Accepted vs refused submissions in the window; alert when the counted share is low."""
        since = self.clock() - window_s
        accepted = self.store.query("SELECT COUNT(*) FROM arena_votes WHERE source='live' AND created_at > ?",
                                    (since,))[0][0]
        refused = {r[0]: r[1] for r in self.store.query(
            "SELECT reason, COUNT(*) FROM arena_refused_votes WHERE created_at > ? GROUP BY reason", (since,))}
        total = accepted + sum(refused.values())
        share = accepted / total if total else None   # nothing submitted: no share
        return {"window_s": window_s, "accepted": accepted, "refused": refused, "counted_share": share,
                "alert": share is not None and share < self.settings.counted_share_alert}


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
