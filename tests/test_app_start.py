"""`python app.py` must serve within 60 s on a fresh data dir (the embedded default is prepared in the background)."""
import os
import subprocess
import sys
import time

from tests.support.processes import ROOT, free_port, wait_until_answers


def test_app_serves_within_60_seconds_on_a_fresh_data_dir(tmp_path):
    port = free_port()
    env = dict(os.environ, EMPATHY_ARENA_DATA_DIR=str(tmp_path / "data"), GRADIO_SERVER_PORT=str(port),
               GRADIO_SERVER_NAME="127.0.0.1", EMPATHY_ARENA_BOOTSTRAP="0", HF_HUB_OFFLINE="1",
               GRADIO_ANALYTICS_ENABLED="False")
    log = tmp_path / "app.log"
    t0 = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/", proc, 60, log, what="app.py",
                           ready=lambda r: r.status_code == 200 and b"Empathy Arena" in r.content)
        served = time.monotonic() - t0
        print(f"served after {served:.1f} s")
        assert served < 60
    finally:
        proc.kill()
        proc.wait()
