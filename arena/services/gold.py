"""Gold battles: a small share of battles pairs a real reply with a known-bad clip made from it, to learn which
voters listen. Their votes are recorded here, never in the vote log, so they never enter any rating.

    plan = gold.plan(rng, candidates, paused)               # in serve_battle; None: an ordinary battle
    gold.clip(model_name)                                   # the file behind the bad side's name
    outcome = gold.record_vote(conn, battle, slot, ...)                      # in the vote's transaction
    records(store, voter_subject) -> {voter: GoldRecord(passes, fails)}      # arena/core/sweeps.py: reliability

A gold battle is served exactly like any other: its row in arena_battles names the real model and, on the bad
side, `gold:<construction>:<clip token>` (a name no submitted model can have: submitted names hold no ':'); its clips go
through the same route (arena/web/media.py: battle id + clip, the same headers), the bad clip is a fresh file made
from the real reply as voters hear it (arena/services/battle_audio.py: the same format, rate and loudness, the same length), and the battle JSON has the same fields.
Only after the vote does the reveal say which clip was the check and what it was.

Outcome: the real reply chosen = passed; the bad clip chosen, or a tie = failed; "both bad" = neutral (the real
reply may be bad too). Clips are built ahead on a background thread into <data dir>/gold/ (a fresh random clip
per battle, so a hash learned from one reveal never recognises the next) and deleted once their battle expired.
"""
from __future__ import annotations

import logging
import os
import random
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from arena.core.gold_clips import CONSTRUCTIONS, dithered, read_like, wav_like
from arena.core.ratings import Rating
from arena.core.sweeps import GoldRecord
from arena.core.vote_types import Revealed, VoteResult
from arena.services.battle_audio import RATE, HeardClip, normalise
from arena.tables import storage  # arena_battles first (migrations apply in registration order); ratings
from eval_backend.store import Store, register_migration

register_migration("arena_0008_gold", """
CREATE TABLE IF NOT EXISTS arena_gold_votes (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    battle_id       TEXT NOT NULL UNIQUE,
    session_id      TEXT,
    "user"          TEXT,
    ip_hash         TEXT,
    slot            TEXT NOT NULL CHECK (slot IN ('A', 'B', 'tie', 'both_bad')),
    result          TEXT NOT NULL CHECK (result IN ('pass', 'fail', 'neutral')),
    created_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS arena_gold_votes_time ON arena_gold_votes (created_at)
""")

PREFIX = "gold:"
GOLD_DIR = "gold"
LABEL = "check clip"           # the bad side's name in the reveal
log = logging.getLogger("arena.services.gold")


def is_gold(model: str | None) -> bool:
    return isinstance(model, str) and model.startswith(PREFIX)


def is_gold_battle(battle) -> bool:
    return is_gold(battle["model_a"]) or is_gold(battle["model_b"])


def gold_name(construction: str, token: str) -> str:
    """The bad side's name in arena_battles: `gold:<construction>:<clip token>`. The battle row alone says which
    side is the check, what it is and which file (gold/<token>.wav), so serving a gold battle writes no more than
    serving any battle (a row more would make its answer measurably slower)."""
    return f"{PREFIX}{construction}:{token}"


def parse(battle) -> tuple[str, str, str, str] | None:
    """(real model, good slot, construction, clip token) of a gold battle's row, else None."""
    for bad_slot, good_slot in (("A", "B"), ("B", "A")):
        name = battle[f"model_{bad_slot.lower()}"]
        if is_gold(name):
            construction, _, token = name[len(PREFIX):].partition(":")
            return battle[f"model_{good_slot.lower()}"], good_slot, construction, token
    return None


def outcome(slot: str, good_slot: str) -> str:
    """pass | fail | neutral for a vote `slot` in a gold battle whose real reply is in `good_slot`."""
    if slot == good_slot:
        return "pass"
    return "neutral" if slot == "both_bad" else "fail"


@dataclass(frozen=True)
class GoldPlan:
    model_a: str
    model_b: str
    bad: str                    # the check's name in the battle row (gold_name)
    heard: HeardClip            # the check clip, as served (already in the heard format and loudness)
    model: str                  # the real reply's model
    good_slot: str
    construction: str
    cand: object                # the request the battle is about (the ready clip's, not matchmaking's)


@dataclass(frozen=True)
class ReadyClip:
    """A check clip built ahead, waiting for a gold battle: which reply it came from, where it is, how long."""
    key: tuple                  # (benchmark hash, request id) of the reply it was made from
    model: str
    construction: str
    token: str                  # the file: gold/<token>.wav
    heard: HeardClip
    made_at: float

    @property
    def rel(self) -> str:
        return f"{GOLD_DIR}/{self.token}.wav"


