"""Which automatic measures agree with people? Metric-human agreement on the arena's votes.

For every arena vote on a pair of replies (the same request answered by two models) and every automatic
metric that scored both replies (the per-item scores of each model's results document on the vote's
benchmark), the metric "prefers" the reply with the better score (higher, or lower for metrics where lower
is better). Per axis (overall, said = the words, sounded = the voice), a vote is decisive when the person
picked A or B on that axis (ties and "both bad" are not decisive). Agreement is the share of decisive votes
the metric scored where it prefers the same reply; a metric tie counts as not agreeing (it is reported
apart as `ties`). Wilson 95% interval (eval_backend.numbers.wilson) and n per row.

Pure core (`agreement_rows`) plus the loaders the CLI and the leaderboard use:
    python -m leaderboard agreement [--data-dir D] [--json]      (the CLI: leaderboard/agreement_cli.py)
prints rows {metric, axis, agree, n, low, high, ties}. No judge is asked: only stored scores are read.
With `--judge-config FILE --benchmark SPEC` (the operator, from a shell: it asks a paid judge, answers
cached) it adds the pairwise judge's agreement with the overall votes (leaderboard.agreement), at most
`--judge-limit` battles.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Mapping

from ..numbers import is_number, wilson

AXES = ("overall", "said", "sounded")


@dataclass(frozen=True)
class Row:
    metric: str
    axis: str
    agree: float | None          # None: no decisive vote on a pair the metric scored
    n: int                       # decisive votes on pairs the metric scored
    low: float | None
    high: float | None
    ties: int                    # of n, votes where the metric scored both replies the same

    def as_dict(self) -> dict:
        return asdict(self)


# {(model, benchmark_hash): {metric: {request_id: score | None}}}
Scores = Mapping[tuple[str, str], Mapping[str, Mapping[str, "float | None"]]]


def agreement_rows(votes: Iterable, scores: Scores, higher_is_better: Mapping[str, bool],
                   axes: Iterable[str] = AXES) -> list[Row]:
    """votes: objects with model_a, model_b, benchmark_hash, request_id and `outcome(axis)` -> A | B | tie | None
    (arena.tables.storage.VoteRow). Rows for every (metric, axis) with at least one decisive scored vote, sorted by
    axis then agreement (highest first)."""
    axes = tuple(axes)
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])    # agree, n, ties
    for v in votes:
        if not v.request_id or not v.benchmark_hash:
            continue
        a = scores.get((v.model_a, v.benchmark_hash)) or {}
        b = scores.get((v.model_b, v.benchmark_hash)) or {}
        decisive = {axis: v.outcome(axis) for axis in axes}
        decisive = {axis: o for axis, o in decisive.items() if o in ("A", "B")}
        if not decisive:
            continue
        for metric in set(a) & set(b):
            sa, sb = (a[metric] or {}).get(v.request_id), (b[metric] or {}).get(v.request_id)
            if not (is_number(sa) and is_number(sb)):
                continue
            better = 1 if higher_is_better.get(metric, True) else -1
            prefers = None if sa == sb else ("A" if better * (float(sa) - float(sb)) > 0 else "B")  # type: ignore[arg-type]
            for axis, human in decisive.items():
                c = counts[(metric, axis)]
                c[1] += 1
                c[0] += prefers == human
                c[2] += prefers is None
    rows = []
    for (metric, axis), (k, n, ties) in counts.items():
        p = wilson(k, n)
        rows.append(Row(metric, axis, p.share, n, p.low, p.high, ties))
    order = {a: i for i, a in enumerate(axes)}
    return sorted(rows, key=lambda r: (order.get(r.axis, 99), -(r.agree or 0.0), r.metric))


def scores_from_docs(docs: Iterable[dict]) -> tuple[dict, dict[str, bool]]:
    """(scores, higher_is_better) from results documents: the newest document per (model, benchmark hash)."""
    newest: dict[tuple, dict] = {}
    for d in docs:
        man = d.get("manifest") or {}
        key = (man.get("model"), (man.get("benchmark") or {}).get("hash"))
        if None in key:
            continue
        if key not in newest or man.get("timestamp", "") > newest[key]["manifest"].get("timestamp", ""):
            newest[key] = d
    scores, direction = {}, {}
    for key, d in newest.items():
        per = {}
        for name, e in (d.get("metrics") or {}).items():
            if isinstance(e, dict) and isinstance(e.get("per_item"), dict) and e["per_item"]:
                per[name] = e["per_item"]
                direction[name] = bool(e.get("higher_is_better", True))
        scores[key] = per
    return scores, direction


def read_result_docs(data_dir: Path) -> list[dict]:
    out = []
    for path in sorted((Path(data_dir) / "results").glob("*/*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and "manifest" in doc and "metrics" in doc:
            out.append(doc)
    return out
