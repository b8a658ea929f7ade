"""The headline boards: one registry (`BOARDS`) that the scorer, the leaderboard table and the board text read.

A board is computed from the metric(s) it is named after and nothing else: a board whose metric is missing
is "not computed: why", never filled from another metric. Every computed board carries its 95% interval
(`ci95`, items resampled with the run's seed) or a `ci_note` saying why not.

Adding a board = one `Board(...)` entry in `BOARDS` (its compute function reads the results document's
metric entries).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .bootstrap import SEED, mean_ci, mean_of_means_ci
from .registry import METRICS


@dataclass(frozen=True)
class Board:
    key: str                                   # the key in a results document's "boards"
    name: str                                  # its short name on the page (sort presets)
    label: str                                 # its column header
    about: str                                 # one clause for the board text ("LB3 = (C1 + C4) / 2")
    compute: Callable[[dict, int], dict]       # (metric entries, seed) -> {"value", "source" | "reason", ...}
    scale: tuple[float, float] | None = None   # (min, max) of a single-number board; None: not one number
    source: tuple[str, ...] = ()               # what a result's `source` must name for the table to show it

    @property
    def tabled(self) -> bool:
        """A single-number board: a column of the table (AEQ reports its metrics apart)."""
        return self.scale is not None


# ---------------------------------------------------------------- reading metric entries
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


# ---------------------------------------------------------------- the boards
def lb1(metrics: dict, seed: int) -> dict:
    u, ru = _value(metrics, "l1.understanding_acc")
    r, rr = _value(metrics, "l2.reasoning_acc")
    if u is None or r is None:
        return {"value": None, "reason": "not computed: " + "; ".join(x for x in (ru, rr) if x)}
    return {"value": (u + r) / 2, "source": "mean(l1.understanding_acc, l2.reasoning_acc)",
            **_average_ci(metrics, ("l1.understanding_acc", "l2.reasoning_acc"), (u + r) / 2, seed)}


def lb2(metrics: dict, seed: int) -> dict:
    # LB2 is vocal empathy (VES, an audio judge). DNSMOS OVRL measures speech quality, another quantity:
    # it keeps its own column (audio.dnsmos_ovrl) and never stands in for VES here.
    ves = _find(metrics, "judge_audio", r"(^|[._])ves($|[._])") or "l3.ves"
    v, rv = _value(metrics, ves)
    if v is not None:
        return {"value": v, "source": f"{ves} (VES, judge)", **_copied_ci(metrics, ves)}
    why = "no VES judge configured" if re.search(r"judge configured", rv) else rv
    return {"value": None, "reason": f"not computed: {why}"}


def lb3(metrics: dict, seed: int) -> dict:
    c1n = _find(metrics, "judge_text", r"(^|[._])c1$") or "l3.judge.c1"
    c4n = _find(metrics, "judge_text", r"(^|[._])c4$") or "l3.judge.c4"
    c1, r1 = _value(metrics, c1n)
    c4, r4 = _value(metrics, c4n)
    if c1 is None or c4 is None:
        return {"value": None, "reason": "not computed: " + "; ".join(x for x in (r1, r4) if x)}
    return {"value": (c1 + c4) / 2, "source": f"({c1n} + {c4n}) / 2",
            **_average_ci(metrics, (c1n, c4n), (c1 + c4) / 2, seed)}


def aeq(metrics: dict, seed: int) -> dict:
    entries = {n: e for n, e in sorted(metrics.items()) if e["family"] == "aeq"}
    cols = {n: (e["value"] if e["value"] is not None else e["reason"]) for n, e in entries.items()}
    if any(e["value"] is not None for e in entries.values()):
        return {"value": None, "columns": cols, "note": "AEQ-Bench reports each metric apart; no single score"}
    return {"value": None, "columns": cols, "reason": "not computed: no AEQ metric computed" if entries
            else "not computed: no AEQ metrics registered"}


def selection(metrics: dict, seed: int) -> dict:
    f, rf = _value(metrics, "sel.final")
    cols = {}
    for n in ("sel.context_final", "sel.tone_final", "sel.accuracy"):
        val, why = _value(metrics, n)
        cols[n] = val if val is not None else why
    if f is None:
        return {"value": None, "reason": f"not computed: {rf}", "columns": cols}
    return {"value": f, "source": "sel.final", "columns": cols, **_copied_ci(metrics, "sel.final")}


# `source`: a result whose board was filled from another metric (older scorers put DNSMOS OVRL, speech quality,
# under LB2 when no VES judge ran) is shown as not computed, the other metric staying in its own column.
BOARDS: dict[str, Board] = {b.key: b for b in (
    Board("LB1", "LB1", "LB1 (understanding + reasoning)", "LB1 = mean of understanding and reasoning accuracy",
          lb1, (0.0, 1.0), ("l1.understanding_acc", "l2.reasoning_acc")),
    Board("LB2", "LB2", "LB2 (vocal empathy)",
          "LB2 = VES, vocal empathy rated by an audio judge (not computed without one: DNSMOS OVRL measures speech "
          "quality and stays in its own column)", lb2, (1.0, 5.0), ("(VES",)),
    Board("LB3", "LB3", "LB3 ((C1+C4)/2)", "LB3 = (C1 + C4) / 2", lb3, (1.0, 5.0), ("c1", "c4")),
    Board("AEQ", "AEQ", "AEQ", "AEQ metrics are shown apart", aeq),
    Board("selection", "Selection", "Selection (EmpathyEval final)", "Selection = EmpathyEval final", selection,
          (0.0, 1.0), ("sel.final",)),
)}


def tabled_boards() -> list[Board]:
    """The single-number boards, in registry order: the table's board columns."""
    return [b for b in BOARDS.values() if b.tabled]


def boards_text() -> str:
    """The board clauses of the table's boards, for the page's text ("LB1 = ...; LB2 = ...")."""
    return "; ".join(b.about for b in tabled_boards())


def boards(metrics: dict[str, dict], seed: int = SEED) -> dict[str, dict]:
    """Every registered board computed from a results document's metric entries."""
    return {key: b.compute(metrics, seed) for key, b in BOARDS.items()}
