"""Cost of the safety screen per text (figures for docs/benchmarks.md, "Safety screening").

    python benchmarks/bench_screen.py [--texts 400] [--runs 3] [--held 10000]

1. Offline screen (alt-profanity-check + rules + the semantic layer) on distinct texts, uncached: short replies
   (one sentence from tests/support/safety_sentences.py) and long ones (~1,000 characters, a spoken reply of about
   a minute). The first call, which imports scikit-learn, loads the classifier and the encoder (MPNet) and fits the
   semantic layer on its example bank, is timed apart; the semantic layer alone is timed too (issue 26).
2. A cache hit (the same text again).
3. The remote screen against the loopback moderation server (tests/support/moderation_server.py), uncached.
4. records.record on a real SQLite store (fsync'd commit), and records.held_subjects with --held held rows.
Prints the median over --runs runs of the per-text median.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_backend.safety import offline, records, remote, settings  # noqa: E402
from eval_backend.safety.service import clear_cache, screen_text  # noqa: E402
from tests.support.safety_sentences import DEV, HELD_APART  # noqa: E402


def _texts(n: int, long: bool) -> list[str]:
    pool = [s for group in (DEV, HELD_APART) for texts in group.values() for s in texts]
    out = []
    for k in range(n):
        if long:
            text = " ".join(pool[(k + j) % len(pool)] for j in range(14))[:1000]
        else:
            text = pool[k % len(pool)]
        out.append(f"{text} ({k})")        # distinct, so nothing is cached
    return out


def _per_text_ms(fn, texts: list[str]) -> float:
    times = []
    for t in texts:
        start = time.perf_counter()
        fn(t)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--held", type=int, default=10000)
    args = parser.parse_args()
    for name in list(os.environ):
        if name.startswith(("EMPATHY_ARENA_MODERATION_", "EMPATHY_ARENA_SCREEN_")):
            del os.environ[name]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; load average before: {os.getloadavg()[0]:.1f}")

    from eval_backend.safety import bank, semantic_cache
    cached = semantic_cache.path_for([t for label in bank.LABELS for t in bank.BANK[label]]).is_file()
    start = time.perf_counter()
    offline.screen("first call", 0.85)
    print(f"offline first call (imports scikit-learn, loads the model, fits the layer; the bank's embeddings "
          f"{'read from the cache' if cached else 'computed and cached'}): {time.perf_counter() - start:.2f} s")

    rows = {}
    for label, long in (("offline, short reply (~60 chars)", False), ("offline, long reply (~1,000 chars)", True)):
        rows[label] = statistics.median(
            _per_text_ms(lambda t: offline.screen(t, 0.85), _texts(args.texts, long)) for _ in range(args.runs))

    from eval_backend.safety import rules, semantic
    rows["of which our rules, long reply"] = statistics.median(
        _per_text_ms(rules.findings, _texts(args.texts, True)) for _ in range(args.runs))
    for label, long in (("short reply", False), ("long reply", True)):
        rows[f"of which the semantic layer (MPNet), {label}"] = statistics.median(
            _per_text_ms(semantic.findings, _texts(args.texts, long)) for _ in range(args.runs))

    clear_cache()
    screen_text("cached text")
    rows["cache hit (screen_text, same text)"] = statistics.median(
        _per_text_ms(lambda t: screen_text("cached text"), [""] * args.texts) for _ in range(args.runs))

    from tests.support.moderation_server import ModerationServer
    with ModerationServer() as server:
        os.environ["EMPATHY_ARENA_MODERATION_URL"] = server.url
        s = settings.load()
        rows["remote (loopback moderation server), short reply"] = statistics.median(
            _per_text_ms(lambda t: remote.screen(t, s), _texts(args.texts // 4, False)) for _ in range(args.runs))
        del os.environ["EMPATHY_ARENA_MODERATION_URL"]

    from eval_backend.store import Store
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp)
        result = offline.screen("you idiot", 0.85)
        counter = iter(range(10**9))
        rows["records.record (SQLite, fsync'd commit)"] = statistics.median(
            _per_text_ms(lambda t: records.record(store, "reply", f"s{next(counter)}", t, result),
                         _texts(args.texts // 4, False)) for _ in range(args.runs))
        with store.transaction() as conn:
            for k in range(args.held):
                conn.execute("INSERT INTO safety_screenings (kind, subject, text, text_hash, screen, status, flagged, "
                             "crisis, categories, reason, screened_at) VALUES ('reply', ?, 'x', 'h', 's', 'screened', "
                             "1, 0, '{}', 'r', 0)", (f"bulk{k}",))
        rows[f"records.held_subjects ({args.held + 3 * (args.texts // 4)} held replies)"] = statistics.median(
            _per_text_ms(lambda t: records.held_subjects(store, "reply"), [""] * 20) for _ in range(args.runs))

    print(f"load average after: {os.getloadavg()[0]:.1f}\n")
    print("| step | median per call |\n|---|---:|")
    for label, ms in rows.items():
        print(f"| {label} | {ms:.3f} ms |")


if __name__ == "__main__":
    main()
