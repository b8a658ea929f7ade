"""The submissions API the Submit tab and `python -m eval_backend submit` share. Plain Python, no UI.

    from eval_backend.store import Store
    from eval_backend.submissions import SubmissionService, SubmissionForm, Submitter, settings_from_env

    svc = SubmissionService(Store(data_dir), settings_from_env(demo=True))
    out = svc.submit(SubmissionForm(name=..., base_url=..., model_id=..., audio_output=True),
                     Submitter("hf-user"), dry_run=False)
    out.accepted, out.errors ({field: plain-words message}), out.job_id, out.notes
    svc.list_jobs(submitter=None) -> [Job]      # every request, newest first; job.state, job.reason
    [j.row() for j in svc.list_jobs()]          # the public table: id, model, state, reason, submitted, arena...
    svc.job(job_id), svc.events(job_id)         # one job and its history (claimed, lease expired, failed...)
    svc.model_info()                            # {model: organisation, licence, open_weights, results_path...}
    svc.cancel(job_id, Submitter), svc.retry(job_id, Submitter, api_key=None)   # JobError when not allowed
    svc.withdraw_live(job_id, Submitter)        # out of live battles (form.live: opt in; arena/services/live_submitted.py)
    svc.jobs_for(viewer), svc.job_for(job_id, viewer), svc.events_for(job_id, viewer)   # what `viewer` may see

Who sees what (`viewer` is a Submitter, or None when signed out): a job's endpoint URL, model id, voice,
submitter, worker, log excerpt and event details are shown to its submitter and the operator only; everyone
else sees its name, state, reason (with the endpoint's address and model id blanked), times and event names.

Error keys: the form's fields (name, organisation, link, licence, open_weights, kind, base_url,
model_id, audio_output, voice, api_key, predictions, live, live_calls_per_day) plus `endpoint` (the preflight's test call failed in a
way no single field explains), `duplicate`, `quota` and `benchmark` (the operator's benchmark cannot be loaded).
A failed test call is put under the field it concerns where there is one (messages.py: an endpoint that cannot
be reached under `base_url`, a refused key under `api_key`), always as a sentence of ours, never library text.

Order of checks, cheapest first: fields (pure) → API-key storage available → address policy
(DNS) → upload content → name, duplicate and quota against the database → preflight (2 real
calls). The name, duplicate and quota checks run again inside the transaction that inserts the
job, so two app processes submitting the same model at once cannot both be accepted.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..audio.io import BadAudio, decode_wav_bytes
from ..benchmark.model import Benchmark
from ..clients.failures import CallFailure, redact
from ..clients.openai_chat import call, input_audio_b64
from ..moderation.texts import check_name
from ..store import Store
from ..tasks import select_requests
from . import secrets as secretstore
from .messages import GENERAL, preflight_error, wrong_audio_sentence
from .netguard import AddressPolicy, guarded_session
from .queue import Job, JobError, Queue
from .settings import SubmissionSettings, Submitter
from .uploads import UploadError, check_upload
from .validation import SubmissionForm, normalise_base_url, validate_form

log = logging.getLogger(__name__)

@dataclass
class SubmitOutcome:
    accepted: bool
    errors: dict[str, str] = field(default_factory=dict)
    job_id: int | None = None
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"accepted": self.accepted, "errors": self.errors, "job_id": self.job_id, "dry_run": self.dry_run,
                "notes": self.notes}


def dedup_key(form: SubmissionForm, benchmark: str, tasks, limit, predictions_hash: str | None = None) -> str:
    """Same endpoint + model id + settings on the same benchmark selection, or the same predictions content."""
    if form.kind == "predictions":
        ident = ["predictions", predictions_hash]
    else:
        ident = ["endpoint", normalise_base_url(form.base_url), form.model_id.strip(), bool(form.audio_output),
                 (form.voice or "").strip()]
    ident += [benchmark, sorted(tasks) if tasks else None, limit]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()


class SubmissionService:
    def __init__(self, store: Store, settings: SubmissionSettings | None = None,
                 policy: AddressPolicy | None = None, clock=time.time, load=None):
        """`load(spec) -> Benchmark`: the app's shared loader (eval_backend/benchmark/cache.py); by default
        each spec is loaded once per service from the store's data dir."""
        self.store = store
        self.settings = settings or SubmissionSettings()
        self.policy = policy or AddressPolicy.from_strings(self.settings.allow)
        self.queue = Queue(store, clock)
        self.clock = clock
        self.load = load
        self._benchmarks: dict[str, Benchmark] = {}
        self._busy: set[str] = set()          # submitters whose preflight is running
        self._busy_lock = threading.Lock()

    # ------------------------------------------------------------------ reads
    def list_jobs(self, submitter: str | None = None) -> list[Job]:
        return self.queue.list(submitter)

    def job(self, job_id: int) -> Job:
        return self.queue.get(job_id)

    def events(self, job_id: int) -> list[dict]:
        return self.queue.events(job_id)

    def model_info(self) -> dict[str, dict]:
        """Per evaluated model (latest FINISHED submission): what the leaderboard's filters and model page show."""
        out: dict[str, dict] = {}
        for job in reversed(self.queue.list(states=("FINISHED",))):      # oldest first: the latest wins
            out[job.model] = {"job_id": job.id, "organisation": job.organisation, "link": job.link,
                              "licence": job.licence, "open_weights": job.open_weights, "kind": job.kind,
                              "audio_output": job.audio_output, "benchmark": job.benchmark,
                              "results_path": job.results_path, "submitter": job.submitter,
                              "finished_at": job.finished_at, "arena": job.arena}
        return out

    # ------------------------------------------------------------------ operator actions
    def cancel(self, job_id: int, who: Submitter) -> Job:
        return self.queue.cancel(job_id, who.name, self._operator(who))

    def retry(self, job_id: int, who: Submitter, api_key: str | None = None) -> Job:
        if api_key and not secretstore.available():
            raise JobError(secretstore.NO_KEY_MESSAGE)
        return self.queue.retry(job_id, who.name, self._operator(who), api_key)

    def withdraw_live(self, job_id: int, who: Submitter) -> Job:
        """Take a model out of live battles (its submitter or the operator); its stored key is deleted."""
        return self.queue.withdraw_live(job_id, who.name, self._operator(who))

    def _operator(self, who: Submitter) -> bool:
        return who.is_operator or self.settings.is_operator(who.name)

    # ------------------------------------------------------------------ who sees what
    def may_see_target(self, job: Job, viewer: Submitter | None) -> bool:
        """The endpoint, model id and run details of a job: its submitter and the operator only."""
        return viewer is not None and (self._operator(viewer) or viewer.name == job.submitter)

    def job_view(self, job: Job, viewer: Submitter | None) -> Job:
        return job if self.may_see_target(job, viewer) else public_view(job)

    def jobs_for(self, viewer: Submitter | None) -> list[Job]:
        return [self.job_view(j, viewer) for j in self.queue.list()]

    def job_for(self, job_id: int, viewer: Submitter | None) -> Job:
        return self.job_view(self.queue.get(job_id), viewer)

    def events_for(self, job_id: int, viewer: Submitter | None) -> list[dict]:
        events = self.queue.events(job_id)
        if self.may_see_target(self.queue.get(job_id), viewer):
            return events
        return [{**e, "actor": None, "detail": None} for e in events]

    # ------------------------------------------------------------------ submit
    def benchmark(self, spec: str | None = None) -> Benchmark:
        spec = spec or self.settings.benchmark
        if self.load is not None:
            return self.load(spec)
        if spec not in self._benchmarks:
            from ..benchmark.loaders import load_benchmark  # why: the loaders (~0.5 s) off start-up
            self._benchmarks[spec] = load_benchmark(spec, self.store.root)
        return self._benchmarks[spec]

    def submit(self, form: SubmissionForm, who: Submitter, dry_run: bool = False) -> SubmitOutcome:
        """Validate, preflight and (unless `dry_run`) queue. Never queues anything with an error."""
        errors = validate_form(form)
        if form.kind == "endpoint" and form.api_key and "api_key" not in errors and not secretstore.available():
            errors["api_key"] = secretstore.NO_KEY_MESSAGE
        if form.kind == "endpoint" and "base_url" not in errors:
            reason = self.policy.check_url(form.base_url)
            if reason:
                errors["base_url"] = f"This endpoint cannot be used: {reason}."
        if not errors:        # a flagged name or organisation is never queued, so never shown (issue 14)
            held = check_name(self.store, form.name, form.organisation)
            if held:
                errors["name"] = held
        if errors:
            return SubmitOutcome(False, errors, dry_run=dry_run)
        try:
            bench = self.benchmark()
        except (ValueError, OSError) as exc:     # the operator's problem: the details go to the log
            log.error("submissions: the benchmark %r cannot be loaded: %s", self.settings.benchmark, exc)
            return SubmitOutcome(False, {"benchmark": "The evaluation benchmark cannot be loaded right now (a "
                                                      "problem on this Space's side); nothing was queued."},
                                 dry_run=dry_run)
        s = self.settings
        requests = select_requests(bench, list(s.tasks) if s.tasks else None, s.limit)
        upload_dir, upload = None, None
        notes: list[str] = []
        if form.kind == "predictions":
            upload_dir = self.store.root / "submissions" / "uploads" / uuid.uuid4().hex
            try:
                upload = check_upload(form.predictions_path, upload_dir, s, {r.id for r in requests})
            except UploadError as exc:
                return SubmitOutcome(False, {"predictions": f"The upload was refused: {exc}."}, dry_run=dry_run)
            notes.append(f"{upload.matched} of {upload.lines} predictions lines match the benchmark's "
                         f"{len(requests)} requests")
        key = dedup_key(form, bench.source or s.benchmark, s.tasks, s.limit, upload.content_hash if upload else None)
        try:
            conflicts = self._conflicts(self.store.connect(), form.name.strip(), key, who)
            if conflicts:    # its reads were not one moment: a rival committing between them gives half the reasons
                with self.store.transaction() as conn:
                    conflicts = self._conflicts(conn, form.name.strip(), key, who)
            if not conflicts and form.kind == "endpoint":
                if s.preflight:
                    conflicts = self._preflight_once(who, form, bench, requests) or {}
                else:
                    notes.append("preflight skipped (operator setting)")
            if conflicts or dry_run:
                if upload_dir:
                    shutil.rmtree(upload_dir, ignore_errors=True)
                return SubmitOutcome(not conflicts, conflicts, dry_run=dry_run, notes=notes)
            row = {"model": form.name.strip(), "organisation": (form.organisation or "").strip() or None,
                   "link": (form.link or "").strip() or None, "licence": form.licence.strip().lower(),
                   "open_weights": int(form.open_weights), "kind": form.kind,
                   "base_url": form.base_url.strip() if form.kind == "endpoint" else None,
                   "model_id": form.model_id.strip() if form.kind == "endpoint" else None,
                   "audio_output": int(bool(form.audio_output)) if form.kind == "endpoint" else 0,
                   "voice": (form.voice or "").strip() or None,
                   "predictions_dir": str(upload.audio_dir) if upload else None,
                   "predictions_jsonl": str(upload.jsonl) if upload else None,
                   "predictions_hash": upload.content_hash if upload else None,
                   "benchmark": bench.source or s.benchmark, "tasks": list(s.tasks) if s.tasks else None,
                   "limit_n": s.limit, "dedup_key": key, "submitter": who.name,
                   "live_opt_in": int(form.live is True),
                   "live_calls_per_day": int(form.live_calls_per_day) if form.live is True else None}
            with self.store.transaction() as conn:   # re-checked under the write lock: current data only
                conflicts = self._conflicts(conn, row["model"], key, who)
                key_to_keep = (form.api_key or None) if form.kind == "endpoint" else None
                job_id = None if conflicts else self.queue.insert(conn, row, key_to_keep)
        except BaseException:
            if upload_dir:
                shutil.rmtree(upload_dir, ignore_errors=True)
            raise
        if conflicts:
            if upload_dir:
                shutil.rmtree(upload_dir, ignore_errors=True)
            return SubmitOutcome(False, conflicts, notes=notes)
        return SubmitOutcome(True, {}, job_id=job_id, notes=notes)

    def _conflicts(self, conn, name: str, key: str, who: Submitter) -> dict[str, str]:
        """Name taken, duplicate, over quota: read from the database now, never from a cache."""
        errors: dict[str, str] = {}
        same = self.queue.active_duplicate(conn, key)
        if same:
            errors["duplicate"] = (f"The same model with the same settings was already submitted "
                                   f"(#{same['id']}, {same['state']}).")
        taken = self.queue.active_named(conn, name)
        if taken:
            errors["name"] = f"The name '{name}' is taken by submission #{taken['id']} ({taken['state']})."
        elif self.store.has_replies_named(name, conn):
            failed = self.queue.latest_named(conn, name)
            hint = f" (ask the operator to retry submission #{failed['id']})" if failed else ""
            errors["name"] = f"A model named '{name}' already has stored replies here; choose another name{hint}."
        if not self._operator(who):
            since = self.clock() - self.settings.quota_window_s
            n = self.queue.submitted_since(conn, who.name, since)
            if n >= self.settings.quota_per_window:
                days = self.settings.quota_window_s / 86400
                errors["quota"] = (f"You have made {n} submissions in the last {days:g} days; the limit is "
                                   f"{self.settings.quota_per_window}. Try again later.")
        return errors

    # ------------------------------------------------------------------ preflight
    def _preflight_once(self, who: Submitter, form: SubmissionForm, bench: Benchmark,
                        requests) -> dict[str, str] | None:
        """One preflight per submitter at a time: the UI's pool of slots is shared, so one person clicking
        Check repeatedly must not take every slot."""
        with self._busy_lock:
            if who.name in self._busy:
                return {GENERAL: "A check of yours is still running; wait for its result, then try again."}
            self._busy.add(who.name)
        try:
            return self.preflight(form, bench, requests)
        finally:
            with self._busy_lock:
                self._busy.discard(who.name)

    def preflight(self, form: SubmissionForm, bench: Benchmark, requests) -> dict[str, str] | None:
        """Send `preflight_items` benchmark requests through the real client; None when every reply parses
        (and its audio decodes, when audio output was asked for), else `{field: sentence}` (messages.py)."""
        spec = secretstore.KeyedModelSpec(name=form.name.strip(), base_url=form.base_url.strip(),
                                          model=form.model_id.strip(), audio_output=bool(form.audio_output),
                                          voice=(form.voice or "").strip() or None,
                                          timeout_s=self.settings.preflight_timeout_s, api_key=form.api_key or None)
        usable = [r for r in requests if r.usable]
        if form.audio_output:
            usable.sort(key=lambda r: not r.wants_audio)   # stable: spoken requests first
        picked = usable[: self.settings.preflight_items]
        if not picked:
            return {"benchmark": "The benchmark has no usable request to test the endpoint with."}

        limits = self.settings.reply_limits()     # no body excerpt: the message goes back to the submitter
        deadline = self.settings.check_deadline_s

        async def go() -> dict[str, str] | None:
            try:
                async with asyncio.timeout(deadline), guarded_session(self.policy, 2) as session:
                    return await ask(session)
            except TimeoutError:
                return {GENERAL: f"The test calls did not finish within {deadline:g} s (deadline); "
                                 f"the endpoint must answer faster."}

        async def ask(session) -> dict[str, str] | None:
            for req in picked:
                try:
                    inputs = [input_audio_b64(a) for a in req.audios]
                except BadAudio:
                    continue
                try:
                    answer = await call(session, spec, req, inputs, limits)
                except CallFailure as exc:     # the client's text goes to the log; the submitter gets ours
                    log.info("preflight of %r failed: %s: %s", form.name.strip(), exc.error_class,
                             redact(exc.message, [form.api_key]))
                    fld, sentence = preflight_error(exc.error_class, exc.message, spec.timeout_s)
                    return {fld: sentence}
                if form.audio_output and req.wants_audio:
                    if answer.audio is None:
                        return {"audio_output": "The endpoint answered without audio although 'Answers with "
                                                "audio' is ticked (its reply had no message.audio.data)."}
                    try:
                        decode_wav_bytes(answer.audio)
                    except BadAudio:
                        return {GENERAL: wrong_audio_sentence()}
                elif not (answer.text or answer.transcript):
                    return {GENERAL: "The endpoint's reply has no text."}
            return None

        errors = run_coroutine(go())
        return {k: redact(v, [form.api_key]) or "" for k, v in errors.items()} if errors else None


