"""One loaded `Benchmark` per spec for a whole app process.

The Space's bootstrap, arena, submission service and in-process worker all need the benchmark a spec names;
loading it once (a folder of wavs, a Hub snapshot) and sharing the object keeps them agreeing on its content
hash and saves the reload. A failed load is not remembered: the next `get` tries again (the demo, for one, only
loads once the bootstrap has built it).

    cache = BenchmarkCache(data_dir)
    bench = cache.get("demo")        # loads, or returns the object loaded before
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from .model import Benchmark


class BenchmarkCache:
    def __init__(self, data_dir: str | os.PathLike):
        self.data_dir = Path(data_dir)
        self._loaded: dict[str, Benchmark] = {}
        self._lock = threading.Lock()      # one load per spec even when two threads ask at once

    def get(self, spec: str) -> Benchmark:
        """The benchmark `spec` names (eval_backend/benchmark/loaders.py); raises what the loader raises."""
        key = (spec or "").strip()
        with self._lock:
            if key not in self._loaded:
                from .loaders import load_benchmark  # why: the loaders (~0.5 s) only when a load happens
                self._loaded[key] = load_benchmark(key, self.data_dir)
            return self._loaded[key]

    def __call__(self, spec: str) -> Benchmark:
        return self.get(spec)

    def loaded(self) -> dict[str, Benchmark]:
        """The benchmarks loaded so far, by spec."""
        with self._lock:
            return dict(self._loaded)
