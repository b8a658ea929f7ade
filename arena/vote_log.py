"""The vote log: import, restore-append, read and export it (ArenaService's third job).

`VoteLog` is a part of ArenaService (arena/service.py); it records votes through Battles._record, so imported
and restored votes update the ratings exactly as live ones do.
"""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Iterable

from . import storage, votes_io
from .ratings import BOTH_BAD
from .storage import VoteRow


class VoteLog:
    """Import, restore-append, read and export the vote log (uses store, clock, _votes_lock, _votes_seen, _edges)."""

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
        storage.sync_vote_ids(self.store, conn)
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

    def public_votes(self, screen_pending: bool = True) -> list[VoteRow]:
        """The vote log as published: every vote with its weight, but a reason only once the safety screen cleared
        it (flagged, not screened or not yet screened reasons are left out; eval_backend/moderation/texts.py). The
        vote still counts. `screen_pending`: screen the reasons not screened yet first (export and release do)."""
        from eval_backend.moderation.texts import public_reasons
        votes = self.weighted_votes()      # each vote with the weight it has in the ratings
        shown = public_reasons(self.store, (v.reason for v in votes if v.reason), screen_pending)
        return [v if v.reason is None or v.reason in shown else dataclasses.replace(v, reason=None) for v in votes]

    def reason_screening(self) -> dict:
        """How the log's reasons were screened (screen names and versions, published / withheld counts): a
        release states it in its manifest."""
        from eval_backend.moderation.texts import screening_summary
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
