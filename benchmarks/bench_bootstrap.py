"""The whole demo bootstrap: every baseline on every request, run, scored and screened (issue 22).

    python benchmarks/bench_bootstrap.py [--runs 1] [--models-file models.yaml] [--keep DIR] [--demo-size compact]

Each run: an empty data dir, `space_shell.bootstrap.Bootstrap` as `python app.py` starts it (demo build, the
baseline server, the first slice and its screening, every baseline on the whole benchmark, scoring with every
registered metric and no judge, screening of every playable reply), until `ready`. Reported per run: wall seconds
per stage (from the status line's changes), and CPU seconds of this process and of the baseline server (user +
system, read from /proc while it runs, so a shared machine's load does not inflate them); the load average before
and after. Target: <= 6 minutes on 2 cores. Writes benchmarks/out/bootstrap.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from eval_backend.cpu_threads import passive_openmp  # noqa: E402

passive_openmp()

from space_shell.bootstrap import Bootstrap  # noqa: E402


def proc_cpu_s(pid: int) -> float:
    """user + system seconds of a live process (and its reaped children), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / tick     # utime stime cutime cstime


def one_run(models_file: str | None, keep: str | None = None, demo_size: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_bootstrap_") as tmp:
        data = Path(keep) if keep else Path(tmp)
        data.mkdir(parents=True, exist_ok=True)
        boot = Bootstrap(data, models_file=models_file, screen_replies=True, demo_size=demo_size)
        load_before = os.getloadavg()[0]
        t0, cpu0 = time.perf_counter(), proc_cpu_s(os.getpid())
        stages: list[tuple[str, float, float]] = []      # (stage, wall since start, CPU since start)
        server_cpu = 0.0
        boot.start()
        last = None
        while not boot.ready.wait(0.5):
            if boot.server is not None and boot.server.poll() is None:
                server_cpu = max(server_cpu, proc_cpu_s(boot.server.pid))
            key = (boot.status.stage, boot.status.message)
            if key != last:
                stages.append((f"{key[0]}: {key[1]}", time.perf_counter() - t0,
                               proc_cpu_s(os.getpid()) - cpu0 + server_cpu))
                last = key
        wall = time.perf_counter() - t0
        own_cpu = proc_cpu_s(os.getpid()) - cpu0
        boot.stop()
        errors = list(boot.status.errors)
        spans = []
        ends = [(w, c) for _, w, c in stages[1:]] + [(wall, own_cpu + server_cpu)]
        for (name, start, cpu), (end, cpu_end) in zip(stages, ends):
            spans.append({"stage": name, "start_s": round(start, 1), "wall_s": round(end - start, 1),
                          "cpu_s": round(cpu_end - cpu, 1)})
        return {"wall_s": round(wall, 1), "own_cpu_s": round(own_cpu, 1), "server_cpu_s": round(server_cpu, 1),
                "cpu_s": round(own_cpu + server_cpu, 1), "stage": boot.status.stage, "errors": errors,
                "stages": spans, "load_avg_before": round(load_before, 1),
                "load_avg_after": round(os.getloadavg()[0], 1)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--models-file", default=None)
    p.add_argument("--keep", default=None, help="use (and keep) this data dir instead of a temporary one")
    p.add_argument("--demo-size", default=None, help="compact | full (default: EMPATHY_ARENA_DEMO_SIZE, compact)")
    p.add_argument("--child-json", default=None, help=argparse.SUPPRESS)   # one run, written to this file
    args = p.parse_args()
    if args.child_json:
        Path(args.child_json).write_text(json.dumps(one_run(args.models_file, args.keep, args.demo_size)))
        return 0
    runs = []
    for i in range(args.runs):
        # why a process per run: the scorer memoises DNSMOS, Distill-MOS and transcripts by clip content per process
        # (and models stay loaded), so a second run in the same process re-scores nothing and is not a bootstrap
        with tempfile.TemporaryDirectory(prefix="bench_bootstrap_run_") as tmp:
            out = Path(tmp) / "run.json"
            cmd = [sys.executable, __file__, "--child-json", str(out)]
            for flag, value in (("--models-file", args.models_file), ("--keep", args.keep),
                                ("--demo-size", args.demo_size)):
                cmd += [flag, value] if value else []
            subprocess.run(cmd, check=True)
            r = json.loads(out.read_text())
        runs.append(r)
        for s in r["stages"]:
            print(f"  {s['start_s']:7.1f} s  +{s['wall_s']:6.1f} s wall  {s['cpu_s']:6.1f} s CPU  {s['stage']}")
        print(f"run {i + 1}: {r['stage']} in {r['wall_s']} s wall, CPU {r['cpu_s']} s (this process "
              f"{r['own_cpu_s']}, baseline server {r['server_cpu_s']}), load average {r['load_avg_before']} -> "
              f"{r['load_avg_after']}; errors: {r['errors'] or 'none'}", flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "own_cpu_s", "server_cpu_s")}
    print("median: " + ", ".join(f"{k} {v}" for k, v in med.items()))
    out = {"runs": runs, "median": med, "demo_size": args.demo_size or "default", "cpus": os.cpu_count(), "python": platform.python_version(),
           "machine": platform.processor() or platform.machine(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (ROOT / "benchmarks" / "out").mkdir(parents=True, exist_ok=True)
    (ROOT / "benchmarks" / "out" / "bootstrap.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
