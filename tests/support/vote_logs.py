"""Vote logs to import for tests of the boards per vocal state and the style board (tests/test_arena_cli.py,
tests/test_style_board_browser.py).

`vocal_state_log(path)` writes a CSV of 300 votes among three models on utterances that are sad or whispered:
'ear' hears sadness (wins 85-90% there) and misses whispers (loses as often); the other two differ only in their
replies' lengths (2-10 s, drawn per reply), and the longer reply wins 80% of their battles. Columns: model_a,
model_b, winner, attribute, a_duration_s, b_duration_s, timestamp.
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

MODELS = ("ear", "flat", "other")


def vocal_state_log(path: Path, n: int = 300, hears: float = 0.85, seed: int = 5) -> Path:
    rng = random.Random(seed)
    with Path(path).open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model_a", "model_b", "winner", "attribute", "a_duration_s", "b_duration_s", "timestamp"])
        for k in range(n):
            a, b = rng.sample(MODELS, 2)
            attr = ("sad", "whisper")[k % 2]
            dur = {m: rng.uniform(2, 10) for m in (a, b)}
            if "ear" in (a, b):
                winner = "ear" if (rng.random() < hears) == (attr == "sad") else (b if a == "ear" else a)
            else:
                longer = a if dur[a] > dur[b] else b
                winner = longer if rng.random() < 0.8 else (b if longer == a else a)
            w.writerow([a, b, winner, attr, dur[a], dur[b], 1_767_000_000 + k])
    return Path(path)
