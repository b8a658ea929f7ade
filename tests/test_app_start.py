"""`python app.py` must serve within 60 s on a fresh data dir (the embedded default is prepared in the background)."""
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_app_serves_within_60_seconds_on_a_fresh_data_dir(tmp_path):
    port = free_port()
    env = dict(os.environ, EMPATHY_ARENA_DATA_DIR=str(tmp_path / "data"), GRADIO_SERVER_PORT=str(port),
               GRADIO_SERVER_NAME="127.0.0.1", EMPATHY_ARENA_BOOTSTRAP="0", HF_HUB_OFFLINE="1",
               GRADIO_ANALYTICS_ENABLED="False")
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        served = None
        while time.monotonic() - t0 < 60 and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    if r.status == 200 and b"Empathy Arena" in r.read():
                        served = time.monotonic() - t0
                        break
            except OSError:
                time.sleep(0.5)
        assert served is not None, proc.stdout.read1().decode(errors="replace") if proc.poll() is not None else "timeout"
        print(f"served after {served:.1f} s")
        assert served < 60
    finally:
        proc.kill()
        proc.wait()
