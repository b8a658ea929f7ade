"""What the integrity tests share (issue 23: gold battles, proof of work, sweeps): a service on a copy of a seeded
data dir with a controllable clock, a voter who listens as the rule asks, and an ALTCHA solver (the PyPI package,
as a script voting over the JSON API would use it)."""
from __future__ import annotations

import random
from pathlib import Path

from arena.services import gold
from arena.config import ArenaSettings
from arena.services.service import ArenaService
from eval_backend.store import Store
from tests.support.arena_fixtures import copy_data_dir
from tests.support.arena_fixtures import solve_pow as solve  # noqa: F401  (the tests' name for it)


class Clock:
    def __init__(self, t: float = 1_700_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def service_on_copy(seeded: Path, dest: Path, database_url: str | None, seed: int = 5,
                    **overrides) -> tuple[ArenaService, Clock]:
    """A fresh copy of a seeded data dir (and its database, `database_url` from conftest's copy_database) and an
    ArenaService on it with a fake clock and a seeded rng."""
    copy_data_dir(seeded, dest)
    clock = Clock()
    svc = ArenaService(Store(dest, database_url=database_url), ArenaSettings(**overrides), clock=clock,
                       rng=random.Random(seed))
    return svc, clock


def maker(seeded: Path, tmp_path: Path, database_url, now=None, **defaults):
    """A test's `make(**overrides) -> (service, clock)`: each call a fresh copy of the seeded data dir and, via
    `database_url()` (conftest's copy_database of the module's database), of its database. `now()`: the clock's
    start (the altcha package checks a challenge's expiry against the real time, so the PoW tests start there)."""
    def _make(**overrides):
        dest = tmp_path / f"data{len(list(tmp_path.iterdir()))}"
        svc, clock = service_on_copy(seeded, dest, database_url(), **{**defaults, **overrides})
        if now is not None:
            clock.t = now()
        return svc, clock
    return _make


def serve(svc, session: str, ip: str, **kw):
    """serve_battle with the gold pool full (check clips are built ahead, arena/services/gold.py; the app refills the pool in
    the background, here it is filled first so that a share of 1 means every battle is a gold one)."""
    if svc.gold.share:
        svc.gold.fill(svc.index.candidates()[0], svc.paused())
    return svc.serve_battle(session, ip, **kw)


def fetch_all(svc, view) -> None:
    """What a player does first: fetch every clip of the battle (the audio route records it)."""
    for clip in view.min_listen_s:
        svc.clip_fetched(view.battle_id, clip)


def heard(view) -> dict:
    """The listen report of a voter who played every clip as far as the rule asks, user, A, then B."""
    return {"played_s": dict(view.min_listen_s), "order": ["user", "A", "B"]}


def vote_after_listening(svc, clock, view, session, ip, overall, **kw):
    fetch_all(svc, view)
    clock.t += view.total_min_listen_s + 0.5
    return svc.submit_vote(view.battle_id, session, ip, overall, listen=heard(view), **kw)


def battle_row(svc, battle_id: str):
    return svc.store.query("SELECT * FROM arena_battles WHERE id=?", (battle_id,))[0]


def good_slot(svc, battle_id: str) -> str | None:
    """The slot of a gold battle's real reply (None for a normal battle): what a listener hears."""
    parsed = gold.parse(battle_row(svc, battle_id))
    return parsed[1] if parsed else None
