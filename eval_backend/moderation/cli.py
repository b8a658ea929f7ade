"""`python -m eval_backend screen-replies --benchmark SPEC [--model M] [--data-dir D] [--json]`.

For replies stored outside the worker (`python -m eval_backend run` by hand, an import): screens the playable
replies that have no decision yet, as the worker's hand-off and the start-up bootstrap do, so the arena may play
the clean ones. Resumable; prints what it did.
"""
from __future__ import annotations

import json

from ..benchmark.loaders import load_benchmark
from ..store import Store
from .replies import screen_replies


def add_arguments(p) -> None:
    p.add_argument("--benchmark", required=True, help="benchmark spec (demo, a folder, hf:..., ...)")
    p.add_argument("--model", action="append", default=None, help="only this model (repeatable)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--json", action="store_true")


def main(args) -> int:

    store = Store(args.data_dir)
    try:
        bench = load_benchmark(args.benchmark, store.root)
    except (ValueError, OSError) as exc:
        print(f"error: the benchmark cannot be loaded: {exc}")
        return 2
    summary = screen_replies(store, bench.hash, args.model)
    if args.json:
        print(json.dumps({"screened": summary.screened, "held": summary.held, "already": summary.already,
                          "seconds": round(summary.seconds, 3)}))
    else:
        print(summary.line())
    return 0
