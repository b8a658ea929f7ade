"""Rating methods: one protocol, one registry, one typed row.

A rater turns the votes of one axis into numbers per model (`Fit`): TrueSkill (replayed, the live rating that
picks battles), Bradley–Terry (the published ranking), Bradley–Terry with style covariates (arena/core/style_bt.py:
strengths all else equal, with each covariate's effect) and Bradley–Terry per vocal state of the user's
utterance (the models x attributes grid behind "who hears what"). `build_rows` runs the raters asked for and
assembles one `RatingRow` per model, the shape the CLI, the release, the HTTP API and the board all read.

Adding a rating method is one class with `key` and `rate(votes, ctx) -> Fit`, one entry in RATERS; a method that
scores models with an interval returns `Score`s and its fields appear in the rows as `<key>`, `<key>_low`,
`<key>_high`, `<key>_rank`, `<key>_provisional`, `<key>_votes` (plain Bradley–Terry keeps its historical names:
`bt`, ..., `provisional`, `bt_votes`).

Every rater honours each vote's `weight` (VoteRow.weight, with the integrity factors of
VoteLog.vote_weights applied by `weighted`): 0 leaves a vote out, between 0 and 1 down-weights it
(TrueSkill: arena/core/ratings.py:replay; Bradley–Terry: bradley_terry.counts_from_arrays; style: arena/core/style_bt.py).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Iterable, Protocol, Sequence

import numpy as np

from arena.core import bradley_terry as bt
from arena.core import covariates, style_bt
from arena.core.ratings import DEFAULT_PARAMS, Rating, TrueSkillParams, replay
from arena.core.vote_rows import AXES, VoteRow
from eval_backend.benchmark.model import ATTRIBUTE_VOCABULARY, ATTRIBUTES, NEUTRAL


@dataclass(frozen=True)
class RateContext:
    axis: str = "overall"
    rounds: int = 200
    seed: int = 0
    min_votes: int = 0                       # the vote floor: fewer rated votes = provisional
    trueskill: TrueSkillParams = DEFAULT_PARAMS


@dataclass
class Score:
    """One model's number from an interval-giving rater; value/low/high None where not fitted."""
    value: float | None = None
    low: float | None = None
    high: float | None = None
    rank: int | None = None
    provisional: bool = True
    votes: int = 0


@dataclass
class Fit:
    scores: dict[str, Score] = field(default_factory=dict)          # model -> score
    trueskill: dict[str, Rating] = field(default_factory=dict)      # model -> rating (the TrueSkill rater)
    details: dict = field(default_factory=dict)                     # method-specific, JSON-ready


class Rater(Protocol):
    key: str
    scores_models: bool          # its Fit has a Score per model: the rows carry its fields

    def rate(self, votes: Sequence[VoteRow], ctx: RateContext) -> Fit: ...


# ---------------------------------------------------------------- the votes a rater sees
def weighted(votes: Sequence[VoteRow], factors: dict[int, float]) -> list[VoteRow]:
    """The votes with each one's stored weight times its factor (vote id -> factor in [0, 1]; absent: 1)."""
    for vote_id, f in factors.items():
        if not 0.0 <= f <= 1.0:
            raise ValueError(f"vote {vote_id}: weight factor {f!r} is not in [0, 1]")
    if not factors:
        return list(votes)
    return [dataclasses.replace(v, weight=v.weight * factors[v.id]) if factors.get(v.id, 1.0) != 1.0 else v
            for v in votes]


def rated(votes: Iterable[VoteRow], axis: str) -> list[tuple[VoteRow, str]]:
    """(vote, slot outcome A | B | tie | both_bad) of the votes that bear on `axis` and count (weight > 0)."""
    if axis not in AXES:
        raise ValueError(f"axis {axis!r} is not one of {', '.join(AXES)}")
    return [(v, out) for v in votes if (out := v.outcome(axis)) is not None and v.weight > 0]


def _battles(votes: Sequence[VoteRow], axis: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray,
                                                            np.ndarray, list[VoteRow]]:
    """(models, a, b, outcome 0/1/2, weight, the votes) of the decisive and tied votes on the axis."""
    names: dict[str, int] = {}
    kept = [(v, out) for v, out in rated(votes, axis) if out != "both_bad"]
    for v, _ in kept:
        names.setdefault(v.model_a, len(names))
        names.setdefault(v.model_b, len(names))
    a = np.fromiter((names[v.model_a] for v, _ in kept), np.int64, len(kept))
    b = np.fromiter((names[v.model_b] for v, _ in kept), np.int64, len(kept))
    out = np.fromiter(({"A": 0, "B": 1}.get(o, 2) for _, o in kept), np.int64, len(kept))
    w = np.fromiter((v.weight for v, _ in kept), float, len(kept))
    return list(names), a, b, out, w, [v for v, _ in kept]


