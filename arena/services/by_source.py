"""The arena's ratings over one kind of battle: `benchmark` (benchmark requests' stored replies) or `live` (a
voter's own recording answered live, arena/services/live.py), beside the stored ratings over all of them.

The stored TrueSkill covers every vote (it drives matchmaking); a per-source view replays TrueSkill and refits
Bradley-Terry over that source's votes only, so its rows have the board's columns and order
(arena/services/rating_queries.py: ratings_table and replayed_table with `source=`).
"""
from __future__ import annotations

from typing import Iterable

SOURCES = ("all", "benchmark", "live")


def check(source: str | None) -> str:
    source = source or "all"
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {', '.join(SOURCES)}")
    return source


def votes_of(votes: Iterable, source: str) -> list:
    """The votes (id order kept) on battles of `source` ("all": every vote)."""
    source = check(source)
    return list(votes) if source == "all" else [v for v in votes if v.battle_source == source]
