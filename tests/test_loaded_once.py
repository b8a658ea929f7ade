"""eval_backend/loaded_once.py: a model loaded once per process when several threads ask at once (lru_cache
alone loaded MiniLM twice when two live replies were screened side by side)."""
from __future__ import annotations

import threading
import time

import pytest

from eval_backend.loaded_once import loaded_once


def _at_once(get, n: int = 4) -> list:
    start, got = threading.Barrier(n), []

    def ask():
        start.wait()
        got.append(get())
    threads = [threading.Thread(target=ask) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return got


def test_threads_asking_at_once_get_one_object_made_once():
    calls = []

    @loaded_once
    def slow():
        calls.append(1)
        time.sleep(0.3)               # a load long enough for every thread to arrive while it runs
        return object()
    got = _at_once(slow)
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert slow() is got[0]
    slow.cache_clear()
    assert slow() is not got[0] and len(calls) == 2


def test_a_failed_load_is_tried_again():
    tries = []

    @loaded_once
    def flaky():
        tries.append(1)
        if len(tries) == 1:
            raise OSError("disk not ready")
        return "model"
    with pytest.raises(OSError):
        flaky()
    assert flaky() == "model" and flaky() == "model" and len(tries) == 2


def test_the_neural_voice_session_is_one_session_under_concurrent_requests():
    from eval_backend.baselines import neural_voice
    neural_voice._loaded.cache_clear()
    got = _at_once(neural_voice._loaded, 2)
    assert got[0] is got[1]


def test_two_threads_asking_at_once_load_minilm_once():
    """Two replies screened side by side each asked for MiniLM on a cold cache and each loaded it (a second copy in
    memory, seconds of CPU): the second caller must wait for the first's model."""
    from eval_backend.scoring import text_metrics
    text_metrics.sentence_model.cache_clear()
    got = _at_once(text_metrics.sentence_model, 2)
    assert len(got) == 2 and got[0] is got[1]
