"""A stored vote's shape, as exported and replayed, and the axes and slots a vote speaks to (pure: the SQL that
reads and writes these rows is arena/tables/storage.py)."""
from __future__ import annotations

from dataclasses import dataclass

from arena.core.ratings import BOTH_BAD, TIE, Vote

AXES = ("overall", "said", "sounded", "speaker", "paralinguistic", "environment")
DIMENSION_AXES = ("speaker", "paralinguistic", "environment")
SLOTS = ("A", "B", TIE, BOTH_BAD)
SUB_SLOTS = ("A", "B", TIE)


@dataclass(slots=True)
class VoteRow:
    """A stored vote, as exported and replayed (never the session id or IP hash)."""
    id: int
    model_a: str
    model_b: str
    winner: str
    slot: str
    said: str | None
    sounded: str | None
    reason: str | None
    first_heard: str | None
    attribute: str | None
    dimension: str | None
    benchmark_hash: str | None
    request_id: str | None
    created_at: float
    source: str
    battle_source: str = "benchmark"     # the battle's kind: benchmark | live (arena_0005_live)
    # the style covariates of the clips the voter heard (arena/core/covariates.py; None: not measured)
    a_duration_s: float | None = None
    b_duration_s: float | None = None
    a_loudness_lufs: float | None = None
    b_loudness_lufs: float | None = None
    a_speech_rate: float | None = None
    b_speech_rate: float | None = None
    a_words: float | None = None
    b_words: float | None = None
    a_latency_s: float | None = None
    b_latency_s: float | None = None
    weight: float = 1.0                  # how much the vote counts in the ratings (0 = not at all)

    def outcome(self, axis: str) -> str | None:
        """The slot outcome this vote gives on an axis, None when it does not bear on it."""
        if axis == "said":
            return self.said
        if axis == "sounded":
            return self.sounded
        if axis in DIMENSION_AXES and self.dimension != axis:
            return None
        return self.slot

    def as_vote(self, axis: str) -> Vote | None:
        out = self.outcome(axis)
        if out is None:
            return None
        winner = {"A": self.model_a, "B": self.model_b}.get(out, out)
        return Vote(self.id, self.model_a, self.model_b, winner, self.weight)


EXPORT_FIELDS = tuple(VoteRow.__dataclass_fields__)
