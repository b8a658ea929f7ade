"""`python -m eval_backend.baselines serve --host 127.0.0.1 --port P`: the baseline server.
`python -m eval_backend.baselines detect FILE.wav [--json]`: what the cue detector hears in one recording."""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

from eval_backend.audio.asr import Transcriber

from ..audio.features import extract
from ..cpu_threads import passive_openmp
from .cues import detect, hear


def watch_parent(pid: int, every_s: float = 1.0) -> threading.Thread:
    """Exit once `pid` is no longer our parent: the app died (even by SIGKILL, where it could not stop us)
    and we were re-parented. A thread, not PR_SET_PDEATHSIG, which fires when the *thread* that started
    us ends (the app's bootstrap thread ends long before the app)."""
    def run() -> None:
        while os.getppid() == pid:
            time.sleep(every_s)
        os._exit(0)
    thread = threading.Thread(target=run, name="parent-watch", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    passive_openmp()   # before Whisper loads, for `serve` and `detect` alike (eval_backend/cpu_threads.py)
    parser = argparse.ArgumentParser(prog="python -m eval_backend.baselines",
                                     description="Serve the cascade-blind / cascade-cue baselines "
                                                 "behind an OpenAI-compatible API.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--log-level", default="warning")
    serve.add_argument("--parent-pid", type=int,
                       help="exit when this process (the app that started us) is gone, however it ended")
    det = sub.add_parser("detect", help="what the cue detector hears in one recording (wav, flac or ogg)")
    det.add_argument("file")
    det.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "detect":
        return detect_file(args.file, args.json)
    if args.parent_pid:
        watch_parent(args.parent_pid)

    import uvicorn

    from .engine import Engine  # why: after passive_openmp(): OpenMP reads its settings when first loaded
    from .server import Service, create_app  # why: after passive_openmp(): OpenMP reads its settings when first loaded
    engine = Engine()
    engine.warm_up()  # load Whisper and pay first-call costs before listening, so /health means ready
    uvicorn.run(create_app(Service(engine)), host=args.host, port=args.port, log_level=args.log_level)
    return 0


def detect_file(path: str, as_json: bool) -> int:
    """Claims with confidences, what it abstains on and why, the words heard, and the forced-choice guesses."""
    import hashlib

    import soundfile as sf

    try:
        x, sr = sf.read(path, dtype="float32", always_2d=True)
    except (OSError, RuntimeError, sf.LibsndfileError) as exc:
        print(f"cannot read {path}: {exc}", file=sys.stderr)
        return 2
    samples = x.mean(axis=1)
    if len(samples) < sr * 0.1:
        print(f"{path}: shorter than 0.1 s, nothing to hear", file=sys.stderr)
        return 2
    words = Transcriber().transcribe(hashlib.sha256(samples.tobytes()).hexdigest(), samples, sr)
    f = extract(samples, sr)
    out = {"file": path, "transcript": words, **hear(f, words).to_dict(),
           "forced_choice_guesses": {"labels": list(detect(f).labels),
                                     "note": "MCQ / selection guesses, thresholds read from synthetic voices; "
                                             "never said or spoken in a reply"}}
    if as_json:
        print(json.dumps(out, indent=1))
    else:
        print(f"heard: {words!r}")
        print("claims: " + (", ".join(f"{c} ({out['confidence'][c]:.2f})" for c in out["claims"]) or
                            "none (abstains)"))
        print("confidence: " + ", ".join(f"{k} {v:.2f}" for k, v in out["confidence"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
