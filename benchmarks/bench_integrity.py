"""What the integrity checks of issue 23 cost: the proof of work (server and solver) and the periodic sweep.

    python benchmarks/bench_integrity.py [--runs 5] [--solves 10] [--votes 20000 100000] [--browser]

- challenge: the server making one ALTCHA challenge (arena/services/pow.py: one PBKDF2 derivation of `pow_cost` iterations,
  deterministic mode), per challenge;
- verify: checking one solution (`PowGate.check`: base64, a depth-capped JSON parse, two HMACs), per solution;
- solve: a script solving one challenge at the default cost with the `altcha` package (one core), per challenge;
- browser (--browser): Debian's chromium running the vendored widget on the arena page, from the widget being
  on the page to its solution being there (the app's defaults; includes the widget's 0.5 s minimum duration);
- gold serve: `serve_battle` in-process on a seeded SQLite data dir, every battle gold vs none (the check clips
  are built ahead, off the battle's path: the timing a client could compare should not differ);
- sweep: `sweeps.flag_votes` (the rules, pure) and `vote_flags.run_sweep` (load the votes from SQLite, run the
  rules, write the flags) on a log of N synthetic votes from 2% shills, 1% bots and honest voters.
Medians of `--runs` (the solve: of `--solves`), with the machine's load average; writes
benchmarks/out/integrity.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.core import sweeps  # noqa: E402
from arena.services import vote_flags
from arena.config import ArenaSettings  # noqa: E402
from arena.services.pow import PowGate  # noqa: E402
from space_shell.signing import Signer  # noqa: E402
from eval_backend.store import Store  # noqa: E402
from tests.support.arena_fixtures import solve_pow  # noqa: E402

MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")


def timed(fn, n: int) -> float:
    """Median seconds of `n` calls."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def pow_costs(runs: int, solves: int) -> dict:
    gate = PowGate(lambda: Signer(b"k" * 32), ArenaSettings(pow_every_votes=50), time.time)
    challenge_s = timed(gate.challenge, 50 * runs)
    payloads = [solve_pow(gate.challenge()) for _ in range(max(solves, 3))]
    solve_cpu = []
    for _ in range(solves):
        c = gate.challenge()
        t0 = time.process_time()
        solve_pow(c)
        solve_cpu.append(time.process_time() - t0)
    k = iter(range(10**9))
    verify_s = timed(lambda: gate.check(payloads[next(k) % len(payloads)]), 200 * runs)
    return {"challenge_ms": 1000 * challenge_s, "verify_ms": 1000 * verify_s,
            "solve_cpu_s_median": statistics.median(solve_cpu), "solve_cpu_s_max": max(solve_cpu),
            "cost_iterations": gate.settings.pow_cost, "counter_max": gate.settings.pow_counter_max}


def gold_serve(runs: int) -> dict:
    """Median ms of serve_battle, ordinary vs gold (the gold pool filled beforehand, untimed)."""
    from arena.services.service import ArenaService
    from tests.support.arena_fixtures import seed
    out = {}
    with tempfile.TemporaryDirectory(prefix="bench_gold_") as tmp:
        seed(tmp, MODELS[:2], n_scripts=3)
        for name, share in (("plain", 0.0), ("gold", 1.0)):
            svc = ArenaService(Store(tmp), ArenaSettings(gold_share=share, session_open_battles=10**6),
                               rng=random.Random(1))
            svc.serve_battle("warm", "10.0.0.1")                       # the index and caches, once
            svc.heard.wait_idle()      # the battle-audio thread has made and measured every clip (as in the app
            #                            a while after its index is built: the window is in docs/security.md)
            n = 40 * runs
            if share:                          # clips for every timed battle, built before (as the app's pool is)
                svc.gold.POOL = n + 1
                svc.gold.fill(svc.index.candidates()[0], set())
                svc.gold.POOL = 0              # and no refill thread during the timing
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                svc.serve_battle("s", "10.0.0.1")
                times.append(time.perf_counter() - t0)
            out[f"{name}_serve_ms"] = 1000 * statistics.median(times)
    return out