def _scores(res: bt.BTResult) -> dict[str, Score]:
    return {m: Score(_num(d["bt"]), _num(d["bt_low"]), _num(d["bt_high"]), d["bt_rank"], d["provisional"],
                     d["bt_votes"]) for m, d in res.as_dict().items()}


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


# ---------------------------------------------------------------- the raters
class TrueSkillRater:
    key = "trueskill"
    scores_models = False

    def rate(self, votes: Sequence[VoteRow], ctx: RateContext) -> Fit:
        # both-bad votes included: they rate nothing but give a model its row
        return Fit(trueskill=replay([vote for v, _ in rated(votes, ctx.axis) if (vote := v.as_vote(ctx.axis))],
                                    ctx.trueskill))


class BradleyTerryRater:
    key = "bt"
    scores_models = True

    def rate(self, votes: Sequence[VoteRow], ctx: RateContext) -> Fit:
        models, a, b, out, w, _ = _battles(votes, ctx.axis)
        counts = bt.counts_from_arrays(a, b, out, models, w)
        return Fit(scores=_scores(bt.bootstrap(counts, ctx.rounds, ctx.seed, min_votes=ctx.min_votes)))


class StyleRater:
    """Bradley–Terry with the style covariates of arena/core/covariates.py; details: each covariate's effect."""
    key = "style_bt"
    scores_models = True

    def rate(self, votes: Sequence[VoteRow], ctx: RateContext) -> Fit:
        models, a, b, out, w, kept = _battles(votes, ctx.axis)
        names = tuple(c.name for c in covariates.COVARIATES)
        battles = style_bt.StyleBattles(models, a, b, out, w, covariates.differences(kept), names)
        res = style_bt.bootstrap(battles, ctx.rounds, ctx.seed, min_votes=ctx.min_votes)
        return Fit(scores=_scores(res.bt), details={"battles": res.battles, "rounds": res.bt.rounds,
                                                    "effects": res.effects()})


class AttributeRater:
    """Plain Bradley–Terry over the votes on utterances of each vocal state (attribute); details: the grid."""
    key = "attribute_bt"
    scores_models = False

    def rate(self, votes: Sequence[VoteRow], ctx: RateContext) -> Fit:
        grid = {attr: BradleyTerryRater().rate(votes_with_attribute(votes, attr), ctx).scores
                for attr in attributes_in(votes)}
        return Fit(details={"grid": grid})


RATERS: dict[str, Rater] = {r.key: r for r in (TrueSkillRater(), BradleyTerryRater(), StyleRater(), AttributeRater())}


# ---------------------------------------------------------------- vocal states
def _norm(name: str | None) -> str | None:
    return name.strip().lower() if isinstance(name, str) and name.strip() else None


KNOWN_ATTRIBUTES = (NEUTRAL, *ATTRIBUTES)      # the benchmark's 45 labels, and plain speech


def attributes_in(votes: Iterable[VoteRow]) -> list[str]:
    """The attributes the votes carry, in the vocabulary's order (neutral first), others after by name."""
    seen = {a for v in votes if (a := _norm(v.attribute))}
    order = {a: k for k, a in enumerate(KNOWN_ATTRIBUTES)}
    return sorted(seen, key=lambda a: (order.get(a, len(order)), a))


def check_attribute(name: str, votes: Iterable[VoteRow] = ()) -> str:
    """The normalised attribute, or ValueError: a label of the vocabulary, neutral, or one the votes carry."""
    norm = _norm(name)
    if norm is None or (norm not in KNOWN_ATTRIBUTES and norm not in attributes_in(votes)):
        dims = "; ".join(f"{d}: {', '.join(x for c in cats.values() for x in c)}"
                         for d, cats in ATTRIBUTE_VOCABULARY.items())
        raise ValueError(f"attribute {name!r} is not neutral, a label of the vocabulary ({dims}), "
                         "nor one the votes carry")
    return norm


def votes_with_attribute(votes: Iterable[VoteRow], name: str) -> list[VoteRow]:
    norm = _norm(name)
    return [v for v in votes if _norm(v.attribute) == norm]


# ---------------------------------------------------------------- the row
SCORE_PARTS = {"": "value", "_low": "low", "_high": "high", "_rank": "rank", "_provisional": "provisional",
               "_votes": "votes"}
LEGACY_BT = {"bt": "value", "bt_low": "low", "bt_high": "high", "bt_rank": "rank", "provisional": "provisional",
             "bt_votes": "votes"}


def score_fields(key: str) -> dict[str, str]:
    """{JSON field: Score attribute} of a rater's Score in a row (plain Bradley–Terry: its historical names)."""
    return dict(LEGACY_BT) if key == "bt" else {key + part: attr for part, attr in SCORE_PARTS.items()}


