"""Bradley–Terry intervals before and after the vote floor, on a synthetic log shaped like the real one.

    python benchmarks/bt_intervals_report.py [--rounds 1000] [--seed 0] [--floor 30]

The real public log that showed the problem had 303 votes among 8 models, one of which had a single vote.
`synthetic_log` draws such a log: 7 established models with known strengths, 302 votes spread over their
pairs (about 10% ties, 5% both-bad), plus one vote in which a newcomer beats one of them. The "before" fit
is the former `arena.core.bradley_terry.bootstrap` (every model fitted and ranked, scale centred on the mean of
all models, percentile bounds as they fall); "after" is the current one with the vote floor. The report
prints, per model: the score, its 95% interval and interval rank, whether the score lies inside its
interval, and how far the bounds move when the newcomer's single vote is removed from the log. Then the
one-vote axis: a log holding a single vote. Deterministic (fixed seeds): no timing, so machine load does
not matter.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.core import bradley_terry as bt  # noqa: E402

ESTABLISHED = {"cascade-cue": 0.35, "warm-omni": 0.2, "calm-voice": 0.1, "plain-tts": 0.0,
               "fast-talk": -0.1, "cascade-blind": -0.25, "flat-bot": -0.4}
NEWCOMER = "newcomer"


def synthetic_log(seed: int = 0, newcomer: bool = True, n: int = 302) -> list[tuple[str, str, str]]:
    """(model_a, model_b, winner) votes: n among the established models, then (optionally) the newcomer's
    single vote, a win over the weakest model. Winner is a model name, 'tie' or 'both_bad'."""
    rng = np.random.default_rng(seed)
    names = list(ESTABLISHED)
    votes = []
    for _ in range(n):
        a, b = rng.choice(len(names), 2, replace=False)
        ma, mb = names[a], names[b]
        u = rng.random()
        if u < 0.05:
            votes.append((ma, mb, "both_bad"))
        elif u < 0.15:
            votes.append((ma, mb, "tie"))
        else:
            p = 1 / (1 + np.exp(ESTABLISHED[mb] - ESTABLISHED[ma]))
            votes.append((ma, mb, ma if rng.random() < p else mb))
    if newcomer:
        votes.append((NEWCOMER, "flat-bot", NEWCOMER))
    return votes


def legacy_bootstrap(counts: bt.PairCounts, rounds: int, seed: int = 0, prior: float = 1e-4) -> dict:
    """The former algorithm: all models fitted and ranked, centred on the mean of all, bounds as they fall."""
    m = len(counts.models)
    win = (counts.wins_i + 0.5 * counts.ties).astype(float)[None]
    n = (counts.wins_i + counts.wins_j + counts.ties).astype(float)[None]
    point = bt._fit_batch(m, counts.i, counts.j, win, n, prior)[0]

    def elo(s):
        return bt.ELO_BASE + bt.ELO_SCALE * (s - s.mean(axis=-1, keepdims=True))
    cells = np.stack([counts.wins_i, counts.wins_j, counts.ties], axis=1).astype(float)
    rng = np.random.default_rng(seed)
    draw = rng.multinomial(int(cells.sum()), (cells / cells.sum()).ravel(), size=rounds).reshape(rounds, -1, 3)
    w = draw[:, :, 0] + 0.5 * draw[:, :, 2]
    nn = draw.sum(axis=2).astype(float)
    boot = elo(bt._fit_batch(m, counts.i, counts.j, w, nn, prior, start=point, tol=1e-7))
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    score = elo(point)
    rank = 1 + (low[None, :] > high[:, None]).sum(axis=1)
    return {mod: {"bt": score[k], "low": low[k], "high": high[k], "rank": int(rank[k])}
            for k, mod in enumerate(counts.models)}


def current(counts: bt.PairCounts, rounds: int, seed: int, floor: int) -> dict:
    res = bt.bootstrap(counts, rounds, seed, min_votes=floor)
    return {mod: {"bt": d["bt"], "low": d["bt_low"], "high": d["bt_high"], "rank": d["bt_rank"],
                  "provisional": d["provisional"]} for mod, d in res.as_dict().items()}


def shift(a: dict, b: dict, model: str) -> float | None:
    """Largest movement of a model's two bounds between two fits (None where either has no interval)."""
    x, y = a.get(model), b.get(model)
    if not x or not y or any(np.isnan(v) for v in (x["low"], x["high"], y["low"], y["high"])):
        return None
    return max(abs(x["low"] - y["low"]), abs(x["high"] - y["high"]))


