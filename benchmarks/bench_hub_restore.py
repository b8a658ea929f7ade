"""Time the Hub sync's log push and restore of N votes (figures for docs/benchmarks.md, "Data release").

    python benchmarks/bench_hub_restore.py [--votes 20000] [--runs 3]

The Hub is the in-memory client stand-in (tests/support/hub_standin.py), so this measures our side only: the flush
into log files, and the restore (download from the stand-in, parse, re-record every vote with its ratings
on all axes in one transaction) into a fresh data dir. Network time to the real Hub comes on top.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.services.service import ArenaService  # noqa: E402
from space_shell.hub_sync import HubSync, HubSyncConfig  # noqa: E402
from eval_backend.store import Store  # noqa: E402
from tests.support.hub_standin import StandInHub  # noqa: E402

CFG = HubSyncConfig(token="t", log_repo="o/logs", every_min=600, retry_s=1)


def node(path: Path, hub: StandInHub):
    store = Store(path)
    svc = ArenaService(store)
    return svc, HubSync(store, CFG, api=hub.api(), append_votes=svc.append_votes)


def rows(n: int):
    models = [f"m{k:02d}" for k in range(20)]
    for k in range(n):
        a, b = models[k % 20], models[(k * 7 + 1 + k // 20) % 20]
        if a == b:
            b = models[(k + 1) % 20]
        slot = ("A", "B", "tie")[k % 3]
        yield {"battle_id": f"b{k}", "model_a": a, "model_b": b, "winner": {"A": a, "B": b}.get(slot, slot),
               "slot": slot, "said": None, "sounded": None, "reason": None, "session_id": "s", "user": None,
               "ip_hash": "i", "first_heard": "A", "attribute": None, "dimension": None, "benchmark_hash": None,
               "request_id": None, "created_at": 1e9 + k, "source": "live"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--votes", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    push, restore = [], []
    for r in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            hub = StandInHub()
            svc, sync = node(Path(tmp) / "a", hub)
            sync.start()
            svc.append_votes(rows(args.votes))
            t0 = time.perf_counter()
            sync.push_logs()
            push.append(time.perf_counter() - t0)
            sync.stop(final_push=False)
            svc_b, sync_b = node(Path(tmp) / "b", hub)
            t0 = time.perf_counter()
            sync_b.start()
            restore.append(time.perf_counter() - t0)
            assert svc_b.vote_log_hash() == svc.vote_log_hash(), "restore differs"
            sync_b.stop(final_push=False)
    n = len(svc.votes())
    print(f"{n} votes, median of {args.runs}: log flush + push {statistics.median(push):.2f} s, "
          f"restore into a fresh data dir {statistics.median(restore):.2f} s "
          f"({n / statistics.median(restore):.0f} votes/s); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
