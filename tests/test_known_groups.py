"""Acceptance: the scorer separates two baselines we know differ, and ties them where they do not.

`cascade-cue` reads vocal cues and adapts its reply's delivery; `cascade-blind` ignores
them. Both use the same ASR. So on the demo benchmark, scored end to end through the
real commands (demo build, baseline server on loopback, runner, score):
- cue beats blind on prosody fit (audio.prosody_fit) and on tone-variant selection;
- their ASR WERs tie (95% bootstrap intervals overlap).
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("cascade-blind", "cascade-cue")
TASKS = "asr,conversation,selection"
METRICS = "l1.asr_wer,audio.prosody_fit,sel.tone_final,sel.final"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*args: str, timeout: float = 1800) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    data = tmp_path_factory.mktemp("known_groups")
    _run("eval_backend", "demo", "build", "--data-dir", str(data))
    port = _free_port()
    log = open(data / "server.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "eval_backend.baselines", "serve", "--host", "127.0.0.1",
                               "--port", str(port)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (data / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "baseline server not ready in 300 s"
            time.sleep(1)
        models_file = data / "models.yaml"
        models_file.write_text("models:\n" + "".join(
            f"  - {{name: {m}, base_url: 'http://127.0.0.1:{port}/v1', model: {m}, audio_output: true, "
            f"voice: default, baseline: true}}\n" for m in MODELS))
        for m in MODELS:
            _run("eval_backend", "run", "--model", m, "--benchmark", "demo", "--data-dir", str(data),
                 "--models-file", str(models_file), "--tasks", TASKS, "--no-progress", "--concurrency", "4")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    out = {}
    for m in MODELS:
        last = _run("eval_backend", "score", "--model", m, "--benchmark", "demo", "--data-dir", str(data),
                    "--metrics", METRICS).strip().splitlines()[-1]
        out[m] = json.loads(Path(last).read_text())["metrics"]
    return out


def _value(res: dict, model: str, name: str) -> float:
    e = res[model][name]
    assert e["value"] is not None, f"{model} {name}: {e['reason']}"
    return e["value"]


def test_cue_beats_blind_on_prosody_fit(results):
    cue, blind = _value(results, "cascade-cue", "audio.prosody_fit"), _value(results, "cascade-blind",
                                                                              "audio.prosody_fit")
    assert cue > blind, (cue, blind)


def test_cue_beats_blind_on_tone_selection(results):
    cue, blind = _value(results, "cascade-cue", "sel.tone_final"), _value(results, "cascade-blind", "sel.tone_final")
    assert cue > blind, (cue, blind)


def test_asr_wer_ties_within_ci(results):
    a, b = results["cascade-cue"]["l1.asr_wer"], results["cascade-blind"]["l1.asr_wer"]
    assert a["value"] is not None and b["value"] is not None
    assert a["ci95"] and b["ci95"]
    assert a["ci95"][0] <= b["ci95"][1] and b["ci95"][0] <= a["ci95"][1], (a["value"], a["ci95"], b["value"], b["ci95"])
    assert a["n"] == b["n"] > 0
