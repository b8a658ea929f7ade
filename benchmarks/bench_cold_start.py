"""Cold start to the first votable battle (issue 15): median of N fresh starts of `python app.py`.

    python benchmarks/bench_cold_start.py [--runs 3] [--timeout 600]

Each run: an empty data dir, `python app.py` (the real Space: demo build, baseline server, first slice, worker),
then Debian's chromium (Playwright) presses "Start a battle" until one is served, plays the clips (together, at
2x: the quickest honest listening) and waits for the vote buttons to unlock, then votes
(tests/support/cold_start.py). Reported per run: seconds from process start to the page, to the battle, to the
vote unlocked, to the vote recorded; the load average at the start. Target: vote unlocked <= 120 s on 2 cores.
Writes benchmarks/out/cold_start.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.cold_start import cold_start  # noqa: E402

FIELDS = ("page_s", "battle_s", "votable_s", "voted_s", "cpu_to_battle_s")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args()
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="cold_start_") as tmp:
            r = cold_start(tmp, timeout_s=args.timeout)
        row = {k: round(getattr(r, k) or 0, 1) for k in FIELDS}
        row["load_avg_1m"] = round(r.load_avg[0], 1)
        row["load_avg_after_1m"] = round(os.getloadavg()[0], 1)
        row["first_paint_banner"] = r.first_paint_banner
        row["operator_leaks"] = r.operator_leaks
        runs.append(row)
        print(f"run {i + 1}: page {row['page_s']} s, battle {row['battle_s']} s, vote unlocked {row['votable_s']} s, "
              f"voted {row['voted_s']} s, CPU to the battle {row['cpu_to_battle_s']} s (load average {row['load_avg_1m']} -> {row['load_avg_after_1m']})",
              flush=True)
    medians = {k: round(statistics.median(r[k] for r in runs), 1) for k in FIELDS}
    print("median: " + ", ".join(f"{k} {v} s" for k, v in medians.items()))
    out = {"runs": runs, "median": medians, "cpus": os.cpu_count(), "python": platform.python_version(),
           "machine": platform.processor() or platform.machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                          time.gmtime())}
    (ROOT / "benchmarks" / "out").mkdir(parents=True, exist_ok=True)
    (ROOT / "benchmarks" / "out" / "cold_start.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
