"""Features of each demo delivery and what cascade-cue's detector hears in it.

    python benchmarks/calibrate_cues.py [--scripts 3] [--replies]

Renders every demo recipe (eval_backend.benchmark.demo.RECIPES, or REPLY_STYLES with --replies)
over the first N demo scripts, prints the mean of the features the thresholds in
eval_backend/baselines/cues.py use, and the labels detected per clip.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_backend.audio.features import extract  # noqa: E402
from eval_backend.audio.recipes import render  # noqa: E402
from eval_backend.audio.synth import SR, rng_for  # noqa: E402
from eval_backend.baselines.cues import detect  # noqa: E402
from eval_backend.benchmark import demo_content as C  # noqa: E402
from eval_backend.benchmark.demo import NEUTRAL_RECIPE, RECIPES, REPLY_STYLES  # noqa: E402

FIELDS = ("speaking_rate", "active_level_dbfs", "pitch_median_hz", "pitch_range_st", "snr_db", "voiced_fraction",
          "pitch_tremor_st", "hnr_db", "hf_ratio", "spectral_centroid_hz", "noise_floor_dbfs", "noise_centroid_hz")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scripts", type=int, default=3)
    ap.add_argument("--replies", action="store_true", help="the reply styles instead of the user deliveries")
    args = ap.parse_args()
    texts = [t for _, t, _ in C.SCRIPTS[: args.scripts]]
    table = REPLY_STYLES if args.replies else {"neutral": NEUTRAL_RECIPE, **RECIPES}
    print("| delivery | " + " | ".join(FIELDS) + " | detected |")
    print("|---" * (len(FIELDS) + 2) + "|")
    for name, recipe in table.items():
        feats = [extract(render(t, recipe, rng_for(0, name + t)), SR) for t in texts]
        cells = []
        for k in FIELDS:
            vals = [getattr(f, k) for f in feats if getattr(f, k) is not None]
            cells.append(f"{np.mean(vals):.2f}" if vals else "-")
        heard = "; ".join(",".join(detect(f).labels) or "-" for f in feats)
        print(f"| {name} | " + " | ".join(cells) + f" | {heard} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
