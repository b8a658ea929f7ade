"""Audio metrics of spoken replies, all offline: DNSMOS, speech-text consistency, prosody, prosody_fit.
(A learned MOS, Distill-MOS, is in learned_mos.py. EchoMind's EmoAlign is not here: it needs emotion2vec, whose
weights no package that installs here ships; README "What is not available" says so.)

- DNSMOS SIG/BAK/OVRL (P.835) and P.808 MOS come from PyPI `speechmos` (Microsoft's ONNX
  models inside the package), on audio resampled to 16 kHz. Clips under 9 s are looped by
  speechmos to fill its 9 s window.
- Consistency: WER between our ASR of the reply audio (Whisper tiny.en via
  `eval_backend.audio.asr.Transcriber`) and the words the model says it spoke (its text,
  else its transcript), both through `scoring.normalise.normalise_text`.
- Prosody: rate, pitch level/range and loudness from `eval_backend.audio.features.extract`;
  descriptive (no better direction), so not headline columns.
- prosody_fit: see `prosody_fit.py` (our own metric, not EmoAlign).

What they share per clip (the ASR, DNSMOS, features, the memo by clip content, the per-clip loop: each clip
decoded and measured once) is eval_backend/scoring/audio_clips.py.
"""
from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from ..audio.feature_cache import measure
from ..audio.io import BadAudio, read_wav
from ..audio.synth import SynthError, espeak
from ..tasks import Request
from .audio_clips import (
    DNSMOS_WORKERS,
    Failure,
    _by_content,
    _clip,
    _per_clip,
    _result,
    asr_transcript,
    content_key,
    dnsmos,
    features_of,
    transcriber,  # noqa: F401  (arena/services/live.py imports it from here)
)
from .bootstrap import SEED, mean_ci
from .delivery_shift import change, measures_of, pair_agreement, pairs_for
from .prosody_fit import EXPECTED, MEASURES, VOICE_INDEPENDENT, Prosody, prosody_fit
from .registry import MetricResult, ScoringContext, metric, reply_text


# ---------------------------------------------------------------- DNSMOS
def _dnsmos_values(ctx: ScoringContext) -> dict:
    # two clips at once: each ONNX session runs single-threaded, so one clip leaves a core idle
    return _per_clip(ctx, "dnsmos", lambda c, r, i: _by_content("dnsmos", content_key(c, r.audio_path),
                                                                lambda: dnsmos(*_clip(c, r.audio_path))),
                     workers=DNSMOS_WORKERS)


def _dnsmos_metric(field: str):
    def compute(ctx: ScoringContext) -> MetricResult:
        return _result(ctx, _dnsmos_values(ctx), lambda d: d[field])
    return compute


_DNS_NOTE = "Microsoft DNSMOS via PyPI speechmos (ONNX, 16 kHz, clips looped to 9 s); MOS 1-5"
for _field, _label in (("sig", "P.835 SIG (speech)"), ("bak", "P.835 BAK (background)"),
                       ("ovrl", "P.835 OVRL (overall)"), ("p808", "P.808 MOS")):
    metric(f"audio.dnsmos_{_field}", "audio", headline=_field in ("ovrl", "p808"),
           note=f"{_DNS_NOTE}: {_label}")(_dnsmos_metric(_field))


# ---------------------------------------------------------------- speech-text consistency
def word_error_rate(reference: str, hypothesis: str) -> float | None:
    """WER after the project's normaliser; None when the reference has no words."""
    import jiwer

    from .normalise import normalise_text  # why: jiwer (~2 s) only when consistency_wer runs
    ref, hyp = normalise_text(reference), normalise_text(hypothesis)
    if not ref:
        return None
    return float(jiwer.wer(ref, hyp)) if hyp else 1.0


