"""The evaluation worker's command line: evaluate queued submissions. The command is the upper layer's
(`python -m leaderboard worker`, leaderboard/worker_cli.py), which injects the arena's hand-off.

Claims jobs atomically (several workers, in several processes, may share one data dir), runs the
runner and the scorer, and records where the replies stand for the arena. `--once` processes at
most one job and exits (status 0 when the queue was empty or the job finished, 1 when it failed).
Settings come from the environment (eval_backend/submissions/settings.py) and the flags below.
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading

from . import config
from .store import Store
from .submissions.handoff import HandOff
from .submissions.settings import settings_from_env
from .submissions.worker import Worker


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", help=f"data dir (default ${config.DATA_DIR_ENV} or ./data)")
    p.add_argument("--once", action="store_true", help="process at most one job, then exit")
    p.add_argument("--poll", type=float, default=5.0, help="seconds between looks at an empty queue (default 5)")
    p.add_argument("--lease", type=float, help="lease length in seconds (default 60)")
    p.add_argument("--heartbeat", type=float, help="seconds between lease renewals (default 10)")
    p.add_argument("--concurrency", type=int, help="calls in flight per job (default 8)")
    p.add_argument("--max-attempts", type=int, help="attempts per request, retries included (default 4)")
    p.add_argument("--timeout", type=float, help="seconds per model call (default 120)")
    p.add_argument("--metrics", help="scorer metric patterns, comma-separated (default: all)")
    p.add_argument("--judge-config", help="judge YAML for the scorer")
    p.add_argument("--allow", action="append", default=[],
                   help="an internal address/network endpoints may use (repeatable), e.g. 127.0.0.1")
    p.add_argument("--name", help="worker name in the job history (default host:pid:random)")
    p.add_argument("--json", action="store_true", help="with --once: print the job as JSON")


def stop_from_signal(worker: Worker):
    """A signal handler that stops `worker` from another thread. Why not `worker.stop()` itself: the handler runs
    in the main thread between two bytecodes, possibly while that thread holds the stop event's lock inside
    `Event.wait` (run_forever's poll); `Event.set` would then wait for that lock forever (seen: a worker that never
    exited after SIGTERM, its main thread in Event.set called from the handler inside Event.wait)."""
    def handler(*_):
        threading.Thread(target=worker.stop, name="stop-on-signal", daemon=True).start()
    return handler


def main(args: argparse.Namespace, handoff: HandOff | None = None) -> int:
    """`handoff`: the arena's decision on a finished model (eval_backend/submissions/handoff.py), injected by
    the command's assembler; None: the jobs' notes say no arena is configured."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides = {k: v for k, v in (("lease_s", args.lease), ("heartbeat_s", args.heartbeat),
                                   ("concurrency", args.concurrency), ("max_attempts", args.max_attempts),
                                   ("call_timeout_s", args.timeout), ("judge_config", args.judge_config))
                 if v is not None}
    if args.metrics:
        overrides["metrics"] = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    if args.lease is not None and args.heartbeat is None:
        overrides["heartbeat_s"] = min(10.0, args.lease / 4)
    settings = settings_from_env(**overrides)
    settings = settings.with_(allow=settings.allow + tuple(args.allow))
    try:
        worker = Worker(Store(config.data_dir(args.data_dir)), settings, name=args.name, handoff=handoff)
    except ValueError as exc:   # a bad --allow entry, a heartbeat longer than half the lease
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.once:
        job = worker.run_once()
        if args.json:
            print(json.dumps(job.to_dict() if job else None))
        elif job:
            print(f"#{job.id} {job.model}: {job.state}" + (f" ({job.reason})" if job.reason else ""))
        else:
            print("the queue is empty")
        return 1 if job and job.state == "FAILED" else 0
    # SIGTERM: take no new job; the current one runs to its end (if the process is killed first, its lease
    # expires and another worker resumes it)
    signal.signal(signal.SIGTERM, stop_from_signal(worker))
    try:
        worker.run_forever(args.poll)
    except KeyboardInterrupt:
        pass
    return 0
