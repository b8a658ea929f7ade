"""The runner: bounded concurrency, resume after a kill -9, predictions files, the CLI."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval_backend import runner
from eval_backend.audio.io import encode_wav, write_wav
from eval_backend.benchmark.dataset import save_benchmark
from eval_backend.clients.predictions import PredictionsError
from eval_backend.config import ModelSpec
from eval_backend.runner import RetryPolicy, import_predictions, run_model
from eval_backend.store import Store
from tests.support.fault_server import FaultServer, make_benchmark, tone_pcm

ROOT = Path(__file__).resolve().parent.parent
FAST = RetryPolicy(max_attempts=2, base_s=0.02, cap_s=0.2)


def spec_for(srv: FaultServer, **kw) -> ModelSpec:
    return ModelSpec(**{**dict(name="m", base_url=srv.base_url, model="fault", audio_output=True, voice="v",
                               timeout_s=5.0), **kw})


def test_concurrency_is_bounded_and_used(tmp_path):
    with FaultServer(latency=0.3) as srv:
        bench = make_benchmark(tmp_path / "b", ["x"] * 12, name="conc")
        t0 = time.monotonic()
        summary = asyncio.run(run_model(spec_for(srv), bench, Store(tmp_path / "d"), 4, progress=False))
        elapsed = time.monotonic() - t0
    assert summary.ok == 12 and srv.max_inflight == 4
    assert elapsed < 12 * 0.3 * 0.75       # 3 waves of 0.3 s, not 12 in a row (slack for a loaded machine)


def test_rerun_skips_ok_items_and_retries_failed_ones(tmp_path):
    with FaultServer() as srv:
        bench = make_benchmark(tmp_path / "b", ["a", "[fault:500]", "b", "[fault:garbage]"], name="resume", flagged=2)
        store = Store(tmp_path / "d")
        first = asyncio.run(run_model(spec_for(srv), bench, store, 2, policy=FAST, progress=False))
        assert (first.requests, first.ok, first.failed, first.unusable) == (6, 2, 2, 2)
        before = dict(srv.counts)
        second = asyncio.run(run_model(spec_for(srv), bench, store, 2, policy=FAST, progress=False))
        assert (second.already_done, second.ok, second.failed, second.unusable) == (2, 0, 2, 2)
        asked_again = {rid for rid in srv.counts if srv.counts[rid] > before[rid]}
        assert asked_again == {"context/g0001/c0", "context/g0003/c0"}     # only the failed ones
        meta = store.get_meta(f"run/m/{bench.hash}")
        assert meta["already_done"] == 2 and meta["prompt_version"]


def test_sigkill_mid_run_then_restart_redoes_no_finished_item(tmp_path):
    """A kill -9 loses only the replies in flight: per-id server counts prove no finished item is asked again."""
    n = 30
    bench = make_benchmark(tmp_path / "src", ["[fault:slow:0.4] sorry to bother you"] * n, name="kill")
    folder = save_benchmark(bench, tmp_path / "bench")
    data = tmp_path / "data"
    secret = "sk-kill-test-" + "x7" * 20
    with FaultServer() as srv:
        models = tmp_path / "models.yaml"
        models.write_text(f"models:\n  - name: slow\n    base_url: {srv.base_url}\n    model: slow\n"
                          f"    api_key_env: KILL_TEST_KEY\n    audio_output: true\n    voice: v\n")
        cmd = [sys.executable, "-m", "eval_backend", "run", "--model", "slow", "--benchmark", str(folder),
               "--models-file", str(models), "--data-dir", str(data), "--concurrency", "3", "--no-progress", "--json"]
        env = {**os.environ, "KILL_TEST_KEY": secret}
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        store = Store(data)
        deadline = time.monotonic() + 60
        while len(store.finished_request_ids("slow", bench.hash)) < 8:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "runner made no progress"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        finished = store.finished_request_ids("slow", bench.hash)
        counts_at_kill = dict(srv.counts)
        assert 8 <= len(finished) < n
        assert all(counts_at_kill[rid] == 1 for rid in finished)

        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert summary["already_done"] == len(finished) and summary["ok"] == n - len(finished)
        rows = store.replies(model="slow", benchmark_hash=bench.hash)
        assert len(rows) == n and all(r.status == "ok" and r.audio_path for r in rows)
        for rid in finished:
            assert srv.counts[rid] == 1, rid                   # never asked again
        new_calls = sum(srv.counts.values()) - sum(counts_at_kill.values())
        assert new_calls == n - len(finished)                  # the restart asked each unfinished item once
        assert all(a == f"Bearer {secret}" for a in srv.auth_seen)
    logs = proc.stdout.read() + proc.stderr.read()
    assert secret.encode() not in logs and secret not in done.stdout + done.stderr


def test_predictions_file_becomes_replies(tmp_path):
    bench = make_benchmark(tmp_path / "b", ["a", "b", "c", "d", "e", "f"], name="preds")
    audio = tmp_path / "audio"
    write_wav(audio / "good.wav", tone_pcm(), 24000)
    (audio / "cut.wav").write_bytes(encode_wav(tone_pcm(), 24000)[:3000])
    lines = [
        {"id": "context/g0000/c0", "text": "That sounds hard.", "audio": "good.wav", "latency_s": 1.5},
        {"task": "context", "item_id": "g0001", "variant": "c0", "text": "Text only."},
        {"id": "context/g0002/c0", "text": "x", "audio": "cut.wav"},
        {"id": "context/g0003/c0", "audio": "missing.wav"},
        {"id": "context/g0004/c0", "error_class": "timeout", "error_message": "gave up after 60 s"},
        {"id": "context/zzzz/c0", "text": "not in the benchmark"},
    ]   # g0005 has no line
    path = tmp_path / "preds.jsonl"
    path.write_text("# made elsewhere\n" + "\n".join(json.dumps(x) for x in lines) + "\n\n")
    store = Store(tmp_path / "d")
    summary = import_predictions("offline", bench, store, path, audio)
    rows = {r.request_id: r for r in store.replies(model="offline")}
    assert set(rows) == {f"context/g000{i}/c0" for i in range(5)}
    assert rows["context/g0000/c0"].status == "ok" and rows["context/g0000/c0"].latency_s == 1.5
    assert store.abspath(rows["context/g0000/c0"].audio_path).read_bytes() == (audio / "good.wav").read_bytes()
    assert rows["context/g0001/c0"].text == "Text only." and rows["context/g0001/c0"].audio_path is None
    assert rows["context/g0002/c0"].error_class == "bad_audio" and "truncated" in rows["context/g0002/c0"].error_message
    assert rows["context/g0003/c0"].error_class == "bad_audio"
    assert rows["context/g0004/c0"].error_class == "timeout"
    assert (summary.ok, summary.failed) == (2, 3)
    assert store.get_meta(f"run/offline/{bench.hash}")["predictions"] == str(path.resolve())

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "context/g0005/c0", "text": "fine"}\nnot json\n{"text": "no id"}\n'
                   '{"id": "context/g0005/c0", "text": "again"}\n{"id": "a/b/c", "error_class": "oops"}\n')
    with pytest.raises(PredictionsError) as err:
        import_predictions("broken", bench, store, bad)
    assert all(f"line {n}" in str(err.value) for n in (2, 3, 4, 5)) and "line 1:" not in str(err.value)
    assert store.replies(model="broken") == []                 # a broken file stores nothing


def test_cli_reports_setup_errors(tmp_path, capsys):
    bench = make_benchmark(tmp_path / "src", ["a"], name="cli")
    folder = save_benchmark(bench, tmp_path / "bench")
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - name: dead\n    base_url: http://127.0.0.1:9/v1\n    model: x\n    timeout_s: 2\n")
    parser = argparse.ArgumentParser()
    runner.add_arguments(parser)
    base = ["--benchmark", str(folder), "--models-file", str(models), "--data-dir", str(tmp_path / "d"), "--no-progress"]
    assert runner.main(parser.parse_args(["--model", "nope", *base])) == 2
    assert "no model 'nope'" in capsys.readouterr().err
    assert runner.main(parser.parse_args(["--model", "dead", "--tasks", "bogus", *base])) == 2
    assert "unknown task" in capsys.readouterr().err
    # nothing listens on port 9: every request fails, so the run exits 1 (and stores the failures)
    assert runner.main(parser.parse_args(["--model", "dead", "--max-attempts", "1", *base])) == 1
    (r,) = Store(tmp_path / "d").replies(model="dead")
    assert r.status == "failed" and r.error_class == "connection" and "transport error" in r.error_message