def _consistency(ctx: ScoringContext, reply, info) -> dict | Failure:
    claimed = reply_text(reply)
    if not claimed:
        return Failure("no_text")
    heard = asr_transcript(ctx, reply)
    wer = word_error_rate(claimed, heard)
    if wer is None:
        return Failure("no_text")
    return {"wer": wer, "asr": heard, "compared_with": "text" if (reply.text or "").strip() else "transcript"}


@metric("audio.consistency_wer", "audio", higher_is_better=False,
        note="WER of our ASR (Whisper tiny.en) of the reply audio against the reply's own text/transcript: "
             "does the audio say what the text says")
def consistency_wer(ctx: ScoringContext) -> MetricResult:
    res = _result(ctx, _per_clip(ctx, "consistency", _consistency), lambda d: d["wer"])
    values = ctx.cache["audio:consistency"] if "audio:consistency" in ctx.cache else {}
    for rid, v in values.items():
        if isinstance(v, dict):
            res.raw[rid] = {"asr": v["asr"], "compared_with": v["compared_with"]}
    return res


# ---------------------------------------------------------------- prosody (descriptive)
def _prosody_values(ctx: ScoringContext) -> dict:
    return _per_clip(ctx, "prosody", lambda c, r, i: Prosody.from_features(features_of(c, r.audio_path)))


_PROSODY = {"speaking_rate": ("rate", "syllable nuclei per second of speech"),
            "pitch_median_hz": ("pitch", "median F0 in Hz (None for unvoiced replies)"),
            "pitch_range_st": ("range", "10-90th percentile F0 span in semitones"),
            "loudness_dbfs": ("loudness", "level of speech-active frames, dBFS")}
for _name, (_attr, _note) in _PROSODY.items():
    metric(f"audio.{_name}", "audio", headline=False, note=f"reply prosody, descriptive: {_note}")(
        (lambda a: lambda ctx: _result(ctx, _prosody_values(ctx), lambda p: getattr(p, a)))(_attr))


# ---------------------------------------------------------------- prosody_fit
def neutral_reference_id(ctx: ScoringContext, info: Request) -> str | None:
    """The request id of the neutral counterpart of an item (same script / tone group), if the benchmark has one."""
    if info.task == "conversation":
        for s in ctx.benchmark.scripts:
            if s.id == info.item_id and "neutral" in s.variants and info.variant != "neutral":
                return f"conversation/{s.id}/neutral"
    elif info.task == "tone":
        for g in ctx.benchmark.tone_groups:
            if g.id == info.item_id:
                for c in g.cases:
                    if c.tone == "neutral" and c.id != info.variant:
                        return f"tone/{g.id}/{c.id}"
    return None


def espeak_reference(ctx: ScoringContext, text: str) -> Prosody:
    """espeak-ng's default voice and rate (175 wpm) reading the reply's words."""
    memo = ctx.cache.setdefault("audio:espeak_ref", {})
    if text not in memo:
        memo[text] = _by_content("espeak_ref", text, lambda: Prosody.from_features(
            measure(espeak(text, voice="en", rate=175), 16_000)))
    return memo[text]


def _fit(ctx: ScoringContext, reply, info) -> dict | Failure:
    if not EXPECTED.get(info.voice_label):
        return {"fit": None, "reference": "none", "why": "no expectation for this attribute"}
    mine = Prosody.from_features(features_of(ctx, reply.audio_path))
    ref = None
    ref_id = neutral_reference_id(ctx, info)
    ref_reply = ctx.replies.get(ref_id) if ref_id else None
    if ref_reply is not None and ref_reply.status == "ok" and ref_reply.audio_path:
        try:
            ref, kind, measures = Prosody.from_features(features_of(ctx, ref_reply.audio_path)), "neutral_reply", MEASURES
        except (BadAudio, ValueError):
            ref = None
    if ref is None:
        text = reply_text(reply) or asr_transcript(ctx, reply)
        if not text:
            return Failure("no_reference", "no neutral reply and no words to synthesise a reference")
        try:
            ref, kind, measures = espeak_reference(ctx, text), "espeak_default", VOICE_INDEPENDENT
        except SynthError as exc:
            return Failure("no_reference", str(exc))
    fit = prosody_fit(info.voice_label, mine, ref, measures)
    return {"fit": fit.score, "reference": kind, "checks": fit.checks, "skipped": fit.skipped}