def synthetic_votes(n: int, rng: random.Random, t0: float = 1_767_225_600.0) -> list[sweeps.VoteFacts]:
    out = []
    for k in range(n):
        who = rng.random()
        a, b = rng.sample(MODELS, 2)
        if who < 0.02:            # shills: 20 of them, always m6 when it plays
            voter, slot = f"session:shill{k % 20}", "A" if a == "m6" else "B" if b == "m6" else "A"
        elif who < 0.03:          # bots: 5, fast
            voter, slot = f"session:bot{k % 5}", rng.choice("AB")
        else:                     # honest: m1 > m2 > ... mostly
            voter = f"session:h{rng.randrange(n // 20 + 1)}"
            slot = "A" if (a < b) == (rng.random() < 0.7) else "B"
        out.append(sweeps.VoteFacts(k + 1, voter, f"address:{voter[-6:]}", t0 + k * 3.0, a, b, slot))
    return out


def sweep_costs(n: int, runs: int) -> dict:
    facts = synthetic_votes(n, random.Random(n))
    pure = timed(lambda: sweeps.flag_votes(facts, {}), runs)
    flags = sweeps.flag_votes(facts, {})
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        store = Store(tmp)
        with store.transaction() as conn:
            for v in facts:
                conn.execute('INSERT INTO arena_votes (id, model_a, model_b, winner, slot, session_id, ip_hash, '
                             'created_at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, \'live\')',
                             (v.id, v.model_a, v.model_b, v.winner or v.slot, v.slot, v.voter, v.address,
                              v.created_at))
        whole = timed(lambda: vote_flags.run_sweep(store), runs)
    return {"votes": n, "flags": len(flags), "rules_s": pure, "run_sweep_s": whole}


def browser_solve(runs: int) -> dict:
    """Seconds from the widget on the page to its solution, in chromium (the app's defaults)."""
    from arena.ui.pow_ui import PAYLOAD_JS
    from tests.support.arena_fixtures import AppProcess, seed
    from tests.support.browser import launch_chromium
    out = []
    with tempfile.TemporaryDirectory(prefix="bench_pow_ui_") as tmp:
        seed(tmp, MODELS[:2], n_scripts=1)
        app = AppProcess(tmp, {"min_listen_s": 0}, env={"EMPATHY_ARENA_POW": "1", "EMPATHY_ARENA_GOLD_SHARE": "0",
                                                         "EMPATHY_ARENA_SCREEN_REPLIES": "0"}).start()
        try:
            with launch_chromium() as browser:
                for _ in range(runs):
                    page = browser.new_page()
                    page.goto(app.url + "/")
                    page.click("#arena-next")
                    page.wait_for_selector("#arena-pow altcha-widget", state="attached", timeout=60_000)
                    t0 = time.perf_counter()
                    page.wait_for_function(f"() => !!({PAYLOAD_JS})", timeout=120_000, polling=20)
                    out.append(time.perf_counter() - t0)
                    page.close()
        finally:
            app.stop()
    return {"widget_to_solution_s_median": statistics.median(out), "all_s": out}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--solves", type=int, default=10)
    p.add_argument("--votes", type=int, nargs="+", default=[20_000, 100_000])
    p.add_argument("--browser", action="store_true")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "integrity.json"))
    args = p.parse_args()
    load_before = os.getloadavg()
    report = {"command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "pow": pow_costs(args.runs, args.solves),
              "gold": gold_serve(args.runs),
              "sweep": [sweep_costs(n, args.runs) for n in args.votes]}
    if args.browser:
        report["browser"] = browser_solve(args.runs)
    report["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                         "load_avg_before": load_before, "load_avg_after": os.getloadavg()}
    report["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
