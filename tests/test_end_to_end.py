"""Acceptance: the demo benchmark through the real runner against the real baseline server.

Builds the demo (espeak-ng), serves both baselines on loopback, runs `python -m eval_backend run`
for cascade-blind and cascade-cue (in parallel: the server's ASR cache is shared, so each clip is
transcribed once) and checks that every usable request has a stored ok reply, that spoken tasks
stored audio, that no request was asked twice, and that hearing the voice pays off on the
voice questions. Slow: ~5 min on an idle 2-core machine, most of it Whisper on ~300 clips.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval_backend.benchmark.loaders import load_benchmark
from eval_backend.store import Store
from eval_backend.tasks import SPOKEN_TASKS, build_requests
from test_baselines import ROOT, BaselineServer

MODELS = ("cascade-blind", "cascade-cue")


def accuracy(replies, answers: dict[str, str], task_prefix: str) -> float:
    picked = [(r.request_id, re.search(r"The answer is: ([A-H])", r.text or "")) for r in replies
              if r.task.startswith(task_prefix)]
    assert picked, task_prefix
    return sum(bool(m) and m.group(1) == answers[rid] for rid, m in picked) / len(picked)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_both_baselines_answer_every_demo_request(tmp_path):
    data = tmp_path / "data"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "eval_backend", "demo", "build", "--data-dir", str(data)],
                   cwd=ROOT, check=True, capture_output=True, timeout=900)
    t_build = time.perf_counter() - t0
    with BaselineServer() as server:
        models_file = tmp_path / "models.yaml"
        models_file.write_text("models:\n" + "".join(
            f"  - {{name: {m}, base_url: '{server.base_url}', model: {m}, audio_output: true, baseline: true,"
            f" timeout_s: 600}}\n" for m in MODELS))
        t1 = time.perf_counter()
        runs = [subprocess.Popen([sys.executable, "-m", "eval_backend", "run", "--model", m, "--benchmark", "demo",
                                  "--models-file", str(models_file), "--data-dir", str(data), "--no-progress",
                                  "--concurrency", "4", "--max-attempts", "1"],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for m in MODELS]
        outputs = [p.communicate(timeout=3000)[0].decode(errors="replace") for p in runs]
        t_run = time.perf_counter() - t1
        for p, out in zip(runs, outputs):
            assert p.returncode == 0, out
        stats = server.stats()
    print(f"\ndemo build {t_build:.0f} s; both baselines {t_run:.0f} s; " + " | ".join(o.strip() for o in outputs))

    bench = load_benchmark("demo", data)
    requests = [r for r in build_requests(bench) if r.usable]
    assert len(requests) > 300
    store = Store(data)
    clips = {a.sha256 for r in requests for a in r.audios}
    for model in MODELS:
        replies = {r.request_id: r for r in store.replies(model=model, benchmark_hash=bench.hash)}
        missing = [r.id for r in requests if r.id not in replies or replies[r.id].status != "ok"]
        assert not missing, (model, missing[:10])
        for r in requests:
            reply = replies[r.id]
            if r.task in SPOKEN_TASKS:
                assert reply.audio_path and store.abspath(reply.audio_path).stat().st_size > 1000, r.id
            assert reply.attempts == 1
        # the server saw each request exactly once for this model
        assert sum(stats["requests"][model].values()) == len(requests)
    assert stats["asr_cache"]["misses"] == len(clips)        # every clip transcribed once, across both models

    answers = {f"mcq_{m.level}/{m.id}/-": m.answer for m in bench.mcqs}
    answers |= {f"selection/{s.id}/-": s.answer for s in bench.selection}
    acc = {m: {t: accuracy(store.replies(model=m, benchmark_hash=bench.hash), answers, t)
               for t in ("mcq_understanding", "mcq_reasoning", "selection")} for m in MODELS}
    print(f"accuracy: {acc}")
    for task in ("mcq_understanding", "mcq_reasoning", "selection"):
        assert acc["cascade-cue"][task] >= acc["cascade-blind"][task] + 0.15, (task, acc)
    # the delivery: blind always speaks plainly; cue changes its voice for marked tones
    tones = {(g.id, c.id): c.tone for g in bench.tone_groups for c in g.cases}
    for model in MODELS:
        styles = {}
        for r in store.replies(model=model, benchmark_hash=bench.hash, task="tone"):
            styles[(r.item_id, r.variant)] = json.loads(r.raw)["baseline"]["style"]
        marked = [k for k, tone in tones.items() if tone != "neutral"]
        restyled = sum(styles[k] != "neutral" for k in marked)
        if model == "cascade-blind":
            assert set(styles.values()) == {"neutral"}
        else:
            assert restyled >= 0.75 * len(marked), (restyled, len(marked), styles)
