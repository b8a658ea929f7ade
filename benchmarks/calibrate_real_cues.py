"""The cue detector on the real recordings of one split (eval_backend/baselines/real_voices.csv).

    python benchmarks/calibrate_real_cues.py [--split calibration] [--features]

Prints, per label, how many recordings drew a claim and how many claims were right, the neutral claim rate and
the share of claims that were right, the wrong claims, and (--features) the 10th / 50th / 90th percentiles of
the features `hear` uses, per label. The thresholds in eval_backend/baselines/cues.py were read from
`--split calibration`; `--split validation` is what tests/test_real_cues.py checks (targets: a claim on at most
10% of neutral recordings, at least 80% of claims right).
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_backend.audio.features import extract  # noqa: E402
from eval_backend.audio.asr import Transcriber  # noqa: E402
from eval_backend.baselines.real_voices import hear_recording, missing, recordings, tally  # noqa: E402
from eval_backend.cpu_threads import passive_openmp  # noqa: E402

FEATURES = ("pitch_median_hz", "spectral_centroid_hz", "voiced_fraction", "speaking_rate", "speech_s",
            "pitch_tremor_st", "hnr_db", "snr_db", "active_level_dbfs")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="calibration", choices=("calibration", "validation"))
    ap.add_argument("--features", action="store_true")
    args = ap.parse_args()
    passive_openmp()
    rows = recordings(args.split)
    if missing(rows):
        print(f"not installed: {', '.join(missing(rows))} (apt-get install them; packages-test.txt)")
        return 2
    asr = Transcriber()
    heard = [(r, hear_recording(r, asr)[0]) for r in rows]
    t = tally(heard)
    print(f"| label ({args.split}) | recordings | with a claim | claims right |")
    print("|---|---:|---:|---:|")
    for label, row in sorted(t.per_label.items()):
        print(f"| {label} | {row['n']} | {row['claimed']} | {row['right']} |")
    print(f"neutral recordings with a claim: {t.neutral_claimed}/{t.neutral} = {t.neutral_claim_rate:.3f}")
    print(f"claims right: {t.right}/{t.claims}" + (f" = {t.precision:.3f}" if t.claims else " (no claim)"))
    print(f"claims on unjudged (acted / exclaimed) recordings: {t.unjudged_claims}")
    for rid, label, claims in t.wrong:
        print(f"  wrong: {rid} ({label}): {', '.join(claims)}")
    if args.features:
        by: dict[str, list] = defaultdict(list)
        for r in rows:
            by[r.label].append(extract(*r.load()))
        print("| label | " + " | ".join(FEATURES) + " |")
        for label, fs in sorted(by.items()):
            cells = []
            for k in FEATURES:
                v = [getattr(f, k) for f in fs if getattr(f, k) is not None]
                cells.append("/".join(f"{x:.2f}" for x in np.percentile(v, [10, 50, 90])) if v else "-")
            print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
