"""CPU time per item of the audio metrics (and the judge's local overhead), on espeak-ng clips.

    python benchmarks/bench_audio_metrics.py --runs 5

Per item = one reply clip. Times are CPU time of this process and its children (os.times), so other jobs on a
shared machine do not inflate them; the first call of each step (model load, numba JIT) is
reported apart as "cold".
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SENTENCES = [
    "I see. Tell me more about your day.",
    "Stay safe out there and keep your umbrella close.",
    "That sounds like a long week. Do you want to talk about it?",
    "Congratulations, that is wonderful news for your whole family.",
    "Take a slow breath with me, and we will sort this out together.",
    "The train should come soon, and I can read you the timetable while you wait.",
]


def _cpu_now() -> float:
    t = os.times()      # finished children (espeak-ng runs as a subprocess), 10 ms ticks
    return time.process_time() + t.children_user + t.children_system


def cpu(fn):
    t = _cpu_now()
    out = fn()
    return _cpu_now() - t, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="run only the steps whose name contains this text (e.g. Distill)")
    args = ap.parse_args()

    from eval_backend.audio.features import extract
    from eval_backend.audio.synth import espeak
    from eval_backend.scoring.audio_clips import dnsmos, transcriber
    from eval_backend.scoring.audio_metrics import word_error_rate
    from eval_backend.scoring.judge_prompts import ECHOMIND_TEXT
    from eval_backend.scoring.learned_mos import distillmos, distillmos_many
    from eval_backend.scoring.judges import parse_answer, render
    from eval_backend.scoring.delivery_shift import change, measures_of, pair_agreement
    from eval_backend.scoring.prosody_fit import Prosody, prosody_fit

    clips = [(s, espeak(s, voice="en-us")) for s in SENTENCES]
    ref = espeak(SENTENCES[0], voice="en", rate=175)
    seconds = [len(x) / 16000 for _, x in clips]

    def asr_item(text, x, key):
        return word_error_rate(text, transcriber().transcribe(key, x, 16000))

    def fit_neutral(x):       # reply and neutral-reply features, then the fit
        return prosody_fit("sad", Prosody.from_features(extract(x, 16000)), Prosody.from_features(extract(ref, 16000)))

    def fit_espeak(text, x):  # no neutral reply: synthesise the espeak-ng reference first
        r = espeak(text, voice="en", rate=175)
        return prosody_fit("sad", Prosody.from_features(extract(x, 16000)), Prosody.from_features(extract(r, 16000)),
                           ("rate", "range"))

    base_m, base_plain = measures_of(extract(ref, 16000)), measures_of(extract(espeak(SENTENCES[0], voice="en-us",
                                                                                        rate=175), 16000))
    ref_change = change(measures_of(extract(espeak(SENTENCES[1], voice="en+f3", rate=130, pitch=35, amplitude=60),
                                            16000)), base_m)

    def delivery_item(text, x):   # per model reply: its measures + espeak-ng's plain reading of its words + the pair
        plain = measures_of(extract(espeak(text, voice="en-us", rate=175), 16000))
        return pair_agreement(change(measures_of(extract(x, 16000)), base_m, plain, base_plain), ref_change)

    answer = '{"c1": {"score": 4, "reason": "r"}, "c2": {"score": 4, "reason": "r"}, ' \
             '"c3": {"score": 3, "reason": "r"}, "c4": {"score": 2, "reason": "r"}}'

    def judge_local(text):    # what a judged item costs us besides the HTTP call
        render(ECHOMIND_TEXT, {"user": "I finished it.", "reply": text}, {"topic": "work", "attribute": "sad"})
        return parse_answer(answer, ECHOMIND_TEXT)

    steps = {
        "DNSMOS (SIG/BAK/OVRL + P.808)": lambda i, text, x: dnsmos(x, 16000),
        "ASR consistency (Whisper tiny.en + WER)": lambda i, text, x: asr_item(text, x, f"{i}-{time.time_ns()}"),
        "prosody (features.extract)": lambda i, text, x: extract(x, 16000),
        "prosody_fit vs neutral reply (2 extracts + fit)": lambda i, text, x: fit_neutral(x),
        "prosody_fit vs espeak-ng (synth + 2 extracts + fit)": lambda i, text, x: fit_espeak(text, x),
        "delivery_shift_agreement (reply extract + plain reading: synth + extract + pair)":
            lambda i, text, x: delivery_item(text, x),
        "judge, local side (render + parse)": lambda i, text, x: judge_local(text),
        "Distill-MOS, one clip per forward pass": lambda i, text, x: distillmos(x, 16000),
        # the scorer's way: the run's clips 8 at a time; here all six clips in one pass, divided by six
        "Distill-MOS, per clip of a batch (the scorer's way)":
            lambda i, text, x: distillmos_many([(c, 16000) for _, c in clips]) if i == 0 else None,
    }
    steps = {k: v for k, v in steps.items() if args.only in k}
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    print(f"clips: {len(clips)} espeak-ng en-us, {min(seconds):.1f}-{max(seconds):.1f} s (median "
          f"{statistics.median(seconds):.1f} s); runs: {args.runs}")
    print("| step | cold first call (s CPU) | median per item (ms CPU) | min-max of run medians (ms) |")
    print("|---|---:|---:|---:|")
    for name, fn in steps.items():
        cold, _ = cpu(lambda: fn(0, *clips[0]))
        run_medians = []
        for _ in range(args.runs):
            times = [cpu(lambda: fn(i, text, x))[0] for i, (text, x) in enumerate(clips)]
            if "of a batch" in name:                  # one pass over every clip: its cost per clip
                times = [sum(times) / len(clips)]
            run_medians.append(statistics.median(times) * 1000)
        print(f"| {name} | {cold:.2f} | {statistics.median(run_medians):.1f} | "
              f"{min(run_medians):.1f}-{max(run_medians):.1f} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
