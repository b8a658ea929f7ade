"""`python -m eval_backend.baselines serve` on a free loopback port for tests and benchmarks."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import httpx

from tests.support.processes import ROOT, ServerProcess, free_port

__all__ = ["ROOT", "BaselineServer", "free_port"]


class BaselineServer(ServerProcess):
    """`python -m eval_backend.baselines serve` on a free loopback port, stopped on exit."""

    def __init__(self, timeout_s: float = 90.0, env: dict[str, str] | None = None):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.root = f"http://127.0.0.1:{self.port}"
        self.timeout_s = timeout_s
        # a file, not a pipe: nobody reads a pipe during a long run, and a full pipe would stall the server
        self._log_dir = tempfile.TemporaryDirectory(prefix="baselines_")
        # --parent-pid: a test process killed outright (a CI timeout) must not leave the server running for hours
        super().__init__(["-m", "eval_backend.baselines", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                          "--parent-pid", str(os.getpid())],
                         Path(self._log_dir.name) / "server.log", env={"HF_HUB_OFFLINE": "1", **(env or {})},
                         stop_timeout=10)

    def __enter__(self) -> "BaselineServer":
        try:
            self.start(f"{self.root}/health", self.timeout_s)
        except RuntimeError:
            self._log_dir.cleanup()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        self._log_dir.cleanup()

    def stats(self) -> dict:
        return httpx.get(f"{self.root}/stats", timeout=5).json()
