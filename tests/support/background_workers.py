"""A pytest plugin (tests/conftest.py loads it): when a test module ends, the battle-audio workers its services
started (arena/services/battle_audio.py: a daemon thread that makes and measures heard clips) are stopped.

Why: a worker outlives the service that started it, so one left draining its queue went on measuring clips during
the next module's tests in the same process — test_feature_cache counted a 24 kHz `features.extract` call it never
made (CI's failure of 4539519), and the CPU went from whatever ran next. tests/test_background_workers.py checks
both sides: without this plugin the next module finds the worker running, with it none."""
from __future__ import annotations

import sys

import pytest


@pytest.fixture(scope="module", autouse=True)
def heard_audio_stopped():
    yield
    battle_audio = sys.modules.get("arena.services.battle_audio")      # not imported: nothing was started
    if battle_audio is not None:
        battle_audio.stop_workers()
