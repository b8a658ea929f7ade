"""What one battle clip costs to make as heard (issue 22, arena/services/battle_audio.py): decode, resample to 24 kHz,
loudness-normalise with the peak limiter, encode; and, apart, measuring its delivery (pitch, rate).

    python benchmarks/bench_battle_audio.py [--clips 40] [--data-dir D]

The clips are the stored replies of a data dir (a demo run's, say), else espeak-ng sentences made here (3-12 s).
Each clip is made from its bytes in memory, so the figures are the CPU path alone (the cache writes two small
files). Prints the median and the 90th percentile per clip, how close the heard clips came to the target loudness and
under the peak ceiling, the clips' median length and the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.services.battle_audio import PEAK_DBTP, RATE, TARGET_LUFS, decode, make_heard, measure_delivery  # noqa: E402

SENTENCES = ("I am so sorry to hear that. That sounds really hard.",
             "Thanks for telling me. Work plans can shift a lot, so it helps to know where things stand, and I am "
             "here if you want to talk it through.",
             "Okay. Let me know if you need anything else.")


def clips(args) -> list[bytes]:
    if args.data_dir:
        files = sorted((Path(args.data_dir) / "replies").rglob("*.wav"))[: args.clips]
        if files:
            return [f.read_bytes() for f in files]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.clips):
            path = Path(tmp) / f"{i}.wav"
            subprocess.run(["espeak-ng", "-s", str(130 + 10 * (i % 5)), "-w", str(path),
                            SENTENCES[i % len(SENTENCES)]], check=True, capture_output=True)
            out.append(path.read_bytes())
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--clips", type=int, default=40)
    p.add_argument("--data-dir")
    args = p.parse_args()
    data = clips(args)
    make, meas, seconds, off, peaks = [], [], [], [], []
    for blob in data:
        t0 = time.perf_counter()
        heard, facts = make_heard(blob)
        t1 = time.perf_counter()
        samples, rate = decode(heard)
        measure_delivery(samples, rate, facts["lufs"])
        t2 = time.perf_counter()
        make.append(t1 - t0)
        meas.append(t2 - t1)
        seconds.append(len(samples) / RATE)
        if facts["lufs"] is not None:
            off.append(abs(facts["lufs"] - TARGET_LUFS))
            peaks.append(facts["peak_dbtp"])

    def q(xs, f):
        return sorted(xs)[min(len(xs) - 1, int(f * len(xs)))]
    print(f"{len(data)} clips, median {statistics.median(seconds):.1f} s long")
    print(f"make as heard (decode, 24 kHz, -16 LUFS, limiter, wav): median {1000 * statistics.median(make):.0f} ms, "
          f"p90 {1000 * q(make, 0.9):.0f} ms")
    print(f"measure delivery (pitch, rate; only for same-word pairs and covariates): median "
          f"{1000 * statistics.median(meas):.0f} ms, p90 {1000 * q(meas, 0.9):.0f} ms")
    if off:
        print(f"loudness off the {TARGET_LUFS} LUFS target: median {statistics.median(off):.3f} LU, p90 "
              f"{q(off, 0.9):.3f}, max {max(off):.3f}; highest true peak {max(peaks):.3f} dBTP (ceiling {PEAK_DBTP})")
    print(f"load average {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
