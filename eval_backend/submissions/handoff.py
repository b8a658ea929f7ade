"""The worker's hand-off: the worker screens and counts a model's spoken replies, the arena decides whether it can
serve them. Screening happens here, when the replies are stored (issue 14), not when battles are served.

eval_backend does not import the arena: whoever assembles a worker injects the arena's decision
(arena/services/handoff.py `arena_handoff`): the app (app_context.py) and the standalone worker process
(`python -m leaderboard worker`, leaderboard/worker_cli.py). A worker assembled without one records "no arena
is configured for this worker". The hand-off only writes the job's status note: the arena picks up new replies
on its own (store.replies_version()).

A hand-off is `fn(store, bench, model, counts, arena_specs) -> dict`: `counts` from `reply_counts`, `arena_specs`
the benchmark specs the arena serves (None: the arena's default); the dict carries `servable` and `why`.
"""
from __future__ import annotations

import logging
from typing import Callable

from ..moderation.replies import held_count, screen_replies
from ..moderation.settings import screen_replies_enabled
from ..showcase import in_arena_pool
from ..tasks import SPOKEN_TASKS

log = logging.getLogger(__name__)

HandOff = Callable[..., dict]


def reply_counts(store, bench, model: str) -> dict:
    """The model's ok spoken replies on `bench`, how many of them have their audio file, and how many of those
    answer a request of the arena's pool (the others are the showcase set, never battled)."""
    spoken = [r for t in SPOKEN_TASKS for r in store.replies(model=model, benchmark_hash=bench.hash, task=t,
                                                              status="ok")]
    audible = [r for r in spoken if r.audio_path and store.abspath(r.audio_path).is_file()]
    return {"spoken_replies": len(spoken), "with_audio": len(audible), "benchmark": bench.source,
            "arena_pool": sum(1 for r in audible if in_arena_pool(r.request_id))}   # eval_backend/showcase.py


def screen_model(store, bench, model: str) -> dict:
    """Screen the model's playable replies before the arena may see them (eval_backend/moderation/replies.py):
    a reply without a clean decision is never played, so a failed screening pass leaves them unplayable."""
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
    """Screen, count, then ask the arena (the injected hand-off; None: this worker has no arena)."""
    screened = screen_model(store, bench, model)
    counts = {**reply_counts(store, bench, model), **screened}
    if handoff is None:
        return {**counts, "servable": False, "why": "no arena is configured for this worker"}
    return handoff(store, bench, model, counts, arena_specs)
