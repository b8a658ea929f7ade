"""The arena's side of the worker's hand-off (eval_backend/submissions/handoff.py): can it serve a model?

The arena (arena/services/service.py) builds its battles from the replies table of the benchmarks in
`ArenaSettings.benchmark_specs`, rebuilding whenever replies change, skipping paused models: nothing needs
registering, but the job's benchmark must be one of those and the replies must carry audio. The worker records
the outcome so the UI can say why a model is not in the arena; whoever assembles a worker injects this function
(app_context.py, leaderboard/worker_cli.py).
"""
from __future__ import annotations

from arena.config import ArenaSettings
from arena.tables import storage


def arena_handoff(store, bench, model: str, counts: dict, arena_specs: tuple[str, ...] | None = None) -> dict:
    """`counts`: the worker's reply counts (spoken_replies, with_audio, benchmark)."""
    store.migrate()                  # the arena's tables, when this store was opened before arena was imported
    specs = arena_specs if arena_specs is not None else ArenaSettings().benchmark_specs
    paused = model in storage.paused_models(store)
    why = None
    if bench.source not in specs:
        why = f"the arena serves the benchmark(s) {', '.join(specs)}, not {bench.source}"
    elif not counts["with_audio"]:
        why = "the model gave no spoken reply with audio"
    elif not counts.get("arena_pool", counts["with_audio"]):
        why = "none of its spoken replies with audio answers a request of the arena's pool (eval_backend/showcase.py)"
    elif counts.get("held") is not None and counts["held"] >= counts["with_audio"]:
        why = "every spoken reply was held by the safety screen (the operator's Moderation tab)"
    elif paused:
        why = "the model is paused in the arena"
    return {**counts, "arena_benchmarks": list(specs), "paused": paused, "servable": why is None, "why": why}

