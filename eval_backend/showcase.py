"""Blinding: which spoken requests battles use, and which replies may be shown with their model's name.

A battle is blind only if nothing a voter can fetch before voting names its replies' models. Browse and the model
pages show replies *with* their model's name, so they must never show one a battle can play. Each benchmark's
spoken requests are split once, by a fixed seeded hash of the request id (stable across restarts, replicas and
benchmark versions, and the same for every model):

- the **showcase set** (`SHOWCASE_SHARE`, 1 in 5): never served in a battle; Browse, the model pages and releases
  show these replies with their model's name;
- the **arena pool** (the rest): the only requests battles use (arena/services/battles.py's index, the start-up bootstrap's
  first slice); a reply to one of them is shown with its model's name only once the model is no longer in the
  arena, i.e. has no reply the arena can serve (`ArenaModels`).

`publishable(request_id, model, arena_models)` is the one rule every page and export asks.
"""
from __future__ import annotations

import hashlib
import threading
from typing import Callable, Collection, Iterable

from .tasks import SPOKEN_TASKS

SHOWCASE_SEED = "empathy-arena/showcase/v1"    # changing it moves requests between the sets: never, once replies
SHOWCASE_SHARE = 0.2                           # have been shown (docs/security.md, "Blinding")


def _task(request_id: str) -> str:
    return request_id.split("/", 1)[0]


def in_showcase(request_id: str) -> bool:
    """A spoken request whose replies are public with their model's name (never in a battle)."""
    if _task(request_id) not in SPOKEN_TASKS:
        return False
    digest = hashlib.sha256(f"{SHOWCASE_SEED}\x00{request_id}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") < SHOWCASE_SHARE * 2 ** 64


def in_arena_pool(request_id: str) -> bool:
    """A spoken request battles may use."""
    return _task(request_id) in SPOKEN_TASKS and not in_showcase(request_id)


def publishable(request_id: str, model: str, arena_models: Collection[str]) -> bool:
    """May `model`'s reply to `request_id` be shown with the model's name? Not when a battle can play it."""
    return not in_arena_pool(request_id) or model not in arena_models


class ArenaModels:
    """The models in the arena: those with an ok spoken reply to an arena-pool request of a benchmark the arena
    serves (paused models included: they may come back). Cached until the replies table changes."""

    def __init__(self, store, benchmark_hashes: Callable[[], Iterable[str]]):
        self.store = store
        self.benchmark_hashes = benchmark_hashes
        self._cached: tuple[tuple, frozenset[str]] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> frozenset[str]:
        hashes = tuple(sorted(self.benchmark_hashes()))
        key = (hashes, tuple(self.store.replies_version()))
        with self._lock:
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1]
        models = frozenset(r.model for h in hashes for t in SPOKEN_TASKS
                           for r in self.store.replies(benchmark_hash=h, task=t, status="ok")
                           if in_arena_pool(r.request_id))
        with self._lock:
            self._cached = (key, models)
        return models
