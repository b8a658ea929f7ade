"""Real scorer results on a small saved benchmark (espeak-free tones, four questions, two selection items):
what the table and plot tests read. `scored_results(root, answers)` scores each model's letters with the real
scorer and writes its results JSON under root/data/results/.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

METRICS = ["l1.understanding_acc", "l2.*", "sel.*", "l3.judge.c1", "l3.judge.c4"]
ANSWERS = {"good": {"u1": "B", "u2": "A", "r1": "A", "r2": "B", "g1_1": "A", "g1_2": "B"},
           "half": {"u1": "B", "u2": "B", "r1": "A", "r2": "A", "g1_1": "A", "g1_2": "A"}}


def _tone(path: Path, hz: float):
    from eval_backend.benchmark.dataset import audio_ref_from_file
    sf.write(path, 0.3 * np.sin(2 * np.pi * hz * np.arange(4000) / 16000), 16000)
    return audio_ref_from_file(path)


def mini_benchmark(root: Path):
    from eval_backend.benchmark.model import MCQ, Benchmark, SelectionItem
    a = [_tone(root / f"a{i}.wav", 200 + 60 * i) for i in range(3)]
    mcqs = [MCQ("u1", "understanding", "speech emotion", a[0], "Feel?", ["Sad", "Happy"], "B"),
            MCQ("u2", "understanding", "speech emotion", a[1], "Feel?", ["Sad", "Happy"], "A"),
            MCQ("r1", "reasoning", "speaker-intent recognition", a[2], "Why?", ["x", "y"], "A"),
            MCQ("r2", "reasoning", "speaker-intent recognition", a[2], "Why?", ["x", "y"], "B")]
    sel = [SelectionItem("g1_1", "g1", "context", "ctx", None, a[0], {"A": a[1], "B": a[2]}, "A"),
           SelectionItem("g1_2", "g1", "context", "ctx", None, a[0], {"A": a[1], "B": a[2]}, "B")]
    return Benchmark("mini", "1", mcqs=mcqs, selection=sel, hash="mini-hash")


def scored_results(root: Path, answers: dict[str, dict[str, str]] = ANSWERS, metrics=METRICS):
    """(store, {model: results document}) for the given models' answers."""
    from eval_backend.scoring.results import score, write_results
    from eval_backend.store import Reply, Store
    root.mkdir(parents=True, exist_ok=True)
    b = mini_benchmark(root)
    store = Store(root / "data")
    docs = {}
    for model, ans in answers.items():
        for item, letter in ans.items():
            task = "selection" if item.startswith("g") else ("mcq_understanding" if item[0] == "u" else "mcq_reasoning")
            store.put_reply(Reply(model, b.hash, f"{task}/{item}/-", task, item, "-", "ok", text=letter))
        doc = score(b, store.replies(model=model), model, store, metrics=metrics).doc
        write_results(store.root, doc)
        docs[model] = doc
    return store, docs
