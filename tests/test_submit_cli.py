"""`python -m eval_backend submit` and `worker`: the same validation as the form, --dry-run queues nothing,
--json prints {"accepted", "errors"}, and a submitted endpoint is evaluated by `worker --once`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from eval_backend.__main__ import main as cli
from eval_backend.audio.io import encode_wav
from eval_backend.benchmark.dataset import save_benchmark
from eval_backend.store import Store
from eval_backend.submissions import secrets as secretstore
from tests.support.fault_server import FaultServer, make_benchmark, tone_pcm

ROOT = Path(__file__).resolve().parent.parent


def run(capsys, *argv) -> tuple[int, dict]:
    code = cli(["submit", *argv, "--json"])
    out = capsys.readouterr().out.strip().splitlines()[-1]
    return code, json.loads(out)


def bench(tmp: Path) -> Path:
    return save_benchmark(make_benchmark(tmp / "src", ["My exam went badly.", "I got the job!"], name="cli"),
                          tmp / "bench")


def count_jobs(data: Path) -> int:
    return Store(data).query("SELECT COUNT(*) FROM submissions")[0][0]


def test_dry_run_validates_and_preflights_but_queues_nothing(tmp_path, capsys):
    folder, data = bench(tmp_path), tmp_path / "d"
    with FaultServer() as srv:
        common = ["--name", "Cli Model", "--endpoint", srv.base_url, "--model-id", "fault", "--audio-out",
                  "--data-dir", str(data), "--benchmark", str(folder)]
        code, out = run(capsys, *common, "--allow", f"127.0.0.1:{srv.port}", "--dry-run")
        assert (code, out["accepted"], out["errors"]) == (0, True, {})
        assert sum(srv.counts.values()) == 2                      # the preflight's 2 real calls
        assert count_jobs(data) == 0
        code, out = run(capsys, *common, "--dry-run")             # loopback not allowlisted
        assert code == 1 and not out["accepted"] and "loopback" in out["errors"]["base_url"]
        code, out = run(capsys, *common, "--allow", f"127.0.0.1:{srv.port}")
        assert code == 0 and out["accepted"] and out["job_id"] == 1
        code, out = run(capsys, *common, "--allow", f"127.0.0.1:{srv.port}")
        assert code == 1 and "duplicate" in out["errors"] and "name" in out["errors"]
    assert count_jobs(data) == 1


def test_bad_fields_come_back_per_field(tmp_path, capsys):
    code, out = run(capsys, "--name", "x", "--endpoint", "ftp://example.com/v1", "--model-id", "bad id",
                    "--licence", "nonsense", "--data-dir", str(tmp_path / "d"))
    assert code == 1 and out["accepted"] is False
    assert set(out["errors"]) >= {"name", "base_url", "model_id", "licence"}
    code = cli(["submit", "--name", "x", "--endpoint", "ftp://example.com/v1", "--model-id", "m",
                "--data-dir", str(tmp_path / "d")])
    text = capsys.readouterr().out
    assert code == 1 and "refused" in text and "base_url: The endpoint base URL must start with http" in text


def test_api_key_from_the_environment_only_when_it_can_be_encrypted(tmp_path, capsys, monkeypatch):
    folder, data = bench(tmp_path), tmp_path / "d"
    monkeypatch.delenv(secretstore.SECRET_KEY_ENV, raising=False)
    common = ["--name", "Keyed Cli", "--endpoint", "https://93.184.216.34/v1", "--model-id", "m",
              "--data-dir", str(data), "--benchmark", str(folder), "--dry-run"]
    code, out = run(capsys, *common, "--api-key-env", "CLI_TEST_KEY_UNSET")
    assert code == 1 and "CLI_TEST_KEY_UNSET" in out["errors"]["api_key"]
    monkeypatch.setenv("CLI_TEST_KEY", "sk-cli-" + "w" * 30)
    code, out = run(capsys, *common, "--api-key-env", "CLI_TEST_KEY")
    assert code == 1 and secretstore.SECRET_KEY_ENV in out["errors"]["api_key"]
    assert "sk-cli-" not in json.dumps(out)


def test_predictions_zip_dry_run(tmp_path, capsys):
    folder, data = bench(tmp_path), tmp_path / "d"
    z = tmp_path / "p.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("p.jsonl", json.dumps({"id": "context/g0000/c0", "text": "Sorry.", "audio": "a.wav"}))
        f.writestr("a.wav", encode_wav(tone_pcm(0.4), 24000))
    code, out = run(capsys, "--name", "Zip Cli", "--predictions", str(z), "--data-dir", str(data),
                    "--benchmark", str(folder), "--dry-run")
    assert code == 0 and out["accepted"] and "1 of 1 predictions lines" in out["notes"][0]
    assert count_jobs(data) == 0 and not any((data / "submissions" / "uploads").iterdir())
    with zipfile.ZipFile(z, "a") as f:
        f.writestr("../../escape.wav", b"x")
    code, out = run(capsys, "--name", "Zip Cli", "--predictions", str(z), "--data-dir", str(data),
                    "--benchmark", str(folder))
    assert code == 1 and "'..'" in out["errors"]["predictions"]


def test_submit_then_worker_once_as_processes(tmp_path):
    folder, data = bench(tmp_path), tmp_path / "d"
    env = {**os.environ, "EMPATHY_ARENA_ALLOW_ADDRESSES": "127.0.0.1"}
    with FaultServer() as srv:
        sub = subprocess.run([sys.executable, "-m", "eval_backend", "submit", "--name", "Proc Model", "--endpoint",
                              srv.base_url, "--model-id", "fault", "--audio-out", "--data-dir", str(data),
                              "--benchmark", str(folder), "--json"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
        assert sub.returncode == 0, sub.stdout + sub.stderr
        assert json.loads(sub.stdout) == {"accepted": True, "errors": {}, "job_id": 1, "dry_run": False,
                                          "notes": []}
        work = subprocess.run([sys.executable, "-m", "leaderboard", "worker", "--once", "--json", "--data-dir",
                               str(data), "--metrics", "aeq.*"], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300)
        assert work.returncode == 0, work.stderr
        job = json.loads(work.stdout)
        assert job["state"] == "FINISHED" and job["summary"]["ok"] == 2 and Path(job["results_path"]).is_file()
        again = subprocess.run([sys.executable, "-m", "leaderboard", "worker", "--once", "--data-dir", str(data)],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and "queue is empty" in again.stdout


def test_preflight_from_inside_a_running_event_loop(tmp_path):
    """An async UI handler calls submit() with a loop running: the preflight still runs."""
    import asyncio

    from eval_backend.submissions import SubmissionForm, SubmissionService, SubmissionSettings, Submitter
    folder = bench(tmp_path)
    with FaultServer() as srv:
        svc = SubmissionService(Store(tmp_path / "d"), SubmissionSettings(allow=(f"127.0.0.1:{srv.port}",),
                                                                          benchmark=str(folder)))
        form = SubmissionForm(name="Async Model", base_url=srv.base_url, model_id="fault", audio_output=True)

        async def handler():
            return svc.submit(form, Submitter("ui-user"), dry_run=True)
        out = asyncio.run(handler())
        assert out.accepted and sum(srv.counts.values()) == 2


def test_two_processes_submitting_the_same_model_queue_it_once(tmp_path):
    folder, data = bench(tmp_path), tmp_path / "d"
    Store(data)
    cmd = [sys.executable, "-m", "eval_backend", "submit", "--name", "Race Model", "--endpoint",
           "https://93.184.216.34/v1", "--model-id", "m", "--no-preflight", "--data-dir", str(data),
           "--benchmark", str(folder), "--json"]
    procs = [subprocess.Popen(cmd + ["--submitter", f"user{i}"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(3)]
    done = [p.communicate(timeout=120) for p in procs]
    outs = [json.loads(out) for out, _ in done]
    said = f"{outs}; stderr: {[err[-1500:] for _, err in done]}"       # a failure says what each process answered
    assert sum(o["accepted"] for o in outs) == 1, said
    assert all("duplicate" in o["errors"] for o in outs if not o["accepted"]), said
    assert count_jobs(data) == 1