@metric("audio.prosody_fit", "audio", headline=False,
        note="SECONDARY (scores against our own hand-written table of expected directions; on the demo "
             "that table and cascade-cue's styles share their authors, and on human recordings it did not "
             "separate the baselines: see audio.delivery_shift_agreement). "
             "OUR OWN metric, not EmoAlign: share of the delivery changes the user's attribute calls for "
             "(rate / pitch / pitch range / loudness vs the model's reply to the neutral variant, else vs "
             "espeak-ng's default reading on rate and range only) that the reply makes; 0-1")
def prosody_fit_metric(ctx: ScoringContext) -> MetricResult:
    values = _per_clip(ctx, "prosody_fit", _fit)
    res = _result(ctx, values, lambda d: d["fit"], extra_breakdown=lambda d: {"reference": d["reference"]})
    if res.value is None and values and res.reason == "not computed: no clip could be measured":
        res.reason = "not computed: no reply had an attribute with an expected delivery and a reference"
    for rid, v in values.items():
        if isinstance(v, dict):
            res.raw[rid] = v
    # items with no expectation are not failures of the model: report them apart
    skipped = sum(1 for v in values.values() if isinstance(v, dict) and v["fit"] is None)
    if skipped:
        res.failures.pop("not_measurable", None)
        no_exp = sum(1 for v in values.values() if isinstance(v, dict) and v.get("why"))
        if no_exp:
            res.failures["no_expectation"] = no_exp
        if skipped - no_exp:
            res.failures["not_measurable"] = skipped - no_exp
    return res


# ---------------------------------------------------------------- delivery_shift_agreement
PLAIN_VOICE, PLAIN_WPM, PLAIN_SR = "en-us", 175, 16_000     # the word control: espeak-ng's neutral reading


def file_features(ctx: ScoringContext, path: str):
    """Features of a benchmark clip (an absolute path, e.g. a reference reply), memoised per run."""
    import os
    memo = ctx.cache.setdefault("audio:file_features", {})
    if path not in memo:
        st = os.stat(path)
        memo[path] = _by_content("file_features", (path, st.st_size, st.st_mtime_ns),
                                 lambda: measure(*read_wav(path)))
    return memo[path]


def plain_reading(ctx: ScoringContext, text: str) -> dict:
    """Delivery measures of espeak-ng reading `text` plainly (memoised per run)."""
    memo = ctx.cache.setdefault("audio:plain_reading", {})
    if text not in memo:
        memo[text] = _by_content("plain_reading", text, lambda: measures_of(
            measure(espeak(text, voice=PLAIN_VOICE, rate=PLAIN_WPM, sr=PLAIN_SR), PLAIN_SR)))
    return memo[text]


