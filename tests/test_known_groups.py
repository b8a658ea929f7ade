"""Acceptance: the scorer separates two baselines we know differ, and ties them where they do not.

`cascade-cue` reads vocal cues and adapts its reply's delivery; `cascade-blind` ignores
them. Both use the same ASR. Scored end to end through the real commands (demo build,
baseline server on loopback, runner, score).

Held-apart speakers (the validity checks): the seed-1 demo built with `--vary` (other voices,
tempi, pitches and SNRs than the en-us renderings cascade-cue's thresholds were read from; see
eval_backend/baselines/cues.py), conversation and ASR tasks only:
- audio.delivery_shift_agreement: cue's 95% interval lies above blind's;
- a delivery-blind control (cue's words spoken with blind's delivery, built here and imported as
  predictions) scores like blind (intervals overlap) and below cue (intervals apart): the metric
  rewards the delivery, not the words;
- their ASR WERs tie (l1.asr_wer intervals overlap).

Seed-0 demo (the data the detector's thresholds were read from: regression checks only, not
evidence of validity): cue beats blind on audio.prosody_fit (which scores against our own table)
and on tone-variant selection; ASR WERs tie.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.demo_pipeline import pipeline_env, run_demo_pipeline

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("cascade-blind", "cascade-cue")
METRICS = "l1.asr_wer,audio.prosody_fit,sel.tone_final,sel.final"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.store_incidental("the scorer's figures on the demo runs: the store only holds their replies")]
# the held-apart run writes to the store like a running app: one database for the module on PostgreSQL runs
MODULE_DATABASE_FIXTURES = ("varied_run", "varied_results")
VARIED_METRICS = "audio.delivery_shift_agreement,l1.asr_wer"
CONTROL = "cue-words-blind-voice"


def _run(*args: str, timeout: float = 1800, database_url: str | None = None) -> str:
    env = {**pipeline_env(database_url), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def results(demo_run):
    data = demo_run.data
    for code, out in zip(demo_run.returncodes, demo_run.outputs):
        assert code == 0, out
    return {m: doc["metrics"] for m, doc in _score(data, MODELS, METRICS, demo_run.database_url).items()}


def _score(data: Path, models: tuple[str, ...], metrics: str, database_url: str | None) -> dict[str, dict]:
    """The models scored by one `score` command (it shares the measurements of the reference clips and of the same
    words between them): {model: results document}."""
    paths = _run("eval_backend", "score", *(a for m in models for a in ("--model", m)), "--benchmark", "demo",
                 "--data-dir", str(data), "--metrics", metrics, "--quiet", database_url=database_url).split()
    docs = {m: json.loads(Path(p).read_text()) for m, p in zip(models, paths, strict=True)}
    assert all(doc["manifest"]["model"] == m for m, doc in docs.items())
    return docs


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


# ---------------------------------------------------------------- held-apart speakers
@pytest.fixture(scope="module")
def varied_run(tmp_path_factory, module_database_url):
    run = run_demo_pipeline(tmp_path_factory.mktemp("varied_run"), database_url=module_database_url,
                            demo_args=("--seed", "1", "--vary"), tasks="conversation,asr")
    for code, out in zip(run.returncodes, run.outputs):
        assert code == 0, out
    return run


def _import_control(run) -> None:
    """cascade-cue's conversation words spoken in cascade-blind's delivery (the baselines' neutral espeak-ng
    style), imported as a third model through `run --predictions`."""
    from eval_backend.baselines.speech import NEUTRAL, synthesize
    from eval_backend.store import Store

    store = Store(run.data, database_url=run.database_url)
    folder = run.data.parent / "control"
    folder.mkdir()
    lines = []
    for r in store.replies("cascade-cue", task="conversation", status="ok"):
        name = f"{r.item_id}_{r.variant}.wav"
        (folder / name).write_bytes(synthesize(r.text, NEUTRAL))
        lines.append(json.dumps({"id": r.request_id, "text": r.text, "audio": name}))
    assert len(lines) >= 100, len(lines)
    (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    _run("eval_backend", "run", "--model", CONTROL, "--benchmark", "demo", "--data-dir", str(run.data),
         "--tasks", "conversation", "--predictions", str(folder / "predictions.jsonl"), "--no-progress",
         database_url=run.database_url)


@pytest.fixture(scope="module")
def varied_results(varied_run):
    _import_control(varied_run)
    docs = _score(varied_run.data, (*MODELS, CONTROL), VARIED_METRICS, varied_run.database_url)
    assert all(doc["manifest"]["benchmark"]["version"].endswith("+seed1+varied") for doc in docs.values())
    return {m: doc["metrics"] for m, doc in docs.items()}


def _interval(res: dict, model: str, name: str) -> tuple[float, float, float]:
    e = res[model][name]
    assert e["value"] is not None and e["ci95"], f"{model} {name}: {e['reason']}"
    return e["value"], e["ci95"][0], e["ci95"][1]


def test_delivery_shift_separates_cue_from_blind_on_held_apart_speakers(varied_results):
    name = "audio.delivery_shift_agreement"
    cue, cue_lo, _ = _interval(varied_results, "cascade-cue", name)
    blind, _, blind_hi = _interval(varied_results, "cascade-blind", name)
    assert cue_lo > blind_hi, (cue, cue_lo, blind, blind_hi)
    n = varied_results["cascade-cue"][name]["n"]
    assert n == varied_results["cascade-blind"][name]["n"] >= 60, n       # both judged on the same pairs


def test_delivery_blind_control_scores_like_blind(varied_results):
    name = "audio.delivery_shift_agreement"
    ctrl, ctrl_lo, ctrl_hi = _interval(varied_results, CONTROL, name)
    _, blind_lo, blind_hi = _interval(varied_results, "cascade-blind", name)
    _, cue_lo, _ = _interval(varied_results, "cascade-cue", name)
    assert ctrl_lo <= blind_hi and blind_lo <= ctrl_hi, (ctrl, ctrl_lo, ctrl_hi, blind_lo, blind_hi)
    assert ctrl_hi < cue_lo, (ctrl_hi, cue_lo)
    # the words of both sides were known, so what the words alone change was taken out on both
    raw = varied_results[CONTROL][name]["raw"]
    assert all(v.get("words_control", {}).get("model") for v in raw.values() if "failure" not in v)


def test_asr_wer_ties_on_held_apart_speakers(varied_results):
    a, b = varied_results["cascade-cue"]["l1.asr_wer"], varied_results["cascade-blind"]["l1.asr_wer"]
    assert a["ci95"] and b["ci95"] and a["n"] == b["n"] > 0
    assert a["ci95"][0] <= b["ci95"][1] and b["ci95"][0] <= a["ci95"][1], (a["ci95"], b["ci95"])
