"""The worker's hand-off: the worker screens and counts a model's spoken replies, the arena decides whether it can
serve them. Screening happens here, when the replies are stored (issue 14), not when battles are served.

eval_backend does not import the arena. The arena registers its decision when it is imported
(arena/handoff.py: `register_handoff(arena_handoff)`), the app passes it to the worker explicitly, and a
standalone worker process (`python -m eval_backend worker`) loads the plugin module named by
EMPATHY_ARENA_HANDOFF (default `arena.handoff`; empty: no arena) so it hands off as the Space's worker does.

A hand-off is `fn(store, bench, model, counts, arena_specs) -> dict`: `counts` from `reply_counts`, `arena_specs`
the benchmark specs the arena serves (None: the arena's default); the dict carries `servable` and `why`.
"""
from __future__ import annotations

import importlib
import logging
import os
from typing import Callable

from ..showcase import in_arena_pool
from ..tasks import SPOKEN_TASKS

log = logging.getLogger(__name__)
PLUGIN_ENV = "EMPATHY_ARENA_HANDOFF"
DEFAULT_PLUGIN = "arena.handoff"

HandOff = Callable[..., dict]
_registered: list[HandOff] = []


def reply_counts(store, bench, model: str) -> dict:
    """The model's ok spoken replies on `bench`, how many of them have their audio file, and how many of those
    answer a request of the arena's pool (the others are the showcase set, never battled)."""
    spoken = [r for t in SPOKEN_TASKS for r in store.replies(model=model, benchmark_hash=bench.hash, task=t,
                                                              status="ok")]
    audible = [r for r in spoken if r.audio_path and store.abspath(r.audio_path).is_file()]
    return {"spoken_replies": len(spoken), "with_audio": len(audible), "benchmark": bench.source,
            "arena_pool": sum(1 for r in audible if in_arena_pool(r.request_id))}   # eval_backend/showcase.py


def register_handoff(fn: HandOff) -> None:
    if fn not in _registered:
        _registered[:] = [fn]


def registered_handoff() -> HandOff | None:
    """The registered hand-off; if none, load the plugin module (EMPATHY_ARENA_HANDOFF) once and look again."""
    if not _registered:
        name = os.environ.get(PLUGIN_ENV, DEFAULT_PLUGIN).strip()
        if name:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                why = f"the arena package is not importable: {exc}"
                return lambda store, bench, model, counts, specs=None: {**counts, "servable": False, "why": why}
    return _registered[0] if _registered else None


def screen_model(store, bench, model: str) -> dict:
    """Screen the model's playable replies before the arena may see them (eval_backend/moderation/replies.py):
    a reply without a clean decision is never played, so a failed screening pass leaves them unplayable."""
    from ..moderation.replies import held_count, screen_replies
    from ..moderation.settings import screen_replies_enabled
    if not screen_replies_enabled():
        return {"screening": "off (EMPATHY_ARENA_SCREEN_REPLIES=0)", "held": None}
    try:
        summary = screen_replies(store, bench.hash, [model])
    except Exception as exc:      # the replies stay unplayable; the job's note says why
        log.exception("screening %s failed", model)
        return {"screening": f"not screened ({type(exc).__name__}: {exc}); its replies are not played",
                "held": None}
    _, held = held_count(store, bench.hash, model)     # this pass's and earlier passes' decisions (a retry)
    return {"screening": summary.line(), "held": held}


def hand_off(store, bench, model: str, arena_specs: tuple[str, ...] | None = None,
             handoff: HandOff | None = None) -> dict:
    """Screen, count, then ask the arena (the injected hand-off, else the registered one)."""
    screened = screen_model(store, bench, model)
    counts = {**reply_counts(store, bench, model), **screened}
    fn = handoff or registered_handoff()
    if fn is None:
        return {**counts, "servable": False, "why": "no arena is configured for this worker"}
    return fn(store, bench, model, counts, arena_specs)