def report(rounds: int = 1000, seed: int = 0, floor: int = 30) -> dict:
    with_new = bt.counts_from_votes(synthetic_log(seed, newcomer=True))
    without = bt.counts_from_votes(synthetic_log(seed, newcomer=False))
    votes = dict(zip(with_new.models, bt.model_votes(with_new).tolist()))
    before, before_wo = legacy_bootstrap(with_new, rounds), legacy_bootstrap(without, rounds)
    after, after_wo = current(with_new, rounds, 0, floor), current(without, rounds, 0, floor)
    rows = []
    for mod in sorted(with_new.models, key=lambda x: -before[x]["bt"]):
        b, a = before[mod], after[mod]
        rows.append({"model": mod, "votes": votes[mod], "before": b, "after": a,
                     "before_inside": bool(b["low"] <= b["bt"] <= b["high"]),
                     "after_inside": None if a["provisional"] else bool(a["low"] <= a["bt"] <= a["high"]),
                     "before_shift": shift(before, before_wo, mod), "after_shift": shift(after, after_wo, mod)})
    one = bt.counts_from_votes([("cascade-cue", "cascade-blind", "cascade-cue")])
    return {"rows": rows, "one_vote_before": legacy_bootstrap(one, rounds),
            "one_vote_after": current(one, rounds, 0, floor), "votes": sum(1 for _ in synthetic_log(seed))}


def _fmt(d: dict) -> str:
    if d.get("provisional"):
        return f"{'too few votes':>23}  {'-':>4}"
    return f"{d['bt']:6.0f} [{d['low']:6.0f}, {d['high']:6.0f}]  {d['rank']:>4}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--floor", type=int, default=30, help="vote floor (ArenaSettings.provisional_votes)")
    ap.add_argument("--seeds", type=int, default=20, help="logs drawn for the summary over seeds")
    args = ap.parse_args(argv)
    rep = report(args.rounds, args.seed, args.floor)
    print(f"synthetic log: {rep['votes']} votes, 8 models; {args.rounds} bootstrap rounds; floor {args.floor}")
    print(f"{'model':14} {'votes':>5} | {'before: BT [95%]':>23} {'rank':>4} {'in?':>4} {'moves':>6} | "
          f"{'after: BT [95%]':>23} {'rank':>4} {'in?':>4} {'moves':>6}")
    for r in rep["rows"]:
        def mv(x):
            return f"{x:6.1f}" if x is not None else f"{'-':>6}"

        def ins(x):
            return f"{'-' if x is None else ('yes' if x else 'NO'):>4}"
        print(f"{r['model']:14} {r['votes']:5d} | {_fmt(r['before'])} {ins(r['before_inside'])} "
              f"{mv(r['before_shift'])} | {_fmt(r['after'])} {ins(r['after_inside'])} {mv(r['after_shift'])}")
    print("('moves': largest change of a bound, in points, when the newcomer's single vote is removed)")
    print("one vote on an axis:")
    for mod in rep["one_vote_before"]:
        print(f"  {mod:14} before {_fmt(rep['one_vote_before'][mod])}   after {_fmt(rep['one_vote_after'][mod])}")
    summary(args.seeds, args.rounds, args.floor)
    return 0


def summary(seeds: int, rounds: int, floor: int) -> None:
    """Over `seeds` logs: points outside their interval, the share of the interval above the point, and the
    largest bound movement when the newcomer's vote is removed, before and after."""
    outside = {"before": 0, "after": 0}
    above, moves = {"before": [], "after": []}, {"before": [], "after": []}
    total = 0
    for seed in range(seeds):
        rows = [r for r in report(rounds, seed, floor)["rows"] if r["model"] != NEWCOMER]
        total += len(rows)
        for k in ("before", "after"):
            outside[k] += sum(not r[f"{k}_inside"] for r in rows)
            above[k] += [(r[k]["high"] - r[k]["bt"]) / (r[k]["high"] - r[k]["low"]) for r in rows]
            moves[k].append(max(r[f"{k}_shift"] for r in rows))
    print(f"over {seeds} logs ({total} established model rows):")
    for k in ("before", "after"):
        print(f"  {k:6}: score outside its interval {outside[k]}; share of the interval above the score, median "
              f"{np.median(above[k]):.2f}; largest bound move on removing the newcomer's vote, median "
              f"{np.median(moves[k]):.1f}, max {max(moves[k]):.1f} points")


if __name__ == "__main__":
    sys.exit(main())
