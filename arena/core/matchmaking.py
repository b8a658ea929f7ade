"""Which two models to pit against each other next (pure: no I/O, randomness injected).

Each servable pair gets a weight and one pair is drawn in proportion to it, so
the choice favours informative battles without becoming predictable:

    weight = quality(a, b)                       TrueSkill match quality: close pairs teach most
           * (sigma_a^2 + sigma_b^2) / (2 sigma_0^2)   uncertain ratings teach most
           * (1 + boost * (1/sqrt(1+n_a) + 1/sqrt(1+n_b)) / 2)   models with few votes first
           * bridge   when a and b sit in different components of the comparison graph

plus a small floor (1% of the mean weight) so no servable pair is starved.
Paused models are removed before anything else.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import AbstractSet, Iterable

from arena.core.ratings import DEFAULT_PARAMS, Rating, TrueSkillParams, quality_1vs1


@dataclass(frozen=True)
class MatchParams:
    new_model_boost: float = 4.0
    bridge_boost: float = 5.0
    floor_share: float = 0.01
    trueskill: TrueSkillParams = DEFAULT_PARAMS


def components(models: Iterable[str], edges: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Union-find: model -> representative of its connected component."""
    parent = {m: m for m in models}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {m: find(m) for m in parent}


def pair_weights(pairs: Iterable[tuple[str, str]], ratings: dict[str, Rating], votes: dict[str, int],
                 edges: Iterable[tuple[str, str]], paused: AbstractSet[str] = frozenset(),
                 params: MatchParams = MatchParams()) -> dict[tuple[str, str], float]:
    ts = params.trueskill
    fresh = Rating(ts.mu, ts.sigma)
    live = [(a, b) for a, b in pairs if a != b and a not in paused and b not in paused]
    comp = components({m for p in live for m in p}, edges)
    out: dict[tuple[str, str], float] = {}
    for a, b in live:
        ra, rb = ratings.get(a, fresh), ratings.get(b, fresh)
        w = quality_1vs1(ra, rb, ts) * (ra.sigma ** 2 + rb.sigma ** 2) / (2 * ts.sigma ** 2)
        novelty = (1 / math.sqrt(1 + votes.get(a, 0)) + 1 / math.sqrt(1 + votes.get(b, 0))) / 2
        w *= 1 + params.new_model_boost * novelty
        if comp[a] != comp[b]:
            w *= params.bridge_boost
        out[(a, b)] = w
    if out:
        floor = params.floor_share * sum(out.values()) / len(out)
        out = {p: w + floor for p, w in out.items()}
    return out


def choose_pair(pairs: Iterable[tuple[str, str]], ratings: dict[str, Rating], votes: dict[str, int],
                edges: Iterable[tuple[str, str]], rng: random.Random, paused: AbstractSet[str] = frozenset(),
                params: MatchParams = MatchParams()) -> tuple[str, str] | None:
    """One pair drawn by weight, None when no pair of unpaused models is servable."""
    weights = pair_weights(sorted(pairs), ratings, votes, edges, paused, params)
    if not weights:
        return None
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys], k=1)[0]
