"""SIGTERM stops `python -m leaderboard worker` even when it lands inside the poll's `Event.wait`
(eval_backend/worker_cli.py: stop_from_signal). Seen once in CI: the handler called `Event.set` in the main thread
while that thread held the event's lock inside `Event.wait`, and the worker never exited.

The signal is raised while the test holds the lock exactly as `Event.wait` does; a handler that sets the event in
the main thread deadlocks there (pytest-timeout ends it), the fixed one sets it from another thread once the lock is
free.
"""
from __future__ import annotations

import signal
import threading

import pytest

from eval_backend.worker_cli import stop_from_signal


class FakeWorker:
    def __init__(self):
        self.stop_event = threading.Event()

    def stop(self):
        self.stop_event.set()


@pytest.mark.timeout(30)
def test_sigterm_inside_the_poll_wait_still_stops_the_worker():
    worker = FakeWorker()
    before = signal.signal(signal.SIGTERM, stop_from_signal(worker))
    try:
        with worker.stop_event._cond:                 # what Event.wait holds while the signal arrives
            signal.raise_signal(signal.SIGTERM)       # the handler runs here, in this thread, lock held
            assert not worker.stop_event.is_set()
        assert worker.stop_event.wait(10)
    finally:
        signal.signal(signal.SIGTERM, before)
