"""`python -m eval_backend.baselines serve` on a free loopback port for tests and benchmarks."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BaselineServer:
    """`python -m eval_backend.baselines serve` on a free loopback port, stopped on exit."""

    def __init__(self, timeout_s: float = 90.0):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.root = f"http://127.0.0.1:{self.port}"
        self.timeout_s = timeout_s

    def __enter__(self) -> "BaselineServer":
        # a file, not a pipe: nobody reads a pipe during a long run, and a full pipe would stall the server
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "eval_backend.baselines", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"baseline server exited: {self.log.read().decode(errors='replace')[-3000:]}")
            try:
                if httpx.get(f"{self.root}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.__exit__()
        raise RuntimeError("baseline server did not become healthy")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def stats(self) -> dict:
        return httpx.get(f"{self.root}/stats", timeout=5).json()
