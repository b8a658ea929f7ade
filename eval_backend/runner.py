"""`python -m eval_backend run`: ask one model every request of a benchmark and store the replies.

- asyncio, at most `concurrency` calls in flight (a semaphore held only during
  the HTTP call, so a request waiting out a backoff does not block a slot);
- retries on timeout / 5xx / 429 with exponential backoff and jitter, honouring
  Retry-After (capped), at most `max_attempts` attempts per request;
- every reply is stored the moment it arrives (committed: eval_backend/sqlite_checkpoints.py), and a
  run skips the request ids already stored ok, so a killed run restarted with
  the same arguments asks no finished request again;
- a failure is stored as a failed Reply with its class, never as an empty reply;
- requests whose input audio is flagged unusable are skipped and counted.

With `--predictions FILE` no model is called: a predictions JSONL made elsewhere
(format in `clients/predictions.py`) is loaded into the same Reply rows.
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Collection

import aiohttp
from tqdm import tqdm

from . import config
from .audio.io import BadAudio
from .benchmark.model import Benchmark
from .clients.failures import CallFailure
from .clients.limits import ReplyLimits
from .clients.openai_chat import call, input_audio_b64, new_session
from .clients.predictions import load_predictions
from .config import ModelSpec
from .store import Reply, Store
from .tasks import PROMPT_VERSION, TASKS, Request, select_requests

log = logging.getLogger(__name__)


@dataclass
class RetryPolicy:
    max_attempts: int = 4
    base_s: float = 0.5            # first backoff; doubles each attempt
    cap_s: float = 30.0            # no single wait is longer, whatever Retry-After says

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Wait before attempt `attempt + 1`. Retry-After wins over the schedule (but is capped)."""
        if retry_after is not None:
            return min(self.cap_s, retry_after) + rng.uniform(0, 0.1 * self.base_s)
        step = min(self.cap_s, self.base_s * 2 ** (attempt - 1))
        return step / 2 + rng.uniform(0, step / 2)   # "equal jitter": spread retries, keep the floor


@dataclass
class RunSummary:
    model: str
    benchmark_hash: str
    requests: int                  # selected (after --tasks / --limit)
    already_done: int              # stored ok by an earlier run: not asked again
    unusable: int                  # input audio flagged or unreadable: skipped
    ok: int = 0
    failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    attempts: int = 0              # HTTP attempts made (retries included)
    elapsed_s: float = 0.0
    cpu_s: float = 0.0             # this process's CPU time during the run
    stored_bytes: int = 0          # counted only under a max_stored_bytes cap
    stopped: str | None = None     # the failure that stopped the run (`stop_on`, stored-bytes cap)
    not_asked: int = 0             # requests left unasked because the run stopped

    @property
    def asked(self) -> int:
        return self.ok + self.failed

    def to_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        fails = ", ".join(f"{k}={v}" for k, v in sorted(self.failures.items())) or "none"
        return (f"{self.model}: {self.requests} requests, {self.already_done} already done, "
                f"{self.unusable} unusable (skipped), {self.ok} ok, {self.failed} failed ({fails}), "
                f"{self.attempts} attempts, {self.elapsed_s:.1f} s")


def _reply(spec: ModelSpec, bhash: str, req: Request, **kw) -> Reply:
    return Reply(model=spec.name, benchmark_hash=bhash, request_id=req.id, task=req.task,
                 item_id=req.item_id, variant=req.variant, **kw)


def _store(store: Store, reply: Reply, audio: bytes | None) -> None:
    if audio is not None:
        reply.audio_path = store.save_reply_audio(reply.model, audio)
    store.put_reply(reply)


def stored_size(answer) -> int:
    """Bytes an ok reply adds to the store: its audio, text, transcript and raw body."""
    return (len(answer.audio or b"") + len((answer.text or "").encode()) + len((answer.transcript or "").encode())
            + len(answer.raw.encode()))


