"""Honest voters' latency while one client floods the arena with battle requests.

    python benchmarks/bench_flood.py [--voters 50] [--duration 60] [--pause 3 9] [--flood-connections 8]
                                     [--no-quiet] [--no-gradio] [--data-parent DIR]

Starts the real app (tests/support/arena_app.py, uvicorn as in production) on loopback with a seeded data dir and the
default abuse limits (arena/config.py: ip_battles_per_minute, session_open_battles,
ip_vote_attempts_per_minute); only the minimum listening time and the accepted-vote limits are off, so
that honest voters are never refused for voting quickly. Then two phases of `--duration` s each:
  quiet   `--voters` honest voters, each from its own loopback address (127.0.1.x), each a listener:
          battle -> pause uniform(--pause) s -> vote -> next battle -> ...
  flood   the same, while one client (its own process, from 127.0.0.2, `--flood-connections` connections)
          asks for battles back to back as fast as the server answers.
  gradio  the same, with that battle flood and a second one (its own process, from 127.0.0.3) on Gradio's own
          routes (issue 21): `queue/join` of a page-load event under a new session hash each time, `queue/join`
          under one session, and 1 KiB uploads, in turn, as fast as the server answers.
--integrity on (default: as deployed) also runs proof of work for anonymous voters and 5% gold battles: a voter
solves its challenge (the `altcha` package) before its first vote, outside the timed step.
Measured per honest step: the client-side time from sending a vote to holding the next battle (over
loopback: includes any wait on the server's event loop, which a flood would lengthen), and the server-side
handling time of the two requests (Server-Timing). Prints one JSON summary (p50/p99 per phase, the flood's
request rate and status counts, battles the flooder got into the database, the app's CPU seconds per phase: its
own cost, apart from the machine's load) and writes benchmarks/out/flood.json. Target: flood-phase client p99
<= 50 ms on a quiet machine.

Every vote and battle is committed before it is acknowledged; since issue 21's point 5 a SQLite commit waits for no
fsync (eval_backend/sqlite_checkpoints.py: a thread syncs each database every second), so the disk's fsync tail
should no longer reach an honest step. Before the phases the benchmark measures that disk on its own for 15 s (`disk_fsync_ms`: 100 kB written and fsynced 8 times a second, about what the app writes
for the voters, in the folder that holds the data dir); `--data-parent /dev/shm` puts the data dir on a memory
file system, where an fsync costs nothing, to measure the app apart from its disk.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing as mp
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.stats import pct  # noqa: E402
from tests.support.arena_fixtures import INTEGRITY_ENV, UNSCREENED, NO_LIMITS, AppProcess, _timings, seed, solve_pow  # noqa: E402

MODELS = ("warm-model", "flat-model", "chirpy-model", "calm-model")
FLOOD_SOURCE = "127.0.0.2"
GRADIO_FLOOD_SOURCE = "127.0.0.3"
# Vote rules off (not what is measured); the in-memory abuse bounds stay at their defaults.
SETTINGS = {k: v for k, v in NO_LIMITS.items()
            if k not in ("ip_battles_per_minute", "ip_vote_attempts_per_minute", "session_open_battles")}


def voter_address(k: int) -> str:
    return f"127.0.1.{k + 1}"


async def honest_voters(url: str, voters: int, duration_s: float, pause: tuple[float, float], seed_: int = 0) -> dict:
    """`voters` paced listeners for `duration_s`; returns latencies and every non-200 by code."""
    import aiohttp

    rng = random.Random(seed_)
    client_ms: list[float] = []
    server_ms: list[float] = []
    statuses: Counter = Counter()
    errors: Counter = Counter()
    votes = 0
    stop_at = time.monotonic() + duration_s

    async def post(http, path, body):
        async with http.post(url + path, json=body) as r:
            return r.status, await r.json(), _timings(r.headers)

    async def voter(k: int) -> None:
        nonlocal votes
        connector = aiohttp.TCPConnector(limit=1, keepalive_timeout=3, local_addr=(voter_address(k), 0))
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:
            try:
                await asyncio.sleep(rng.uniform(0, pause[0]))          # voters do not start in step
                status, view, _ = await post(http, "/api/arena/battle", {})
                statuses[status] += 1
                if status != 200:
                    errors[view.get("error", str(status))] += 1
                    return
                session = view["session"]
                while True:
                    await asyncio.sleep(rng.uniform(*pause))
                    if time.monotonic() >= stop_at:
                        return
                    body = {"battle_id": view["battle_id"], "session": session, "overall": rng.choice("AB")}
                    if view.get("pow"):       # a proof of work is due (arena/services/pow.py): solved before the timed part
                        body["altcha"] = await asyncio.get_running_loop().run_in_executor(
                            None, solve_pow, view["pow"]["challenge"])
                    t0 = time.perf_counter()
                    status, reply, vt = await post(http, "/api/arena/vote", body)
                    statuses[status] += 1
                    if status != 200:
                        errors[reply.get("error", str(status))] += 1
                    else:
                        votes += 1
                    status, view, bt = await post(http, "/api/arena/battle", {"session": session})
                    client_ms.append(1000 * (time.perf_counter() - t0))
                    server_ms.append(vt.get("app", math.nan) + bt.get("app", math.nan))
                    statuses[status] += 1
                    if status != 200:
                        errors[view.get("error", str(status))] += 1
                        return
            except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as exc:
                errors[type(exc).__name__] += 1

    await asyncio.gather(*(voter(k) for k in range(voters)))
    return {"steps": len(client_ms), "votes": votes, "errors": dict(errors),
            "statuses": {str(k): v for k, v in statuses.items()},
            "client_p50_ms": pct(client_ms, 0.50), "client_p99_ms": pct(client_ms, 0.99),
            "client_max_ms": max(client_ms, default=math.nan),
            "server_p50_ms": pct(server_ms, 0.50), "server_p99_ms": pct(server_ms, 0.99)}


def _run_flood(source: str, duration_s: float, connections: int, send, setup=None) -> dict:
    """`connections` workers from `source`, each awaiting `send(http, context, n) -> label` back to back for
    `duration_s`; the labels counted (aiohttp; in the flooder's own process, so its CPU use never slows the honest
    clients' event loop)."""
    import aiohttp

    async def run() -> dict:
        statuses: Counter = Counter()
        errors: Counter = Counter()
        stop_at = time.monotonic() + duration_s
        connector = aiohttp.TCPConnector(limit=connections, local_addr=(source, 0))
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as http:
            context = await setup(http) if setup else None

            async def worker(n: int):
                while time.monotonic() < stop_at:
                    n += connections
                    try:
                        statuses[await send(http, context, n)] += 1
                    except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as exc:
                        errors[type(exc).__name__] += 1
            t0 = time.monotonic()
            await asyncio.gather(*(worker(k) for k in range(connections)))
            wall = time.monotonic() - t0
        total = sum(statuses.values())
        return {"requests": total, "requests_per_s": total / wall if wall else math.nan,
                "statuses": dict(sorted(statuses.items())), "errors": dict(errors)}

    return asyncio.run(run())


def _flood_main(url: str, duration_s: float, connections: int, out) -> None:
    """The battle flooder: battle requests back to back."""
    async def send(http, _, n):
        async with http.post(url + "/api/arena/battle", json={}) as r:
            await r.read()
            return str(r.status)
    out.put(_run_flood(FLOOD_SOURCE, duration_s, connections, send))


def _gradio_flood_main(url: str, duration_s: float, connections: int, out) -> None:
    """The flooder of Gradio's routes: joins under new session hashes, joins under one session, small uploads, in
    turn."""
    import secrets

    import aiohttp

    async def setup(http):
        async with http.get(url + "/config") as r:
            cfg = await r.json()
        return {"fn": next(d["id"] for d in cfg["dependencies"] if d.get("backend_fn") and not d["inputs"]),
                "one": "flood" + secrets.token_hex(6)}

    async def send(http, ctx, n):
        kind = ("new_session", "one_session", "upload")[n % 3]
        if kind == "upload":
            form = aiohttp.FormData()
            form.add_field("files", b"RIFF" + bytes(1020), filename="f.wav")
            req = http.post(url + "/gradio_api/upload", data=form)
        else:
            session = ctx["one"] if kind == "one_session" else "flood" + secrets.token_hex(6)
            req = http.post(url + "/gradio_api/queue/join", json={"data": [], "fn_index": ctx["fn"],
                                                                   "session_hash": session})
        async with req as r:
            await r.read()
            return f"{kind} {r.status}"
    out.put(_run_flood(GRADIO_FLOOD_SOURCE, duration_s, connections, send, setup))


def flood_phase(url: str, voters: int, duration_s: float, pause, connections: int, seed_: int = 0,
                gradio: bool = False) -> tuple[dict, dict, dict | None]:
    ctx = mp.get_context("spawn")
    q, gq = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_flood_main, args=(url, duration_s + pause[1], connections, q), daemon=True)]
    if gradio:
        procs.append(ctx.Process(target=_gradio_flood_main, args=(url, duration_s + pause[1], connections, gq),
                                 daemon=True))
    for proc in procs:
        proc.start()
    try:
        honest = asyncio.run(honest_voters(url, voters, duration_s, pause, seed_))
        flood = q.get(timeout=duration_s + 120)
        gradio_flood = gq.get(timeout=duration_s + 120) if gradio else None
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    return honest, flood, gradio_flood


