"""The metric registry: adding a metric is one `@metric(...)` entry (in a module listed in `METRIC_MODULES`).

A metric reads stored replies (never a model) through a ScoringContext and
returns a MetricResult. A metric that cannot be computed returns
`MetricResult.not_computed(reason)`: its value is None and the leaderboard
shows "not computed: <reason>", never 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..benchmark.model import Benchmark
from ..store import Reply, Store


@dataclass
class ScoringContext:
    model: str
    benchmark: Benchmark
    replies: dict[str, Reply]          # request_id -> stored reply (ok or failed)
    store: Store
    settings: dict[str, Any] = field(default_factory=dict)   # judge config, plugin paths, seeds
    cache: dict[str, Any] = field(default_factory=dict)      # shared per-run memo (ASR, embeddings)

    def replies_for(self, task: str) -> list[Reply]:
        """This model's stored replies (ok and failed) for one task, in request-id order."""
        return [r for rid, r in sorted(self.replies.items()) if r.task == task]


def reply_text(reply: Reply) -> str | None:
    """The words an ok reply says it says: its text, else its transcript, without surrounding whitespace; None for
    a failed reply or one without words. (What our ASR hears in its audio is another thing:
    `audio_clips.asr_transcript`.) The one definition every metric and judge uses."""
    if reply.status != "ok":
        return None
    for candidate in (reply.text, reply.transcript):
        if candidate and candidate.strip():
            return candidate.strip()
    return None


@dataclass
class MetricResult:
    value: float | None                               # headline value; None = not computed
    per_item: dict[str, float | None] = field(default_factory=dict)  # request_id -> item score
    ci95: tuple[float, float] | None = None           # bootstrap over items
    n: int = 0                                        # items that counted
    failures: dict[str, int] = field(default_factory=dict)  # e.g. {"parse_failure": 3, "judge_failure": 1}
    breakdown: dict[str, dict[str, float | None]] = field(default_factory=dict)  # {"attribute": {...}, "variant": {...}}
    raw: dict[str, Any] = field(default_factory=dict)  # per-item raw outputs (parsed answers, judge replies)
    reason: str | None = None                          # why not computed

    @classmethod
    def not_computed(cls, reason: str) -> "MetricResult":
        return cls(value=None, reason=f"not computed: {reason}")


@dataclass(frozen=True)
class Metric:
    name: str                       # result key, e.g. "l1.wer"
    family: str                     # a FAMILIES key: level1 | reasoning | level3_text | judge_text | ...
    compute: Callable[[ScoringContext], MetricResult]
    higher_is_better: bool = True
    headline: bool = True           # gets a bootstrap CI and a leaderboard column
    note: str = ""                  # how it differs from the paper's metric of a similar name
    # settings -> what a results manifest must record to reproduce this metric
    # (judge model, prompt hash, plugin model path...); None when there is nothing.
    manifest: Callable[[dict[str, Any]], dict[str, Any]] | None = None


METRICS: dict[str, Metric] = {}

# metric family -> the leaderboard's column group it is shown in (leaderboard/results_table.py), in the page's
# order. A metric names its family; a new family is one entry here (a plugin's family not listed: group "Other").
FAMILIES: dict[str, str] = {
    "level1": "Level 1: understanding", "reasoning": "Level 2: reasoning",
    "level3_text": "Level 3: conversation (text)", "judge_text": "Level 3: conversation (text)",
    "judge_audio": "Level 3: conversation (audio)", "audio": "Level 3: conversation (audio)",
    "aeq": "AEQ-Bench", "selection": "Selection",
}

# The modules whose `@metric` entries the scorer loads (scoring/results.py:load_metric_modules), by name in this
# package (or a full dotted name for a module elsewhere). True: part of the scorer, an import error raises;
# False: optional, an absent or broken module only leaves its metrics out (the results manifest says why).
METRIC_MODULES: dict[str, bool] = {
    "understanding": True, "text_metrics": True, "selection": True,
    "judge_metrics": False, "audio_metrics": False, "learned_mos": False,
}


def metric(name: str, family: str, *, higher_is_better: bool = True, headline: bool = True, note: str = "",
           manifest: Callable[[dict[str, Any]], dict[str, Any]] | None = None):
    def register(fn: Callable[[ScoringContext], MetricResult]):
        if name in METRICS:
            raise ValueError(f"metric {name} registered twice")
        METRICS[name] = Metric(name, family, fn, higher_is_better, headline, note, manifest)
        return fn
    return register
