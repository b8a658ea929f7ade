"""Rating queries over the vote log: TrueSkill replay, Bradley-Terry with intervals, the board's rows and
order, position bias, pairwise matrices, history, integrity health (ArenaService's second job).

`RatingQueries` is a part of ArenaService (arena/service.py); it reads the log through VoteLog.votes.
"""
from __future__ import annotations

import math

from . import bradley_terry as bt
from . import by_source
from . import health, storage, vote_flags
from .ratings import Rating, replay
from .storage import AXES, VoteRow


def board_order(row: dict) -> tuple:
    """The one headline order of every arena table (board, API, `ratings --json`, releases): ranked models by
    Bradley-Terry interval rank, then score; then models fitted but unranked; then provisional ones, most
    votes first. Ties broken by name, so the order is a pure function of the rows."""
    rank, score = row.get("bt_rank"), _num(row.get("bt"))
    if row.get("provisional"):
        return (2, 0, -row.get("votes", 0), row["model"])
    if rank is None:
        return (1, 0, -(score if score is not None else -math.inf), row["model"])
    return (0, rank, -score, row["model"])


def ratings_rows(ts: dict[str, Rating], fit: dict[str, dict], votes: dict[str, int]) -> list[dict]:
    """The rows of `python -m arena ratings --json`, in `board_order`. One function for the live table and
    the release rebuild, so the two cannot drift apart. A model missing from `fit` (only both-bad votes)
    is provisional."""
    out = []
    for model, r in ts.items():
        b = fit.get(model, {})
        out.append({"model": model, "mu": r.mu, "sigma": r.sigma, "conservative": r.conservative,
                    "bt": _num(b.get("bt")), "bt_low": _num(b.get("bt_low")), "bt_high": _num(b.get("bt_high")),
                    "bt_rank": b.get("bt_rank"), "provisional": bool(b.get("provisional", True)),
                    "votes": votes[model]})
    out.sort(key=board_order)
    return out