def disk_probe(folder: str, seconds: float = 15.0, size: int = 100_000, every_s: float = 0.12) -> dict:
    """fsync latency of the disk under `folder`, alone: `size` bytes appended and fsynced every `every_s`."""
    times = []
    fd, path = tempfile.mkstemp(dir=folder, prefix="fsync_probe_")
    try:
        stop_at = time.monotonic() + seconds
        while time.monotonic() < stop_at:
            os.write(fd, os.urandom(size))
            t0 = time.perf_counter()
            os.fsync(fd)
            times.append(1000 * (time.perf_counter() - t0))
            time.sleep(every_s)
    finally:
        os.close(fd)
        os.unlink(path)
    return {"writes": len(times), "p50": pct(times, 0.5), "p99": pct(times, 0.99), "max": max(times)}


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used (its own cost, whatever else the machine runs)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def flooder_battles(data_dir, since: float) -> int:
    from arena.config import settings_from_env
    from arena.services.service import ArenaService
    from eval_backend.store import Store

    store = Store(data_dir)
    h = ArenaService(store, settings_from_env(data_dir)).ip_hash(FLOOD_SOURCE)
    return store.query("SELECT COUNT(*) FROM arena_battles WHERE ip_hash=? AND served_at >= ?", (h, since))[0][0]


