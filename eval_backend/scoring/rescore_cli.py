"""`python -m eval_backend rescore [--model M] [--benchmark SPEC]`: recompute results from stored replies.

No model is called: replies come from the store, judges answer from their cache
(settings["cache_only"]). Without --benchmark, the (model, benchmark) pairs come
from earlier results files and from the runner's run records; a benchmark whose
content hash changed since is skipped with a message (its replies belong to the
old content). Prints each results path; the last line is the last path written.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import config
from ..benchmark.loaders import load_benchmark
from ..store import Store
from .cli import score_one
from .settings import build_settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="only this model (default: every model with stored replies)")
    p.add_argument("--benchmark", help="only this benchmark spec (default: every benchmark scored or run before)")
    p.add_argument("--data-dir", help=f"data dir (default ${config.DATA_DIR_ENV} or ./data)")
    p.add_argument("--judge-config", help="judge YAML (default: the one recorded in the earlier results, if it "
                                          "still exists)")
    p.add_argument("--metrics", help="comma-separated names or families, globs allowed (default: all)")


def known_pairs(data: Path, store) -> dict[tuple[str, str], dict]:
    """(model, spec) -> {"hash", "judge_config"} from results manifests and run records."""
    pairs: dict[tuple[str, str], dict] = {}
    for row in store.meta_rows("run/"):
        try:
            _, rest = row["key"].split("/", 1)
            model, bhash = rest.rsplit("/", 1)
            spec = json.loads(row["value"]).get("benchmark")
        except (ValueError, AttributeError):
            continue
        if spec:
            pairs.setdefault((model, spec), {"hash": bhash})
    for path in sorted((data / "results").glob("*/*.json")):
        try:
            man = json.loads(path.read_text())["manifest"]
            key = (man["model"], man["benchmark"]["spec"])
        except (ValueError, KeyError, TypeError):
            print(f"warning: {path} is not a results file; ignored", file=sys.stderr)
            continue
        info = pairs.setdefault(key, {"hash": man["benchmark"]["hash"]})
        if man.get("settings", {}).get("judge_config"):
            info["judge_config"] = man["settings"]["judge_config"]
    return pairs


def main(args: argparse.Namespace) -> int:
    data = config.data_dir(args.data_dir)
    store = Store(data)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    jobs: list[tuple[str, str, str | None]] = []      # (model, spec, judge_config)
    if args.benchmark:
        try:
            b = load_benchmark(args.benchmark, data)
        except (ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        models = [args.model] if args.model else store.models_with_replies(b.hash)
        jobs = [(m, args.benchmark, None) for m in models]
    else:
        pairs = known_pairs(data, store)
        jobs = [(m, spec, info.get("judge_config")) for (m, spec), info in sorted(pairs.items())
                if not args.model or m == args.model]
    if not jobs:
        print("error: nothing to rescore: no stored replies / earlier results match", file=sys.stderr)
        return 2
    benchmarks: dict[str, object] = {}
    bad = 0
    for model, spec, judge_cfg in jobs:
        cfg = args.judge_config or (judge_cfg if judge_cfg and Path(judge_cfg).is_file() else None)
        try:
            if spec not in benchmarks:
                benchmarks[spec] = load_benchmark(spec, data)
            path, _ = score_one(model, spec, data, build_settings(cfg, data, cache_only=True), metrics,
                                benchmark=benchmarks[spec], store=store)
        except (ValueError, OSError) as exc:
            print(f"skipped {model} on {spec}: {exc}", file=sys.stderr)
            bad += 1
            continue
        print(path)
    return 1 if bad else 0
