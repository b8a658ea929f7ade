"""Reply screening is not on the vote -> next-battle path (figures for docs/benchmarks.md, "Safety: serving").

    python benchmarks/bench_screen_serve.py [--battles 200] [--runs 3] [--scripts 6]

On a real SQLite store in a temp dir, seeded with espeak-ng replies of four models (tests.support.arena_fixtures):
1. screening cost per reply when it is stored: `eval_backend.moderation.replies.screen_replies` over every
   playable reply with Whisper's cache cold (our transcript of the audio + the offline screen + the record);
2. `serve_battle` time with screening off (no held filtering) and on (one model's replies held: the battle index
   filters on the recorded decisions; per battle only one more meta read) — the battles served afterwards never
   run the screen;
3. the first battle after an operator's decision (the index is rebuilt once from the decisions).
Prints medians (and p90) over --runs runs.
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

from arena.config import ArenaSettings  # noqa: E402
from arena.services.service import ArenaService  # noqa: E402
from eval_backend.moderation import ledger  # noqa: E402
from eval_backend.moderation.replies import screen_replies, subject_of  # noqa: E402
from eval_backend.store import Store  # noqa: E402
from tests.support.arena_fixtures import seed  # noqa: E402

MODELS = ("m-one", "m-two", "m-three", "m-held")


def p90(xs: list[float]) -> float:
    return sorted(xs)[int(0.9 * (len(xs) - 1))]


def serve_times(svc: ArenaService, n: int, prefix: str) -> list[float]:
    svc.serve_battle(f"{prefix}-warm-up", "127.0.0.1")
    out = []
    for i in range(n):
        t = time.perf_counter()
        svc.serve_battle(f"{prefix}-{i}", "127.0.0.1")
        out.append(time.perf_counter() - t)
    return out


def one_run(n: int, scripts: int) -> dict:
    from eval_backend.scoring import audio_clips
    from eval_backend.safety import screen_text
    with tempfile.TemporaryDirectory() as tmp:
        info = seed(tmp, MODELS, n_scripts=scripts)
        store = Store(tmp)
        audio_clips.transcriber()._cache.clear()            # cold: every clip decoded by Whisper
        t = time.perf_counter()
        summary = screen_replies(store, info["benchmark_hash"])
        per_reply = (time.perf_counter() - t) / max(1, summary.screened)
        held = screen_text("Shut up, you stupid worthless idiot.")
        for r in store.replies(model="m-held", benchmark_hash=info["benchmark_hash"]):
            ledger.record(store, "reply", subject_of(r), "benchmark: held on purpose", held)
        limits = dict(ip_battles_per_minute=10**6, session_open_battles=10**6)
        off = serve_times(ArenaService(store, ArenaSettings(screen_replies=False, **limits)), n, "off")
        svc = ArenaService(store, ArenaSettings(screen_replies=True, **limits))
        on = serve_times(svc, n, "on")
        served = {k: store.query("SELECT COUNT(*) FROM arena_battles WHERE session_id LIKE ? AND "
                                 "(model_a='m-held' OR model_b='m-held')", (k + "-%",))[0][0] for k in ("off", "on")}
        one = next(r for r in store.replies(model="m-one", benchmark_hash=info["benchmark_hash"])
                   if ledger.decided(store, "reply", subject_of(r)))
        ledger.act(store, "reply", subject_of(one), "keep_hidden", "bench")
        t = time.perf_counter()
        svc.serve_battle("after-act", "127.0.0.1")
        rebuild = time.perf_counter() - t
        return {"per_reply": per_reply, "replies": summary.screened, "off": off, "on": on, "rebuild": rebuild,
                "held_served": served}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--battles", type=int, default=200)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--scripts", type=int, default=6)
    args = p.parse_args()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{args.battles} battles per setting, {args.scripts} scripts x {len(MODELS)} models, median of {args.runs}")
    runs = [one_run(args.battles, args.scripts) for _ in range(args.runs)]
    med = statistics.median
    print(f"screening when stored: {med(r['per_reply'] for r in runs) * 1000:.0f} ms per reply "
          f"({runs[0]['replies']} replies, Whisper cold + screen + record)")
    for key, label in (("off", "serve_battle, screening off (no filtering)"),
                       ("on", "serve_battle, screening on (held filtered)")):
        print(f"{label}: median {med(med(r[key]) for r in runs) * 1000:.1f} ms, "
              f"p90 {med(p90(r[key]) for r in runs) * 1000:.1f} ms")
    print(f"first battle after an operator decision (index rebuilt): {med(r['rebuild'] for r in runs) * 1000:.1f} ms")
    print(f"battles with the held model, screening off / on (sanity: > 0 / 0): "
          f"{[(r['held_served']['off'], r['held_served']['on']) for r in runs]}")
    print(f"load average after: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
