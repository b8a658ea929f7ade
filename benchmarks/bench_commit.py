"""What one small SQLite commit costs, as the store commits it, while another writer fsyncs on the same disk.

    python benchmarks/bench_commit.py [--seconds 30] [--data-parent /tmp]

Two policies, one after the other, each on a fresh Store in a temp dir under --data-parent:
  deployed  eval_backend/sqlite_checkpoints.py: synchronous=NORMAL, a thread checkpoints every second
  full      the policy before issue 21's point 5: synchronous=FULL, SQLite's checkpoint every 1,000 pages
Each commits one 600-byte row 50 times a second (about a vote's size and the flood benchmark's rate) while a
second thread appends 100 kB to another file in the same folder and fsyncs it 8 times a second, as the machine's
other writers do. Prints commit p50 / p99 / max (ms) per policy as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_backend.store import Store  # noqa: E402

OLD_POLICY = ("PRAGMA synchronous=FULL", "PRAGMA wal_autocheckpoint=1000")


def _other_writer(folder: str, stop: threading.Event) -> None:
    fd = os.open(os.path.join(folder, "other_writer"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while not stop.wait(0.125):
            os.write(fd, os.urandom(100_000))
            os.fsync(fd)
    finally:
        os.close(fd)


def measure(policy: str, seconds: float, parent: str) -> dict:
    with tempfile.TemporaryDirectory(dir=parent) as folder:
        store = Store(Path(folder) / "data")
        conn = store.connect()
        if policy == "full":
            for pragma in OLD_POLICY:
                conn.execute(pragma)
        conn.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, v BLOB)")
        stop = threading.Event()
        writer = threading.Thread(target=_other_writer, args=(folder, stop), daemon=True)
        writer.start()
        times = []
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                t = time.perf_counter()
                with store.transaction() as c:
                    c.execute("INSERT INTO rows (v) VALUES (?)", (os.urandom(600),))
                times.append((time.perf_counter() - t) * 1e3)
                time.sleep(0.02)
        finally:
            stop.set()
            writer.join()
    times.sort()
    return {"commits": len(times), "p50_ms": round(times[len(times) // 2], 2),
            "p99_ms": round(times[int(0.99 * (len(times) - 1))], 2), "max_ms": round(times[-1], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--data-parent", default=tempfile.gettempdir())
    args = ap.parse_args()
    out = {"command": "bench_commit.py", "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_avg_before": os.getloadavg(), "data_parent": args.data_parent}
    for policy in ("deployed", "full"):
        out[policy] = measure(policy, args.seconds, args.data_parent)
    out["load_avg_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
