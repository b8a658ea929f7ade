"""`@loaded_once`: a model (or any costly object) made once per process, however many threads ask at once.

`functools.lru_cache` alone is not enough for a model: two threads that ask on a cold cache both run the loader
(seconds of CPU and a second copy in memory; seen when two live replies were screened side by side). Here the
second waits for the first's result. A loader that raises is tried again by the next caller, as with lru_cache.
"""
from __future__ import annotations

import functools
import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def loaded_once(load: Callable[[], T]) -> Callable[[], T]:
    lock = threading.Lock()
    made: list[T] = []

    @functools.wraps(load)
    def get() -> T:
        if made:                      # the common case: no lock once it is made
            return made[0]
        with lock:
            if not made:
                made.append(load())
            return made[0]

    get.cache_clear = made.clear      # type: ignore[attr-defined]  # as lru_cache's, for tests
    return get