@dataclass
class RatingRow:
    """One model's line of a board: who, how many votes, TrueSkill, and each interval rater's Score."""
    model: str
    mu: float
    sigma: float
    votes: int = 0              # votes on the axis that count (both-bad included)
    wins: int = 0
    losses: int = 0
    ties: int = 0
    both_bad: int = 0
    paused: bool = False
    scores: dict[str, Score] = field(default_factory=dict)    # rater key -> Score (every scoring rater run)

    @property
    def conservative(self) -> float:
        return self.mu - 3.0 * self.sigma

    def score(self, key: str = "bt") -> Score:
        return self.scores.get(key) or Score()

    def flat(self) -> dict:
        """Every field by its JSON name."""
        out = {"model": self.model, "mu": self.mu, "sigma": self.sigma, "conservative": self.conservative,
               "votes": self.votes, "wins": self.wins, "losses": self.losses, "ties": self.ties,
               "both_bad": self.both_bad, "paused": self.paused}
        for key, score in self.scores.items():
            out.update({name: getattr(score, attr) for name, attr in score_fields(key).items()})
        return out

    def as_json(self, fields: Sequence[str]) -> dict:
        flat = self.flat()
        return {f: flat[f] for f in fields}


CLI_FIELDS = ("model", "mu", "sigma", "conservative", "bt", "bt_low", "bt_high", "bt_rank", "provisional", "votes")
BOARD_FIELDS = ("model", "mu", "sigma", "conservative", "bt", "bt_low", "bt_high", "bt_rank", "provisional",
                "bt_votes", "votes", "wins", "losses", "ties", "both_bad", "paused")


def with_scores(fields: Sequence[str], keys: Iterable[str]) -> tuple[str, ...]:
    """`fields` with each extra scoring rater's fields after bt_rank (style_bt, style_bt_low, ...)."""
    extra = tuple(f for k in keys if k != "bt" and RATERS[k].scores_models for f in score_fields(k))
    at = list(fields).index("bt_rank") + 1
    return (*fields[:at], *extra, *fields[at:])


def board_key(rank: int | None, score: float | None, provisional: bool, votes: int, model: str) -> tuple:
    """The one headline order of every arena table: ranked models by interval rank then score; then models fitted
    but unranked; then provisional ones, most votes first. Ties broken by name: a pure function of the rows."""
    if provisional:
        return (2, 0, -votes, model)
    if rank is None:
        return (1, 0, -(score if score is not None and not math.isnan(score) else -math.inf), model)
    return (0, rank, -(score if score is not None else 0.0), model)


def row_order(row: RatingRow) -> tuple:
    s = row.score("bt")
    return board_key(s.rank, s.value, s.provisional, row.votes, row.model)


# ---------------------------------------------------------------- the board
@dataclass
class Board:
    rows: list[RatingRow]
    details: dict[str, dict]                 # rater key -> its Fit.details (style effects, attribute grid)


def tally(votes: Iterable[VoteRow], axis: str) -> dict[str, dict[str, int]]:
    """Per model: votes on the axis that count, and its wins, losses, ties and both-bad among them."""
    out: dict[str, dict[str, int]] = {}
    for v, res in rated(votes, axis):
        for slot, model in (("A", v.model_a), ("B", v.model_b)):
            t = out.setdefault(model, {"votes": 0, "wins": 0, "losses": 0, "ties": 0, "both_bad": 0})
            t["votes"] += 1
            if res in ("tie", "both_bad"):
                t["ties" if res == "tie" else "both_bad"] += 1
            else:
                t["wins" if res == slot else "losses"] += 1
    return out


def build_rows(votes: Sequence[VoteRow], ctx: RateContext, keys: Sequence[str] = ("bt",),
               trueskill: dict[str, Rating] | None = None, tallies: dict[str, dict[str, int]] | None = None,
               paused: Iterable[str] = ()) -> Board:
    """The board of one axis over `votes`: a row per model that has a vote on it (or a stored rating), in
    board order. `trueskill` / `tallies`: the stored live ratings and counts when they cover exactly these
    votes (all of them, all weights 1); replayed from the votes otherwise."""
    for key in keys:
        if key not in RATERS:
            raise ValueError(f"rating method {key!r} is not one of {', '.join(RATERS)}")
    ts = trueskill if trueskill is not None else RATERS["trueskill"].rate(votes, ctx).trueskill
    counts = tallies if tallies is not None else tally(votes, ctx.axis)
    fits = {key: RATERS[key].rate(votes, ctx) for key in keys if key != "trueskill"}
    paused = set(paused)
    rows = []
    for model, r in ts.items():
        t = counts.get(model, {})
        rows.append(RatingRow(model, r.mu, r.sigma, t.get("votes", 0), t.get("wins", 0), t.get("losses", 0),
                              t.get("ties", 0), t.get("both_bad", 0), model in paused,
                              {k: f.scores.get(model) or Score() for k, f in fits.items()
                               if RATERS[k].scores_models}))
    rows.sort(key=row_order)
    return Board(rows, {k: f.details for k, f in fits.items() if f.details})
