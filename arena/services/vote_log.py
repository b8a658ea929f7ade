"""The vote log: record, import, restore-append, read (with the integrity flags' weights) and export it (a part
of ArenaService, arena/services/service.py).

`VoteLog(store, clock, trueskill)` records every vote through `record`, the one path that writes a vote and its
rating update: live votes (arena/services/battles.py), imported and restored ones alike.
"""
from __future__ import annotations

import dataclasses
import hashlib
import threading
from pathlib import Path
from typing import Callable, Iterable

from arena.core import raters, votes_io
from arena.core.ratings import BOTH_BAD, TIE, Rating, TrueSkillParams, apply_vote
from arena.services import vote_flags
from arena.tables import storage
from arena.tables.storage import VoteRow
from eval_backend.moderation.texts import public_reasons, screening_summary
from eval_backend.store import Store


class VoteLog:
    """Record, import, restore-append, read and export the vote log."""

    def __init__(self, store: Store, clock: Callable[[], float], trueskill: TrueSkillParams):
        self.store = store
        self.clock = clock
        self.trueskill = trueskill
        self._lock = threading.RLock()
        self._seen: list[VoteRow] = []
        self._edges: set[tuple[str, str]] = set()     # pairs compared at least once (matchmaking's graph)
        self._weights_cache: tuple | None = None

    def record(self, conn, row: dict) -> tuple[int, dict[str, Rating]]:
        """Insert one vote and update every axis it bears on, inside the caller's transaction; returns the vote's
        id and the two models' new overall ratings."""
        vote_id = storage.insert_vote(conn, row)
        a, b = row["model_a"], row["model_b"]
        fresh = Rating(self.trueskill.mu, self.trueskill.sigma)
        overall: dict[str, Rating] = {}
        for axis, outcome in storage.axes_for(row["slot"], row["said"], row["sounded"], row["dimension"]):
            ra = storage.read_rating(conn, axis, a, fresh)
            rb = storage.read_rating(conn, axis, b, fresh)
            na, nb = apply_vote(ra, rb, outcome, self.trueskill)
            res_a = {"A": "win", "B": "loss", TIE: "tie", BOTH_BAD: "both_bad"}[outcome]
            res_b = {"A": "loss", "B": "win", TIE: "tie", BOTH_BAD: "both_bad"}[outcome]
            storage.write_rating(conn, axis, a, na, res_a, vote_id, row["created_at"])
            storage.write_rating(conn, axis, b, nb, res_b, vote_id, row["created_at"])
            if axis == "overall":
                overall = {a: na, b: nb}
        return vote_id, overall

    # ------------------------------------------------------------------ import / export
    def import_votes(self, path: str | Path) -> int:
        """Append every vote of a CSV/JSONL file (all or nothing); returns how many. See arena.core.votes_io."""
        path = Path(path)
        try:
            content = path.read_bytes().decode("utf-8-sig")   # no newline translation: a CR in a reason stays
        except (OSError, UnicodeDecodeError) as exc:
            raise votes_io.VoteImportError(str(path), [(0, f"cannot read the file: {exc}")]) from None
        rows = votes_io.parse(str(path), content, default_time=self.clock())
        with self.store.transaction() as conn:
            for r in rows:
                self.record(conn, {**r, "battle_id": None, "session_id": None, "user": None, "ip_hash": None,
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
            self.record(conn, row)
            n += 1
        storage.sync_vote_ids(self.store, conn)
        return n

    def votes(self) -> list[VoteRow]:
        """The vote log in id order. The log is append-only and ids are assigned under the write lock,
        so only rows after the last one seen need reading."""
        with self._lock:
            self._refresh()
            return list(self._seen)

    def edges(self) -> list[tuple[str, str]]:
        """The model pairs compared at least once (matchmaking's graph), up to the last vote."""
        with self._lock:
            self._refresh()
            return list(self._edges)

    def _refresh(self) -> None:
        """Read the votes added since the last call; keep the comparison graph (matchmaking) up to date."""
        with self._lock:
            after = self._seen[-1].id if self._seen else 0
            new = storage.load_votes(self.store, after_id=after)
            self._seen.extend(new)
            self._edges.update((v.model_a, v.model_b) for v in new if v.slot != BOTH_BAD)

    def vote_weights(self) -> dict[int, float]:
        """{vote id: factor in [0, 1)} of the votes the integrity flags in force hold down (arena/services/vote_flags.py:
        gold checks, agreement with the consensus, sweeps; absent: 1): the one place every rater, the export and
        the release take them from (through `weighted_votes`). Read again only when the flags change."""
        key = vote_flags.version(self.store)
        if self._weights_cache is None or self._weights_cache[0] != key:
            self._weights_cache = (key, vote_flags.weights(self.store))
        return self._weights_cache[1]

    def weighted_votes(self) -> list[VoteRow]:
        """The vote log with each vote's weight in the ratings (its stored weight x `vote_weights()`): what every
        rater, the export and the release read."""
        return raters.weighted(self.votes(), self.vote_weights())

    def public_votes(self, screen_pending: bool = True) -> list[VoteRow]:
        """The vote log as published: every vote with its weight, but a reason only once the safety screen cleared
        it (flagged, not screened or not yet screened reasons are left out; eval_backend/moderation/texts.py). The
        vote still counts. `screen_pending`: screen the reasons not screened yet first (export and release do)."""
        votes = self.weighted_votes()      # each vote with the weight it has in the ratings
        shown = public_reasons(self.store, (v.reason for v in votes if v.reason), screen_pending)
        return [v if v.reason is None or v.reason in shown else dataclasses.replace(v, reason=None) for v in votes]

    def reason_screening(self) -> dict:
        """How the log's reasons were screened (screen names and versions, published / withheld counts): a
        release states it in its manifest."""
        return screening_summary(self.store, (v.reason for v in self.votes() if v.reason))

    def export_votes(self, fmt: str = "jsonl", path: str | Path | None = None) -> str:
        """The public vote log (no session ids, IP hashes or user names; screened reasons only) as JSONL or CSV."""
        text = votes_io.format_votes(self.public_votes(), fmt)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8", newline="")   # bytes as formatted (CRs in reasons)
        return text

    def vote_log_hash(self) -> dict:
        """sha256 of the public JSONL export and its last vote id: stamp leaderboard snapshots with it so
        anyone can check a published table against the released votes."""
        votes = self.public_votes(screen_pending=False)
        digest = hashlib.sha256(votes_io.format_votes(votes, "jsonl").encode()).hexdigest()
        return {"sha256": digest, "votes": len(votes), "last_vote_id": votes[-1].id if votes else None}
