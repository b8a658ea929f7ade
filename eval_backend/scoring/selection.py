"""EmpathyEval selection: which audio reply did the model pick, and the group-bonus score.

Per item: +1 when the parsed letter is the answer. Per group (items sharing
group_id): +1 bonus when every item of the group was answered correctly.
Final = (correct + bonus) / (items + groups), as EmpathyEval reports it, for the
context variants, the tone variants, and all together (`sel.final`). A parse failure
or a failed reply is wrong (counted in failures); a request with no stored reply is
left out and counted as "missing_reply", and its group can earn no bonus but still
counts in the denominator. The CI resamples whole groups.
"""
from __future__ import annotations

from ..benchmark.model import SelectionItem
from ..tasks import make_id
from .answer_parser import parse_choice
from .bootstrap import SEED, mean_ci, units_ci
from .registry import MetricResult, ScoringContext, metric, reply_text


def final_score(correct: float, bonus: float, items: float, groups: float) -> float:
    return (correct + bonus) / (items + groups)


def group_rows(items: list[SelectionItem], correct: dict[str, bool | None]) -> list[tuple[int, int, int, int]]:
    """(correct, bonus, answered items, 1) per group; correct[item_id] None = no stored reply."""
    groups: dict[str, list[SelectionItem]] = {}
    for it in items:
        groups.setdefault(it.group_id, []).append(it)
    rows = []
    for gid in sorted(groups):
        marks = [correct.get(it.id) for it in groups[gid]]
        answered = [m for m in marks if m is not None]
        if not answered:
            continue
        full = all(m is True for m in marks)
        rows.append((sum(answered), int(full), len(answered), 1))
    return rows


def _stat(s) -> float:
    return final_score(*s)


def score_selection(ctx: ScoringContext, kind: str | None) -> MetricResult:
    items = [it for it in ctx.benchmark.selection if kind is None or it.kind == kind]
    label = f"{kind} " if kind else ""
    if not items:
        return MetricResult.not_computed(f"the benchmark has no {label}selection items")
    if not ctx.replies_for("selection"):
        return MetricResult.not_computed("no stored replies for task selection")
    per_item: dict[str, float | None] = {}
    raw: dict = {}
    failures: dict[str, int] = {}
    correct: dict[str, bool | None] = {}
    for it in items:
        rid = make_id("selection", it.id)
        r = ctx.replies.get(rid)
        if r is None:
            failures["missing_reply"] = failures.get("missing_reply", 0) + 1
            correct[it.id] = None
            continue
        if r.status != "ok":
            failures["failed_reply"] = failures.get("failed_reply", 0) + 1
            entry = {"answer": it.answer, "parsed": None, "rule": f"failed reply ({r.error_class})"}
        else:
            parsed = parse_choice(reply_text(r), sorted(it.options))
            if not parsed.ok:
                failures["parse_failure"] = failures.get("parse_failure", 0) + 1
            entry = {"answer": it.answer, "parsed": parsed.letter, "rule": parsed.rule}
        ok = entry["parsed"] is not None and entry["parsed"] == it.answer.upper()
        correct[it.id] = ok
        per_item[rid] = 1.0 if ok else 0.0
        raw[rid] = entry
    rows = group_rows(items, correct)
    if not rows:
        return MetricResult.not_computed(f"no stored reply for any {label}selection item")
    totals = [sum(col) for col in zip(*rows)]
    value = final_score(*totals)
    seed = int(ctx.settings.get("seed", SEED))
    return MetricResult(
        value=value, per_item=per_item, n=len(per_item), failures=failures,
        ci95=units_ci(rows, _stat, seed=seed),
        raw={"correct": totals[0], "bonus": totals[1], "items": totals[2], "groups": totals[3],
             "accuracy": totals[0] / totals[2], "answers": raw})


NOTE = "EmpathyEval Final = (correct + group bonus) / (items + groups)"


@metric("sel.final", "selection", note=NOTE + "; context and tone variants together")
def selection_final(ctx: ScoringContext) -> MetricResult:
    return score_selection(ctx, None)


@metric("sel.context_final", "selection", note=NOTE + "; context variants")
def selection_context(ctx: ScoringContext) -> MetricResult:
    return score_selection(ctx, "context")


@metric("sel.tone_final", "selection", note=NOTE + "; tone variants")
def selection_tone(ctx: ScoringContext) -> MetricResult:
    return score_selection(ctx, "tone")


@metric("sel.accuracy", "selection", note="share of selection items answered correctly (no group bonus)")
def selection_accuracy(ctx: ScoringContext) -> MetricResult:
    res = score_selection(ctx, None)
    if res.value is None:
        return res
    vals = [float(v) for v in res.per_item.values() if v is not None]
    return MetricResult(value=sum(vals) / len(vals), per_item=res.per_item, n=res.n, failures=res.failures,
                        ci95=mean_ci(vals, seed=int(ctx.settings.get("seed", SEED))),
                        raw={"answers": res.raw["answers"]})
