"""Live battle speed (issue 13): from the upload's last byte to both replies ready, with the two baselines.

    python benchmarks/bench_live.py [--runs 20] [--seconds 5] [--warmup 2]

Starts the baseline server (a subprocess on loopback: Whisper tiny.en + espeak-ng, as the Space runs it) and the
arena + live routes on uvicorn in this process (tests/support/live_fixtures.py: the app's real routes, SQLite in a temp
dir, the scorer's Whisper for the transcript, no screen). Each run posts a 5 s espeak-ng utterance (with its own
faint noise, so no transcript cache hits, here or in the baseline server) to POST /api/arena/live/battle and reads
the server's timings (Server-Timing): `replies_s` (form parsed, i.e. the upload's last byte, to both replies in
and checked), `total_s` (to the battle stored, the response about to go out) and the slower contestant's own call
time as the app saw it (`slowest_model_s`). The app's overhead is `total_s - slowest_model_s`.
For reference it also times the two baselines called directly, concurrently, without the app (`direct_pair_s`).
Prints median and p90 and writes benchmarks/out/live_latency.json.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from arena.live import LiveSettings  # noqa: E402
from tests.support.live_fixtures import LiveApp, baseline_specs, utterance  # noqa: E402
from tests.support.baselines import BaselineServer  # noqa: E402


def noisy(wav: bytes, seed: int) -> bytes:
    samples, sr = sf.read(io.BytesIO(wav), dtype="float32")
    samples = samples + np.random.default_rng(seed).normal(0, 0.001, len(samples)).astype(np.float32)
    buf = io.BytesIO()
    sf.write(buf, samples, sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def timings(header: str) -> dict[str, float]:
    out = {}
    for part in header.split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[name] = float(dur) / 1000
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def direct_pair(specs, wav: bytes) -> float:
    """Both baselines asked directly, at once (no app): the contestants' own time for this clip."""
    from eval_backend.benchmark.model import AudioRef
    from eval_backend.clients import openai_chat
    from eval_backend.tasks import SYSTEM_CONVERSATION, Request
    with tempfile.NamedTemporaryFile(suffix=".wav") as f:
        f.write(wav)
        f.flush()
        req = Request("bench/direct/-", "live", "direct", "-", SYSTEM_CONVERSATION, "", (AudioRef(f.name),), True)
        b64 = [base64.b64encode(wav).decode()]
        async with openai_chat.new_session(4) as session:
            t0 = time.perf_counter()
            await asyncio.gather(*(openai_chat.call(session, s, req, b64) for s in specs))
            return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    speech = utterance(args.seconds)
    rows = []
    with BaselineServer() as baselines, tempfile.TemporaryDirectory() as tmp:
        specs = baseline_specs(baselines.base_url)
        settings = LiveSettings(user_per_hour=10**6)
        overrides = {"session_open_battles": 10**6, "ip_battles_per_minute": 10**6}
        with LiveApp(tmp, specs, settings, arena_overrides=overrides, screen=None) as app, \
                httpx.Client(base_url=app.url, timeout=120) as client:
            for i in range(args.warmup + args.runs):
                wav = noisy(speech, i)
                t0 = time.perf_counter()
                r = client.post("/api/arena/live/battle", data={"consent_store": "false", "consent_release": "false"},
                                files={"audio": ("voice.wav", wav, "audio/wav")})
                client_s = time.perf_counter() - t0
                r.raise_for_status()
                direct = asyncio.run(direct_pair(specs, noisy(speech, 10_000 + i)))
                if i < args.warmup:
                    continue
                t = timings(r.headers["server-timing"])
                rows.append({**t, "client_s": client_s, "direct_pair_s": direct,
                             "overhead_s": t["total_s"] - t["slowest_model_s"]})
                print(f"run {i - args.warmup + 1:2d}: replies {t['replies_s']:.3f} s, total {t['total_s']:.3f} s, "
                      f"slower contestant {t['slowest_model_s']:.3f} s, overhead {rows[-1]['overhead_s'] * 1000:.0f} ms,"
                      f" direct pair {direct:.3f} s", flush=True)
    summary = {k: {"median": statistics.median(r[k] for r in rows), "p90": pct([r[k] for r in rows], 0.9)}
               for k in ("replies_s", "total_s", "slowest_model_s", "overhead_s", "client_s", "direct_pair_s")}
    report = {"runs": args.runs, "utterance_s": args.seconds, "machine": platform.platform(),
              "cpus": os.cpu_count(), "load_avg": os.getloadavg(), "summary": summary, "rows": rows}
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "live_latency.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({"summary": summary, "load_avg": report["load_avg"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
