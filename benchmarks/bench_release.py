"""Time `python -m arena release` and `rebuild` on N votes (figures for docs/benchmarks.md, "Data release").

    python benchmarks/bench_release.py [--votes 100000] [--models 20] [--runs 3]

Votes are inserted straight into arena_votes of a real Store in a temp dir (the release reads only the
vote log); release writes all six axes (TrueSkill replay + Bradley-Terry with the default 200 bootstrap
rounds each), rebuild recomputes the overall table and checks it byte for byte. Prints medians.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.services import release  # noqa: E402
from arena.services.service import ArenaService  # noqa: E402
from eval_backend.store import Store  # noqa: E402


def fill(svc: ArenaService, n: int, m: int) -> None:
    rng = random.Random(0)
    models = [f"model-{k:02d}" for k in range(m)]
    rows = []
    for k in range(n):
        a, b = rng.sample(models, 2)
        slot = rng.choice(("A", "B", "A", "B", "tie", "both_bad"))
        rows.append((a, b, {"A": a, "B": b}.get(slot, slot), slot, rng.choice((None, "A", "B", "tie")),
                     rng.choice((None, "A", "B")), rng.choice((None, "speaker", "paralinguistic", "environment")),
                     1_767_000_000.0 + k, f"s{k % 500}", f"ip{k % 300}"))
    with svc.store.transaction() as conn:
        conn.executemany("INSERT INTO arena_votes (model_a, model_b, winner, slot, said, sounded, dimension, "
                         "created_at, session_id, ip_hash, first_heard, source) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,'A','live')", rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--votes", type=int, default=100_000)
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{args.votes} votes, {args.models} models, median of {args.runs}")
    with tempfile.TemporaryDirectory() as tmp:
        svc = ArenaService(Store(Path(tmp) / "data"))
        fill(svc, args.votes, args.models)
        rel, reb, rel_cpu, reb_cpu = [], [], [], []
        for r in range(args.runs):
            fresh = ArenaService(Store(Path(tmp) / "data"))     # no cached vote list: read the log too
            t0, c0 = time.perf_counter(), time.process_time()
            release.write_release(fresh, Path(tmp) / f"rel{r}")
            rel.append(time.perf_counter() - t0)
            rel_cpu.append(time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time()
            _, report = release.rebuild(Path(tmp) / f"rel{r}")
            reb.append(time.perf_counter() - t0)
            reb_cpu.append(time.process_time() - c0)
            assert report["identical"]
        size = sum(p.stat().st_size for p in (Path(tmp) / "rel0").rglob("*") if p.is_file())
        med = statistics.median
        print(f"release (6 axes, 200 rounds): {med(rel):.2f} s wall, {med(rel_cpu):.2f} s CPU; "
              f"rebuild (overall, checked): {med(reb):.2f} s wall, {med(reb_cpu):.2f} s CPU; "
              f"release size {size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
