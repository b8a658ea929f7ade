"""Cost of the style-controlled Bradley-Terry fit against the plain one (figures for docs/benchmarks.md, "Style
control").

    python benchmarks/bench_style_bt.py [--votes 1000000] [--models 50] [--rounds 1000] [--runs 3]

A simulated arena: each model has its own typical reply length, loudness, pace and wordiness, each reply varies
around it, and the votes follow Bradley-Terry with style effects (length and pace sway them); 10% of the votes
are ties drawn at random, which dilutes every log-odds the votes show by ~0.9 (the printed effects: the true
ones, and the fitted ones should come out near 0.9 x true). Both fits start
from the per-battle arrays (model indices, outcome; the style fit also the five covariate differences):
- plain: bradley_terry.counts_from_arrays + bootstrap(rounds)        (what `ratings` does)
- style: style_bt.bootstrap(rounds) (exact fit, cells' moments, rounds) (what `ratings --style` adds)
Prints the median wall and CPU time of --runs runs of each and their ratio, with the load average. CPU time is
the steadier figure on a shared machine; run with OPENBLAS_NUM_THREADS=1 so that BLAS threads spinning on a
loaded machine do not count as work (both fits use BLAS).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.core import bradley_terry as bt  # noqa: E402
from arena.core import style_bt  # noqa: E402

COVARIATES = ("duration", "loudness", "speech_rate", "words", "latency")
EFFECTS = np.array([0.35, 0.0, -0.15, 0.1, 0.0])          # log-odds per standard deviation of each difference


def simulated(n: int, m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    skill = rng.normal(0, 0.8, m)
    style = rng.normal(0, 0.6, (m, len(COVARIATES)))         # each model's typical style
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    diff = style[a] - style[b] + rng.normal(0, 0.5, (n, len(COVARIATES)))
    diff[:, 4] = np.where(rng.random(n) < 0.1, diff[:, 4], 0.0)     # latency: only live battles
    eta = skill[a] - skill[b] + (diff / diff.std(axis=0)) @ EFFECTS
    u = rng.random(n)
    out = np.where(u < 0.1, 2, np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), 0, 1))
    return [f"model-{k:02d}" for k in range(m)], a, b, out, diff


def timed(fn, runs: int) -> tuple[float, float, object]:
    wall, cpu, out = [], [], None
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu), out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--votes", type=int, default=1_000_000)
    p.add_argument("--models", type=int, default=50)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    names, a, b, out, diff = simulated(args.votes, args.models)
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy "
          f"{np.__version__}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; "
          f"{args.votes:,} battles, {args.models} models, {len(COVARIATES)} covariates, {args.rounds} rounds, "
          f"median of {args.runs}; load average at start {os.getloadavg()[0]:.1f}")
    w_p, c_p, plain = timed(lambda: bt.bootstrap(bt.counts_from_arrays(a, b, out, names), args.rounds, seed=1),
                            args.runs)
    battles = style_bt.StyleBattles(names, a, b, out, np.ones(len(a)), diff, COVARIATES)
    w_s, c_s, styled = timed(lambda: style_bt.bootstrap(battles, args.rounds, seed=1), args.runs)
    print(f"plain BT (aggregate + fit + {args.rounds} rounds): {w_p:.2f} s wall, {c_p:.2f} s CPU; mean 95% "
          f"interval {float(np.mean(plain.high - plain.low)):.1f} points")
    print(f"style BT (fit + cells + {args.rounds} rounds):      {w_s:.2f} s wall, {c_s:.2f} s CPU; mean 95% "
          f"interval {float(np.mean(styled.bt.high - styled.bt.low)):.1f} points")
    print(f"ratio style / plain: {w_s / w_p:.2f} wall, {c_s / c_p:.2f} CPU; load average at end "
          f"{os.getloadavg()[0]:.1f}")
    sd = diff.std(axis=0)
    for k, name in enumerate(COVARIATES):
        print(f"  {name:12s} true {EFFECTS[k]:+.3f}/sd  fitted {styled.coef[k] * sd[k]:+.3f} "
              f"[{styled.coef_low[k] * sd[k]:+.3f}, {styled.coef_high[k] * sd[k]:+.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
