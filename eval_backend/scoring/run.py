"""Scoring as a library: score one model's stored replies on a loaded benchmark and write its results file,
with the caller's store (the worker's, the bootstrap's, the CLI's). No model is called.

    path, doc = score_model(store, "my-model", benchmark, settings)     # settings: settings.build_settings(...)
"""
from __future__ import annotations

from pathlib import Path

from ..benchmark.model import Benchmark
from ..store import Store
from .results import score, write_results


def score_model(store: Store, model: str, benchmark: Benchmark, settings: dict, metrics: list[str] | None = None,
                spec: str | None = None) -> tuple[Path, dict]:
    """(results path, results document). `spec`: the benchmark spec recorded in the manifest (default: the
    benchmark's source). Raises ValueError when the model has no stored replies on this benchmark."""
    spec = spec or benchmark.source
    replies = store.replies(model=model, benchmark_hash=benchmark.hash)
    if not replies:
        known = store.models_with_replies(benchmark.hash)
        raise ValueError(f"no stored replies of model {model!r} on {spec} (hash {benchmark.hash[:12]}); "
                         f"models with replies there: {', '.join(known) or 'none'}")
    run = score(benchmark, replies, model, store, settings=settings, metrics=metrics, spec=spec)
    return write_results(store.root, run.doc), run.doc
