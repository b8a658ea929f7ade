"""The leaderboard tabs of app.py (its build_blocks, its ?tab= handling) over a seeded data dir, for the
browser tests of readable tables and fitting plots (tests/test_tables_browser.py).

    python -m tests.support.tables_app --port 7873 --data-dir DIR

`seed_tables(DIR)` (run first, in the test process) writes real scorer results for a few models (a small saved
benchmark, tests/support/results_fixtures.py) and imports arena votes between them, so the Benchmark
leaderboard has rows, notes, a radar and an arena-vs-benchmark scatter, and the Arena leaderboard has
matrices, a history and a heat map of vocal states.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PROVISIONAL_VOTES = 5


def _service(store):
    from arena.config import settings_from_env
    from arena.services.service import ArenaService
    return ArenaService(store, settings_from_env(store.root, provisional_votes=PROVISIONAL_VOTES))


MODELS = {"good": {"u1": "B", "u2": "A", "r1": "A", "r2": "B", "g1_1": "A", "g1_2": "B"},
          "half": {"u1": "B", "u2": "B", "r1": "A", "r2": "A", "g1_1": "A", "g1_2": "A"},
          "cascade-cue": {"u1": "B", "u2": "A", "r1": "A", "r2": "A", "g1_1": "A", "g1_2": "B"}}


def seed_tables(root, n_votes: int = 90) -> str:
    """Results for MODELS and `n_votes` imported arena votes between them (the last hour); returns the data
    dir the app serves."""
    import csv
    import random
    import time
    from pathlib import Path

    import arena.services.service  # noqa: F401  (registers the arena tables before the store opens)
    from eval_backend.store import Store
    from tests.support.results_fixtures import scored_results

    scored_results(Path(root), MODELS)
    rng, names, now = random.Random(7), sorted(MODELS), time.time()
    strength = {"good": 3.0, "cascade-cue": 2.0, "half": 1.0}
    path = Path(root) / "votes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model_a", "model_b", "winner", "timestamp", "attribute"])
        for k in range(n_votes):      # each vote on an utterance in one of three vocal states (the heat map)
            a, b = rng.sample(names, 2)
            win = a if rng.random() < strength[a] / (strength[a] + strength[b]) else b
            w.writerow([a, b, win, now - 3000 + 30 * k, ("sad", "whisper", "children playing")[k % 3]])
    store = Store(Path(root) / "data")
    _service(store).import_votes(path)
    return str(store.root)


def _ready():
    import threading
    done = threading.Event()
    done.set()                      # nothing is being prepared: the header's timer stays off
    return done


def build(data_dir):
    import types

    from space_shell.gradio_import import skip_stub_regeneration
    skip_stub_regeneration()          # as app.py does, before gradio
    import gradio as gr

    from app import TABS, Tab, build_blocks
    from arena.services.health import HealthConfig, HealthMonitor
    from eval_backend.store import Store
    from space_shell.tab_contract import TabHandles

    store = Store(data_dir)
    service = _service(store)

    def placeholder_arena(ctx):
        gr.Markdown("The arena tab (not part of this test app).", elem_id="arena-placeholder")
        return TabHandles()
    ctx = types.SimpleNamespace(store=store, arena=service, benchmark=None, submission_service=None, media=None,
                                health=HealthMonitor(store, HealthConfig.from_settings(service.settings)),
                                status_line=lambda: "", bootstrap=types.SimpleNamespace(ready=_ready()))
    keep = {"arena-board", "bench-board", "health"}
    tabs = (Tab("Arena", "arena", placeholder_arena), *[t for t in TABS if t.id in keep])
    return gr.mount_gradio_app(__import__("fastapi").FastAPI(), build_blocks(ctx, tabs), path="/",
                               blocked_paths=[str(store.root)], footer_links=[])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--data-dir", required=True)
    args = p.parse_args()
    import uvicorn

    from app import GRACEFUL_SHUTDOWN_S

    uvicorn.run(build(args.data_dir), host="127.0.0.1", port=args.port, log_level="warning", access_log=False,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