class GoldBattles:
    """Plans, records and answers gold battles (one per ArenaService).

    Check clips are built ahead, on a background thread, into a small pool (`POOL`): a gold battle takes one, so
    serving it costs what serving any battle costs (a clip written on the battle's path would make its answer
    measurably slower: ~11 ms more in-process under load, docs/benchmarks.md); with none ready, the battle is an
    ordinary one and the pool refills. Each clip serves one battle (a fresh file every time); one waiting longer
    than `MAX_AGE_S` is dropped and deleted."""

    POOL = 4
    MAX_AGE_S = 1800.0

    def __init__(self, store: Store, share: float, constructions: tuple[str, ...], fresh: Rating,
                 heard: Callable[[str], HeardClip], measure: Callable[[str, str | None], dict], clock=time.time):
        """`heard`: a reply's heard clip (HeardAudio.clip: what voters hear, arena/services/battle_audio.py), which check
        clips are made from; `measure`: the service's covariate measures (ClipMeasures.get), run here on each
        check clip so the battle finds them remembered."""
        unknown = [c for c in constructions if c not in CONSTRUCTIONS]
        if unknown or not 0 <= share <= 1:
            raise ValueError(f"gold battles: share must be in [0, 1] and constructions among "
                             f"{', '.join(CONSTRUCTIONS)} (got {share!r}, {unknown})")
        self.store, self.share, self.constructions = store, share, tuple(constructions)
        self.fresh = fresh         # a model's rating before its first vote (the reveal of an unrated model)
        self.heard, self.measure = heard, measure
        self.clock = clock
        self._ready: list[ReadyClip] = []
        self._lock = threading.Lock()
        self._idle = threading.Event()          # set while no refill runs
        self._idle.set()
        self._rng = random.SystemRandom()

    # ------------------------------------------------------------------ serving
    def plan(self, rng, candidates: list, paused: set) -> GoldPlan | None:
        """With probability `share`, a gold battle from a ready clip: its request, its model's real reply on one
        side, the clip (built and measured ahead: the battle does no work the ordinary path would not) on the
        other. None: an ordinary battle."""
        if not self.share or not self.constructions:
            return None
        self._refill_soon(candidates, paused)
        if rng.random() >= self.share:
            return None
        clip = self._take({(c.benchmark_hash, c.request_id): c for c in candidates}, paused)
        if clip is None:
            return None
        cand = next(c for c in candidates if (c.benchmark_hash, c.request_id) == clip.key)
        bad = gold_name(clip.construction, clip.token)
        good_slot = "A" if rng.random() < 0.5 else "B"
        a, b = (clip.model, bad) if good_slot == "A" else (bad, clip.model)
        return GoldPlan(a, b, bad, clip.heard, clip.model, good_slot, clip.construction, cand)

    def _take(self, by_key: dict, paused: set) -> ReadyClip | None:
        """The oldest ready clip still servable (its model unpaused, its reply still in the index)."""
        now = self.clock()
        with self._lock:
            while self._ready:
                clip = self._ready.pop(0)
                cand = by_key.get(clip.key)
                if now - clip.made_at <= self.MAX_AGE_S and cand is not None and clip.model in cand.replies \
                        and clip.model not in paused:
                    return clip
                self.store.abspath(clip.rel).unlink(missing_ok=True)
        return None

    def _refill_soon(self, candidates: list, paused: set) -> None:
        with self._lock:
            if len(self._ready) >= self.POOL or not self._idle.is_set():
                return
            self._idle.clear()
        threading.Thread(target=self._refill, args=(list(candidates), set(paused)), name="gold-clips",
                         daemon=True).start()

    def _refill(self, candidates: list, paused: set) -> None:
        try:
            usable = [(c, m) for c in candidates for m in c.replies if m not in paused]
            while usable and len(self._ready) < self.POOL:
                cand, model = self._rng.choice(usable)
                clip = self._build(self._rng.choice(self.constructions), cand, model, candidates)
                if clip is not None:
                    with self._lock:
                        self._ready.append(clip)
        except Exception:                 # an unreadable reply: no clip this round; battles stay ordinary
            log.exception("building gold clips failed")
        finally:
            self._idle.set()

    def fill(self, candidates: list, paused: set) -> None:
        """Fill the pool now, on the caller's thread (tests and benchmarks; the app fills it in the background)."""
        self._idle.wait()
        with self._lock:
            self._idle.clear()
        self._refill(list(candidates), set(paused))

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Wait until no refill is running (tests, benchmarks); True when the pool is full."""
        self._idle.wait(timeout)
        with self._lock:
            return len(self._ready) >= self.POOL

    def pooled(self) -> set[str]:
        with self._lock:
            return {c.rel for c in self._ready}

    def _build(self, name: str, cand, model: str, candidates: list) -> ReadyClip | None:
        """A check clip made from the heard version of `model`'s reply (or, for other_reply, of its reply to
        another request), normalised and written like any heard clip, then measured as a battle measures it."""
        key, now = (cand.benchmark_hash, cand.request_id), self.clock()
        own = cand.replies[model].audio_path                # content-addressed: the same file is the same words
        if name == "other_reply":       # the same model's stored reply to another request (dithered: a new file)
            others = [c for c in candidates if model in c.replies and c.replies[model].audio_path != own]
            if not others:
                return None
            own = self._rng.choice(others).replies[model].audio_path
        real = self.heard(str(self.store.abspath(own)))
        source = real.path
        samples, sr = read_like(source)
        gen = np.random.default_rng(self._rng.getrandbits(64))
        if name == "other_reply":       # already as heard: only the dither is new
            level, facts = samples[:, 0], {"lufs": real.lufs, "peak_dbtp": real.peak_dbtp,
                                           "source_lufs": real.source_lufs}
        else:                           # the construction, brought to the loudness every heard clip has
            level, facts = normalise(CONSTRUCTIONS[name].build(samples, sr, gen)[:, 0], sr)
        bad = dithered(level.astype(np.float32), gen)
        token = secrets.token_hex(16)
        dest = self.store.abspath(f"{GOLD_DIR}/{token}.wav")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        tmp.write_bytes(wav_like(source, bad))
        tmp.replace(dest)
        self.measure(str(dest), None)
        heard = HeardClip(dest, token, len(bad) / RATE, facts["lufs"], facts["peak_dbtp"], facts["source_lufs"], RATE)
        return ReadyClip(key, model, name, token, heard, now)

    def clip(self, model: str) -> Path | None:
        """The file behind a gold battle's bad side, from its name in the battle row."""
        construction, _, token = model[len(PREFIX):].partition(":")
        if construction not in CONSTRUCTIONS or not token.isalnum():
            return None
        return self.store.abspath(f"{GOLD_DIR}/{token}.wav")

    # ------------------------------------------------------------------ votes
    def record_vote(self, conn, battle, slot: str, session_id: str, user: str | None, ip_hash: str,
                    now: float) -> VoteResult:
        """Record the check's outcome (inside the vote's transaction) and reveal: the real reply's model and its
        rating (unchanged: a check rates nobody), and what the check clip was. `vote_id` is 0 (no vote-log row)."""
        model, good_slot, construction, _ = parse(battle)
        result = outcome(slot, good_slot)
        conn.execute('INSERT INTO arena_gold_votes (battle_id, session_id, "user", ip_hash, slot, result, created_at) '
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", (battle["id"], session_id, user, ip_hash, slot, result, now))
        said = self.store.reply_texts(battle["benchmark_hash"], battle["request_id"], (model, model)).get(model)
        real = Revealed(model, said, storage.read_rating(conn, "overall", model, self.fresh),
                        storage.overall_vote_counts(conn, model, model).get(model, 0))
        check = Revealed(LABEL, CONSTRUCTIONS[construction].describe, None, 0)
        a, b = (real, check) if good_slot == "A" else (check, real)
        return VoteResult(0, battle["id"], slot, {"A": a.model, "B": b.model}.get(slot, slot), a, b, result)

    # ------------------------------------------------------------------ upkeep
    def delete_expired_clips(self, older_than_s: float, now: float | None = None) -> int:
        """Delete the bad clips written more than `older_than_s` ago (their battles have expired: the route serves
        nothing then); the rows stay. Returns how many files went."""
        folder = self.store.abspath(GOLD_DIR)
        cutoff = (time.time() if now is None else now) - older_than_s
        n = 0
        keep = {self.store.abspath(rel) for rel in self.pooled()}
        for path in folder.glob("*.wav") if folder.is_dir() else ():
            try:
                if path.stat().st_mtime < cutoff and path not in keep:
                    os.unlink(path)
                    n += 1
            except FileNotFoundError:
                pass
        return n


def records(store: Store, voter_subject) -> dict:
    """{voter subject: GoldRecord(passes, fails)} over every gold vote (arena/core/sweeps.py's reliability)."""
    tally: dict[str, list[int]] = {}
    for r in store.query('SELECT "user", session_id, result, COUNT(*) AS n FROM arena_gold_votes '
                         'GROUP BY "user", session_id, result'):
        t = tally.setdefault(voter_subject(r["user"], r["session_id"]), [0, 0])
        if r["result"] in ("pass", "fail"):
            t[r["result"] == "fail"] += r["n"]
    return {k: GoldRecord(p, f) for k, (p, f) in tally.items()}


def gold_counts(store: Store, since: float, until: float, bucket_s: float) -> dict[int, dict[str, int]]:
    """{bucket: {result: gold votes}} (arena/services/health.py)."""
    out: dict[int, dict[str, int]] = {}
    for r in store.query(f"SELECT {store.int_floor('created_at / ?')} AS b, result, COUNT(*) FROM arena_gold_votes "
                         "WHERE created_at >= ? AND created_at < ? GROUP BY b, result", (bucket_s, since, until)):
        out.setdefault(r[0], {})[r[1]] = r[2]
    return out
