"""A learned MOS predictor beside DNSMOS, offline (issue 26): `audio.distillmos`.

Distill-MOS (PyPI `distillmos` 0.9.1, MIT, Microsoft; Stahl & Gamper 2025, arXiv:2502.05356): a small
convolutional transformer (variant 7) distilled and pruned from an XLS-R (wav2vec 2.0) speech-quality model. It
predicts the mean opinion score, 1 (bad) .. 5 (excellent), of a 16 kHz mono waveform. Training data (model
card): ~2,600 h of unlabelled speech and 180 h of noise from the ICASSP 2022 DNS Challenge (labelled by the
teacher), TTS output, and the rated sets PSTN, ConferencingSpeech 2022, NISQA, VoiceMOS 2022 and challenge
submissions (DNS 2021, packet-loss concealment 2022, signal improvement 2023); English; the card warns it may not
generalise to other tasks, languages or speaking styles. It is neither NISQA nor UTMOS, the predictors EchoMind
reports (NISQA's data is one of its training sets, not its model): its figures are not comparable with theirs,
hence its own name. On our synthetic demo voices (espeak-ng) it scores low (~1.8) and does not order noise the
way it does on people's voices: its known-groups test uses real recordings (LibriVox, tests/test_learned_mos.py).
The weights ship inside the wheel (`distillmos/weights/distill_mos_v7.pt`); nothing is downloaded.

torchaudio: the wheel declares it, and no torchaudio exists for the project's torch (2.13.0). `distillmos/sqa.py`
imports it at module top but uses it only in its command line (torchaudio.load, transforms.Resample); the model
itself needs torch alone (and `xls_r_sqa`'s config and transformer modules, which import no torchaudio). So the
package is installed with --no-deps (requirements.txt), we import it with a stand-in `torchaudio` module present
only during that import, and we resample to 16 kHz ourselves (eval_backend.audio.asr.to_16k, scipy).

Cost: one model per process; clips are scored in batches of equal-length 7.68 s windows (the model's own
segmenting), on CPU with the process's torch threads (docs/benchmarks.md, "Learned MOS").
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import numpy as np

from eval_backend.audio.asr import to_16k

from ..audio.io import BadAudio
from ..loaded_once import loaded_once
from .audio_clips import (
    _MISSING,
    _clip,
    _per_clip,
    _result,
    _spoken,
    content_key,
    known_by_content,
    remember_by_content,
)
from .registry import MetricResult, ScoringContext, metric

PACKAGE = "distillmos"
if importlib.util.find_spec(PACKAGE) is None:      # an optional metric module: absent, its metric is left out
    raise ImportError("distillmos is not installed (pip install --no-deps -r requirements-nodeps.txt)")
SR = 16_000
BATCH = 8              # clips per forward pass
KIND = "distillmos"    # its memo of measurements by clip content (audio_clips.known_by_content)


def _import_without_torchaudio():
    """distillmos.sqa, imported with a stand-in `torchaudio` when the real one is absent (see the module doc). The
    stand-in is removed right after, so nothing else ever sees it."""
    try:
        importlib.import_module("torchaudio")
        return importlib.import_module("distillmos.sqa")
    except ImportError:
        pass
    stand_in = types.ModuleType("torchaudio")
    stand_in.__doc__ = "stand-in: distillmos.sqa imports torchaudio for its command line only"
    sys.modules["torchaudio"] = stand_in
    try:
        return importlib.import_module("distillmos.sqa")
    finally:
        if sys.modules.get("torchaudio") is stand_in:
            del sys.modules["torchaudio"]


@loaded_once
def model():
    """The Distill-MOS model, loaded once per process, in eval mode."""
    sqa = _import_without_torchaudio()
    m = sqa.ConvTransformerSQAModel(load_weights=False)
    import torch
    chkpt = torch.load(sqa.DEFAULT_WEIGHTS_CHKPT, map_location="cpu", weights_only=True)
    m.load_state_dict(chkpt["model"])
    return m.eval()


def distillmos(samples: np.ndarray, sr: int) -> float:
    """Distill-MOS of one clip (any sample rate, mono)."""
    return distillmos_many([(samples, sr)])[0]


def distillmos_many(clips: list[tuple[np.ndarray, int]]) -> list[float]:
    """Distill-MOS of several clips; clips that fit one window (7.68 s) go through the model together."""
    import torch

    m = model()
    from distillmos.sqa import SEQ_LEN
    xs = [np.clip(to_16k(np.asarray(s, dtype=np.float32), sr), -1.0, 1.0) for s, sr in clips]
    out: list[float | None] = [None] * len(xs)
    short = [i for i, x in enumerate(xs) if len(x) <= SEQ_LEN]
    with torch.no_grad():
        for start in range(0, len(short), BATCH):
            idx = short[start:start + BATCH]
            batch = np.zeros((len(idx), SEQ_LEN), dtype=np.float32)
            for row, i in enumerate(idx):
                batch[row, :len(xs[i])] = xs[i]          # the model pads a short clip with zeros itself
            for i, v in zip(idx, m(torch.from_numpy(batch)).reshape(-1).tolist()):
                out[i] = float(v)
        for i, x in enumerate(xs):
            if out[i] is None:                            # longer: the model's own overlapping windows
                out[i] = float(m(torch.from_numpy(x)[None])[0])
    return [float(v) for v in out if v is not None]


def _values(ctx: ScoringContext) -> dict:
    """{rid: MOS | Failure}: each distinct clip content scored once per process (the bootstrap scores four
    baselines whose replies often share a clip), the missing ones BATCH at a time (decoded per batch, so memory
    stays small), then read per reply."""
    scores = ctx.cache.setdefault("audio:distillmos_by_path", {})
    keys: list[str] = []
    paths: dict[str, list[str]] = {}                        # content digest -> the run's paths with that content
    clips: list[tuple[np.ndarray, int]] = []

    def flush() -> None:
        if not clips:
            return
        for key, value in zip(keys, distillmos_many(clips)):
            remember_by_content(KIND, key, value)
            scores.update((path, value) for path in paths.pop(key))
        keys.clear()
        clips.clear()
    for _, reply, _ in _spoken(ctx):
        if reply.status != "ok" or reply.audio_path in scores:
            continue
        try:
            key = content_key(ctx, reply.audio_path)
        except OSError:
            continue                                       # missing file: counted as bad_audio below
        if key in paths:                                    # the same content already waits in this batch
            paths[key].append(reply.audio_path)
            continue
        known = known_by_content(KIND, key)
        if known is not _MISSING:
            scores[reply.audio_path] = known
            continue
        try:
            clips.append(_clip(ctx, reply.audio_path))
        except BadAudio:
            continue                                       # read again below, and counted as bad_audio there
        keys.append(key)
        paths[key] = [reply.audio_path]
        if len(clips) == BATCH:
            flush()
    flush()

    def one(c, reply, info):
        if reply.audio_path not in scores:
            _clip(c, reply.audio_path)                     # raises BadAudio
        return scores[reply.audio_path]
    return _per_clip(ctx, "distillmos", one)


@metric("audio.distillmos", "audio",
        note="Distill-MOS (PyPI distillmos 0.9.1, Microsoft, MIT): a compact model distilled from an XLS-R "
             "speech-quality model, trained on noise-suppression / signal-improvement quality data; predicted "
             "MOS 1-5 of the reply audio at 16 kHz. Not NISQA or UTMOS (EchoMind's predictors): not comparable "
             "with the paper's figures",
        manifest=lambda settings: {"package": PACKAGE, "version": _version(), "weights": "distill_mos_v7.pt"})
def distillmos_metric(ctx: ScoringContext) -> MetricResult:
    return _result(ctx, _values(ctx), lambda v: v)


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "missing"