class RatingQueries:
    """Ratings and statistics over the vote log (uses settings, store, clock, _bt_cache, votes(), paused())."""

    # ------------------------------------------------------------------ ratings and statistics
    def replay_ratings(self, axis: str = "overall", votes: list[VoteRow] | None = None) -> dict[str, Rating]:
        """TrueSkill recomputed from the vote log in id order; equals the stored ratings exactly."""
        if axis not in AXES:
            raise ValueError(f"axis {axis!r} is not one of {', '.join(AXES)}")
        votes = self.votes() if votes is None else votes
        return replay([v for v in (row.as_vote(axis) for row in votes) if v is not None], self.settings.trueskill)

    def stored_ratings(self, axis: str = "overall") -> dict[str, Rating]:
        return {m: Rating(r["mu"], r["sigma"]) for m, r in storage.stored_ratings(self.store, axis).items()}

    # ------------------------------------------------------------------ which votes the public fit counts
    def vote_weights(self) -> dict[int, float]:
        """{vote id: weight < 1} of the votes the integrity flags in force hold down (arena/vote_flags.py: gold
        checks, agreement, sweeps); read again only when the flags change."""
        key = vote_flags.version(self.store)
        if self._weights_cache is None or self._weights_cache[0] != key:
            self._weights_cache = (key, vote_flags.weights(self.store))
        return self._weights_cache[1]

    def counted(self, votes: list[VoteRow]) -> list[VoteRow]:
        """The votes the public fit (Bradley-Terry, the replayed table, pairwise, releases) counts: every vote but
        the excluded ones (weight 0). The one place the fit reads the flags: down-weighted votes (0 < weight < 1)
        count in full here until the raters apply per-vote weights (issue 23's Rater), which take
        `vote_weights()` as they are."""
        w = self.vote_weights()
        return [v for v in votes if w.get(v.id, 1.0) > 0] if w else votes

    def pair_counts(self, axis: str = "overall", votes: list[VoteRow] | None = None) -> bt.PairCounts:
        votes = self.counted(self.votes() if votes is None else votes)
        return bt.counts_from_votes((v.model_a, v.model_b, v.winner) for v in
                                    (row.as_vote(axis) for row in votes) if v is not None)

    def bradley_terry(self, axis: str = "overall", rounds: int | None = None, seed: int = 0,
                      votes: list[VoteRow] | None = None) -> bt.BTResult:
        rounds = self.settings.bootstrap_rounds if rounds is None else rounds
        votes = self.counted(self.votes() if votes is None else votes)
        key = (axis, rounds, seed, votes[-1].id if votes else 0, len(votes), self._weights_cache[0])
        cached = self._bt_cache.get(axis)
        if cached is None or cached[0] != key:       # refit only when the log has grown
            cached = self._bt_cache[axis] = (key, bt.bootstrap(self.pair_counts(axis, votes), rounds, seed,
                                                               min_votes=self.settings.provisional_votes))
        return cached[1]

    def ratings_table(self, axis: str = "overall", rounds: int | None = None, source: str | None = None
                      ) -> list[dict]:
        """Leaderboard rows in `board_order` (Bradley-Terry interval rank, then score; provisional models
        last). TrueSkill (mu, sigma, conservative) rides along: it is the live rating and drives
        matchmaking, but it does not order the board. BT columns are NaN and bt_rank None where not fitted.
        `source` benchmark | live: the same rows over that kind of battle only (arena/by_source.py)."""
        if by_source.check(source) != "all":
            return self._board_over(axis, rounds, by_source.votes_of(self, source))
        votes = self.votes()
        bt_rows = self.bradley_terry(axis, rounds, votes=votes).as_dict()
        paused = self.paused()
        rows = []
        for model, r in storage.stored_ratings(self.store, axis).items():
            b = bt_rows.get(model, {"bt": math.nan, "bt_low": math.nan, "bt_high": math.nan, "bt_rank": None,
                                    "provisional": True, "bt_votes": 0})
            rows.append({"model": model, "mu": r["mu"], "sigma": r["sigma"],
                         "conservative": r["mu"] - 3 * r["sigma"], **b,
                         "votes": r["votes"], "wins": r["wins"], "losses": r["losses"], "ties": r["ties"],
                         "both_bad": r["both_bad"], "paused": model in paused})
        rows.sort(key=board_order)
        return rows

    def replayed_table(self, rounds: int | None = None, axis: str = "overall", source: str | None = None
                       ) -> list[dict]:
        """The CLI's `ratings --json`: replayed TrueSkill, BT with interval, votes on the axis (incl. both-bad).
        `source` benchmark | live: over that kind of battle only."""
        votes = self.counted(self.votes() if by_source.check(source) == "all" else by_source.votes_of(self, source))
        ts = self.replay_ratings(axis, votes)
        fit = self.bradley_terry(axis, rounds, votes=votes).as_dict()
        n = {m: 0 for m in ts}
        for v in votes:
            if v.outcome(axis) is not None:
                n[v.model_a] += 1
                n[v.model_b] += 1
        return ratings_rows(ts, fit, n)

    def _board_over(self, axis: str, rounds: int | None, votes: list[VoteRow]) -> list[dict]:
        """The board's rows (ratings_table's columns) over a subset of the votes (one battle source): TrueSkill
        replayed and tallied over that subset, since the stored ratings cover every vote."""
        votes = self.counted(votes)
        ts = self.replay_ratings(axis, votes)
        fit = self.bradley_terry(axis, rounds, votes=votes).as_dict()
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
        paused = self.paused()
        rows = []
        for model, r in ts.items():
            b = fit.get(model, {"bt": math.nan, "bt_low": math.nan, "bt_high": math.nan, "bt_rank": None,
                                "provisional": True, "bt_votes": 0})
            rows.append({"model": model, "mu": r.mu, "sigma": r.sigma, "conservative": r.conservative, **b,
                         **tally[model], "paused": model in paused})
        rows.sort(key=board_order)
        return rows

    def position_bias(self) -> bt.Proportion:
        """Share of decisive votes won by the reply the voter started first, with a 95% Wilson interval
        (votes that do not say which reply was heard first are left out)."""
        return bt.position_bias((v.first_heard, v.slot) for v in self.votes())

    def slot_bias(self) -> bt.Proportion:
        """Share of decisive votes won by slot A (the left/first-listed reply), whatever was heard first."""
        return bt.position_bias(("A", v.slot) for v in self.votes())

    def pairwise_matrices(self, axis: str = "overall") -> dict:
        """{'models', 'win_rate' (row beat column; ties half; None where never met), 'battles'}."""
        counts = self.pair_counts(axis)
        rate, n = bt.pairwise(counts)
        return {"models": counts.models,
                "win_rate": [[None if math.isnan(x) else float(x) for x in row] for row in rate],
                "battles": n.astype(int).tolist()}

    def rating_history(self, axis: str = "overall", points: int = 100) -> list[dict]:
        """Ratings of every model after each of ~`points` evenly spaced prefixes of the vote log."""
        rated = [(row, v) for row in self.votes() if (v := row.as_vote(axis)) is not None]
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