def _delivery_pair(ctx: ScoringContext, script, base: str, other: str) -> dict | Failure | None:
    """One (base -> other) pair of a script: the model's change against the reference's; None = not an item
    (the model was not asked, or replied without audio)."""
    rb = ctx.replies.get(f"conversation/{script.id}/{base}")
    ro = ctx.replies.get(f"conversation/{script.id}/{other}")
    if rb is None or ro is None:
        return None
    if rb.status != "ok" or ro.status != "ok":
        return Failure("reply_failed", rb.error_class or ro.error_class or "")
    if not rb.audio_path or not ro.audio_path:
        return None
    vb, vo = script.variants[base], script.variants[other]
    try:
        ref_b, ref_o = (measures_of(file_features(ctx, v.reference_audio.path)) for v in (vb, vo))
    except (BadAudio, ValueError) as exc:
        return Failure("bad_reference_audio", str(exc))
    try:
        mod_b, mod_o = (measures_of(features_of(ctx, r.audio_path)) for r in (rb, ro))
    except (BadAudio, ValueError) as exc:
        return Failure("bad_audio", str(exc))
    words = {"model": (reply_text(rb), reply_text(ro)), "reference": (vb.reference_reply, vo.reference_reply)}
    plain = {}
    try:
        for side, (tb, to) in words.items():
            plain[side] = (plain_reading(ctx, to), plain_reading(ctx, tb)) if tb and to and tb.strip() and \
                to.strip() else (None, None)
    except SynthError as exc:
        return Failure("no_plain_reading", str(exc))
    pair = pair_agreement(change(mod_o, mod_b, *plain["model"]), change(ref_o, ref_b, *plain["reference"]))
    return {"pair": pair, "base": base,
            "words_control": {side: plain[side][0] is not None for side in plain}}


def _delivery_items(ctx: ScoringContext):
    """(script, base, other) for pairs whose two variants both carry usable reference reply audio."""
    for s in ctx.benchmark.scripts:
        spoken = [n for n, v in s.variants.items() if v.reference_audio is not None and v.reference_audio.ok]
        for base, other in pairs_for(spoken):
            yield s, base, other


@metric("audio.delivery_shift_agreement", "audio",
        note="OUR OWN metric, anchored on the benchmark's spoken reference replies (no expectation table): per "
             "script, the cosine between how the model's delivery changes from its neutral-variant reply to its "
             "target/alternative reply and how the reference reply's delivery changes (rate, pitch, pitch range, "
             "loudness, inner pauses, HNR, in units of an audible change, beyond what the words alone change); "
             "0 when the model does not change, -1..1; 95% interval over scripts")
def delivery_shift_agreement(ctx: ScoringContext) -> MetricResult:
    items = list(_delivery_items(ctx))
    if not items:
        return MetricResult.not_computed("the benchmark has no spoken reference replies on two variants of a script")
    per_item: dict[str, float | None] = {}
    failures: dict[str, int] = defaultdict(int)
    raw: dict[str, Any] = {}
    by_script: dict[str, list[float]] = defaultdict(list)
    signs: dict[str, list[bool]] = defaultdict(list)
    unchanged = 0
    for script, base, other in items:
        rid = f"conversation/{script.id}/{other}"
        v = _delivery_pair(ctx, script, base, other)
        if v is None:
            continue
        if isinstance(v, Failure):
            failures[v.kind] += 1
            per_item[rid], raw[rid] = None, {"failure": v.kind, "detail": v.detail}
            continue
        pair = v["pair"]
        raw[rid] = {"base": base, "score": pair.score, "why": pair.why, "measures": list(pair.measures),
                    "model_change": pair.model, "reference_change": pair.reference, "signs": pair.signs,
                    "words_control": v["words_control"]}
        per_item[rid] = pair.score
        if pair.score is None:
            failures[pair.why] += 1
            continue
        by_script[script.id].append(pair.score)
        unchanged += pair.why == "model_unchanged"
        for k, ok in pair.signs.items():
            signs[k].append(ok)
    if not by_script:
        res = MetricResult.not_computed("no pair of conversation replies with audio could be compared with the "
                                        "reference replies")
        res.failures, res.per_item, res.raw = dict(failures), per_item, raw
        return res
    script_means = [mean(v) for v in by_script.values()]
    n_pairs = sum(len(v) for v in by_script.values())
    return MetricResult(
        value=mean(script_means), per_item=per_item,
        ci95=mean_ci(script_means, seed=int(ctx.settings.get("seed", SEED))), n=n_pairs,
        failures=dict(failures), raw=raw,
        breakdown={"sign_agreement": {k: mean(v) for k, v in sorted(signs.items())},
                   "pairs": {"scripts": float(len(script_means)), "model_unchanged": unchanged / n_pairs}})

