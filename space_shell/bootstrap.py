"""Prepares the embedded default in the background so the Space serves at once.

Steps: build the demo benchmark if it is missing, start the baseline server on
loopback, run every baseline on a small *first slice* of spoken requests
(EMPATHY_ARENA_FIRST_SLICE, 12) and screen those replies (eval_backend/moderation:
the arena plays no reply that is not screened clean) so the arena has battles within
a couple of minutes, then run the baselines on the whole benchmark and score them
(resumable: a restart redoes nothing finished; the full run skips the slice's
replies, already stored ok, so the results are those of a run without it), then
screen every playable reply on the benchmark that has no screening decision yet
(eval_backend/moderation/replies.py: the baselines', and any stored before screening
existed). Operator progress lives in `BootstrapStatus` (the log, the Integrity health
tab); what the public sees of the steps up to the first battle is `opening`
(space_shell/opening.py: step k of n, an estimate from the measured rate).
"""
from __future__ import annotations

import asyncio
import atexit
import dataclasses
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from eval_backend import config
from eval_backend.inert import md, md_inline
from eval_backend.moderation.replies import screen_replies
from eval_backend.runner import run_model
from eval_backend.scoring.run import score_model
from eval_backend.scoring.settings import build_settings
from eval_backend.showcase import in_arena_pool
from eval_backend.store import Store
from eval_backend.tasks import SPOKEN_TASKS, build_requests
from space_shell.opening import Opening

log = logging.getLogger(__name__)


@dataclass
class BootstrapStatus:
    stage: str = "waiting"          # waiting | building demo | starting baselines | running baselines | ready | failed | off
    message: str = ""
    done: int = 0
    total: int = 0
    errors: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)

    def line(self) -> str:
        progress = f" ({self.done}/{self.total})" if self.total else ""
        # messages and errors may quote a dataset's text or an exception's: shown as inert text
        text = f"**{md_inline(self.stage)}**{progress}" + (f": {md(self.message)}" if self.message else "")
        if self.errors:
            text += "\n\n" + "\n".join(f"- {md(e)}" for e in self.errors[-5:])
        return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_http_ok(url: str, timeout_s: float = 120, proc: subprocess.Popen | None = None) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"baseline server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout_s:.0f} s")


def start_baseline_server(port: int, log_path: Path) -> subprocess.Popen:
    """The baseline server as a child that exits with us: `--parent-pid` makes it leave once we are gone,
    however we ended (SIGKILL included); `stop_server` ends it on a normal exit, SIGTERM or a failed bootstrap."""
    with open(log_path, "ab") as log_file:    # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "eval_backend.baselines", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--parent-pid", str(os.getpid())],
            stdout=log_file, stderr=subprocess.STDOUT, cwd=config.PROJECT_ROOT,
        )


