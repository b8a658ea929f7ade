"""Live battle speed (issue 13): from the upload's last byte to both replies ready, with the two baselines.

    python benchmarks/bench_live.py [--runs 20] [--seconds 5] [--warmup 2] [--rate 90] [--models cascade-blind,cascade-cue]

Starts the baseline server (a subprocess on loopback: Whisper tiny.en + espeak-ng, as the Space runs it) and the
arena + live routes on uvicorn in this process (tests/support/live_fixtures.py: the app's real routes, SQLite in a temp
dir, the scorer's Whisper for the transcript; with the offline screen, which screens each reply on our Whisper
transcript of its audio and its words, as the app does (issue 26); `--no-screen`: no screen). Each run posts its own 5 s espeak-ng utterance (two
sentences of SENTENCES, a pair no other run uses, plus its own faint noise: no transcript, feature or reply-speech
cache hits, here or in the baseline server) to POST /api/arena/live/battle and reads the server's timings
(Server-Timing): `replies_s` (form parsed, i.e. the upload's last byte, to both replies in and checked), `total_s`
(to the battle stored, the response about to go out) and the slower contestant's own call time as the app saw it
(`slowest_model_s`). The app's overhead is `total_s - slowest_model_s`. Then, as the page does, it asks
GET /api/arena/live/heard for the voter's transcript (`heard_s`: from the post to the transcript, which the
battle no longer waits for), so runs do not overlap.
For reference it also times the two baselines called directly, concurrently, without the app (`direct_pair_s`,
on another noisy copy of the run's utterance: a cache miss too); `replies_s - direct_pair_s` is the cost of
going through the app, the voter's transcription included.
CPU seconds per battle (load-independent): `server_cpu_s`, the baseline server's for the two calls, and
`app_cpu_s`, this process's (the app with its own transcription, and the client) from the post to the transcript.
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
from eval_backend.cpu_threads import passive_openmp  # noqa: E402

passive_openmp()   # as app.py does (the app's own Whisper runs in this process)

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from arena.services.live import LiveSettings  # noqa: E402
from tests.support.live_fixtures import LiveApp, spec, utterance  # noqa: E402
from tests.support.baselines import BaselineServer  # noqa: E402


SENTENCES = (
    "I lost my job today and I feel awful about it.",
    "My sister is getting married next month and I am so happy for her.",
    "I have not slept well for a week because of my exams.",
    "My dog died yesterday and the house feels empty.",
    "I finally finished the marathon I trained for all year.",
    "My best friend moved to another country and I miss her.",
    "I am nervous about the interview tomorrow morning.",
    "My father is in hospital and nobody tells us anything.",
    "We bought our first house and I cannot believe it.",
    "I keep arguing with my partner about money.",
    "Work has been so stressful that I cry in the car.",
    "I got the results back and everything is fine.",
    "Nobody came to my birthday party this year.",
    "I started painting again after ten years.",
    "My landlord wants us out by the end of the month.",
    "I feel lonely since I started working from home.",
    "My son said his first word today.",
    "I failed my driving test for the third time.",
    "The doctor says I need surgery next week.",
    "I was promoted and I do not know if I can do it.",
    "My grandmother does not recognise me any more.",
    "I am so angry at my team for missing the deadline.",
    "I adopted a cat and she sleeps on my chest.",
    "I have to give a speech at my friend's funeral.",
)


def text_for_run(i: int) -> str:
    """Two sentences; no two runs (below len(SENTENCES) * (len(SENTENCES) - 1)) share the pair."""
    n = len(SENTENCES)
    first, step = i % n, 1 + (i // n) % (n - 1)
    return f"{SENTENCES[first]} {SENTENCES[(first + step) % n]}"


def noisy(wav: bytes, seed: int) -> bytes:
    samples, sr = sf.read(io.BytesIO(wav), dtype="float32")
    samples = samples + np.random.default_rng(seed).normal(0, 0.001, len(samples)).astype(np.float32)
    buf = io.BytesIO()
    sf.write(buf, samples, sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc): what the work costs whatever the load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    # the two baselines may answer a neutral voice with the very same clip, and identical replies never battle
    # (issue 22: the battle is void); spoken slowly, the cue-aware baseline answers the pace and the replies differ
    p.add_argument("--rate", type=int, default=90, help="espeak-ng words a minute of the voter's utterance")
    p.add_argument("--models", default="cascade-blind,cascade-cue",
                   help="the live contestants, from the baseline server's (e.g. cascade-reflect-piper,cascade-advice-cue)")
    p.add_argument("--no-screen", action="store_true", help="no safety screen (replies are not transcribed)")
    args = p.parse_args()
    screen = None
    if not args.no_screen:
        from eval_backend.safety import screen_text
        screen = screen_text
        from eval_backend.safety import warm
        warm()                                # the screen's models load before the runs, as in the app
    load0 = os.getloadavg()
    rows = []
    with BaselineServer() as baselines, tempfile.TemporaryDirectory() as tmp:
        specs = [spec(m.strip(), baselines.base_url) for m in args.models.split(",") if m.strip()]
        settings = LiveSettings(user_per_hour=10**6)
        overrides = {"session_open_battles": 10**6, "ip_battles_per_minute": 10**6}
        with LiveApp(tmp, specs, settings, arena_overrides=overrides, screen=screen) as app, \
                httpx.Client(base_url=app.url, timeout=120) as client:
            for i in range(args.warmup + args.runs):
                speech = utterance(args.seconds, text_for_run(i), rate=args.rate)
                wav = noisy(speech, i)
                server_cpu0, app_cpu0 = cpu_s(baselines.proc.pid), time.process_time()
                t0 = time.perf_counter()
                r = client.post("/api/arena/live/battle", data={"consent_store": "false", "consent_release": "false"},
                                files={"audio": ("voice.wav", wav, "audio/wav")})
                client_s = time.perf_counter() - t0
                server_cpu = cpu_s(baselines.proc.pid) - server_cpu0
                r.raise_for_status()
                body = r.json()
                heard = client.get("/api/arena/live/heard", params={"battle_id": body["battle_id"],
                                                                   "session": body["session"]}).json()
                heard_s = time.perf_counter() - t0
                app_cpu = time.process_time() - app_cpu0
                direct = asyncio.run(direct_pair(specs, noisy(speech, 10_000 + i)))
                if i < args.warmup:
                    continue
                t = timings(r.headers["server-timing"])
                rows.append({**t, "client_s": client_s, "direct_pair_s": direct, "heard_s": heard_s,
                             "server_cpu_s": server_cpu, "app_cpu_s": app_cpu,
                             "transcript_pending": body["transcript_pending"], "heard": heard["transcript"],
                             "overhead_s": t["total_s"] - t["slowest_model_s"],
                             "vs_direct_s": t["replies_s"] - direct})
                print(f"run {i - args.warmup + 1:2d}: replies {t['replies_s']:.3f} s, total {t['total_s']:.3f} s, "
                      f"slower contestant {t['slowest_model_s']:.3f} s, overhead {rows[-1]['overhead_s'] * 1000:.0f} ms,"
                      f" direct pair {direct:.3f} s, transcript at {heard_s:.3f} s, load {os.getloadavg()[0]:.1f}",
                      flush=True)
    summary = {k: {"median": statistics.median(r[k] for r in rows), "p90": pct([r[k] for r in rows], 0.9)}
               for k in ("replies_s", "total_s", "slowest_model_s", "overhead_s", "client_s", "direct_pair_s",
                         "vs_direct_s", "heard_s", "asked_s", "store_s",
                         "server_cpu_s", "app_cpu_s")}
    report = {"runs": args.runs, "utterance_s": args.seconds, "screen": not args.no_screen, "machine": platform.platform(),
              "cpus": os.cpu_count(), "load_avg_start": load0, "load_avg": os.getloadavg(), "summary": summary, "rows": rows}
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "live_latency.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({"summary": summary, "load_avg": report["load_avg"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
