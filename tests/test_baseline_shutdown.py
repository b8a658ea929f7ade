"""The baseline server ends with the app: after SIGTERM, after SIGKILL (it watches its parent), and when the
bootstrap fails after starting it. Real processes: `python app.py` and `python -m eval_backend.baselines`."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from space_shell import bootstrap as bootstrap_mod
from eval_backend.benchmark.dataset import save_benchmark
from tests.support.fault_server import free_port, make_benchmark

ROOT = Path(__file__).resolve().parent.parent


def baseline_children(parent_pid: int) -> list[int]:
    """Pids of baseline servers started with `--parent-pid parent_pid` (read from /proc, no psutil)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"eval_backend.baselines" in args and b"--parent-pid" in args \
                and args[args.index(b"--parent-pid") + 1] == str(parent_pid).encode():
            out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(pred, timeout_s: float, what: str):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def app_env(tmp_path):
    bench = make_benchmark(tmp_path / "src", ["a context"], name="shutdown")
    folder = tmp_path / "bench"
    save_benchmark(bench, folder)
    return dict(os.environ, EMPATHY_ARENA_DATA_DIR=str(tmp_path / "data"), GRADIO_SERVER_PORT=str(free_port()),
                GRADIO_SERVER_NAME="127.0.0.1", EMPATHY_ARENA_BENCHMARK=str(folder), EMPATHY_ARENA_BOOTSTRAP="1",
                EMPATHY_ARENA_WORKER="0", EMPATHY_ARENA_BASELINE_PORT=str(free_port()), HF_HUB_OFFLINE="1",
                GRADIO_ANALYTICS_ENABLED="False")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_baseline_server_ends_with_the_app(app_env, tmp_path, sig):
    app = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=app_env, stdout=subprocess.DEVNULL,
                           stderr=open(tmp_path / "app.log", "wb"))
    try:
        (child,) = wait_for(lambda: baseline_children(app.pid), 90, "the baseline server to start")
        time.sleep(1.0)                       # let it get going (it loads Whisper)
        assert alive(child)
        app.send_signal(sig)
        app.wait(30)
        if sig == signal.SIGTERM:             # a graceful ending: atexit stopped it
            assert app.returncode == 0, (tmp_path / "app.log").read_text()[-2000:]
        wait_for(lambda: not alive(child), 15, f"the baseline server to exit after {sig.name}")
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        for pid in baseline_children(app.pid):
            os.kill(pid, signal.SIGKILL)


def test_a_failed_bootstrap_stops_the_server_it_started(tmp_path):
    port = free_port()

    class Failing(bootstrap_mod.Bootstrap):
        def _prepare_benchmark(self):
            self.start_server(port)
            raise RuntimeError("the benchmark broke after the server started")

    b = Failing(tmp_path, benchmark_spec="demo")
    b._run()
    assert b.status.stage == "failed" and "benchmark broke" in b.status.errors[-1]
    assert b.server is not None and b.server.poll() is not None      # ended and reaped
    assert not alive(b.server.pid)
