"""Speed of the benchmark format: save, cold load (audio materialised to audio_cache/), warm load, and an
EchoMind-layout import, on synthetic clips.

    python benchmarks/loaders_speed.py --scripts 300 --seconds 3 --runs 3
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere without installing

from eval_backend.benchmark.dataset import content_hash, load_project_folder, save_benchmark  # noqa: E402
from eval_backend.benchmark.echomind import load_echomind  # noqa: E402

import datasets  # noqa: E402,F401  (imported up front so its start-up is not timed)


def make_layout(root: Path, n: int, seconds: float) -> Path:
    """An EchoMind-style folder: n scripts x 3 variants of `seconds` s at 16 kHz."""
    rng = np.random.default_rng(0)
    (root / "audio").mkdir(parents=True, exist_ok=True)
    cases = []
    for i in range(n):
        info = {}
        for v in ("target", "neutral", "alternative"):
            name = f"id_{i}_happy_daily life_{v}.wav"
            sf.write(root / "audio" / name, (0.1 * rng.standard_normal(int(16000 * seconds))).astype(np.float32), 16000)
            info[f"{v}_audio_info"] = {f"{v}_input_audio_file": name}
        cases.append({"case_id": i, "spoken_info": f"script {i}", "topic": "daily life", **info})
    (root / "script_info_paralinguistic.json").write_text(json.dumps(cases))
    return root


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scripts", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    results: dict[str, list[float]] = {"echomind import": [], "content_hash": [], "save": [], "cold load": [],
                                       "warm load": []}
    with tempfile.TemporaryDirectory() as tmp:
        src = make_layout(Path(tmp) / "echo", a.scripts, a.seconds)
        for _ in range(a.runs):
            t, b = timed(lambda: load_echomind(src))
            results["echomind import"].append(t)
            results["content_hash"].append(timed(lambda: content_hash(b))[0])
            out = Path(tmp) / "bench"
            shutil.rmtree(out, ignore_errors=True)
            results["save"].append(timed(lambda: save_benchmark(b, out))[0])
            results["cold load"].append(timed(lambda: load_project_folder(out))[0])
            results["warm load"].append(timed(lambda: load_project_folder(out))[0])
    clips = a.scripts * 3
    print(f"{clips} clips of {a.seconds} s at 16 kHz, median of {a.runs} runs")
    for k, v in results.items():
        print(f"{k:16s} {statistics.median(v):7.2f} s  ({1000 * statistics.median(v) / clips:.2f} ms/clip)")


if __name__ == "__main__":
    main()
