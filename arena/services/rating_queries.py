"""Rating queries over the vote log: TrueSkill replay, Bradley-Terry with intervals, the board's rows and
order, position bias, pairwise matrices, history, integrity health (ArenaService's second job).

`RatingQueries(store, settings, clock, vote_log)` is a part of ArenaService (arena/services/service.py); it reads the log
through `vote_log.weighted_votes()`.
"""
from __future__ import annotations

import math
from typing import Callable

from arena.config import ArenaSettings
from arena.core import bradley_terry as bt
from arena.core import raters
from arena.core.ratings import Rating, replay
from arena.services import by_source, health
from arena.services.vote_log import VoteLog
from arena.tables import storage
from arena.tables.storage import AXES, VoteRow
from eval_backend.store import Store

CACHE_ENTRIES = 64          # boards kept (axis x source x attribute x method); each is refitted when votes change


def board_order(row: dict) -> tuple:
    """The one headline order of every arena table (board, API, `ratings --json`, releases), on a JSON row:
    raters.board_key (ranked models by interval rank then score, then fitted but unranked, then provisional)."""
    return raters.board_key(row.get("bt_rank"), _num(row.get("bt")), bool(row.get("provisional")),
                            row.get("votes", 0), row["model"])


class RatingQueries:
    """Ratings and statistics over the vote log (its weighted votes)."""

    def __init__(self, store: Store, settings: ArenaSettings, clock: Callable[[], float], vote_log: VoteLog):
        self.store = store
        self.settings = settings
        self.clock = clock
        self.vote_log = vote_log
        self._bt_cache: dict[tuple, tuple] = {}

    def replay_ratings(self, axis: str = "overall", votes: list[VoteRow] | None = None) -> dict[str, Rating]:
        """TrueSkill recomputed from the vote log in id order; equals the stored ratings exactly (all weights 1)."""
        if axis not in AXES:
            raise ValueError(f"axis {axis!r} is not one of {', '.join(AXES)}")
        votes = self.vote_log.weighted_votes() if votes is None else votes
        return replay([v for v in (row.as_vote(axis) for row in votes) if v is not None], self.settings.trueskill)

    def stored_ratings(self, axis: str = "overall") -> dict[str, Rating]:
        return {m: Rating(r["mu"], r["sigma"]) for m, r in storage.stored_ratings(self.store, axis).items()}

    def pair_counts(self, axis: str = "overall", votes: list[VoteRow] | None = None) -> bt.PairCounts:
        votes = self.vote_log.weighted_votes() if votes is None else votes
        return bt.counts_from_votes((v.model_a, v.model_b, v.winner, v.weight) for v in
                                    (row.as_vote(axis) for row in votes) if v is not None and v.weight > 0)

    def _cached(self, key: tuple, votes: list[VoteRow], compute):
        """compute() once per key and log state (last id, count, the weights that are not 1)."""
        state = (votes[-1].id if votes else 0, len(votes), tuple((v.id, v.weight) for v in votes if v.weight != 1))
        hit = self._bt_cache.get(key)
        if hit is None or hit[0] != state:            # refit only when the log (or a weight) has changed
            hit = self._bt_cache[key] = (state, compute())
            while len(self._bt_cache) > CACHE_ENTRIES:
                self._bt_cache.pop(next(iter(self._bt_cache)))
        return hit[1]

    def bradley_terry(self, axis: str = "overall", rounds: int | None = None, seed: int = 0,
                      votes: list[VoteRow] | None = None) -> bt.BTResult:
        rounds = self.settings.bootstrap_rounds if rounds is None else rounds
        votes = self.vote_log.weighted_votes() if votes is None else votes
        return self._cached(("bt", axis, rounds, seed), votes, lambda: bt.bootstrap(
            self.pair_counts(axis, votes), rounds, seed, min_votes=self.settings.provisional_votes))

    def context(self, axis: str, rounds: int | None) -> raters.RateContext:
        return raters.RateContext(axis, self.settings.bootstrap_rounds if rounds is None else rounds, 0,
                                  self.settings.provisional_votes, self.settings.trueskill)

    def _view(self, source: str | None, attribute: str | None) -> tuple[list[VoteRow], bool]:
        """(the votes of one source and vocal state, whether they are the whole log at weight 1)."""
        votes = self.vote_log.weighted_votes()
        view = by_source.votes_of(votes, source)
        if attribute is not None:
            view = raters.votes_with_attribute(view, raters.check_attribute(attribute, votes))
        return view, len(view) == len(votes) and all(v.weight == 1 for v in votes)

    def board(self, axis: str = "overall", rounds: int | None = None, source: str | None = None,
              attribute: str | None = None, keys: tuple[str, ...] = ("bt",), stored: bool = False) -> raters.Board:
        """The rows of one axis over one source and vocal state (None: all), with the raters `keys` (registry:
        arena/core/raters.py). `stored`: TrueSkill and the tallies from the live ratings table when the view is the
        whole log at weight 1 (they are exactly its replay); replayed otherwise."""
        ctx = self.context(axis, rounds)
        votes, whole = self._view(source, attribute)
        use_stored = stored and whole

        def compute() -> raters.Board:
            ts = tallies = None
            if use_stored:
                rows = storage.stored_ratings(self.store, axis)
                ts = {m: Rating(r["mu"], r["sigma"]) for m, r in rows.items()}
                tallies = {m: {k: r[k] for k in ("votes", "wins", "losses", "ties", "both_bad")}
                           for m, r in rows.items()}
            return raters.build_rows(votes, ctx, keys, ts, tallies)

        board = self._cached(("board", axis, ctx.rounds, by_source.check(source), attribute, keys, use_stored),
                             votes, compute)
        paused = storage.paused_models(self.store)
        for row in board.rows:
            row.paused = row.model in paused
        return board

    def ratings_table(self, axis: str = "overall", rounds: int | None = None, source: str | None = None,
                      attribute: str | None = None, style: bool = False) -> list[dict]:
        """Leaderboard rows (raters.BOARD_FIELDS, + the style fields with `style`) in board order: Bradley-Terry
        interval rank, then score; provisional models last. TrueSkill (mu, sigma, conservative) rides along: it
        is the live rating and drives matchmaking, but it does not order the board. BT fields are None and
        bt_rank None where not fitted. `source` benchmark | live, `attribute` a vocal state: over those votes."""
        keys = ("bt", "style_bt") if style else ("bt",)
        board = self.board(axis, rounds, source, attribute, keys, stored=True)
        fields = raters.with_scores(raters.BOARD_FIELDS, keys)
        return [r.as_json(fields) for r in board.rows]

    def replayed_table(self, rounds: int | None = None, axis: str = "overall", source: str | None = None,
                       attribute: str | None = None, style: bool = False) -> list[dict]:
        """The CLI's `ratings --json`: replayed TrueSkill, BT with interval, votes on the axis (incl. both-bad);
        `style`: the style-controlled fit beside it; `source` / `attribute`: over those votes only."""
        keys = ("bt", "style_bt") if style else ("bt",)
        board = self.board(axis, rounds, source, attribute, keys)
        return [r.as_json(raters.with_scores(raters.CLI_FIELDS, keys)) for r in board.rows]

    def style_effects(self, axis: str = "overall", rounds: int | None = None, source: str | None = None,
                      attribute: str | None = None) -> dict:
        """The style fit's covariate effects (log-odds per fit unit, 95% interval) and how many battles it used."""
        return self.board(axis, rounds, source, attribute, ("bt", "style_bt")).details["style_bt"]

    def attribute_grid(self, axis: str = "overall", rounds: int | None = None, source: str | None = None
                       ) -> dict[str, dict[str, raters.Score]]:
        """{attribute: {model: Score}}: Bradley-Terry over the votes on each vocal state (the heat map)."""
        board = self.board(axis, rounds, source, None, ("bt", "attribute_bt"))
        return board.details.get("attribute_bt", {}).get("grid", {})

    def position_bias(self) -> bt.Proportion:
        """Share of decisive votes won by the reply the voter started first, with a 95% Wilson interval
        (votes that do not say which reply was heard first are left out)."""
        return bt.position_bias((v.first_heard, v.slot) for v in self.vote_log.weighted_votes() if v.weight > 0)

    def slot_bias(self) -> bt.Proportion:
        """Share of decisive votes won by slot A (the left/first-listed reply), whatever was heard first."""
        return bt.position_bias(("A", v.slot) for v in self.vote_log.weighted_votes() if v.weight > 0)

    def pairwise_matrices(self, axis: str = "overall") -> dict:
        """{'models', 'win_rate' (row beat column; ties half; None where never met), 'battles'}."""
        counts = self.pair_counts(axis)
        rate, n = bt.pairwise(counts)
        return {"models": counts.models,
                "win_rate": [[None if math.isnan(x) else float(x) for x in row] for row in rate],
                "battles": n.astype(int).tolist()}

    def rating_history(self, axis: str = "overall", points: int = 100) -> list[dict]:
        """Ratings of every model after each of ~`points` evenly spaced prefixes of the vote log."""
        rated = [(row, v) for row in self.vote_log.weighted_votes() if (v := row.as_vote(axis)) is not None]
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
        """Accepted vs refused submissions in the window; of the accepted votes, those counted in full,
        down-weighted and excluded by the integrity flags (and why), and the gold checks; alert when the
        counted share (counted in full / submissions) is low."""
        since = self.clock() - window_s
        accepted, refused = storage.integrity_counts(self.store, since)
        split = health.vote_totals(health.load_counts(self.store, since, self.clock() + 1, window_s + 1))
        total = accepted + sum(refused.values())
        share = min(accepted, split["counted"]) / total if total else None   # nothing submitted: no share
        return {"window_s": window_s, "accepted": accepted, "refused": refused, **split, "counted_share": share,
                "alert": share is not None and share < self.settings.counted_share_alert}


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
