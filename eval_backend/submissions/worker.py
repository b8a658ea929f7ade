"""The evaluation worker: claim a job, query (or import), score, hand the replies to the arena.

    w = Worker(Store(data_dir), settings)        # settings: SubmissionSettings (allowlist, lease, metrics...)
    w.run_once()            # claim and process one job; None when the queue is empty
    w.run_forever(poll_s)   # until stop() (a threading.Event)
    handle = start_worker_thread(data_dir, settings, poll_s=5)   # the Space's in-process worker; handle.stop()

Crash safety: the runner stores each reply the moment it arrives and skips stored ok replies,
so a job whose worker was killed is claimed again once its lease expires and resumes: no
finished request is asked again (only the ones in flight at the kill). A heartbeat thread renews
the lease; when the lease is lost (expired and taken, or the job cancelled) the run is cancelled
and nothing this worker does afterwards is written (every state change is fenced by the owner).

Every ending has a reason: FAILED carries an error class, a plain-words message and an excerpt
of this job's log (API key redacted); an unexpected exception is recorded as `internal_error`
with its traceback tail instead of killing the worker.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..benchmark.model import Benchmark
from ..clients.failures import clip, redact
from ..clients.predictions import PredictionsError
from ..runner import RetryPolicy, import_predictions, run_model
from ..scoring.run import score_model
from ..scoring.settings import build_settings
from ..store import Store
from ..tasks import Request, select_requests
from . import secrets as secretstore
from .handoff import HandOff, hand_off
from .netguard import AddressPolicy, guarded_session
from .queue import Job, Queue, worker_name
from .settings import SubmissionSettings

log = logging.getLogger(__name__)


class LeaseLost(RuntimeError):
    pass


class JobFailed(Exception):
    def __init__(self, error_class: str, message: str):
        super().__init__(message)
        self.error_class, self.message = error_class, message


class _Excerpt(logging.Handler):
    """The last lines logged by one thread (the job's), for the FAILED record."""

    def __init__(self, thread_id: int, lines: int):
        super().__init__(logging.INFO)
        self.thread_id = thread_id
        self.lines: collections.deque[str] = collections.deque(maxlen=lines)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread_id:
            try:
                self.lines.append(self.format(record))
            except Exception:   # a logging handler must never raise
                pass

    def add(self, line: str) -> None:
        self.lines.append(time.strftime("%Y-%m-%d %H:%M:%S ") + line)

    def text(self, secrets: list[str | None]) -> str:
        return redact("\n".join(self.lines), secrets) or ""


class _Heartbeat(threading.Thread):
    def __init__(self, queue: Queue, job_id: int, worker: str, lease_s: float, every_s: float):
        super().__init__(daemon=True, name=f"heartbeat-{job_id}")
        self.queue, self.job_id, self.worker, self.lease_s, self.every_s = queue, job_id, worker, lease_s, every_s
        self.stopped = threading.Event()
        self.lost = threading.Event()
        self.on_lost = None              # callable, set while the async run is going

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            try:
                ok = self.queue.heartbeat(self.job_id, self.worker, self.lease_s)
            except Exception as exc:     # a locked or busy database: try again next beat
                log.warning("heartbeat of job %s failed: %s", self.job_id, exc)
                continue
            if not ok:
                self.lost.set()
                if self.on_lost:
                    self.on_lost()
                return


@dataclass
class Tally:
    requests: int
    ok: int
    failed: int
    missing: int
    failures: dict[str, int]
    first_error: str | None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def tally(store: Store, model: str, bench: Benchmark, requests) -> Tally:
    """State of the job's requests in the store now (across all the runs that resumed it)."""
    rows = {r.request_id: r for r in store.replies(model=model, benchmark_hash=bench.hash)}
    ok = failed = missing = 0
    failures: dict[str, int] = {}
    first = None
    for req in requests:
        r = rows.get(req.id)
        if r is None:
            missing += 1
        elif r.status == "ok":
            ok += 1
        else:
            failed += 1
            failures[r.error_class] = failures.get(r.error_class, 0) + 1
            first = first or f"{req.id}: {r.error_class}: {r.error_message}"
    return Tally(len(requests), ok, failed, missing, failures, first)


class Worker:
    def __init__(self, store: Store, settings: SubmissionSettings | None = None, name: str | None = None,
                 policy: AddressPolicy | None = None, handoff: HandOff | None = None, load=None):
        """`handoff`: the arena's decision on a finished model (eval_backend/submissions/handoff.py), injected by
        the assembler (app_context.py, leaderboard/worker_cli.py); None: no arena. `load(spec) -> Benchmark`:
        the app's shared loader (eval_backend/benchmark/cache.py); by default each job loads its benchmark
        afresh (a standalone worker sees a rebuilt benchmark without a restart)."""
        self.store = store
        self.handoff = handoff
        self.settings = settings or SubmissionSettings()
        self.load = load
        if not 0 < self.settings.heartbeat_s <= self.settings.lease_s / 2:
            raise ValueError(f"the heartbeat ({self.settings.heartbeat_s:g} s) must be positive and at most half "
                             f"the lease ({self.settings.lease_s:g} s), or a live worker loses its job")
        self.policy = policy or AddressPolicy.from_strings(self.settings.allow)
        self.queue = Queue(store)
        self.name = name or worker_name()
        self.stop_event = threading.Event()

    # ------------------------------------------------------------------ loop
    def run_once(self) -> Job | None:
        """Claim one job and process it to its end; the job as stored afterwards, or None if none was claimable."""
        job = self.queue.claim(self.name, self.settings.lease_s, self.settings.max_claims)
        if job is None:
            return None
        log.info("worker %s claimed job #%s (%s)", self.name, job.id, job.model)
        self.process(job)
        return self.queue.get(job.id)

    def run_forever(self, poll_s: float = 5.0) -> None:
        while not self.stop_event.is_set():
            try:
                job = self.run_once()
            except Exception:   # e.g. the database is locked for longer than busy_timeout: keep the worker alive
                log.exception("worker %s: claiming failed", self.name)
                job = None
            if job is None:
                self.stop_event.wait(poll_s)

    def stop(self) -> None:
        self.stop_event.set()

    # ------------------------------------------------------------------ one job
    def process(self, job: Job) -> None:
        s = self.settings
        excerpt = _Excerpt(threading.get_ident(), s.excerpt_lines)
        root = logging.getLogger()
        root.addHandler(excerpt)
        beat = _Heartbeat(self.queue, job.id, self.name, s.lease_s, s.heartbeat_s)
        beat.start()
        key: str | None = None
        try:
            key = self.queue.api_key(job.id) if job.has_api_key else None
            if job.has_api_key and key is None:
                raise JobFailed("secret_unavailable", "the job needs its API key, which is no longer stored; "
                                                      "retry it with the key")
            result = self._evaluate(job, key, beat, excerpt)
            if beat.lost.is_set():
                raise LeaseLost()
            if not self.queue.finish(job.id, self.name, log_excerpt=excerpt.text([key]) or None, **result):
                log.warning("job #%s: lease lost before finishing; the result files stay, the state is not written",
                            job.id)
        except LeaseLost:
            log.warning("job #%s: lease lost (expired and taken over, or cancelled); stopped", job.id)
        except JobFailed as exc:
            self.queue.fail(job.id, self.name, exc.error_class, redact(clip(exc.message, 1000), [key]) or "",
                            log_excerpt=excerpt.text([key]) or None)
        except secretstore.SecretsUnavailable as exc:
            self.queue.fail(job.id, self.name, "secret_unavailable", str(exc), log_excerpt=excerpt.text([key]) or None)
        except Exception as exc:
            tb = redact(traceback.format_exc(limit=8), [key]) or ""
            log.error("job #%s: internal error: %s", job.id, redact(str(exc), [key]))
            self.queue.fail(job.id, self.name, "internal_error",
                            redact(clip(f"{type(exc).__name__}: {exc}", 1000), [key]) or "",
                            log_excerpt=(excerpt.text([key]) + "\n" + tb[-4000:]).strip())
        finally:
            beat.stopped.set()
            root.removeHandler(excerpt)
            key = None

    def _evaluate(self, job: Job, key: str | None, beat: _Heartbeat, excerpt: _Excerpt) -> dict:
        from ..benchmark.loaders import load_benchmark  # why: the loaders (~0.5 s) off start-up
        s = self.settings
        try:
            bench = (self.load(job.benchmark) if self.load is not None
                     else load_benchmark(job.benchmark, self.store.root))
        except (ValueError, OSError) as exc:
            raise JobFailed("benchmark_error", f"the benchmark {job.benchmark!r} cannot be loaded: {exc}") from None
        try:
            requests = select_requests(bench, job.tasks, job.limit_n)
        except ValueError as exc:
            raise JobFailed("benchmark_error", str(exc)) from None
        if job.kind == "predictions":      # the job's requests, built once above, go to every step below
            excerpt.add(self._import(job, bench, requests))
        else:
            excerpt.add(self._query(job, bench, requests, key, beat))
        if beat.lost.is_set():
            raise LeaseLost()
        t = tally(self.store, job.model, bench, requests)
        usable = t.requests - t.missing
        if t.ok == 0:
            kinds = ", ".join(f"{k} ×{v}" for k, v in sorted(t.failures.items())) or "no reply stored"
            cls = "predictions_error" if job.kind == "predictions" else "endpoint_failed"
            raise JobFailed(cls, f"none of the {t.requests} requests got a usable reply ({kinds}). "
                                 f"First error: {t.first_error or 'none recorded'}")
        if usable and t.failed / usable > s.max_failed_share:
            kinds = ", ".join(f"{k} ×{v}" for k, v in sorted(t.failures.items()))
            raise JobFailed("too_many_failures",
                            f"{t.failed} of {usable} requests failed ({kinds}), more than "
                            f"{s.max_failed_share:.0%}; a retry asks only those again. First error: {t.first_error}")
        self.queue.note(job.id, self.name, "replies", f"{t.ok} ok, {t.failed} failed, {t.missing} without reply")
        results_path = self._score(job, bench)
        arena = hand_off(self.store, bench, job.model, s.arena_benchmarks, self.handoff)
        self.queue.note(job.id, self.name, "arena", "servable" if arena.get("servable") else
                        f"not servable: {arena.get('why')}")
        return {"results_path": str(results_path), "summary": t.to_dict(), "arena": arena}

    def _query(self, job: Job, bench: Benchmark, requests: list[Request], key: str | None, beat: _Heartbeat) -> str:
        s = self.settings
        spec = secretstore.KeyedModelSpec(name=job.model, base_url=job.base_url, model=job.model_id,
                                          audio_output=job.audio_output, voice=job.voice,
                                          timeout_s=s.call_timeout_s, api_key=key)

        async def go():
            task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            beat.on_lost = lambda: loop.call_soon_threadsafe(task.cancel)
            if beat.lost.is_set():
                raise LeaseLost()
            # the job's deadline: however the endpoint paces its replies (each within the call timeout,
            # retried), asking it ends here; what was stored stays, and a retry resumes from it
            async with asyncio.timeout(s.job_deadline_s):
                async with guarded_session(self.policy, s.concurrency) as session:
                    return await run_model(spec, bench, self.store, s.concurrency, tasks=job.tasks,
                                           limit=job.limit_n, policy=RetryPolicy(max_attempts=s.max_attempts),
                                           progress=False, session=session, limits=s.reply_limits(),
                                           max_stored_bytes=s.max_job_bytes, stop_on=("too_large",),
                                           requests=requests)

        try:
            summary = asyncio.run(go())
        except asyncio.CancelledError:
            raise LeaseLost() from None
        except TimeoutError:
            if beat.lost.is_set():
                raise LeaseLost() from None
            t = tally(self.store, job.model, bench, requests)
            raise JobFailed("deadline", f"the endpoint did not answer every request within the job deadline of "
                                        f"{s.job_deadline_s:g} s ({t.ok} ok, {t.failed} failed, {t.missing} not "
                                        f"answered); a retry resumes from the stored replies") from None
        finally:
            beat.on_lost = None
        if summary.stopped:
            raise JobFailed("too_large", f"stopped: a reply passed a size cap ({summary.stopped}); "
                                         f"{summary.not_asked} request(s) not asked")
        return f"run: {summary.line()}"

    def _import(self, job: Job, bench: Benchmark, requests: list[Request]) -> str:
        if not job.predictions_jsonl or not Path(job.predictions_jsonl).is_file():
            raise JobFailed("predictions_error", "the uploaded predictions file is no longer on disk; submit again")
        try:
            summary = import_predictions(job.model, bench, self.store, job.predictions_jsonl, job.predictions_dir,
                                         tasks=job.tasks, limit=job.limit_n, requests=requests)
        except PredictionsError as exc:
            raise JobFailed("predictions_error", str(exc)) from None
        return f"import: {summary.line()}"

    def _score(self, job: Job, bench: Benchmark) -> Path:
        s = self.settings
        try:
            settings = build_settings(s.judge_config, self.store.root)
            path, _doc = score_model(self.store, job.model, bench, settings, list(s.metrics) if s.metrics else None,
                                     spec=bench.source or job.benchmark)
        except (ValueError, OSError) as exc:
            raise JobFailed("scoring_error", f"scoring failed (the replies are kept; a retry re-scores "
                                             f"without asking the model again): {exc}") from None
        return path


@dataclass
class WorkerHandle:
    worker: Worker
    thread: threading.Thread

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the worker to stop after its current job, and wait for it."""
        self.worker.stop()
        self.thread.join(timeout)


def start_worker_thread(data_dir: str | Path | None = None, settings: SubmissionSettings | None = None,
                        poll_s: float = 5.0, store: Store | None = None,
                        handoff: HandOff | None = None, load=None) -> WorkerHandle:
    """An in-process worker for the Space (a daemon thread). Several app processes may each run one:
    claims are atomic, so no job runs twice. `handoff`, `load`: see Worker."""
    worker = Worker(store or Store(data_dir), settings, handoff=handoff, load=load)
    thread = threading.Thread(target=worker.run_forever, args=(poll_s,), daemon=True, name="eval-worker")
    thread.start()
    return WorkerHandle(worker, thread)
