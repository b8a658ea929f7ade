"""Judge-based metrics (EchoMind C1-C4 and VES; AEQ coherence, supportiveness, naturalness, delivery,
modality reliance, discrimination), one `@metric` entry each.

Metrics that share a prompt share its judgments through `ctx.cache` (C1-C4 come from one call per reply).
Without a judge every metric here is "not computed: no judge configured", never 0. A reply the judge could
not rate after its retries counts under `failures["judge_failure"]` (`judge_not_cached` in a cache-only
rescore, `judge_budget` when the daily call budget stopped it) and has no item score. Per-item judge output, with injection flags, is in `raw["items"]`.
"""
from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import mean
from typing import Callable

from ..tasks import describe_request
from .audio_clips import asr_transcript
from .judge_prompts import AEQ_DELIVERY, AEQ_DISCRIMINATION, AEQ_REPLY, ECHOMIND_TEXT, VES, JudgePrompt
from .judges import NOT_CACHED, Judgment, context_text, injection_flags, judge_settings, judges_for, run_judge
from .registry import MetricResult, ScoringContext, metric, reply_text

AEQ_TASKS = ("context", "tone")
NO_JUDGE = "no judge configured"


def failure_kind(j: Judgment) -> str:
    """How a judged item failed: not in the cache (cache-only rescore), stopped by the daily budget, or failed."""
    if j.error == NOT_CACHED:
        return "judge_not_cached"
    return "judge_budget" if j.error and "judge budget reached" in j.error else "judge_failure"
NO_AUDIO_JUDGE = "no audio-capable judge configured"


def _text_of(ctx: ScoringContext, reply) -> str | None:
    """The reply's words: its text, its transcript, else our ASR of its audio."""
    text = reply_text(reply)
    if text or not reply.audio_path:
        return text
    try:
        return asr_transcript(ctx, reply) or None
    except Exception:  # unreadable audio: the item is skipped and counted, not scored
        return None


def _items(ctx: ScoringContext, tasks: tuple[str, ...]):
    """(request_id, reply, its tasks.Request) for stored replies of these tasks, in id order."""
    for rid in sorted(ctx.replies):
        reply = ctx.replies[rid]
        if reply.task in tasks:
            info = describe_request(ctx.benchmark, rid)
            if info is not None:
                yield rid, reply, info


def _parallel(ctx: ScoringContext, jobs: dict[str, Callable[[], Judgment]], concurrency: int) -> dict[str, Judgment]:
    if not jobs:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {k: pool.submit(fn) for k, fn in jobs.items()}
        return {k: f.result() for k, f in futures.items()}


def _flagged(j: Judgment, words: str) -> Judgment:
    j.flags = sorted(set(j.flags) | set(injection_flags(words)))
    return j


def _judge_replies(ctx: ScoringContext, prompt: JudgePrompt, tasks: tuple[str, ...], audio: bool) -> dict:
    """Memoised per run: {"judgments": rid -> Judgment, "skipped": rid -> reason, "info": rid -> tasks.Request}."""
    memo_key = f"judge:{prompt.name}"
    if memo_key in ctx.cache:
        return ctx.cache[memo_key]
    judges = judges_for(ctx)
    client = judges.audio if audio else judges.text
    jobs, skipped, infos = {}, {}, {}
    for rid, reply, info in _items(ctx, tasks):
        infos[rid] = info
        if reply.status != "ok":
            skipped[rid] = "reply_failed"
            continue
        if audio:
            if not reply.audio_path:
                skipped[rid] = "no_audio"
                continue
            if not info.user_audio or not Path(info.user_audio).is_file():
                skipped[rid] = "no_user_audio"
                continue
            try:
                clips = [Path(info.user_audio).read_bytes(), ctx.store.abspath(reply.audio_path).read_bytes()]
            except OSError:
                skipped[rid] = "bad_audio"
                continue
            plain = {"attribute": info.voice_label, "voice": info.voice_label}
            # the judge hears the reply, it does not read it: flag what the reply's words say to a judge
            words = reply_text(reply) or ""
            jobs[rid] = (lambda c=clips, p=plain, i=info, w=words: _flagged(run_judge(
                client, prompt, {"context": context_text(i)} if "{context}" in prompt.template else {}, p, c), w))
            continue
        text = _text_of(ctx, reply)
        if not text:
            skipped[rid] = "no_text"
            continue
        if prompt is ECHOMIND_TEXT:
            blocks = {"user": info.user_words, "reply": text}
            plain = {"topic": info.topic or "(none)", "attribute": info.voice_label}
        else:
            blocks = {"context": context_text(info), "user": info.user_words, "reply": text}
            plain = {"voice": info.voice_label}
        jobs[rid] = (lambda b=blocks, p=plain: run_judge(client, prompt, b, p))
    memo = {"judgments": _parallel(ctx, jobs, client.settings.concurrency), "skipped": skipped, "info": infos}
    ctx.cache[memo_key] = memo
    return memo


