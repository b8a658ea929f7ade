"""Whisper's encoder window cut to the clip, against the full 30 s window: CPU time and what it does to the words.

    python benchmarks/bench_whisper_window.py

Whisper tiny.en (the scorer's, eval_backend/audio/asr.py) pads every clip to 30 s before its encoder, so a 2 s clip
costs as much as a 30 s one; CTranslate2 accepts a shorter window (whisper.cpp's `audio_ctx` does the same). This
decodes the demo's 48 scripts under three of its delivery recipes each (espeak-ng; the script is the reference) and
every real recording of eval_backend/baselines/real_voices.csv (the pocketsphinx prompts have references) both ways,
with the scorer's decode settings, and prints CPU time, word error rates (the scorer's own `word_errors` and
normaliser) and how many transcripts changed. Figures: docs/benchmarks.md, "A shorter Whisper encoder, tried and
rejected"; the scorer keeps the full window.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MIN_FRAMES, STEP = 1000, 500            # the shortest window tried (10 s) and the bucket size, in 10 ms frames


def short_window_model(base):
    """A faster-whisper model class whose encoder sees the clip's frames (bucketed), not the zero-padded 30 s."""
    from faster_whisper.transcribe import get_ctranslate2_storage

    class ShortWindow(base):
        def encode(self, features):
            features = features[None] if features.ndim == 2 else features
            used = np.flatnonzero(np.abs(features[0]).sum(axis=0) > 0)     # faster-whisper pads with zeros
            n = int(used[-1]) + 1 if used.size else 1
            keep = min(features.shape[-1], max(MIN_FRAMES, math.ceil((n + 100) / STEP) * STEP))
            return self.model.encode(get_ctranslate2_storage(np.ascontiguousarray(features[..., :keep])))
    return ShortWindow


def clips() -> list[tuple[str, str | None, np.ndarray]]:
    from eval_backend.audio.asr import to_16k
    from eval_backend.audio.recipes import render
    from eval_backend.audio.synth import SR
    from eval_backend.baselines.real_voices import recordings
    from eval_backend.benchmark import demo

    rng, names, out = np.random.default_rng(0), list(demo.RECIPES), []
    for i, (_topic, text, _plain) in enumerate(demo.C.SCRIPTS):
        for name in (names[i % len(names)], names[(i + 7) % len(names)], "male"):
            out.append(("demo", text, to_16k(render(text, demo.RECIPES[name], rng), SR)))
    for rec in recordings():
        samples, sr = rec.load()
        out.append(("real", rec.words if rec.package == "pocketsphinx-testdata" else None, to_16k(samples, sr)))
    return out


def main() -> int:
    from faster_whisper import WhisperModel

    from eval_backend.audio.asr import DECODE, model_dir

    kw = dict(device="cpu", compute_type="int8", cpu_threads=2, local_files_only=True)
    models = {"full 30 s": WhisperModel(str(model_dir()), **kw),
              "cut to the clip": short_window_model(WhisperModel)(str(model_dir()), **kw)}
    data = clips()
    said: dict[str, list[str]] = {}
    for name, model in models.items():
        t0 = time.process_time()
        said[name] = [" ".join(s.text.strip() for s in model.transcribe(x, **DECODE)[0]).strip() for _, _, x in data]
        print(f"{name}: {len(data)} clips, {time.process_time() - t0:.1f} CPU-s", flush=True)
    from eval_backend.scoring.normalise import normalise_text
    from eval_backend.scoring.understanding import word_errors

    full, cut = said.values()
    for group in ("demo", "real"):
        idx = [i for i, (g, _, _) in enumerate(data) if g == group]
        changed = sum(normalise_text(full[i]) != normalise_text(cut[i]) for i in idx)
        line = f"{group}: {len(idx)} clips, {changed} transcripts differ after the scorer's WER normaliser"
        refs = [i for i in idx if data[i][1]]
        for name, got in said.items():
            e, n = map(sum, zip(*(word_errors(data[i][1], got[i]) for i in refs)))
            line += f"; WER {name} {e}/{n} = {e / max(n, 1):.3f}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