def measure(voters: int, duration_s: float, pause: tuple[float, float], connections: int, quiet: bool = True,
            data_dir: str | None = None, gradio_flood: bool = True, integrity: str | None = None,
            data_parent: str | None = None, probe_disk: bool = False) -> dict:
    """Seed (unless `data_dir` is already seeded), start the app, run the phases; the summary dict. `integrity`
    on | off: the app's proof of work and gold battles (tests/support/arena_fixtures.py: INTEGRITY_ENV); None:
    as the environment says. `data_parent`: the folder of the temporary data dir; `probe_disk`: measure its disk's
    fsync first (`disk_probe`)."""
    with tempfile.TemporaryDirectory(prefix="arena_flood_", dir=data_parent) as tmp:
        data = data_dir or tmp
        if data_dir is None:
            seed(data, MODELS, n_scripts=3)
        out = {"disk_fsync_ms": disk_probe(str(Path(data).parent))} if probe_disk else {}
        # the seeded replies were never screened: with screening on (the default) no battle could be served
        app = AppProcess(data, SETTINGS, env={**UNSCREENED, "EMPATHY_ARENA_SERVER_TIMING": "1",
                                              **INTEGRITY_ENV.get(integrity or "", {})}).start()
        try:
            asyncio.run(honest_voters(app.url, min(voters, 10), 3.0, (0.2, 0.5), seed_=99))     # warm-up
            if quiet:
                c0 = cpu_s(app.proc.pid)
                out["quiet"] = asyncio.run(honest_voters(app.url, voters, duration_s, pause, seed_=1))
                out["quiet"]["app_cpu_s"] = cpu_s(app.proc.pid) - c0
            for phase, gradio in (("flood", False), ("gradio", True)):
                if gradio and not gradio_flood:
                    continue
                t0, c0 = time.time(), cpu_s(app.proc.pid)
                honest, flood, g = flood_phase(app.url, voters, duration_s, pause, connections, seed_=2,
                                               gradio=gradio)
                flood["battles_written"] = flooder_battles(data, t0)
                out[phase] = {**honest, "app_cpu_s": cpu_s(app.proc.pid) - c0, "flooder": flood,
                              **({"gradio_flooder": g} if g else {})}
        finally:
            app.stop()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--voters", type=int, default=50)
    p.add_argument("--duration", type=float, default=60.0, help="seconds per phase")
    p.add_argument("--pause", type=float, nargs=2, default=(3.0, 9.0), help="a voter's pause range (s)")
    p.add_argument("--flood-connections", type=int, default=8)
    p.add_argument("--no-quiet", action="store_true", help="skip the phase without the flood")
    p.add_argument("--no-gradio", action="store_true", help="skip the phase with the Gradio-route flood")
    p.add_argument("--integrity", choices=("on", "off"), default="on",
                   help="proof of work for anonymous voters and 5%% gold battles (the app's defaults), or neither")
    p.add_argument("--data-parent", default=None,
                   help="the folder of the temporary data dir (default: the system's temporary folder); "
                        "/dev/shm measures the app apart from its disk")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "flood.json"))
    args = p.parse_args()
    load_before = os.getloadavg()
    phases = measure(args.voters, args.duration, tuple(args.pause), args.flood_connections, not args.no_quiet,
                     gradio_flood=not args.no_gradio, integrity=args.integrity, data_parent=args.data_parent,
                     probe_disk=True)
    report = {"command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "integrity": args.integrity,
              "data_parent": args.data_parent or tempfile.gettempdir(),
              "voters": args.voters,
              "duration_s": args.duration, "pause_s": list(args.pause), "flood_connections": args.flood_connections,
              "target_flood_client_p99_ms": 50.0,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": platform.python_version(), "load_avg_before": load_before,
                          "load_avg_after": os.getloadavg()},
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **phases}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
