"""Queue and worker costs: claim latency, claims by two processes at once, per-job worker overhead, checks.

    python benchmarks/bench_queue.py [--jobs 1000] [--runs 3]

1. claim + finish latency (one process, `--jobs` PENDING jobs in the table): median and p99 per claim;
2. two processes claiming and finishing `--jobs` jobs from one database: jobs/s, and how many jobs were
   claimed more than once (must be 0);
3. worker overhead per job: `Worker.run_once` on 3-request jobs against a loopback endpoint answering at
   once (tests/support/fault_server.py), split into claim, query, score (judge-free AEQ entries) and arena hand-off;
4. submit checks: `validate_form` + the address policy on an IP literal, and `check_upload` on a zip of
   100 wav files (0.5 s each).
Prints medians over `--runs` and writes benchmarks/out/queue.json.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from eval_backend.store import Store  # noqa: E402
from eval_backend.submissions.queue import Queue  # noqa: E402


def fill(store: Store, n: int) -> None:
    q = Queue(store)
    with store.transaction() as conn:
        for i in range(n):
            q.insert(conn, {"model": f"m{i}", "kind": "endpoint", "base_url": "http://x/v1", "model_id": "x",
                            "benchmark": "demo", "dedup_key": f"k{i}", "submitter": "bench"})


def drain(data: str, name: str, out) -> None:
    q = Queue(Store(data))
    mine = []
    while (job := q.claim(name, 60)) is not None:
        q.finish(job.id, name, results_path=None, summary={}, arena=None)
        mine.append(job.id)
    out.put(mine)


def claim_latency(n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp)
        fill(store, n)
        q = Queue(store)
        times = []
        while True:
            t0 = time.perf_counter()
            job = q.claim("w", 60)
            if job is None:
                break
            q.finish(job.id, "w", results_path=None, summary={}, arena=None)
            times.append(time.perf_counter() - t0)
        times.sort()
        return {"median_ms": statistics.median(times) * 1e3, "p99_ms": times[int(0.99 * len(times))] * 1e3}


def two_processes(n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        fill(Store(tmp), n)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        procs = [ctx.Process(target=drain, args=(tmp, f"p{i}", out)) for i in range(2)]
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        got = [out.get() for _ in procs]
        for p in procs:
            p.join()
        elapsed = time.perf_counter() - t0
        claims = [j for g in got for j in g]
        return {"jobs_per_s": n / elapsed, "claimed_twice": len(claims) - len(set(claims)),
                "unclaimed": n - len(set(claims)), "split": [len(g) for g in got]}


def worker_overhead(runs: int) -> dict:
    from eval_backend.benchmark.dataset import save_benchmark
    from eval_backend.submissions import SubmissionForm, SubmissionService, SubmissionSettings, Submitter
    from eval_backend.submissions import worker as wmod
    from tests.support.fault_server import FaultServer, make_benchmark
    phases: dict[str, list[float]] = {"claim": [], "query": [], "score": [], "arena": [], "total": []}
    with tempfile.TemporaryDirectory() as tmp, FaultServer() as srv:
        tmp = Path(tmp)
        folder = save_benchmark(make_benchmark(tmp / "src", ["a", "b", "c"], name="bq"), tmp / "b")
        s = SubmissionSettings(allow=(f"127.0.0.1:{srv.port}",), benchmark=str(folder), metrics=("aeq.*",),
                               preflight=False)
        store = Store(tmp / "d")
        svc = SubmissionService(store, s)
        w = wmod.Worker(store, s)
        orig = {k: getattr(wmod.Worker, k) for k in ("_query", "_score")}

        def timed(name, fn):
            def wrapper(self, *a, **kw):
                t0 = time.perf_counter()
                try:
                    return fn(self, *a, **kw)
                finally:
                    phases[name].append(time.perf_counter() - t0)
            return wrapper
        wmod.Worker._query = timed("query", orig["_query"])
        wmod.Worker._score = timed("score", orig["_score"])
        orig_handoff = wmod.hand_off

        def handoff(*a, **kw):
            t0 = time.perf_counter()
            try:
                return orig_handoff(*a, **kw)
            finally:
                phases["arena"].append(time.perf_counter() - t0)
        wmod.hand_off = handoff
        try:
            for i in range(runs + 1):           # the first job pays the scorer's imports: reported apart
                svc.submit(SubmissionForm(name=f"Bench {i}", base_url=srv.base_url, model_id=f"m{i}",
                                          audio_output=True), Submitter("op", True))
                t0 = time.perf_counter()
                job = w.queue.claim(w.name, 60)
                phases["claim"].append(time.perf_counter() - t0)
                w.process(job)
                phases["total"].append(time.perf_counter() - t0)
                assert w.queue.get(job.id).state == "FINISHED"
        finally:
            for k, fn in orig.items():
                setattr(wmod.Worker, k, fn)
            wmod.hand_off = orig_handoff
    first = {k: v[0] * 1e3 for k, v in phases.items()}
    return {"first_job_ms": first, "median_ms": {k: statistics.median(v[1:]) * 1e3 for k, v in phases.items()}}


def checks() -> dict:
    from eval_backend.audio.io import encode_wav
    from eval_backend.submissions import SubmissionForm, SubmissionSettings, validate_form
    from eval_backend.submissions.netguard import AddressPolicy
    from eval_backend.submissions.uploads import check_upload
    from tests.support.fault_server import tone_pcm
    form = SubmissionForm(name="Model X", base_url="https://93.184.216.34/v1", model_id="org/m", licence="mit")
    policy = AddressPolicy.from_strings([])
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        assert not validate_form(form) and policy.check_url(form.base_url) is None
    per_form_us = (time.perf_counter() - t0) / n * 1e6
    wav = encode_wav(tone_pcm(0.5), 24000)
    with tempfile.TemporaryDirectory() as tmp:
        z = Path(tmp) / "u.zip"
        with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as f:
            f.writestr("p.jsonl", "\n".join(json.dumps({"id": f"context/g{i:04d}/c0", "audio": f"{i}.wav"})
                                            for i in range(100)))
            for i in range(100):
                f.writestr(f"{i}.wav", wav)
        times = []
        for r in range(3):
            t0 = time.perf_counter()
            check_upload(z, Path(tmp) / f"out{r}", SubmissionSettings(), None)
            times.append(time.perf_counter() - t0)
    return {"validate_and_policy_us": per_form_us, "upload_100_wavs_ms": statistics.median(times) * 1e3}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    load0 = os.getloadavg()[0]
    lat = [claim_latency(args.jobs) for _ in range(args.runs)]
    two = [two_processes(args.jobs) for _ in range(args.runs)]
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "load_before": load0,
        "claim_finish_median_ms": statistics.median(r["median_ms"] for r in lat),
        "claim_finish_p99_ms": statistics.median(r["p99_ms"] for r in lat),
        "two_process_jobs_per_s": statistics.median(r["jobs_per_s"] for r in two),
        "two_process_claimed_twice": sum(r["claimed_twice"] for r in two),
        "two_process_unclaimed": sum(r["unclaimed"] for r in two),
        "two_process_split": [r["split"] for r in two],
        "worker": worker_overhead(args.runs),
        "checks": checks(),
        "load_after": os.getloadavg()[0],
    }
    out = ROOT / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "queue.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
