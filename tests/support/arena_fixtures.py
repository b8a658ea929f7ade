"""Seed a data dir for arena tests: a small benchmark and stored spoken replies.

Everything is real: espeak-ng speaks the user utterances and the replies, the
benchmark is saved in the project format under `<data dir>/benchmarks/demo`
(the spec the arena loads by default), and Reply rows go in through
`eval_backend.store`. Usable from tests and from the benchmark script:

    python -m tests.support.arena_fixtures DATA_DIR [--models m1 m2 ...] [--scripts N]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from altcha import Challenge, Payload, solve_challenge

from eval_backend.benchmark.model import (MCQ, AudioRef, Benchmark, ContextCase, ContextGroup, Script, SelectionItem,
                                          ToneCase, ToneGroup, Variant)
from eval_backend.store import Reply, Store
from tests.support.processes import ServerProcess, free_port

USER_LINES = (
    "I finally finished the project I was working on all month.",
    "My dog has been sick since yesterday and I do not know what to do.",
    "They moved the meeting again, third time this week.",
    "I got the results back from the doctor this morning.",
    "Nobody called me on my birthday.",
    "We are moving to a new city next spring.",
)
CONTEXT_LINE = "I have to give the speech tomorrow."
CONTEXTS = ("The speaker has been preparing for weeks and feels ready.",
            "The speaker is terrified of public speaking.")
# Per model: voice, rate and a reply style, so the two sides of a battle differ audibly.
VOICES = ("en+f3", "en+m3", "en+f2", "en+m1", "en+f4", "en+m7")
REPLY_STYLES = (
    "That sounds like a lot to carry. I am here if you want to talk about it.",
    "Okay. Let me know if you need anything else.",
    "Oh, I can hear that this matters to you. Tell me more.",
    "Thanks for sharing. What would help most right now?",
)


def espeak_wav(text: str, path: Path, voice: str = "en", rate: int = 165) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-w", str(path), text],
                   check=True, capture_output=True, timeout=60)
    return path


def build_benchmark(folder: Path, n_scripts: int = 2, rate: int = 150) -> Benchmark:
    """Scripts with one target variant each, plus one context group (so context text is shown); `rate`: the
    user utterances' espeak-ng speed (words a minute)."""
    from eval_backend.benchmark.dataset import save_benchmark
    from eval_backend.benchmark.loaders import load_benchmark

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        scripts = []
        for i in range(n_scripts):
            text = USER_LINES[i % len(USER_LINES)]
            wav = espeak_wav(text, src / f"s{i}.wav", voice="en+f5", rate=rate)
            scripts.append(Script(id=f"s{i}", text=text, attribute="sad", topic="daily life",
                                  variants={"target": Variant("target", "sad", AudioRef(str(wav)))}))
        ctx_wav = espeak_wav(CONTEXT_LINE, src / "ctx.wav", voice="en+m2", rate=rate)
        group = ContextGroup(id="g0", utterance_text=CONTEXT_LINE, audio=AudioRef(str(ctx_wav)),
                             cases=[ContextCase(id=f"c{j}", context=c) for j, c in enumerate(CONTEXTS)])
        # One item in every split: all three spoken tasks (conversation, context, tone) get served.
        ctx = AudioRef(str(ctx_wav))
        mcq = MCQ(id="q0", level="understanding", type="speech emotion", audio=ctx,
                  question="How does the speaker sound?", options=["calm", "nervous"], answer="B")
        tone = ToneGroup(id="t0", text=CONTEXT_LINE, context=CONTEXTS[1],
                         cases=[ToneCase(id="sad", tone="sad", audio=ctx)])
        sel = SelectionItem(id="e0", group_id="g0", kind="context", context=CONTEXTS[1],
                            utterance_text=CONTEXT_LINE, audio=ctx, options={"A": ctx, "B": ctx}, answer="A")
        b = Benchmark(name="arena-test", version="1", scripts=scripts, mcqs=[mcq], context_groups=[group],
                      tone_groups=[tone], selection=[sel])
        save_benchmark(b, folder)
    return load_benchmark(str(folder))


def spoken_request_ids(b: Benchmark) -> list[tuple[str, str, str, str]]:
    """(request_id, task, item_id, variant) of every request the arena may serve."""
    from eval_backend.tasks import build_requests
    return [(r.id, r.task, r.item_id, r.variant) for r in build_requests(b, ["conversation", "context", "tone"])]


