"""Speed of the arena's rating code (figures for docs/benchmarks.md, "Arena ratings").

    python benchmarks/bench_ratings.py [--votes 1000000] [--models 50] [--rounds 1000] [--runs 3] [--live 200]

1. TrueSkill replay of N votes among M models (closed form, arena.core.ratings.replay),
   against the `trueskill` package timed on a sample and extrapolated.
2. Bradley-Terry: aggregate N battles into pair counts, then fit + `rounds` bootstrap rounds.
3. (--live K) K serve_battle + submit_vote round trips on a real Store in a temp dir
   (seeded with espeak-ng clips by tests.support.arena_fixtures), fsync'd commits included; and, timed apart, the
   first-fetch record of each of the battle's three clips (the audio route's write, arena/tables/battle_clips.py).
Prints the median of --runs runs.
"""
from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.core import bradley_terry as bt  # noqa: E402
from arena.core.ratings import Vote, replay  # noqa: E402


def simulated_votes(n: int, m: int, seed: int = 0) -> list[Vote]:
    rng = np.random.default_rng(seed)
    skill = rng.normal(0, 1, m)
    a = rng.integers(0, m, n)
    b = rng.integers(0, m - 1, n)
    b = np.where(b >= a, b + 1, b)
    p = 1 / (1 + np.exp(-(skill[a] - skill[b])))
    u = rng.random(n)
    names = [f"model-{k:02d}" for k in range(m)]
    votes = []
    for k in range(n):
        ma, mb = names[a[k]], names[b[k]]
        if u[k] < 0.03:
            w = "both_bad"
        elif u[k] < 0.13:
            w = "tie"
        else:
            w = ma if rng.random() < p[k] else mb
        votes.append(Vote(k + 1, ma, mb, w))
    return votes


CPU: dict[str, float] = {}


def timed(fn, runs: int, label: str = "") -> tuple[float, object]:
    """Median wall time of `runs` calls; the median CPU time goes to CPU[label] (the machine is shared)."""
    times, cpu, out = [], [], None
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU[label] = statistics.median(cpu)
    return statistics.median(times), out


def package_rate(votes: list[Vote]) -> float:
    """Seconds per update with trueskill.rate_1vs1 (the package's factor graph)."""
    import trueskill
    r: dict[str, trueskill.Rating] = {}
    t, c = time.perf_counter(), time.process_time()
    for v in votes:
        ra, rb = r.get(v.model_a, trueskill.Rating()), r.get(v.model_b, trueskill.Rating())
        if v.winner == "both_bad":
            continue
        if v.winner == v.model_b:
            rb, ra = trueskill.rate_1vs1(rb, ra)
        else:
            ra, rb = trueskill.rate_1vs1(ra, rb, drawn=v.winner == "tie")
        r[v.model_a], r[v.model_b] = ra, rb
    CPU["package"] = (time.process_time() - c) / len(votes)
    return (time.perf_counter() - t) / len(votes)


def live_round_trips(k: int) -> tuple[float, float]:
    """Median seconds per serve_battle + submit_vote on a real store, and per clip-fetch record."""
    from arena.config import ArenaSettings
    from arena.services.service import ArenaService
    from eval_backend.store import Store
    from tests.support.arena_fixtures import seed

    class Clock:
        t = 1_700_000_000.0

        def __call__(self):
            return self.t

    with tempfile.TemporaryDirectory() as tmp:
        seed(tmp, ("m-one", "m-two", "m-three", "m-four"), n_scripts=3)
        clock = Clock()
        svc = ArenaService(Store(tmp), ArenaSettings(session_votes_per_minute=10**6, ip_votes_per_minute=10**6,
                                                     session_votes_per_day=10**6, ip_votes_per_day=10**6),
                           clock=clock)
        svc.serve_battle("warm-up", "127.0.0.1")
        times, fetches = [], []
        for i in range(k):
            t = time.perf_counter()
            view = svc.serve_battle(f"s{i % 7}", "127.0.0.1")
            elapsed = time.perf_counter() - t
            for clip in view.min_listen_s:              # the player fetches each clip (the audio route records it)
                t = time.perf_counter()
                svc.clip_fetched(view.battle_id, clip)
                fetches.append(time.perf_counter() - t)
            clock.t += view.total_min_listen_s + 1       # the listening time, without waiting for it
            t = time.perf_counter()
            svc.submit_vote(view.battle_id, f"s{i % 7}", "127.0.0.1", random.choice("AB"),
                            listen={"played_s": view.min_listen_s, "order": ["user", "A", "B"]})
            times.append(elapsed + time.perf_counter() - t)
        assert svc.replay_ratings() == svc.stored_ratings()
        return statistics.median(times), statistics.median(fetches)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--votes", type=int, default=1_000_000)
    p.add_argument("--models", type=int, default=50)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--package-sample", type=int, default=5000)
    p.add_argument("--live", type=int, default=0)
    args = p.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{args.votes:,} votes, {args.models} models, median of {args.runs}")
    t0 = time.perf_counter()
    votes = simulated_votes(args.votes, args.models)
    print(f"simulated votes in {time.perf_counter() - t0:.1f} s (not timed below)")

    t_replay, ratings = timed(lambda: replay(votes), args.runs, "replay")
    print(f"TrueSkill replay (closed form): {t_replay:.2f} s wall, {CPU['replay']:.2f} s CPU "
          f"({t_replay / args.votes * 1e6:.2f} us/vote)")
    per = package_rate(votes[:args.package_sample])
    print(f"trueskill package: {per * 1e6:.0f} us/vote wall, {CPU['package'] * 1e6:.0f} us CPU -> "
          f"{per * args.votes:.0f} s wall, {CPU['package'] * args.votes:.0f} s CPU for {args.votes:,} votes "
          f"(extrapolated from {args.package_sample:,})")

    names = sorted({v.model_a for v in votes} | {v.model_b for v in votes})
    idx = {m: k for k, m in enumerate(names)}
    a = np.fromiter((idx[v.model_a] for v in votes), np.int64, len(votes))
    b = np.fromiter((idx[v.model_b] for v in votes), np.int64, len(votes))
    out = np.fromiter((0 if v.winner == v.model_a else 1 if v.winner == v.model_b else 2 if v.winner == "tie"
                       else 3 for v in votes), np.int64, len(votes))
    keep = out < 3
    t_agg, counts = timed(lambda: bt.counts_from_arrays(a[keep], b[keep], out[keep], names), args.runs, "agg")
    print(f"BT aggregation of {int(keep.sum()):,} battles into {len(counts.i)} pairs: {t_agg:.3f} s")
    t_boot, res = timed(lambda: bt.bootstrap(counts, args.rounds, seed=1), args.runs, "boot")
    print(f"BT fit + {args.rounds} bootstrap rounds: {t_boot:.2f} s wall, {CPU['boot']:.2f} s CPU "
          f"(mean 95% interval width {float(np.mean(res.high - res.low)):.1f} Elo points)")
    if args.live:
        t_live, t_fetch = live_round_trips(args.live)
        print(f"live serve_battle + submit_vote (real SQLite, synchronous=FULL): {t_live * 1e3:.1f} ms median "
              f"over {args.live}; first-fetch record per clip (3 a battle, apart): {t_fetch * 1e3:.2f} ms median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