def _result(memo: dict, value_of: Callable[[dict[str, float]], float], scale: str) -> MetricResult:
    per_item: dict[str, float | None] = {}
    failures: dict[str, int] = defaultdict(int)
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    raw: dict[str, dict] = {}
    flagged = 0
    for rid, reason in memo["skipped"].items():
        failures[reason] += 1
        per_item[rid] = None
    for rid, j in memo["judgments"].items():
        raw[rid] = j.raw()
        flagged += bool(j.flags)
        if not j.ok:
            failures[failure_kind(j)] += 1
            per_item[rid] = None
            continue
        v = value_of(j.values)
        per_item[rid] = v
        for dim, key in memo["info"][rid].voice_breakdown.items():
            groups[dim][key].append(v)
    scored = [v for v in per_item.values() if v is not None]
    if not scored:
        why = ("the daily judge budget stopped every judge call (see the judge's calls_per_day)"
               if failures.get("judge_budget") and not failures.get("judge_failure")
               else "judge failed on every item" if failures.get("judge_failure") or failures.get("judge_budget")
               else "no judgeable replies")
        res = MetricResult.not_computed(why)
        res.failures, res.per_item = dict(failures), per_item
        res.raw = {"scale": scale, "injection_flagged": flagged, "items": raw}
        return res
    breakdown = {dim: {k: mean(vs) for k, vs in sorted(d.items())} for dim, d in groups.items()}
    return MetricResult(value=mean(scored), per_item=per_item, n=len(scored), failures=dict(failures),
                        breakdown=breakdown, raw={"scale": scale, "injection_flagged": flagged, "items": raw})


def _text_metric(ctx: ScoringContext, prompt: JudgePrompt, tasks, value_of, scale: str) -> MetricResult:
    if judges_for(ctx).text is None:
        return MetricResult.not_computed(NO_JUDGE)
    memo = _judge_replies(ctx, prompt, tasks, audio=False)
    if not memo["info"]:
        return MetricResult.not_computed(f"no {'/'.join(tasks)} replies")
    return _result(memo, value_of, scale)


def _audio_metric(ctx: ScoringContext, prompt: JudgePrompt, tasks, value_of, scale: str) -> MetricResult:
    judges = judges_for(ctx)
    if judges.audio is None:
        return MetricResult.not_computed(NO_JUDGE if judges.text is None else NO_AUDIO_JUDGE)
    memo = _judge_replies(ctx, prompt, tasks, audio=True)
    if not memo["info"]:
        return MetricResult.not_computed(f"no {'/'.join(tasks)} replies")
    if not memo["judgments"]:
        res = MetricResult.not_computed("no replies with audio")
        res.failures = dict(_count(memo["skipped"].values()))
        return res
    return _result(memo, value_of, scale)


def _manifest(prompt: JudgePrompt):
    """What reproduces a judge metric: the judge that ran it and the prompt's hash."""
    def manifest(settings: dict) -> dict:
        text, audio = judge_settings(settings)
        judge = audio if prompt.audio else text
        return {"judge": judge.public() if judge else None,
                "prompt": {"name": prompt.name, "version": prompt.version, "hash": prompt.hash}}
    return manifest


def _count(values) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return out


# ---------------------------------------------------------------- EchoMind level 3 (text judge)
def _echomind(field: str):
    def compute(ctx: ScoringContext) -> MetricResult:
        return _text_metric(ctx, ECHOMIND_TEXT, ("conversation",), lambda v: v[field], "1-5")
    return compute


_C_NOTES = {
    "c1": "context fit", "c2": "response naturalness", "c3": "colloquialism", "c4": "speech-information relevance",
}
for _f, _label in _C_NOTES.items():
    metric(f"l3.judge.{_f}", "judge_text", manifest=_manifest(ECHOMIND_TEXT),
           note=f"EchoMind {_f.upper()} ({_label}), 1-5, our own prompt wording; mean over n judge samples")(_echomind(_f))


@metric("l3.judge.c1c4", "judge_text", manifest=_manifest(ECHOMIND_TEXT), note="(C1+C4)/2 per reply: the quantity EchoMind's LB3 sorts by")
def c1c4(ctx: ScoringContext) -> MetricResult:
    return _text_metric(ctx, ECHOMIND_TEXT, ("conversation",), lambda v: (v["c1"] + v["c4"]) / 2, "1-5")


@metric("l3.ves", "judge_audio", manifest=_manifest(VES),
        note="Vocal Empathy Score 1-5 from an audio-capable judge hearing the user's clip and the reply's clip; "
             "our own prompt; the reply's words are not shown")
def ves(ctx: ScoringContext) -> MetricResult:
    return _audio_metric(ctx, VES, ("conversation",), lambda v: v["ves"], "1-5")


# ---------------------------------------------------------------- AEQ-style (per reply)
_GFP = "Good=3, Fair=2, Poor=1 (mean)"


@metric("aeq.coherence", "aeq", manifest=_manifest(AEQ_REPLY), note=f"text judge, {_GFP}; our own prompt")
def coherence(ctx: ScoringContext) -> MetricResult:
    return _text_metric(ctx, AEQ_REPLY, AEQ_TASKS, lambda v: v["coherence"], _GFP)