async def run_model(spec: ModelSpec, benchmark: Benchmark, store: Store, concurrency: int = 8, *,
                    tasks: list[str] | None = None, limit: int | None = None,
                    policy: RetryPolicy | None = None, progress: bool = True,
                    session: aiohttp.ClientSession | None = None, seed: int | None = None,
                    limits: ReplyLimits | None = None, max_stored_bytes: int | None = None,
                    stop_on: tuple[str, ...] = (), only: Collection[str] | None = None,
                    on_stored: Callable[[Reply], None] | None = None,
                    requests: list[Request] | None = None) -> RunSummary:
    """`limits` caps each reply (clients/limits.py); `max_stored_bytes` caps what this run stores: the reply
    that would pass it is stored failed as `too_large`. A failure whose class is in `stop_on` (and the
    stored-bytes cap) stops the run: requests not yet asked are left without a reply (`summary.stopped`).
    `only`: ask just these request ids (the bootstrap's first slice; a later full run skips them as done).
    `on_stored(reply)`: called after each reply is stored (the bootstrap's progress). `requests`: the run's
    selection when the caller already made it (the worker's job: select_requests(benchmark, tasks, limit)),
    so it is not built again."""
    if not benchmark.hash:
        raise ValueError("the benchmark has no content hash; load it with load_benchmark")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    policy = policy or RetryPolicy()
    rng = random.Random(seed)
    t0, cpu0 = time.perf_counter(), time.process_time()
    requests = select_requests(benchmark, tasks, limit) if requests is None else requests
    if only is not None:
        wanted = set(only)
        requests = [r for r in requests if r.id in wanted]
    done = store.finished_request_ids(spec.name, benchmark.hash)
    todo = [r for r in requests if r.id not in done]
    usable = [r for r in todo if r.usable]
    summary = RunSummary(spec.name, benchmark.hash, len(requests), len(requests) - len(todo), len(todo) - len(usable))
    for r in todo:
        if not r.usable:
            log.info("skipped %s: input audio unusable (%s)", r.id, "; ".join(a.error or "" for a in r.audios if not a.ok))

    encode = functools.lru_cache(maxsize=256)(input_audio_b64)   # tasks share clips
    sem = asyncio.Semaphore(concurrency)
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-writer")  # fsyncs off the event loop
    loop = asyncio.get_running_loop()
    own_session = session is None
    if own_session:
        session = new_session(concurrency)
    bar = tqdm(total=len(usable), desc=spec.name, unit="req", disable=not progress, file=sys.stderr)

    full = CallFailure("too_large", f"not stored: the run's replies passed the cap of {max_stored_bytes:,} "
                                    f"stored bytes") if max_stored_bytes is not None else None
    stopping = stop_on + (("too_large",) if full is not None else ())

    async def one(req: Request) -> None:
        try:
            inputs = [encode(a) for a in req.audios]
        except BadAudio as exc:
            summary.unusable += 1
            log.warning("skipped %s: input audio unreadable: %s", req.id, exc)
            return
        attempt, answer, failure = 0, None, None
        while True:
            attempt += 1
            async with sem:
                if summary.stopped:     # checked once a slot is free: queued requests are not asked either
                    summary.not_asked += 1
                    bar.update(1)
                    return
                summary.attempts += 1
                try:
                    answer, failure = await call(session, spec, req, inputs, limits), None
                except CallFailure as exc:
                    answer, failure = None, exc
            if failure is None or not failure.retryable or attempt >= policy.max_attempts:
                break
            await asyncio.sleep(policy.delay(attempt, failure.retry_after, rng))
        if answer is not None and full is not None:
            summary.stored_bytes += stored_size(answer)     # counted before the write: concurrent calls see it
            if summary.stored_bytes > max_stored_bytes:
                answer, failure = None, full
        if answer is not None:
            reply = _reply(spec, benchmark.hash, req, status="ok", text=answer.text, transcript=answer.transcript,
                           latency_s=answer.latency_s, ttfab_s=answer.ttfab_s, attempts=attempt, raw=answer.raw)
            summary.ok += 1
        else:
            reply = _reply(spec, benchmark.hash, req, status="failed", error_class=failure.error_class,
                           error_message=failure.message, attempts=attempt)
            summary.failed += 1
            summary.failures[failure.error_class] = summary.failures.get(failure.error_class, 0) + 1
            log.warning("%s failed after %d attempt(s): %s", req.id, attempt, failure)
            if failure.error_class in stopping and not summary.stopped:
                summary.stopped = f"{req.id}: {failure}"
        await loop.run_in_executor(writer, _store, store, reply, answer.audio if answer else None)
        bar.update(1)
        if on_stored is not None:
            on_stored(reply)

    try:
        async with asyncio.TaskGroup() as tg:
            for req in usable:
                tg.create_task(one(req))
    finally:
        bar.close()
        writer.shutdown(wait=True)
        if own_session:
            await session.close()
    summary.elapsed_s = time.perf_counter() - t0
    summary.cpu_s = time.process_time() - cpu0
    _record_run(store, summary, benchmark)
    return summary


