"""tests/support/background_workers.py: a battle-audio worker a module's service started does not run on into the
next module (CI's failure of 4539519: test_feature_cache counted a clip another module's worker measured)."""
from __future__ import annotations

from pathlib import Path

from tests.support.processes import python_path

ROOT = Path(__file__).resolve().parents[1]

STARTS_A_LONG_QUEUE = """
import threading
import time

import numpy as np
import soundfile as sf

from arena.services.battle_audio import HeardAudio


def test_a_service_leaves_clips_queued(tmp_path):
    clips = []
    for i in range(20):
        path = tmp_path / f"clip{i}.wav"
        t = np.arange(8000) / 16000
        sf.write(path, (0.2 * np.sin(2 * np.pi * (150 + 10 * i) * t)).astype("float32"), 16000)
        clips.append(path)
    heard = HeardAudio(tmp_path / "data", also_measure=lambda path: time.sleep(0.5))   # ~10 s of queue
    heard.prepare_later(clips)
    assert [t for t in threading.enumerate() if t.name == "battle-audio"]
"""

FINDS_NO_WORKER = """
import threading


def test_the_next_module_finds_no_worker_running():
    assert [t.name for t in threading.enumerate() if t.name == "battle-audio"] == []
"""


def _run(pytester, monkeypatch, *plugin: str):
    pytester.makepyfile(test_a_service=STARTS_A_LONG_QUEUE, test_b_next=FINDS_NO_WORKER)
    monkeypatch.setenv("PYTHONPATH", python_path(ROOT))
    return pytester.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                                         "test_a_service.py", "test_b_next.py", timeout=300)


def test_without_the_plugin_the_next_module_finds_the_worker_still_running(pytester, monkeypatch):
    _run(pytester, monkeypatch).assert_outcomes(passed=1, failed=1)


def test_with_the_plugin_the_worker_is_stopped_when_its_module_ends(pytester, monkeypatch):
    _run(pytester, monkeypatch, "-p", "tests.support.background_workers").assert_outcomes(passed=2)
