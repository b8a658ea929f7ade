"""Start a server as a child process and wait until it answers: the one way the tests, the benchmarks and
scripts/screenshots.py do it.

    server = ServerProcess(["-m", "eval_backend.baselines", "serve", "--port", str(port)], tmp / "b.log")
    server.start(f"http://127.0.0.1:{port}/health")      # returns once it answers 200; fails at once if it exits
    ...
    server.stop()                                         # SIGTERM, then SIGKILL after `stop_timeout`

`wait_until_answers` is the waiting part alone, for processes started some other way (nginx, app.py timed by a
test). Waiting means polling the URL every 0.1 s: the answer is the event waited for, never a fixed sleep.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import httpx

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.1


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def python_path(root: str | Path) -> str:
    """PYTHONPATH for a started app serving `root`: that checkout first, then what this process was given (the
    storage probe's folder on the SQLite pass: an app with its PYTHONPATH replaced would be a child the probe
    cannot see into, so its tests could not be told apart by the statements they issue)."""
    return os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)


def log_tail(path: Path | None, chars: int = 3000) -> str:
    if path is None or not Path(path).exists():
        return ""
    return Path(path).read_text(errors="replace")[-chars:]


def wait_until_answers(url: str, proc: subprocess.Popen | None = None, timeout: float = 120.0,
                       log: Path | None = None, method: str = "GET", json: dict | None = None,
                       ready: Callable[[httpx.Response], bool] = lambda r: r.status_code == 200,
                       what: str = "the server") -> float:
    """Poll `url` until `ready(response)`; returns the seconds waited. Raises RuntimeError (with the log's tail)
    as soon as `proc` exits, or after `timeout` s."""
    t0 = time.monotonic()
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before answering {url}: {log_tail(log)}")
        try:
            if ready(httpx.request(method, url, json=json, timeout=5)):
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{what} did not answer {url} within {timeout:.0f} s: {log_tail(log)}")
        time.sleep(POLL_S)


class ServerProcess:
    """`python ARGS...` from the project root (stdout and stderr appended to `log_path`), started and stopped."""

    def __init__(self, args: list[str], log_path: Path, env: dict[str, str | None] | None = None, cwd: Path = ROOT,
                 stop_timeout: float = 60.0):
        self.args, self.log_path, self.env, self.cwd = args, Path(log_path), env or {}, cwd
        self.stop_timeout = stop_timeout
        self.proc: subprocess.Popen | None = None

    def start(self, url: str | None = None, timeout: float = 180.0, **wait) -> "ServerProcess":
        """Start; with `url`, return once it answers (see wait_until_answers for `wait`'s keywords)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:             # the child keeps its own descriptor
            env = {k: v for k, v in {**os.environ, **self.env}.items() if v is not None}   # None: unset
            self.proc = subprocess.Popen([sys.executable, *self.args], cwd=self.cwd, env=env,
                                         stdout=log, stderr=subprocess.STDOUT)
        if url:
            try:
                wait_until_answers(url, self.proc, timeout, self.log_path, what=" ".join(self.args[:2]), **wait)
            except RuntimeError:
                self.stop()
                raise
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        """The log's last 3,000 characters."""
        return log_tail(self.log_path)

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, no flush: what a crash looks like."""
        if self.running():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not ended within `stop_timeout` s."""
        if self.running():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.kill()
