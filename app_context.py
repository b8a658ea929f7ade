"""The Space's services, assembled once: `AppContext.from_env()` is the only place that builds them.

    ctx = AppContext.from_env()          # builds; starts nothing
    ctx.start()                          # Hub restore, the bootstrap, the live sweeper, the in-process worker,
                                         # the health checks

Data flow inside one app process (docs/architecture.md has the picture):
- `benchmarks` (BenchmarkCache) loads each spec once. The bootstrap loads `spec` through it and hands the result
  to the arena (`arena.set_benchmarks`); the submission service (preflight, predictions check) and the
  in-process worker (each job) load through the same cache, so all four see one object and one content hash.
- The arena serves `spec` (`ArenaSettings.benchmark_specs`), and the submission settings carry the same specs as
  `arena_benchmarks`, so the worker's arena hand-off judges servability against what the arena really serves.
- One `SubmissionService` (Submit tab, Benchmark leaderboard, tests) and one `Identity` built from its settings.
- One `HealthMonitor`: the background check loop and the Integrity health tab call the same monitor, so an alert
  is logged once, not once per caller.
Tabs read these fields through the contract in space_shell/tab_contract.py; none builds a service of its own.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from arena.config import settings_from_env as arena_settings_from_env
from arena.services.handoff import arena_handoff
from arena.services.health import HealthConfig, HealthMonitor
from arena.services.live import LiveService, LiveSettings, contestants_from_models
from arena.services.live_submitted import SubmittedContestants
from arena.web.media import MediaTokens
from arena.ui.opening_banner import header_line
from arena.services.service import ArenaService
from eval_backend import config
from eval_backend.benchmark.cache import BenchmarkCache
from space_shell.bootstrap import Bootstrap
from space_shell.hub_sync import HubSync
from eval_backend.inert import md
from eval_backend.scoring.judge_env import space_judge_config
from space_shell.signing import Signer
from eval_backend.store import Store
from eval_backend.submissions import SubmissionService, SubmissionSettings
from eval_backend.submissions import settings_from_env as submission_settings_from_env
from eval_backend.submissions.worker import WorkerHandle, start_worker_thread
from leaderboard.identity import Identity

log = logging.getLogger("empathy_arena")

BENCHMARK_ENV = "EMPATHY_ARENA_BENCHMARK"            # the benchmark the Space prepares and the arena serves
HEALTH_EVERY_S = 300.0                               # background integrity check period


@dataclass(eq=False)
class AppContext:
    data_dir: Path
    spec: str                                        # EMPATHY_ARENA_BENCHMARK
    store: Store
    benchmarks: BenchmarkCache
    bootstrap: Bootstrap
    arena: ArenaService
    submission_service: SubmissionService
    identity: Identity
    health: HealthMonitor
    hub: HubSync
    media: MediaTokens                               # audio URLs for Browse and the model pages
    judge_error: str | None = None                   # the judge settings were rejected at start-up
    worker: WorkerHandle | None = None               # set by start_worker()
    live: LiveService | None = None                  # "Use my voice" battles (arena/services/live.py)

    @classmethod
    def from_env(cls, data_dir=None) -> "AppContext":
        data_dir = config.data_dir(data_dir)
        store = Store(data_dir)
        spec = os.environ.get(BENCHMARK_ENV, "demo")
        benchmarks = BenchmarkCache(data_dir)
        arena_settings = arena_settings_from_env(data_dir, benchmark_specs=(spec,))
        # the bootstrap screens the benchmark's unscreened replies when the arena plays screened replies only
        bootstrap = Bootstrap(data_dir, benchmark_spec=spec, load=benchmarks,
                              run_baselines=os.environ.get("EMPATHY_ARENA_BOOTSTRAP", "1") != "0",
                              screen_replies=arena_settings.screen_replies)
        # The arena serves the benchmark the bootstrap loads (nothing until then).
        arena = ArenaService(store, arena_settings, benchmarks=[])
        bootstrap.on_benchmark.append(lambda b: arena.set_benchmarks([b]))
        # The embedded demo's baselines listen on loopback, so the demo allowlists exactly their port
        # (not the rest of 127.0.0.1, where this app listens). EMPATHY_ARENA_DEMO_LOOPBACK=0 turns that off.
        demo = spec == "demo" and os.environ.get("EMPATHY_ARENA_DEMO_LOOPBACK", "1") != "0"
        settings = submission_settings_from_env(demo=demo, baseline_port=bootstrap.baseline_port if demo else None)
        # the worker's arena hand-off asks "does the arena serve this benchmark?" of the arena's own specs
        settings = settings.with_(arena_benchmarks=arena.settings.benchmark_specs)
        # the in-process worker's judges, from EMPATHY_ARENA_*JUDGE_* (eval_backend/scoring/judge_env.py)
        judge_error = None
        try:
            judge_config = space_judge_config(data_dir)
        except (ValueError, OSError) as exc:
            judge_config, judge_error = None, str(exc)
            log.error("judge settings ignored, scoring without a judge: %s", exc)
        if judge_config:
            settings = settings.with_(judge_config=judge_config)
        service, identity = _submission_parts(store, settings, benchmarks)
        # Live battles (arena/services/live.py): the models file's audio models answer the voter's own recording; the
        # baselines at the bootstrap's port, which the bootstrap starts first, so live mode does not wait for it.
        # Submitted models that opted in join them once evaluated (arena/services/live_submitted.py, same settings: the
        # submission allowlist, caps and call timeout).
        try:
            contestants = contestants_from_models(baseline_url=f"http://127.0.0.1:{bootstrap.baseline_port}/v1")
        except (ValueError, OSError) as exc:
            contestants = []
            log.error("live mode off: the models file cannot be read: %s", exc)
        return cls(data_dir=data_dir, spec=spec, store=store, benchmarks=benchmarks, bootstrap=bootstrap,
                   arena=arena, submission_service=service, identity=identity,
                   health=HealthMonitor(store, HealthConfig.from_settings(arena.settings)),
                   hub=HubSync(store, append_votes=arena.append_votes),
                   media=MediaTokens(Signer.for_data_dir(data_dir)), judge_error=judge_error,
                   live=LiveService(arena, contestants, LiveSettings.from_env(),
                                    submitted=SubmittedContestants(store, settings)))

    # ------------------------------------------------------------------ submission settings
    @property
    def submissions(self) -> SubmissionSettings:
        """The submission settings the service, the Submit tab and the in-process worker use."""
        return self.submission_service.settings

    @submissions.setter
    def submissions(self, settings: SubmissionSettings) -> None:
        """Other settings (before `start_worker`): the service and the identity are rebuilt from them, so the
        context still holds exactly one of each."""
        self.submission_service, self.identity = _submission_parts(self.store, settings, self.benchmarks)

    # ------------------------------------------------------------------ reads
    @property
    def benchmark(self):
        """The Space's benchmark once the bootstrap has loaded it (None while preparing)."""
        return self.bootstrap.benchmark

    def status_line(self) -> str:
        """The page header's line for the public: what is being prepared, in plain words (no diagnostics)."""
        return header_line(self.bootstrap)

    def operator_status_line(self) -> str:
        """The bootstrap's stages and errors and the Hub sync state: for the log's reader and the operator's part
        of the Integrity health tab (leaderboard/operator_status.py), never the public header."""
        return self.bootstrap.status.line() + "\n\n" + md(self.hub.status_line())   # Hub errors: inert text

    # ------------------------------------------------------------------ background work
    def start(self, worker: bool | None = None) -> "AppContext":
        """Restore from the Hub, prepare the benchmark, sweep live recordings past retention, run the in-process
        worker (EMPATHY_ARENA_WORKER, 1) and the health checks. Returns at once; everything runs on daemon threads."""
        self.hub.start()          # restores from the Hub before serving (no-op when not configured or offline)
        self.bootstrap.start()
        if self.live is not None:
            self.live.start_sweeper()     # deletes live recordings on schedule (retention)
            self.live.warm_up()           # the voter's transcriber loads now, not on the first recording
        if worker is None:
            worker = os.environ.get("EMPATHY_ARENA_WORKER", "1") != "0"
        if worker:
            self.start_worker()
        self.start_health_checks()
        return self

    def start_worker(self, poll_s: float = 5.0) -> WorkerHandle:
        """The in-process evaluation worker, on this context's store, settings and benchmark cache."""
        self.worker = start_worker_thread(store=self.store, settings=self.submissions, poll_s=poll_s,
                                          handoff=arena_handoff, load=self.benchmarks)
        return self.worker

    def start_health_checks(self, every_s: float = HEALTH_EVERY_S) -> threading.Thread:
        """Alerts must reach the log even when no page is open (the health tab calls the same monitor). The
        integrity sweep runs first (arena/services/vote_flags.py: flags, spent challenges, expired gold clips), so the check
        sees its flags."""
        def loop():
            while True:
                try:
                    report = self.arena.integrity_upkeep()
                    log.info("integrity sweep: %s", report.as_dict())
                except Exception:  # a failed sweep must not stop the health check or the next sweep
                    log.exception("integrity sweep failed")
                try:
                    self.health.check()
                except Exception:  # a failed check must not stop the next one
                    log.exception("integrity health check failed")
                time.sleep(every_s)

        thread = threading.Thread(target=loop, name="health-checks", daemon=True)
        thread.start()
        return thread


def _submission_parts(store: Store, settings: SubmissionSettings,
                      benchmarks: BenchmarkCache) -> tuple[SubmissionService, Identity]:
    """The submission service and who-is-asking, both from one set of settings."""
    return SubmissionService(store, settings, load=benchmarks), Identity.from_env(settings.operators, store.root)
