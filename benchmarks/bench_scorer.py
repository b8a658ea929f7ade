"""Scorer speed: CPU time per item per metric family, and wall time to score one model on a benchmark.

Needs stored replies, e.g. for the demo:
    python -m eval_backend demo build --data-dir D
    python -m eval_backend.baselines serve --port 8765 &
    python -m eval_backend run --model cascade-cue --benchmark demo --data-dir D
Then:
    python benchmarks/bench_scorer.py --data-dir D --model cascade-cue [--runs 3]

Wall time is measured on fresh processes (`python -m eval_backend score ...`, so model
loading and imports count) with no judge configured; the median of --runs is printed.
Per-family CPU comes from one in-process scoring (time.process_time around each
metric, summed per family, divided by the distinct replies that family scored; one-time
model loads are included).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def wall_runs(args) -> list[float]:
    cmd = [sys.executable, "-m", "eval_backend", "score", "--model", args.model, "--benchmark", args.benchmark,
           "--data-dir", args.data_dir, "--quiet"]
    if args.metrics:
        cmd += ["--metrics", args.metrics]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
        print(f"  run {len(out)}: {out[-1]:.1f} s wall", flush=True)
    return out


def family_cpu(args):
    from eval_backend.benchmark.loaders import load_benchmark
    from eval_backend.scoring.results import score
    from eval_backend.store import Store
    store = Store(args.data_dir)
    b = load_benchmark(args.benchmark, args.data_dir)
    replies = store.replies(model=args.model, benchmark_hash=b.hash)
    metrics = [m.strip() for m in args.metrics.split(",")] if args.metrics else None
    run = score(b, replies, args.model, store, metrics=metrics)
    fam: dict[str, dict] = {}
    for name, cpu in run.cpu_s.items():
        e = run.doc["metrics"][name]
        f = fam.setdefault(e["family"], {"cpu_s": 0.0, "ids": set(), "metrics": 0})
        f["cpu_s"] += cpu
        f["ids"] |= set(e["per_item"])
        f["metrics"] += 1
    for f in fam.values():
        f["items"] = len(f.pop("ids"))   # distinct replies the family scored
    return fam, len(replies), run


def print_metrics(run) -> None:
    print(f"{'metric':<26}{'n':>6}{'CPU s':>9}")
    for name, cpu in sorted(run.cpu_s.items()):
        print(f"{name:<26}{run.doc['metrics'][name]['n']:>6}{cpu:>9.2f}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--benchmark", default="demo")
    p.add_argument("--metrics", help="as for `score --metrics` (default: all)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--per-metric", action="store_true", help="also print CPU seconds per metric")
    args = p.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    fam, n_replies, run = family_cpu(args)
    print(f"replies scored: {n_replies}", flush=True)
    print(f"{'family':<14}{'metrics':>8}{'items':>8}{'CPU s':>9}{'ms/item':>10}")
    for name, f in sorted(fam.items()):
        per = 1000 * f["cpu_s"] / f["items"] if f["items"] else float("nan")
        print(f"{name:<14}{f['metrics']:>8}{f['items']:>8}{f['cpu_s']:>9.2f}{per:>10.1f}")
    if args.per_metric:
        print_metrics(run)
    walls = wall_runs(args)
    print(f"wall time to score (fresh process, no judge): median {statistics.median(walls):.1f} s "
          f"over {len(walls)} runs: {', '.join(f'{w:.1f}' for w in walls)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
