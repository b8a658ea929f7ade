"""The arena's ratings over one kind of battle: `benchmark` (benchmark requests' stored replies) or `live` (a
voter's own recording answered live, arena/live.py), beside the stored ratings over all of them.

The stored TrueSkill covers every vote (it drives matchmaking); a per-source view replays TrueSkill and refits
Bradley-Terry over that source's votes only, so its rows have the board's columns and order.
"""
from __future__ import annotations

import math

from . import live_store

SOURCES = ("all", "benchmark", "live")


def check(source: str | None) -> str:
    source = source or "all"
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {', '.join(SOURCES)}")
    return source


def votes_of(service, source: str) -> list:
    """The vote log (id order) restricted to votes on battles of `source`."""
    ids = live_store.live_vote_ids(service.store, source)
    return [v for v in service.votes() if v.id in ids]


def replayed_table(service, axis: str, rounds: int | None, source: str) -> list[dict]:
    """`python -m arena ratings --source S --json`: as ArenaService.replayed_table, over one source."""
    from .service import ratings_rows

    votes = votes_of(service, source)
    ts = service.replay_ratings(axis, votes)
    fit = service.bradley_terry(axis, rounds, votes=votes).as_dict()
    n = {m: 0 for m in ts}
    for v in votes:
        if v.outcome(axis) is not None:
            n[v.model_a] += 1
            n[v.model_b] += 1
    return ratings_rows(ts, fit, n)


def board_table(service, axis: str, rounds: int | None, source: str) -> list[dict]:
    """The board's rows (ArenaService.ratings_table's columns) over one source's votes."""
    from .service import board_order

    votes = votes_of(service, source)
    ts = service.replay_ratings(axis, votes)
    fit = service.bradley_terry(axis, rounds, votes=votes).as_dict()
    tally = {m: {"votes": 0, "wins": 0, "losses": 0, "ties": 0, "both_bad": 0} for m in ts}
    for v in votes:
        out = v.outcome(axis)
        if out is None:
            continue
        for slot, model in (("A", v.model_a), ("B", v.model_b)):
            t = tally[model]
            t["votes"] += 1
            if out in ("tie", "both_bad"):
                t["ties" if out == "tie" else "both_bad"] += 1
            else:
                t["wins" if out == slot else "losses"] += 1
    paused = service.paused()
    rows = []
    for model, r in ts.items():
        b = fit.get(model, {"bt": math.nan, "bt_low": math.nan, "bt_high": math.nan, "bt_rank": None,
                            "provisional": True, "bt_votes": 0})
        rows.append({"model": model, "mu": r.mu, "sigma": r.sigma, "conservative": r.conservative, **b,
                     **tally[model], "paused": model in paused})
    rows.sort(key=board_order)
    return rows
