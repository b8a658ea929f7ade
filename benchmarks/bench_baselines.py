"""Throughput of the baseline server per task type, through the project's chat client.

    python benchmarks/bench_baselines.py [--data-dir D] [--per-task 16] [--concurrency 4] [--runs 3]

For each task (asr, conversation, mcq_understanding, mcq_reasoning, context, tone, selection) a fresh
server is started and the first N demo requests of that task are sent for each model:
- cold: the first pass of cascade-blind, when no clip of the task is in the ASR cache yet
  (Whisper on every clip, espeak-ng for every spoken reply);
- cue first pass: cascade-cue right after, transcripts cached but features and its own
  (restyled) speech computed;
- warm: later passes (transcripts, features and speech cached), median of `--runs`, per model.
The demo benchmark is built under the data dir when missing. Prints a markdown table and writes
benchmarks/out/bench_baselines.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from eval_backend.benchmark.loaders import load_benchmark  # noqa: E402
from eval_backend.clients.openai_chat import call, input_audio_b64, new_session  # noqa: E402
from eval_backend.config import ModelSpec  # noqa: E402
from eval_backend.tasks import build_requests  # noqa: E402
from tests.support.baselines import BaselineServer  # noqa: E402

TASKS = ("asr", "conversation", "mcq_understanding", "mcq_reasoning", "context", "tone", "selection")


async def one_pass(spec: ModelSpec, requests, concurrency: int) -> float:
    sem = asyncio.Semaphore(concurrency)
    inputs = {r.id: [input_audio_b64(a) for a in r.audios] for r in requests}
    async with new_session(concurrency) as session:
        async def go(r):
            async with sem:
                await call(session, spec, r, inputs[r.id])
        t0 = time.perf_counter()
        await asyncio.gather(*(go(r) for r in requests))
        return len(requests) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=str(ROOT / "data"))
    ap.add_argument("--per-task", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    data = Path(args.data_dir)
    if not (data / "benchmarks" / "demo").exists():
        subprocess.run([sys.executable, "-m", "eval_backend", "demo", "build", "--data-dir", str(data)],
                       cwd=ROOT, check=True)
    bench = load_benchmark("demo", data)
    all_requests = [r for r in build_requests(bench) if r.usable]
    load_before = os.getloadavg()[0]
    rows = []
    for task in TASKS:
        reqs = [r for r in all_requests if r.task == task][: args.per_task]
        with BaselineServer() as srv:
            specs = {m: ModelSpec(name=m, base_url=srv.base_url, model=m, audio_output=True, timeout_s=600)
                     for m in ("cascade-blind", "cascade-cue")}
            cold = asyncio.run(one_pass(specs["cascade-blind"], reqs, args.concurrency))
            cue_first = asyncio.run(one_pass(specs["cascade-cue"], reqs, args.concurrency))
            warm = {m: statistics.median(asyncio.run(one_pass(s, reqs, args.concurrency)) for _ in range(args.runs))
                    for m, s in specs.items()}
        rows.append({"task": task, "requests": len(reqs), "cold_blind_rps": cold, "cue_first_rps": cue_first,
                     "warm_blind_rps": warm["cascade-blind"], "warm_cue_rps": warm["cascade-cue"]})
        print(f"{task}: {rows[-1]}", file=sys.stderr)
    info = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
            "python": platform.python_version(), "concurrency": args.concurrency, "runs": args.runs,
            "load_before": load_before, "load_after": os.getloadavg()[0], "rows": rows}
    out = ROOT / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_baselines.json").write_text(json.dumps(info, indent=2))
    print(f"concurrency {args.concurrency}, load average {load_before:.1f} -> {info['load_after']:.1f}")
    print("| task | requests | cold req/s (blind, first pass) | cue first pass req/s (ASR cached) "
          "| warm req/s blind (median) | warm req/s cue (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['task']} | {r['requests']} | {r['cold_blind_rps']:.2f} | {r['cue_first_rps']:.2f} | "
              f"{r['warm_blind_rps']:.2f} | {r['warm_cue_rps']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
