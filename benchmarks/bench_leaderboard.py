"""Benchmark leaderboard table speed: load N results files, build the table with the paper's rows, filter+sort.

    python benchmarks/bench_leaderboard.py [--models 50] [--runs 5]

Results documents are real scorer output (tests' small MCQ + selection benchmark, scored with the
quick metrics), written once per model name under a temporary data dir; the page-refresh path
(`load_result_docs` → `latest_per_model` → `build_table` → `apply_filters` → `display_frame`) is timed.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_doc(root: Path) -> dict:
    import numpy as np
    import soundfile as sf

    from eval_backend.benchmark.dataset import audio_ref_from_file
    from eval_backend.benchmark.model import MCQ, Benchmark, SelectionItem
    from eval_backend.scoring.results import score
    from eval_backend.store import Reply, Store
    refs = []
    for i in range(3):
        sf.write(root / f"a{i}.wav", 0.3 * np.sin(2 * np.pi * (200 + 60 * i) * np.arange(4000) / 16000), 16000)
        refs.append(audio_ref_from_file(root / f"a{i}.wav"))
    mcqs = [MCQ(f"u{i}", "understanding", "speech emotion", refs[i % 3], "Feel?", ["Sad", "Happy"], "AB"[i % 2])
            for i in range(20)]
    mcqs += [MCQ(f"r{i}", "reasoning", "speaker-intent recognition", refs[i % 3], "Why?", ["x", "y"], "AB"[i % 2])
             for i in range(20)]
    sel = [SelectionItem(f"g{i // 2}_{i % 2}", f"g{i // 2}", "context", "ctx", None, refs[0],
                         {"A": refs[1], "B": refs[2]}, "AB"[i % 2]) for i in range(20)]
    b = Benchmark("bench", "1", mcqs=mcqs, selection=sel, hash="bench-hash")
    store = Store(root / "data")
    for m in mcqs:
        task = "mcq_understanding" if m.level == "understanding" else "mcq_reasoning"
        store.put_reply(Reply("m", b.hash, f"{task}/{m.id}/-", task, m.id, "-", "ok", text="A"))
    for s in sel:
        store.put_reply(Reply("m", b.hash, f"selection/{s.id}/-", "selection", s.id, "-", "ok", text="B"))
    return score(b, store.replies(model="m"), "m", store,
                 metrics=["l1.understanding_acc", "l2.*", "sel.*", "l3.judge.*"]).doc


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--models", type=int, default=50)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    from leaderboard import results_table as rt
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        doc = make_doc(root)
        results = root / "results"
        for i in range(args.models):
            d = json.loads(json.dumps(doc))
            d["manifest"]["model"] = f"model-{i:03d}"
            (results / f"model-{i:03d}").mkdir(parents=True)
            (results / f"model-{i:03d}" / "r.json").write_text(json.dumps(d))
        size = sum(f.stat().st_size for f in results.glob("*/*.json"))
        reported = rt.load_reported()
        times: dict[str, list[float]] = {"load": [], "build": [], "filter+display": [], "total": []}
        for _ in range(args.runs):
            t0 = time.perf_counter()
            docs = rt.latest_per_model(rt.load_result_docs(results))
            t1 = time.perf_counter()
            df, groups = rt.build_table(docs, {}, reported)
            t2 = time.perf_counter()
            rt.display_frame(rt.apply_filters(df, groups, rt.FilterState(groups=rt.GROUPS, intervals=True,
                                                                          sort="LB3")))
            t3 = time.perf_counter()
            for k, v in zip(times, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
                times[k].append(v * 1000)
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"{args.models} results files ({size / args.models / 1024:.0f} kB each) + {len(reported['rows'])} "
          f"reported rows, {df.shape[1]} columns; median of {args.runs} runs (ms):")
    for k, v in times.items():
        print(f"  {k}: {statistics.median(v):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
