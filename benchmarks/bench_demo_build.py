"""Time the demo benchmark build and check it is reproducible across processes.

    python benchmarks/bench_demo_build.py [--runs 3] [--seed 0]
    python benchmarks/bench_demo_build.py --asr FOLDER     # intelligibility of a built demo

Each run is a fresh process (`python -m eval_backend demo build`) into a fresh folder;
prints the wall time of each run, the median, and whether every run gave the same hash.
With --asr, transcribes every target and neutral variant of the demo in FOLDER with the
baselines' Whisper tiny.en and prints the mean WER per attribute.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(seed: int, out: Path) -> tuple[float, float, dict]:
    """Wall seconds, CPU seconds (the build and its espeak-ng processes) and the printed info."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(ROOT))
    cpu0, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "eval_backend", "demo", "build", "--seed", str(seed),
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    return wall, _children_cpu() - cpu0, json.loads(proc.stdout)


def asr_report(folder: Path) -> int:
    import jiwer

    sys.path.insert(0, str(ROOT))
    from eval_backend.audio.io import read_wav
    from eval_backend.audio.asr import Transcriber
    from eval_backend.benchmark.dataset import load_project_folder
    from eval_backend.scoring.normalise import normalise_text

    bench = load_project_folder(folder)
    asr = Transcriber()
    by_attr: dict[str, list[float]] = {}
    for s in bench.scripts:
        for name in ("target", "neutral"):
            v = s.variants[name]
            hyp = asr.transcribe(v.audio.sha256, *read_wav(v.audio.path))
            wer = jiwer.wer(normalise_text(s.text), normalise_text(hyp) or "-")
            by_attr.setdefault(v.attribute, []).append(wer)
    rows = sorted(((statistics.mean(w), a, len(w)) for a, w in by_attr.items()), reverse=True)
    for wer, attr, n in rows:
        print(f"{attr:18s} WER {wer:.2f}  (n={n})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--asr", type=Path, default=None, help="a built demo folder: report WER per attribute")
    args = ap.parse_args()
    if args.asr:
        return asr_report(args.asr)
    walls, cpus, inner, hashes = [], [], [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            wall, cpu, info = one_run(args.seed, Path(tmp) / f"run{i}")
            walls.append(wall)
            cpus.append(cpu)
            inner.append(info["seconds"])
            hashes.add(info["hash"])
            sizes = sum(p.stat().st_size for p in (Path(tmp) / f"run{i}").rglob("*") if p.is_file())
            print(f"run {i}: {wall:.1f} s wall, {cpu:.1f} s CPU ({info['seconds']} s in build_demo), "
                  f"hash {info['hash'][:12]}, "
                  f"{sizes / 1e6:.0f} MB on disk", flush=True)
    print(json.dumps({"runs": args.runs, "median_wall_s": round(statistics.median(walls), 1),
                      "median_build_s": round(statistics.median(inner), 1),
                      "median_cpu_s": round(statistics.median(cpus), 1),
                      "reproducible": len(hashes) == 1, "cpus": os.cpu_count(),
                      "load_avg_1m": round(os.getloadavg()[0], 1)}))
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
