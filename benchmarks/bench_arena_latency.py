"""Arena serving latency: server-side time from a vote to the next battle being ready, 50 concurrent voters.

    python benchmarks/bench_arena_latency.py [--database sqlite|postgresql] [--voters 50] [--paced-votes 300]
                                             [--think 6] [--votes 500] [--runs 3]

Starts the real app (tests/support/arena_app.py: FastAPI + Gradio + the arena JSON API) on a
loopback port with a seeded data dir (espeak-ng replies of 4 models), then per run:
  paced      voters pause `--think` s (x uniform 0.5-1.5) before each vote: a listener's pace (three
             clips of >= min(3 s, length) each take 6-9 s), ~8 votes/s offered in total;
  saturated  voters vote back to back (closed loop): the write path's capacity.
Server time per step = the vote request's handling time + the next battle's, read from
the API's Server-Timing header (includes the wait for the single SQLite writer thread).
Client time = the same two requests as seen over loopback. --integrity on (default, as deployed): proof of work
for anonymous voters (each voter solves its challenge before its first vote, untimed) and 5% gold battles;
off: neither. Prints medians over runs of
p50 / p99 and writes benchmarks/out/arena_latency[_postgresql].json.

--database postgresql starts a throwaway PostgreSQL cluster on loopback (Debian's postgresql, tests/support/pg_server.py)
with fsync on, as durable as SQLite's synchronous=FULL, and points the app at it through DATABASE_URL.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.stats import pct  # noqa: E402
from tests.support.arena_fixtures import INTEGRITY_ENV, UNSCREENED, NO_LIMITS, AppProcess, run_load, seed  # noqa: E402

MODELS = ("warm-model", "flat-model", "chirpy-model", "calm-model")


def cpu_seconds(pid: int) -> float:
    """user + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summarise(res, server_cpu_s: float) -> dict:
    return {"votes": len(res.acks), "server_cpu_ms_per_vote": 1000 * server_cpu_s / max(1, len(res.acks)), "errors": sum(res.refused.values()) + sum(res.transport.values()),
            "wall_s": res.wall_s, "votes_per_s": len(res.acks) / res.wall_s if res.wall_s else math.nan,
            "server_p50_ms": pct(res.server_ms, 0.50), "server_p99_ms": pct(res.server_ms, 0.99),
            "service_p50_ms": pct(res.service_ms, 0.50), "service_p99_ms": pct(res.service_ms, 0.99),
            "client_p50_ms": pct(res.client_ms, 0.50), "client_p99_ms": pct(res.client_ms, 0.99)}


def measure(args) -> dict[str, list[dict]]:
    with tempfile.TemporaryDirectory(prefix="arena_bench_") as tmp:
        seed(tmp, MODELS, n_scripts=3)
        app = AppProcess(tmp, NO_LIMITS, env={**UNSCREENED, "EMPATHY_ARENA_SERVER_TIMING": "1", **INTEGRITY_ENV[args.integrity]}).start()
        try:
            asyncio.run(run_load(app.url, 10, 100, seed=99))          # warm-up: imports, caches, WAL
            runs: dict[str, list[dict]] = {"paced": [], "saturated": []}
            for r in range(args.runs):
                for mode, think, n in (("paced", args.think, args.paced_votes), ("saturated", 0.0, args.votes)):
                    cpu0 = cpu_seconds(app.proc.pid)
                    res = asyncio.run(run_load(app.url, args.voters, n, seed=r, think_s=think))
                    runs[mode].append(summarise(res, cpu_seconds(app.proc.pid) - cpu0))
                    s = runs[mode][-1]
                    print(f"run {r + 1} {mode:9s}: {s['votes']} votes, {s['errors']} errors, "
                          f"{s['votes_per_s']:.0f} votes/s, server p50 {s['server_p50_ms']:.1f} ms "
                          f"p99 {s['server_p99_ms']:.1f} ms (in the service p50 {s['service_p50_ms']:.1f} "
                          f"p99 {s['service_p99_ms']:.1f} ms), client p50 {s['client_p50_ms']:.1f} ms "
                          f"p99 {s['client_p99_ms']:.1f} ms, server CPU {s['server_cpu_ms_per_vote']:.1f} ms/vote",
                          flush=True)
        finally:
            app.stop()
    return runs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    p.add_argument("--voters", type=int, default=50)
    p.add_argument("--paced-votes", type=int, default=300, help="votes per paced run")
    p.add_argument("--think", type=float, default=6.0, help="mean pause before each vote in the paced mode (s)")
    p.add_argument("--votes", type=int, default=500, help="votes per saturated run")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--integrity", choices=("on", "off"), default="on",
                   help="proof of work for anonymous voters and 5%% gold battles (the app's defaults), or neither")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    suffix = "" if args.database == "sqlite" else "_postgresql"
    args.out = args.out or str(ROOT / "benchmarks" / "out" / f"arena_latency{suffix}.json")
    with contextlib.ExitStack() as stack:
        if args.database == "postgresql":
            sys.path.insert(0, str(ROOT / "tests"))
            from tests.support.pg_server import postgres_server
            os.environ["DATABASE_URL"] = stack.enter_context(postgres_server(max_connections=200, durable=True))
        else:
            os.environ.pop("DATABASE_URL", None)
        runs = measure(args)

    medians = {mode: {k: statistics.median(run[k] for run in rs) for k in rs[0]} for mode, rs in runs.items()}
    report = {"command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "database": args.database,
              "integrity": args.integrity,
              "voters": args.voters, "paced_votes_per_run": args.paced_votes, "saturated_votes_per_run": args.votes,
              "think_s": args.think, "runs": args.runs,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": platform.python_version(), "load_avg": os.getloadavg()},
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "median_of_runs": medians,
              "all_runs": runs}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print("\n| mode | votes/s | server p50 (ms) | server p99 (ms) | in service p50 / p99 (ms) | client p50 (ms) "
          "| client p99 (ms) | server CPU per vote (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, m in medians.items():
        print(f"| {mode} | {m['votes_per_s']:.0f} | {m['server_p50_ms']:.1f} | {m['server_p99_ms']:.1f} | "
              f"{m['service_p50_ms']:.1f} / {m['service_p99_ms']:.1f} | "
              f"{m['client_p50_ms']:.1f} | {m['client_p99_ms']:.1f} | {m['server_cpu_ms_per_vote']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
