"""Do the arena and the benchmark agree? Pure functions plus one thin function that asks the judge.

- `rank_correlation`: Spearman's rho (ties get average ranks) between the arena rating and a benchmark
  score over the models that have both.
- `agreement_rate`: share of arena battles where the scorer's pairwise judge (`judges.judge_pair`,
  both orders) picked the same outcome as the human ("A", "B" or "tie"); "both bad" votes and battles
  the judge could not decide are left out and counted. Wilson 95% interval.
- `judge_human_pairs`: for each vote, the human outcome and the judge's verdict on the same request and
  models (the judge is asked through `judge_pair`, whose answers are cached on disk).
Anything that cannot be computed carries "not computed: <reason>", never a number.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from eval_backend.numbers import is_number, wilson
from eval_backend.scoring.judges import judge_pair, judge_settings, make_judges


@dataclass(frozen=True)
class Stat:
    value: float | None
    n: int
    reason: str | None = None
    low: float | None = None
    high: float | None = None
    excluded: dict[str, int] = field(default_factory=dict)

    def text(self, what: str) -> str:
        if self.value is None:
            return f"{what}: {self.reason}"
        ci = f" (95% CI {self.low:.2f}–{self.high:.2f})" if self.low is not None else ""
        return f"{what}: {self.value:.2f}{ci}, n = {self.n}"


def _ranks(xs: Sequence[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def rank_correlation(pairs: Mapping[str, tuple[float, float]], min_models: int = 3) -> Stat:
    """pairs: model -> (arena rating, benchmark score); only models with both finite values count."""
    ok = {m: (a, b) for m, (a, b) in pairs.items() if is_number(a) and is_number(b)}
    if len(ok) < min_models:
        return Stat(None, len(ok), f"not computed: {len(ok)} model(s) have both an arena rating and this "
                                   f"benchmark score; at least {min_models} are needed")
    ra = _ranks([a for a, _ in ok.values()])
    rb = _ranks([b for _, b in ok.values()])
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return Stat(None, len(ok), "not computed: every model has the same rating or the same score")
    return Stat(cov / math.sqrt(va * vb), len(ok))


def agreement_rate(pairs: Iterable[tuple[str | None, str | None]]) -> Stat:
    """pairs: (human outcome, judge verdict), each "A" | "B" | "tie" | None (None: not usable)."""
    agree = n = 0
    excluded = {"no human preference": 0, "judge undecided": 0}
    for human, judge in pairs:
        if human not in ("A", "B", "tie"):
            excluded["no human preference"] += 1
        elif judge not in ("A", "B", "tie"):
            excluded["judge undecided"] += 1
        else:
            n += 1
            agree += human == judge
    excluded = {k: v for k, v in excluded.items() if v}
    if n == 0:
        return Stat(None, 0, "not computed: no battle has both a human preference and a judge verdict",
                    excluded=excluded)
    p = wilson(agree, n)
    lo, hi = p.low, p.high
    return Stat(agree / n, n, None, lo, hi, excluded)


def human_outcome(vote) -> str | None:
    """The human's slot outcome of an arena VoteRow: A, B or tie; None for "both bad"."""
    return vote.slot if vote.slot in ("A", "B", "tie") else None


def judge_human_pairs(votes: Iterable, verdict: Callable[[str, str, str], object],
                      benchmark_hash: str, limit: int | None = None) -> tuple[list[tuple], list[str]]:
    """(human, judge) per vote on `benchmark_hash`; `verdict(request_id, model_a, model_b)` returns a
    judges.PairVerdict. Returns the pairs and the judge's error messages (for the "why not" line)."""
    pairs, errors = [], []
    asked = 0
    for v in votes:
        if v.benchmark_hash != benchmark_hash or not v.request_id:
            continue
        if human_outcome(v) is None:          # "both bad": counted as left out, the judge is not asked
            pairs.append((None, None))
            continue
        if limit is not None and asked >= limit:
            break
        asked += 1
        pv = verdict(v.request_id, v.model_a, v.model_b)
        if pv.verdict is None and pv.error:
            errors.append(pv.error)
        pairs.append((human_outcome(v), pv.verdict))
    return pairs, errors


def judge_agreement(store, benchmark, votes: list, settings: dict | None, limit: int | None = 200) -> Stat:
    """The pairwise judge–human agreement rate on the arena's battles (thin: builds the judges, asks)."""
    if benchmark is None:
        return Stat(None, 0, "not computed: no benchmark loaded")
    text, audio = judge_settings(settings)
    if text is None and audio is None:
        return Stat(None, 0, "not computed: no judge configured (a scorer judge config is needed)")
    relevant = [v for v in votes if v.benchmark_hash == benchmark.hash and v.request_id]
    if not relevant:
        return Stat(None, 0, "not computed: no arena vote on this benchmark yet")
    try:
        judges = make_judges(settings, store.root / "cache" / "judge_cache.sqlite3")
    except (ValueError, OSError) as exc:
        return Stat(None, 0, f"not computed: the judge cannot be used: {exc}")

    def ask(rid, a, b):
        return judge_pair(rid, a, b, store=store, benchmark=benchmark, settings=settings, judges=judges)
    pairs, errors = judge_human_pairs(relevant, ask, benchmark.hash, limit)
    st = agreement_rate(pairs)
    if st.value is None and errors:
        return Stat(None, 0, f"{st.reason}; judge: {errors[0]}", excluded=st.excluded)
    return st
