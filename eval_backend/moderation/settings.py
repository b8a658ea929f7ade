"""The one reply-screening switch, read from the environment (README's settings table documents it).

EMPATHY_ARENA_SCREEN_REPLIES=1 (default): replies are screened when stored and only replies screened clean (or
released by the operator) are played. 0: nothing is screened at storage and unscreened replies play (the test
suite's default for tests of other parts). The arena's settings (arena/config.py) and the worker's hand-off read it
here.
"""
from __future__ import annotations

import os

SCREEN_ENV = "EMPATHY_ARENA_SCREEN_REPLIES"


def screen_replies_enabled(env=os.environ) -> bool:
    raw = (env.get(SCREEN_ENV) or "1").strip()
    if raw not in ("0", "1"):
        raise ValueError(f"{SCREEN_ENV}={raw!r}: expected 1 (play only screened replies) or 0")
    return raw == "1"