HIDDEN = "[hidden]"


def public_view(job: Job) -> Job:
    """The job as a stranger may see it: no endpoint, model id, voice, submitter, worker, log, paths or hashes (a
    hash of the endpoint confirms a guess); the reason with the endpoint's address and the model id blanked (a
    connection error names the host it could not reach)."""
    secrets_ = []
    if job.base_url:
        parts = urlsplit(job.base_url.strip())
        secrets_ += [job.base_url.strip(), job.base_url.strip().rstrip("/"), parts.netloc, parts.hostname or ""]
    if job.model_id:
        secrets_.append(job.model_id.strip())
    message = job.error_message
    for s in sorted({s for s in secrets_ if len(s) >= 3}, key=len, reverse=True):
        message = message.replace(s, HIDDEN) if message else message
    if message and job.submitter:
        message = message.replace(f"cancelled by {job.submitter}", "cancelled by its submitter")
    return dataclasses.replace(job, base_url=HIDDEN if job.base_url else None,
                               model_id=HIDDEN if job.model_id else None, voice=None, submitter="",
                               lease_owner=None, log_excerpt=None, predictions_dir=None, predictions_jsonl=None,
                               dedup_key="", predictions_hash=None, error_message=message)


def run_coroutine(coro):
    """asyncio.run, also from a thread that already runs an event loop (an async UI handler):
    then the coroutine runs on a fresh loop in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="preflight") as pool:
        return pool.submit(asyncio.run, coro).result()