def seed(data_dir: str | Path, models: tuple[str, ...] = ("warm-model", "flat-model"),
         n_scripts: int = 2) -> dict:
    """Build the benchmark and store one spoken reply per (model, spoken request). Returns a summary."""
    data_dir = Path(data_dir)
    store = Store(data_dir)
    b = build_benchmark(data_dir / "benchmarks" / "demo", n_scripts)
    requests = spoken_request_ids(b)
    audio_cache: dict[tuple[int, int], bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for m, model in enumerate(models):
            for k, (rid, task, item, variant) in enumerate(requests):
                style = (m + k) % len(REPLY_STYLES)
                key = (m, style)
                if key not in audio_cache:     # one synthesis per (model, style): seeding stays quick
                    wav = espeak_wav(REPLY_STYLES[style], Path(tmp) / f"{m}_{style}.wav",
                                     voice=VOICES[m % len(VOICES)], rate=150 + 15 * m)
                    audio_cache[key] = wav.read_bytes()
                rel = store.save_reply_audio(model, audio_cache[key])
                store.put_reply(Reply(model=model, benchmark_hash=b.hash, request_id=rid, task=task,
                                      item_id=item, variant=variant, status="ok",
                                      text=REPLY_STYLES[style], transcript=REPLY_STYLES[style],
                                      audio_path=rel, latency_s=0.5 + 0.1 * m))
    return {"benchmark_hash": b.hash, "requests": [r[0] for r in requests], "models": list(models)}


SQLITE_SIDE_FILES = ("*.sqlite3-wal", "*.sqlite3-shm", "*.sqlite3-journal")


def copy_data_dir(src: str | Path, dest: str | Path) -> Path:
    """A copy of a seeded data dir whose store may still be open in this process. Its databases are copied through
    SQLite's backup API, a consistent snapshot; copying the files could tear: the checkpoint thread
    (eval_backend/sqlite_checkpoints.py) writes the database file every second, and when it drops the last
    connection of a store that has gone, SQLite deletes the `-wal` file in the middle of the copy."""
    src, dest = Path(src), Path(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.sqlite3", *SQLITE_SIDE_FILES))
    for db in src.rglob("*.sqlite3"):
        target = dest / db.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(db)) as source, closing(sqlite3.connect(target)) as copy:
            source.backup(copy)
    return dest


class AppProcess(ServerProcess):
    """`python -m tests.support.arena_app` on a free loopback port, with a data dir and settings overrides."""

    def __init__(self, data_dir: str | Path, settings: dict | None = None, port: int | None = None,
                 env: dict | None = None):
        self.data_dir = Path(data_dir)
        self.settings = settings or {}
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # `env`: extra environment, e.g. EMPATHY_ARENA_TRUSTED_PROXIES
        super().__init__(["-m", "tests.support.arena_app", "--port", str(self.port)],
                         self.data_dir / f"app_{self.port}.log", env=env, stop_timeout=15)

    def start(self, timeout: float = 120.0) -> "AppProcess":  # type: ignore[override]
        self.env = {"EMPATHY_ARENA_DATA_DIR": str(self.data_dir), "EMPATHY_ARENA_SETTINGS": json.dumps(self.settings),
                    "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", **self.env}
        super().start(f"{self.url}/api/arena/health", timeout)
        return self


# ----------------------------------------------------------------------------------------- load driver
NO_LIMITS = {"min_listen_s": 0.0, "session_votes_per_minute": 10**9, "session_votes_per_day": 10**9,
             "ip_votes_per_minute": 10**9, "ip_votes_per_day": 10**9,
             # the in-memory abuse bounds too (arena/core/abuse.py): every load voter comes from 127.0.0.1
             "ip_battles_per_minute": 10**9, "ip_vote_attempts_per_minute": 10**9, "session_open_battles": 10**9}


# The integrity checks the app runs by default (arena/config.py: integrity_from_env), for the benchmarks' --integrity:
# on = proof of work for anonymous voters (every 50 votes) and 5% gold battles, as deployed, except the work asked
# (50 attempts, not 2,500-5,000): the server's side of a proof (a challenge, two HMACs) does not depend on it, and
# 50 voters solving ~1 s each on the load client would take the CPU the server is measured on
# (benchmarks/bench_integrity.py measures the solving); off = neither.
INTEGRITY_ENV = {"on": {"EMPATHY_ARENA_POW": "1", "EMPATHY_ARENA_GOLD_SHARE": "0.05", "EMPATHY_ARENA_POW_COUNTER": "50"},
                 "off": {"EMPATHY_ARENA_POW": "0", "EMPATHY_ARENA_GOLD_SHARE": "0"}}


# The seeded replies are nobody's screened replies; the app plays screened replies only (EMPATHY_ARENA_SCREEN_REPLIES,
# default 1), which the test suite turns off in tests/conftest.py. The benchmarks, run outside pytest, say it here
# (screening is not on the vote path: docs/benchmarks.md, "Safety: screening is not on the vote → next-battle path").
UNSCREENED = {"EMPATHY_ARENA_SCREEN_REPLIES": "0"}


@dataclass
class LoadResult:
    acks: dict[str, dict] = field(default_factory=dict)      # battle id -> acknowledged vote (request + reply)
    sent: set[str] = field(default_factory=set)              # battle ids a vote was sent for
    refused: Counter = field(default_factory=Counter)        # error code -> count (4xx/5xx with a JSON body)
    transport: Counter = field(default_factory=Counter)      # exception class -> count (connection lost...)
    server_ms: list[float] = field(default_factory=list)     # server time: vote + the next battle
    service_ms: list[float] = field(default_factory=list)    # the part of it inside ArenaService calls
    client_ms: list[float] = field(default_factory=list)     # the same, as the client saw it (loopback)
    wall_s: float = 0.0


def _timings(headers) -> dict[str, float]:
    """Server-Timing "app;dur=12.3, svc;dur=4.5" -> {"app": 12.3, "svc": 4.5}."""
    out = {}
    for part in headers.get("server-timing", "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[name] = float(dur)
    return out


async def run_load(url: str, clients: int, votes: int, kill_after: int | None = None,
                   kill: Callable[[], None] | None = None, seed: int = 0, think_s: float = 0.0) -> LoadResult:
    """`clients` concurrent voters (one session each, own connection) cast `votes` votes through the HTTP API.

    Each voter: battle -> vote -> next battle -> ... A vote counts as acknowledged only on a 200. A battle that asks
    for a proof of work (arena/services/pow.py) gets one solved before its vote, outside the timed part.
    With `kill_after`, `kill()` runs once that many votes were acknowledged; voters stop on the
    first transport error (the server is gone). `think_s` > 0: each voter pauses (uniform 0.5-1.5 x)
    before each vote, as a listener would; 0 = closed loop, as fast as the server answers. aiohttp rather than httpx: on this 2-core machine
    httpx's pure-Python client cost more CPU than the server it was measuring."""
    import aiohttp

    out = LoadResult()
    issued = 0
    killed = False
    rng = random.Random(seed)

    async def post(http, path: str, body: dict) -> tuple[int, dict, float]:
        async with http.post(url + path, json=body) as r:
            return r.status, await r.json(), _timings(r.headers)

    async def voter() -> None:
        nonlocal issued, killed
        timeout = aiohttp.ClientTimeout(total=120)
        # Idle connections are dropped after 3 s, before uvicorn closes them (5 s): reusing a connection
        # the server is closing would fail a request for a reason that is not the server's.
        connector = aiohttp.TCPConnector(limit=1, keepalive_timeout=3)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
            try:
                status, view, _ = await post(http, "/api/arena/battle", {})
                if status != 200:
                    out.refused[view.get("error", str(status))] += 1
                    return
                session = view["session"]
                while issued < votes and not killed:
                    issued += 1
                    if think_s > 0:
                        await asyncio.sleep(rng.uniform(0.5, 1.5) * think_s)
                    slot = rng.choice(["A", "B", "A", "B", "tie", "both_bad"])
                    said = rng.choice([None, "A", "B", "tie"])
                    sounded = rng.choice([None, "A", "B", "tie"])
                    body = {"battle_id": view["battle_id"], "session": session, "overall": slot,
                            "said": said, "sounded": sounded}
                    if view.get("pow"):       # a proof of work is due (arena/services/pow.py): solved as a script does,
                        body["altcha"] = await asyncio.get_running_loop().run_in_executor(   # not timed
                            None, solve_pow, view["pow"]["challenge"])
                    out.sent.add(view["battle_id"])
                    t0 = time.perf_counter()
                    status, reply, vote_t = await post(http, "/api/arena/vote", body)
                    if status == 200:
                        out.acks[view["battle_id"]] = {**body, **reply}
                    else:
                        out.refused[reply.get("error", str(status))] += 1
                    if kill_after is not None and not killed and len(out.acks) >= kill_after:
                        killed = True
                        kill()
                        return
                    status, view, battle_t = await post(http, "/api/arena/battle", {"session": session})
                    out.client_ms.append(1000 * (time.perf_counter() - t0))
                    nan = float("nan")
                    out.server_ms.append(vote_t.get("app", nan) + battle_t.get("app", nan))
                    out.service_ms.append(vote_t.get("svc", nan) + battle_t.get("svc", nan))
                    if status != 200:
                        out.refused[view.get("error", str(status))] += 1
                        return
            except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as exc:
                out.transport[type(exc).__name__] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(voter() for _ in range(clients)))
    out.wall_s = time.perf_counter() - t0
    return out


def solve_pow(challenge: dict) -> str:
    """The `altcha` field of a vote: an ALTCHA v2 challenge (as the API sends it) solved with the `altcha`
    package, as a script does (arena/README.md), as a base64 payload."""
    ch = Challenge.from_dict(challenge)
    solution = solve_challenge(ch)
    if solution is None:
        raise RuntimeError("the challenge could not be solved in time")
    return Payload(ch, solution).to_base64()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data_dir")
    p.add_argument("--models", nargs="+", default=["warm-model", "flat-model"])
    p.add_argument("--scripts", type=int, default=2)
    args = p.parse_args()
    info = seed(args.data_dir, tuple(args.models), args.scripts)
    print(f"seeded {len(info['requests'])} requests x {len(info['models'])} models into {args.data_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
