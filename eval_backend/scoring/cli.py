"""`python -m eval_backend score --model NAME [--model NAME2 ...] --benchmark SPEC [--data-dir D] [--judge-config F]`

Scores each model's stored replies (no model is called) and writes
<data_dir>/results/<model>/<benchmark>_v<version>_<hash>__scorer-<version>.json;
each model's path is printed after its summary, so the LAST line is the last model's path (with --quiet: one path
per line, in the order of --model). Several models in one command share one benchmark load and the measurements
that depend only on content (the reference clips' features, espeak's plain readings of the same words), so scoring
them together costs less than one command each.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import config
from ..benchmark.loaders import load_benchmark
from ..store import Store
from .run import score_model
from .settings import build_settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, action="append",
                   help="the model name its replies were stored under; give it again to score several models")
    p.add_argument("--benchmark", required=True,
                   help="benchmark spec: demo, a folder, hf:OWNER/NAME, echomind:PATH, empathyeval:PATH")
    p.add_argument("--data-dir", help=f"data dir (default ${config.DATA_DIR_ENV} or ./data)")
    p.add_argument("--judge-config", help="YAML with `judge:` / `audio_judge:` entries (no judge: those metrics "
                                          "read 'not computed')")
    p.add_argument("--metrics", help="comma-separated names or families, globs allowed (default: all), "
                                     "e.g. 'l1.*,selection'")
    p.add_argument("--quiet", action="store_true", help="print only the results path")


def summary_lines(doc: dict) -> list[str]:
    lines = []
    for name, e in doc["boards"].items():
        lines.append(f"board {name}: {e['value']:.4f} ({e.get('source', '')})" if e["value"] is not None
                     else f"board {name}: {e.get('reason') or 'see columns'}")
    for name, e in doc["metrics"].items():
        if e["value"] is None:
            lines.append(f"{name}: {e['reason']}")
            continue
        ci = f" [{e['ci95'][0]:.4f}, {e['ci95'][1]:.4f}]" if e.get("ci95") and None not in e["ci95"] else ""
        fails = ", ".join(f"{k}={v}" for k, v in e["failures"].items())
        lines.append(f"{name}: {e['value']:.4f}{ci} n={e['n']}" + (f" failures: {fails}" if fails else ""))
    return lines


def score_one(model: str, spec: str, data: Path, settings: dict, metrics: list[str] | None = None,
              benchmark=None, store=None) -> tuple[Path, dict]:
    """The command's work: load the benchmark (unless given) and score with `store` (default: the data dir's)."""
    store = store or Store(data)
    benchmark = benchmark or load_benchmark(spec, data)
    return score_model(store, model, benchmark, settings, metrics, spec=spec)


def main(args: argparse.Namespace) -> int:
    data = config.data_dir(args.data_dir)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    models = list(dict.fromkeys(args.model))      # each model once, in the order given
    try:
        settings = build_settings(args.judge_config, data)
        store = Store(data)
        benchmark = load_benchmark(args.benchmark, data)
        for model in models:
            path, doc = score_one(model, args.benchmark, data, settings, metrics, benchmark=benchmark, store=store)
            if not args.quiet:
                print("\n".join(([f"model {model}:"] if len(models) > 1 else []) + summary_lines(doc)))
            print(path, flush=True)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
