"""Runner throughput and CPU cost against a loopback endpoint that takes 1 s per reply.

    python benchmarks/bench_runner.py [--latency 1] [--concurrency 1 8 32] [--waves 8] [--runs 3] [--write-docs]

The endpoint is tests/support/fault_server.py in its own process (so its CPU is not counted), replying with text
plus a 0.4 s 24 kHz wav, the way a speaking model does. Each run asks `waves x concurrency` fresh requests
(the input clip is a 0.5 s wav), stores every reply in a fresh SQLite store, and measures:
- throughput = requests / wall time; target >= 90 % of concurrency / latency;
- CPU per item = this process's CPU time during the run / requests (the runner's own overhead).
Figures are the median of `--runs` runs. `--write-docs` replaces the "Runner" section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from eval_backend.config import ModelSpec  # noqa: E402
from eval_backend.runner import run_model  # noqa: E402
from eval_backend.store import Store  # noqa: E402
from tests.support.fault_server import make_benchmark  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"


def start_server(latency: float) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fault_server.py"), "serve", "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"fault server did not start: {line!r}")
    return proc, int(line.split()[1])


def one_run(port: int, concurrency: int, n: int, tag: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        bench = make_benchmark(Path(tmp) / "b", ["plain"] * n, name=f"bench-{tag}")
        store = Store(Path(tmp) / "data")
        spec = ModelSpec(name="bench", base_url=f"http://127.0.0.1:{port}/v1", model="bench", audio_output=True,
                         voice="v", timeout_s=30)
        s = asyncio.run(run_model(spec, bench, store, concurrency, progress=False))
        if s.ok != n:
            raise RuntimeError(f"only {s.ok}/{n} ok: {s.failures}")
        return {"rps": n / s.elapsed_s, "cpu_ms_per_item": 1000 * s.cpu_s / n, "elapsed_s": s.elapsed_s}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, {platform.system()}"


def to_markdown(rows: list[dict], args, command: str) -> str:
    lines = [
        "## Runner",
        "",
        f"Measured by `{command}` on {machine()}, {time.strftime('%Y-%m-%d', time.gmtime())}.",
        f"Loopback endpoint (tests/support/fault_server.py, own process) answering after {args.latency:g} s with text and a "
        "0.4 s 24 kHz wav; every reply validated, its wav saved and its row committed (SQLite, synchronous=FULL). "
        f"Median of {args.runs} runs of {args.waves} × concurrency requests each. The machine is shared: "
        f"load average {args.load_before:.1f} before and {args.load_after:.1f} after the runs "
        f"(on {os.cpu_count()} cores), which is what holds the highest concurrency under its target.",
        "",
        "| concurrency | requests/run | target req/s (90 % of c ÷ latency) | req/s (median) | % of ideal | runner CPU ms/item (median) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ideal = r["concurrency"] / args.latency
        lines.append(f"| {r['concurrency']} | {r['n']} | {0.9 * ideal:.1f} | {r['rps']:.2f} | "
                     f"{100 * r['rps'] / ideal:.0f} % | {r['cpu_ms_per_item']:.1f} |")
    return "\n".join(lines) + "\n"


def write_docs(section: str) -> None:
    text = DOCS.read_text() if DOCS.exists() else "# Speed figures\n\nEach section is owned by one area.\n"
    pattern = re.compile(r"^## Runner\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    DOCS.write_text(text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latency", type=float, default=1.0)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--waves", type=int, default=8, help="requests per run = waves x concurrency")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args()
    command = "python benchmarks/bench_runner.py " + " ".join(sys.argv[1:])
    args.load_before = os.getloadavg()[0]
    server, port = start_server(args.latency)
    rows = []
    try:
        for c in args.concurrency:
            n = args.waves * c
            runs = [one_run(port, c, n, f"{c}-{i}") for i in range(args.runs)]
            row = {"concurrency": c, "n": n,
                   "rps": statistics.median(r["rps"] for r in runs),
                   "cpu_ms_per_item": statistics.median(r["cpu_ms_per_item"] for r in runs),
                   "runs": runs}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    args.load_after = os.getloadavg()[0]
    section = to_markdown(rows, args, command.strip())
    print(section)
    if args.write_docs:
        write_docs(section)
    ok = all(r["rps"] >= 0.9 * r["concurrency"] / args.latency for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
