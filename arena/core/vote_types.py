"""What a vote or a skip returns or raises (arena/services/battles.py, arena/services/gold.py; importable from arena.services.service)."""
from __future__ import annotations

from dataclasses import dataclass

from arena.core import listening
from arena.core.ratings import Rating


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
class Revealed:
    model: str
    transcript: str | None
    rating: Rating | None      # None for a gold battle's check clip (arena/services/gold.py)
    votes: int


@dataclass(frozen=True)
class VoteResult:
    vote_id: int
    battle_id: str
    slot: str                  # A | B | tie | both_bad
    winner: str                # a model name, tie or both_bad
    a: Revealed
    b: Revealed
    gold: str | None = None    # a gold battle's check (arena/services/gold.py): pass | fail | neutral; never a rated vote