def import_predictions(model: str, benchmark: Benchmark, store: Store, path: str | Path,
                       audio_dir: str | Path | None = None, *, tasks: list[str] | None = None,
                       limit: int | None = None, requests: list[Request] | None = None) -> RunSummary:
    """Store a predictions JSONL as the model's replies (see clients/predictions.py for the format).
    `requests`: the caller's selection (as for run_model), else select_requests(benchmark, tasks, limit)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    requests = select_requests(benchmark, tasks, limit) if requests is None else requests
    loaded = load_predictions(path, requests, model, benchmark.hash, audio_dir)
    summary = RunSummary(model, benchmark.hash, len(requests), 0, 0)
    for reply, audio in loaded.replies:
        _store(store, reply, audio)
        if reply.status == "ok":
            summary.ok += 1
        else:
            summary.failed += 1
            summary.failures[reply.error_class] = summary.failures.get(reply.error_class, 0) + 1
    for rid in loaded.unknown_ids:
        log.warning("predictions line for %s matches no selected request: ignored", rid)
    if loaded.missing_ids:
        log.warning("%d selected request(s) have no predictions line: no reply stored", len(loaded.missing_ids))
    summary.elapsed_s = time.perf_counter() - t0
    summary.cpu_s = time.process_time() - cpu0
    _record_run(store, summary, benchmark, predictions=str(Path(path).resolve()))
    return summary


def _record_run(store: Store, summary: RunSummary, benchmark: Benchmark, **extra) -> None:
    """The run record `run/<model>/<hash>` that rescoring and the UI read."""
    store.put_meta(f"run/{summary.model}/{benchmark.hash}",
                   {**summary.to_dict(), "prompt_version": PROMPT_VERSION, "benchmark": benchmark.source,
                    "finished_at": time.time(), **extra})


# --- CLI ------------------------------------------------------------------------------------

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="a name from the models YAML (or any name with --predictions)")
    p.add_argument("--benchmark", required=True,
                   help="benchmark spec: demo, a folder, hf:OWNER/NAME, echomind:PATH, empathyeval:PATH")
    p.add_argument("--models-file", help=f"models YAML (default {config.DEFAULT_MODELS_FILE})")
    p.add_argument("--concurrency", type=int, default=8, help="calls in flight (default 8)")
    p.add_argument("--data-dir", help=f"data dir (default ${config.DATA_DIR_ENV} or ./data)")
    p.add_argument("--tasks", help=f"comma-separated subset of: {', '.join(TASKS)}")
    p.add_argument("--limit", type=int, help="only the first N requests (stable order)")
    p.add_argument("--max-attempts", type=int, default=4, help="attempts per request, retries included")
    p.add_argument("--predictions", help="import this predictions JSONL instead of calling a model")
    p.add_argument("--audio-dir", help="folder the predictions' audio paths are relative to "
                                       "(default: the JSONL's folder)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the run summary as JSON")


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    data = config.data_dir(args.data_dir)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    store = Store(data)
    try:
        from .benchmark.loaders import load_benchmark  # why: the loaders (~0.5 s) off start-up
        benchmark = load_benchmark(args.benchmark, data)
        if args.predictions:
            summary = import_predictions(args.model, benchmark, store, args.predictions, args.audio_dir,
                                         tasks=tasks, limit=args.limit)
        else:
            models = config.load_models(args.models_file)
            if args.model not in models:
                print(f"error: no model {args.model!r} in the models file; known: {', '.join(models) or 'none'}",
                      file=sys.stderr)
                return 2
            summary = asyncio.run(run_model(models[args.model], benchmark, store, args.concurrency, tasks=tasks,
                                            limit=args.limit, policy=RetryPolicy(max_attempts=args.max_attempts),
                                            progress=not args.no_progress))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary.to_dict()) if args.json else summary.line())
    # Every request ending failed points at the setup (wrong URL, key, model name), not at the model.
    return 1 if summary.asked and not summary.ok else 0
