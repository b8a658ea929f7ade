"""`python -m leaderboard worker [--data-dir D] [--once] [--poll S]`: the Space's evaluation worker in a process
of its own (EMPATHY_ARENA_WORKER=0 on the app). It is eval_backend's worker (eval_backend/worker_cli.py: flags,
settings, exit codes) assembled as app_context.py assembles the in-process one: with the arena's hand-off
(arena/services/handoff.py) injected, so a job's note says whether the arena can serve the model.
"""
from __future__ import annotations

import argparse

from arena.services.handoff import arena_handoff
from eval_backend import worker_cli

add_arguments = worker_cli.add_arguments


def main(args: argparse.Namespace) -> int:
    return worker_cli.main(args, handoff=arena_handoff)
