"""Memory and time a hostile submitted endpoint costs the worker and the web process (issue 10).

    python benchmarks/bench_endpoint_bounds.py [--runs 3] [--concurrency 4]

Starts tests/support/fault_server.py in its own process and runs tests/support/bounded_probe.py (the worker, then the
Check preflight) against 300 MB bodies (plain, declared, gzip bomb), endless bodies and SSE streams, and a
trickle under a 3 s job / check deadline, at the default reply caps (8 MiB body). Prints, per case, the
median over `--runs` of the peak-RSS growth of the process doing the work (VmHWM reset before each case)
and the wall time. Writes benchmarks/out/bench_endpoint_bounds.json.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from eval_backend.benchmark.dataset import save_benchmark  # noqa: E402
from tests.support.fault_server import make_benchmark  # noqa: E402

CASES = {  # name -> contexts (fault markers), extra settings
    "huge x4": (["[fault:huge]"] * 4, {}),
    "huge declared": (["[fault:huge-cl]"], {}),
    "gzip bomb": (["[fault:gzip-bomb]"], {}),
    "endless chunked + SSE": (["[fault:endless]", "[fault:endless-sse]"], {}),
    "trickle 3 s deadline": (["[fault:trickle]"] * 3, {"call_timeout_s": 1.0, "max_attempts": 3,
                                                          "job_deadline_s": 3.0, "check_deadline_s": 3.0,
                                                          "preflight_timeout_s": 10.0}),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bounds-"))
    server = subprocess.Popen([sys.executable, "tests/support/fault_server.py", "serve"], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        results: dict = {}
        for run in range(args.runs):
            for mode in ("worker", "check"):
                cases = []
                for i, (name, (contexts, extra)) in enumerate(CASES.items()):
                    folder = tmp / f"b{run}-{mode}-{i}"
                    save_benchmark(make_benchmark(tmp / f"s{run}-{mode}-{i}", contexts, name=f"c{i}"), folder)
                    cases.append({"name": name, "bench": str(folder), "settings": extra})
                warm = tmp / f"warm{run}-{mode}"
                save_benchmark(make_benchmark(tmp / f"ws{run}-{mode}", ["plain", "plain too"], name="warm"), warm)
                cfg = {"mode": mode, "data": str(tmp / f"data{run}-{mode}"), "base_url": f"http://127.0.0.1:{port}/v1",
                       "warm_bench": str(warm), "cases": cases,
                       "settings": {"allow": [f"127.0.0.1:{port}"], "metrics": ["aeq.*"], "lease_s": 30.0,
                                    "heartbeat_s": 1.0, "max_attempts": 2, "call_timeout_s": 10.0,
                                    "concurrency": args.concurrency, "preflight_timeout_s": 10.0,
                                    "check_deadline_s": 20.0}}
                path = tmp / f"cfg{run}-{mode}.json"
                path.write_text(json.dumps(cfg))
                env = dict(os.environ, EMPATHY_ARENA_SECRET_KEY="bench", HF_HUB_OFFLINE="1")
                done = subprocess.run([sys.executable, "tests/support/bounded_probe.py", str(path)], cwd=ROOT, env=env,
                                      capture_output=True, text=True)
                if done.returncode:
                    sys.exit(f"the probe failed ({mode}, run {run}):\n{done.stderr[-3000:]}")
                out = done.stdout
                for line in out.splitlines():
                    row = json.loads(line)
                    r = results.setdefault(f"{mode}: {row['name']}", {"growth": [], "elapsed": [], "rss": []})
                    r["growth"].append(row["growth_mib"])
                    r["elapsed"].append(row["elapsed_s"])
                    r["rss"].append(row["rss_mib"] + row["growth_mib"])
    finally:
        server.terminate()
        server.wait(10)
    load = os.getloadavg()[0]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {load:.1f}; "
          f"median of {args.runs} runs; concurrency {args.concurrency}; reply cap 8 MiB (default)\n")
    print("| case | peak RSS growth (MiB) | peak RSS (MiB) | wall (s) |\n|---|---|---|---|")
    table = {}
    for name, r in results.items():
        row = {k: statistics.median(v) for k, v in r.items()}
        table[name] = row
        print(f"| {name} | {row['growth']:.1f} | {row['rss']:.0f} | {row['elapsed']:.2f} |")
    out_dir = ROOT / "benchmarks" / "out"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "bench_endpoint_bounds.json").write_text(json.dumps({"load": load, "runs": args.runs,
                                                                    "results": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