@metric("aeq.supportiveness", "aeq", manifest=_manifest(AEQ_REPLY), note=f"text judge, {_GFP}; our own prompt")
def supportiveness(ctx: ScoringContext) -> MetricResult:
    return _text_metric(ctx, AEQ_REPLY, AEQ_TASKS, lambda v: v["supportiveness"], _GFP)


@metric("aeq.naturalness", "aeq", manifest=_manifest(AEQ_REPLY), note="text judge on the reply's words, 1-4; our own prompt")
def naturalness(ctx: ScoringContext) -> MetricResult:
    return _text_metric(ctx, AEQ_REPLY, AEQ_TASKS, lambda v: v["naturalness"], "1-4")


@metric("aeq.modality_reliance", "aeq", manifest=_manifest(AEQ_REPLY),
        note="share of replies the text judge says use both the voice (annotated tone/attribute) and the context")
def modality_reliance(ctx: ScoringContext) -> MetricResult:
    return _text_metric(ctx, AEQ_REPLY, AEQ_TASKS,
                        lambda v: 1.0 if v["uses_voice"] >= 1 and v["uses_context"] >= 1 else 0.0, "share 0-1")


@metric("aeq.delivery", "aeq", manifest=_manifest(AEQ_DELIVERY), note=f"audio-capable judge, {_GFP}; our own prompt")
def delivery(ctx: ScoringContext) -> MetricResult:
    return _audio_metric(ctx, AEQ_DELIVERY, AEQ_TASKS, lambda v: v["delivery"], _GFP)


# ---------------------------------------------------------------- AEQ discrimination (per group)
def _group_jobs(ctx: ScoringContext):
    """(group key, kind, blocks, plain, rids) for each group with >= 2 replies that have words."""
    b = ctx.benchmark
    out = []
    for kind, groups in (("context", b.context_groups), ("tone", b.tone_groups)):
        for g in groups:
            texts, rids = [], []
            for c in g.cases:
                rid = f"{kind}/{g.id}/{c.id}"
                reply = ctx.replies.get(rid)
                text = _text_of(ctx, reply) if reply is not None and reply.status == "ok" else None
                if text:
                    label = c.context if kind == "context" else f"spoken in a {c.tone} tone"
                    texts.append((label, text))
                    rids.append(rid)
            if not rids:
                continue
            cases = []
            for i, (label, text) in enumerate(texts, 1):
                cases += [(f"VERSION-{i}", label), (f"REPLY-{i}", text)]
            if kind == "context":
                shared = [("USER", g.utterance_text)]
                what = "the background context (same utterance, same voice)"
            else:
                shared = [("USER", g.text), ("CONTEXT", g.context)]
                what = "the tone of voice (same words, same context)"
            out.append((f"{kind}/{g.id}", kind, {"shared": shared, "cases": cases}, {"kind": what}, rids))
    return out


@metric("aeq.discrimination", "aeq", manifest=_manifest(AEQ_DISCRIMINATION),
        note="text judge rates 1-6 whether a group's replies differ the way its variants call for; "
             "value and per-item scores normalised to 0-1 as (s-1)/5, raw 1-6 mean in raw")
def discrimination(ctx: ScoringContext) -> MetricResult:
    judges = judges_for(ctx)
    if judges.text is None:
        return MetricResult.not_computed(NO_JUDGE)
    if not (ctx.benchmark.context_groups or ctx.benchmark.tone_groups):
        return MetricResult.not_computed("benchmark has no context or tone groups")
    jobs, small = {}, 0
    kinds = {}
    for key, kind, blocks, plain, rids in _group_jobs(ctx):
        if len(rids) < 2:
            small += 1
            continue
        kinds[key] = kind
        jobs[key] = (lambda b=blocks, p=plain: run_judge(judges.text, AEQ_DISCRIMINATION, b, p))
    judged = _parallel(ctx, jobs, judges.text.settings.concurrency)
    per_item, raw, by_kind, raw16 = {}, {}, defaultdict(list), []
    failures = {"group_under_2_replies": small} if small else {}
    for key, j in judged.items():
        raw[key] = j.raw()
        if not j.ok:
            key_ = failure_kind(j)
            failures[key_] = failures.get(key_, 0) + 1
            per_item[f"{key}/*"] = None
            continue
        s = j.values["discrimination"]
        raw16.append(s)
        per_item[f"{key}/*"] = (s - 1) / 5
        by_kind[kinds[key]].append((s - 1) / 5)
    scored = [v for v in per_item.values() if v is not None]
    if not scored:
        res = MetricResult.not_computed("no group with 2+ judged replies")
        res.failures, res.raw = failures, {"items": raw}
        return res
    return MetricResult(value=mean(scored), per_item=per_item, n=len(scored), failures=failures,
                        breakdown={"kind": {k: mean(v) for k, v in sorted(by_kind.items())}},
                        raw={"scale": "normalised (s-1)/5 of 1-6", "mean_1_6": mean(raw16), "items": raw})
