"""Acceptance: the scorer separates two baselines we know differ, and ties them where they do not.

`cascade-cue` reads vocal cues and adapts its reply's delivery; `cascade-blind` ignores
them. Both use the same ASR. So on the demo benchmark, scored end to end through the
real commands (demo build, baseline server on loopback, runner, score):
- cue beats blind on prosody fit (audio.prosody_fit) and on tone-variant selection;
- their ASR WERs tie (95% bootstrap intervals overlap).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("cascade-blind", "cascade-cue")
METRICS = "l1.asr_wer,audio.prosody_fit,sel.tone_final,sel.final"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def _run(*args: str, timeout: float = 1800, database_url: str | None = None) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if database_url:                      # PostgreSQL runs: the demo run's database
        env["DATABASE_URL"] = database_url
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def results(demo_run):
    data = demo_run.data
    for code, out in zip(demo_run.returncodes, demo_run.outputs):
        assert code == 0, out
    out = {}
    for m in MODELS:
        last = _run("eval_backend", "score", "--model", m, "--benchmark", "demo", "--data-dir", str(data),
                    "--metrics", METRICS, database_url=demo_run.database_url).strip().splitlines()[-1]
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
