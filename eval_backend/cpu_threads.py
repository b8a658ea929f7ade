"""How this process's native thread pools wait: OpenMP's passive policy, unless the operator chose one.

Whisper (CTranslate2) and torch run their layers on OpenMP (libgomp) teams whose idle workers, by default, spin
on the CPU between parallel regions. On the Space's 2 shared cores, where the two live contestants, the app's own
transcription and other work run at once, the spinning steals the very cores the other threads need. Measured
(docs/benchmarks.md, "Live battles"), Whisper tiny.en on a 5 s clip with 2 threads on a loaded machine: 1.1-1.3
CPU-s and 2.6-6.2 s per clip spinning, 0.64-0.77 CPU-s and 1.8-4.0 s passive; the words are the same.

libgomp reads the variable once, when it is loaded, so `passive_openmp()` runs before anything imports
ctranslate2 / faster_whisper / torch (app.py and `python -m eval_backend.baselines` call it first).
"""
from __future__ import annotations

import os

WAIT_POLICY_VAR = "OMP_WAIT_POLICY"


def passive_openmp(env=None) -> str:
    """Set OMP_WAIT_POLICY=PASSIVE unless it is set already; returns the policy in force."""
    env = os.environ if env is None else env
    return env.setdefault(WAIT_POLICY_VAR, "PASSIVE")