def stop_server(proc: subprocess.Popen | None, grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace_s`; always reaped."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def choose_baseline_port() -> int:
    """EMPATHY_ARENA_BASELINE_PORT when set (the operator's choice, used as given), else 8765 if free, else
    any free loopback port. Chosen once, before the server starts, so the submissions' allowlist can name
    exactly this port (app.py)."""
    given = os.environ.get("EMPATHY_ARENA_BASELINE_PORT", "").strip()
    if given:
        return int(given)
    return 8765 if port_is_free(8765) else free_port()


def first_slice(benchmark, n: int) -> list[str]:
    """Up to `n` spoken request ids the arena can serve (usable, with a user clip, in the arena pool:
    eval_backend/showcase.py), taken from the spoken tasks
    in turn so the first battles are varied; a stable choice, so a restart asks for the same ones."""

    if n <= 0:
        return []
    queues = [[r.id for r in build_requests(benchmark, [task]) if r.usable and r.audios and in_arena_pool(r.id)]
              for task in SPOKEN_TASKS]
    chosen: list[str] = []
    while len(chosen) < n and any(queues):
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop(0))
    return chosen


class Bootstrap:
    """Runs the preparation steps in a daemon thread."""

    def __init__(self, data_dir: Path, benchmark_spec: str = "demo", models_file: str | None = None,
                 run_baselines: bool = True, concurrency: int = 4, load=None, screen_replies: bool = False,
                 first_slice: int | None = None, demo_size: str | None = None):
        """`load(spec) -> Benchmark`: the app's shared loader (eval_backend/benchmark/cache.py); by default
        `load_benchmark(spec, data_dir)`. `screen_replies`: screen the benchmark's unscreened replies (the app
        passes the arena's setting, EMPATHY_ARENA_SCREEN_REPLIES). `first_slice`: spoken requests every baseline
        answer before the full run (default EMPATHY_ARENA_FIRST_SLICE; 0: none). `demo_size`: what an empty data dir's
        demo is built at (default EMPATHY_ARENA_DEMO_SIZE, compact)."""
        self.data_dir = data_dir
        self.benchmark_spec = benchmark_spec
        self.load = load
        self.models_file = models_file
        self.run_baselines = run_baselines
        self.screen_replies = screen_replies
        self.concurrency = concurrency
        self.status = BootstrapStatus()
        self.opening = Opening()          # the public view of the steps up to the first battle
        self.first_slice = config.first_slice_size() if first_slice is None else first_slice
        self.demo_size = config.demo_size() if demo_size is None else demo_size
        self.server: subprocess.Popen | None = None
        self.benchmark = None
        self.ready = threading.Event()
        self.on_benchmark: list = []   # callbacks(benchmark), called once the benchmark is loaded
        self._port: int | None = None
        self._stop_registered = False

    @property
    def baseline_port(self) -> int:
        """The loopback port the baseline server listens (or will listen) on."""
        if self._port is None:
            self._port = choose_baseline_port()
        return self._port

    def start(self) -> "Bootstrap":
        try:                      # planned before the thread runs, so the first page already shows the steps
            self._plan(self.run_baselines and bool(self._baseline_specs()))
        except Exception:         # an unreadable models file: _run reports it
            self._plan(False)
        threading.Thread(target=self._run, name="bootstrap", daemon=True).start()
        return self

    def _set(self, stage: str, message: str = "", done: int = 0, total: int = 0) -> None:
        self.status.stage, self.status.message, self.status.done, self.status.total = stage, message, done, total
        log.info("bootstrap: %s %s %s", stage, message, f"{done}/{total}" if total else "")

    def _needs_demo_build(self) -> bool:
        return self.benchmark_spec == "demo" and not (self.data_dir / "benchmarks" / "demo" / "benchmark.json").exists()

    def _plan(self, baselines: bool) -> None:
        """The public steps up to the first battle (space_shell/opening.py)."""
        steps = [("demo", 0) if self._needs_demo_build() else ("load", 0)]
        if baselines:
            steps.append(("server", 0))
            if self.first_slice > 0:
                steps.append(("slice", self._slice_replies()))
                if self.screen_replies:
                    steps.append(("screen", self._slice_replies()))
        self.opening.plan(steps)

    def _run(self) -> None:
        try:
            baselines = self.run_baselines and bool(self._baseline_specs())
            if not self.opening.planned:
                self._plan(baselines)
            if baselines:
                self._start_server_early()
            self._prepare_benchmark()
            if baselines:
                self._ensure_server()
                self._run_first_slice()
                if self.screen_replies:
                    self._screen_first_slice()
                self._run_baselines()
            if self.screen_replies:
                self._screen()
            self._set("ready", "benchmark and baseline replies are in place")
        except Exception as exc:  # operator detail: the log and the health tab; the public sees a plain line
            log.exception("bootstrap failed")
            self.status.errors.append(f"{type(exc).__name__}: {exc}")
            self._set("failed", "see the errors below and the log")
            self.opening.fail()
            self.stop()           # a half-started baseline server is not left behind
        finally:
            self.ready.set()

    def _slice_replies(self) -> int:
        """Replies the first slice stores: every baseline on each of its requests."""
        try:
            return max(1, len(self._baseline_specs())) * self.first_slice
        except Exception:      # an unreadable models file: _run reports it
            return 2 * self.first_slice

    def _baseline_specs(self) -> list:
        return [s for s in config.load_models(self.models_file).values() if s.baseline]

    def _prepare_benchmark(self) -> None:
        from eval_backend.benchmark.loaders import load_benchmark  # why: the loaders (~0.5 s) off start-up

        if self._needs_demo_build():
            from eval_backend.benchmark.demo import build_demo  # why: espeak-ng code (~0.3 s), off start-up
            self._set("building demo benchmark", "espeak-ng synthesis, under a minute on 2 cores")
            self.opening.begin("demo")

            def clips(done: int, total: int) -> None:
                self.opening.progress("demo", done, total)
                self.status.done, self.status.total = done, total
            build_demo(self.data_dir / "benchmarks" / "demo", seed=0, progress=clips, size=self.demo_size)
            log.info("bootstrap: demo benchmark built (%s)", self.demo_size)
        else:
            self.opening.begin("load")
        self.benchmark = (self.load(self.benchmark_spec) if self.load is not None
                          else load_benchmark(self.benchmark_spec, self.data_dir))
        log.info("bootstrap: benchmark %s loaded (%s)", self.benchmark_spec, self.benchmark.hash[:12])
        for callback in self.on_benchmark:
            callback(self.benchmark)
        self.opening.finish("demo")
        self.opening.finish("load")

    def _ensure_server(self) -> int:
        """The baseline server up and answering on its port (started here if the early start did not)."""
        port = self.baseline_port
        self.opening.begin("server")
        if self.server is None and not port_is_free(port):   # taken since it was chosen: the allowlist names it
            raise RuntimeError(f"the baseline port {port} is in use; set EMPATHY_ARENA_BASELINE_PORT to a free one")
        if self.server is None or self.server.poll() is not None:
            self.start_server(port)
        self._set("starting baselines", f"loopback port {port}")
        wait_http_ok(f"http://127.0.0.1:{port}/health", proc=self.server)
        self.opening.finish("server")
        return port

    def _run_first_slice(self) -> None:
        """Both baselines on a few spoken requests first, so the arena has battles long before the full run
        ends. The replies are stored as the full run would store them; the full run then skips them (done ok),
        so nothing is asked or counted twice and the final results are those of a run without the slice."""

        ids = first_slice(self.benchmark, self.first_slice)
        specs = self._baseline_specs()
        if not ids:
            self.opening.finish("slice")
            return
        port = self.baseline_port
        total = len(ids) * len(specs)
        stored = 0
        self.opening.begin("slice", total)
        self._set("first slice", f"{len(specs)} baselines on {len(ids)} spoken requests", done=0, total=total)

        def count(_reply) -> None:
            nonlocal stored
            stored += 1
            self.opening.progress("slice", stored)
            self.status.done = stored
        for i, spec in enumerate(specs):
            spec = dataclasses.replace(spec, base_url=f"http://127.0.0.1:{port}/v1")
            summary = asyncio.run(run_model(spec, self.benchmark, Store(self.data_dir), concurrency=self.concurrency,
                                            progress=False, only=ids, on_stored=count))
            stored = (i + 1) * len(ids)       # replies stored by an earlier start count as done
            self.opening.progress("slice", stored)
            if summary.failed:
                self.status.errors.append(f"{spec.name}: {summary.failed} first-slice requests failed")
        self.opening.finish("slice")

    def _run_baselines(self) -> None:
        """Every baseline on the whole benchmark, one after the other; each is scored on a second thread as soon
        as its run ends, so scoring one overlaps the next one's run (after the first run the server has every
        clip transcribed and runs little more than speech synthesis: a core would idle)."""
        from concurrent.futures import ThreadPoolExecutor


        specs = self._baseline_specs()
        if not specs:
            return
        port = self._ensure_server()
        store = Store(self.data_dir)
        total = len(build_requests(self.benchmark)) * len(specs)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bootstrap-score") as scorer:
            scored = []
            for i, spec in enumerate(specs):
                spec = dataclasses.replace(spec, base_url=f"http://127.0.0.1:{port}/v1")
                self._set("running baselines", spec.name, done=i * total // len(specs), total=total)

                def count(_reply) -> None:
                    self.status.done += 1
                summary = asyncio.run(run_model(spec, self.benchmark, store, concurrency=self.concurrency,
                                                progress=False, on_stored=count))
                self.status.done = (i + 1) * total // len(specs)
                failed = getattr(summary, "failed", 0)
                if failed:
                    self.status.errors.append(f"{spec.name}: {failed} requests failed (see the Browse tab)")
                scored.append(scorer.submit(self._score, spec.name, None))   # its own store, on its thread
            for job in scored:
                job.result()            # a scoring error fails the bootstrap as before
        self.status.done = total

    def _screen_first_slice(self) -> None:
        """The slice's replies through the safety screen at once, so the arena can play them (Whisper's cache
        already holds the clips the baselines transcribed; the replies' own audio is new)."""
        total = self._slice_replies()
        self.opening.begin("screen", total)
        self._set("screening the first replies", "transcripts through the safety screen", done=0, total=total)

        def count(done: int) -> None:
            self.opening.progress("screen", min(done, total))
            self.status.done = done
        summary = screen_replies(Store(self.data_dir), self.benchmark.hash, on_progress=count)
        log.info("bootstrap: first slice %s", summary.line())
        self.opening.finish("screen")

    def _screen(self) -> None:
        """Screen what has no decision yet: after scoring, Whisper's cache already holds the baselines' clips."""
        self._set("screening replies", "transcripts through the safety screen")
        summary = screen_replies(Store(self.data_dir), self.benchmark.hash)
        log.info("bootstrap: %s", summary.line())

    def _start_server_early(self) -> None:
        """The baseline server first, before the benchmark is built: live battles (arena/services/live.py) need only
        the server, so live mode is up while the demo is still being built and run."""
        if not self._baseline_specs():
            return
        if port_is_free(self.baseline_port):
            self.start_server(self.baseline_port)
            self.opening.launched("server")

    def _score(self, model: str, store: Store | None = None) -> None:
        """Baselines get leaderboard rows like any submission (no judge: judge columns say "not computed").
        Runs on the scoring thread, with that thread's own store."""

        self._set("scoring baselines", model, done=self.status.done, total=self.status.total)
        score_model(store or Store(self.data_dir), model, self.benchmark, build_settings(None, self.data_dir),
                    spec=self.benchmark_spec)

    def start_server(self, port: int) -> subprocess.Popen:
        self.server = start_baseline_server(port, self.data_dir / "baselines.log")
        if not self._stop_registered:     # a normal exit (and SIGTERM, which app.py turns into one) stops it
            atexit.register(self.stop)
            self._stop_registered = True
        return self.server

    def stop(self) -> None:
        stop_server(self.server)
