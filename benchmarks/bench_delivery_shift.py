"""audio.delivery_shift_agreement of the two baselines on a demo build, end to end, with intervals.

    python benchmarks/bench_delivery_shift.py --seed 1 --vary      # held-apart speakers (the known-groups data)
    python benchmarks/bench_delivery_shift.py --seed 0             # the seed-0 demo (the detector's calibration data)

Builds the demo into a temporary folder, serves both baselines on loopback, runs the `conversation` task for
cascade-blind and cascade-cue (`python -m eval_backend run`), scores `audio.delivery_shift_agreement` and
`audio.prosody_fit` for each, and prints value, 95% interval, n and the scorer's wall time. Scorer CPU per reply
of the new metric alone: benchmarks/bench_audio_metrics.py.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from tests.support.demo_pipeline import run_demo_pipeline  # noqa: E402

METRICS = "audio.delivery_shift_agreement,audio.prosody_fit"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vary", action="store_true")
    ap.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_delivery_"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; seed {args.seed}{' --vary' if args.vary else ''}")
    run = run_demo_pipeline(root, demo_args=("--seed", str(args.seed), *(("--vary",) if args.vary else ())),
                            tasks="conversation")
    if any(run.returncodes):
        print("\n".join(run.outputs), file=sys.stderr)
        return 1
    print(f"demo build {run.build_s:.0f} s; both baselines {run.run_s:.0f} s")
    print("| model | metric | value | 95% interval | n | scorer wall (s) |")
    print("|---|---|---:|---|---:|---:|")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    for model in ("cascade-blind", "cascade-cue"):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "eval_backend", "score", "--model", model, "--benchmark", "demo",
                               "--data-dir", str(run.data), "--metrics", METRICS, "--quiet"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=3600)
        wall = time.perf_counter() - t0
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return 1
        doc = json.loads(Path(done.stdout.strip().splitlines()[-1]).read_text())
        for name in METRICS.split(","):
            e = doc["metrics"][name]
            ci = f"[{e['ci95'][0]:.3f}, {e['ci95'][1]:.3f}]" if e.get("ci95") else "—"
            val = f"{e['value']:.3f}" if e["value"] is not None else e["reason"]
            print(f"| {model} | {name} | {val} | {ci} | {e['n']} | {wall:.1f} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}; data: {run.data}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
