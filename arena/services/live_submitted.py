"""Submitted models in live battles (issue 22): opted in, evaluated, screened, within their budget, untrusted.

A submitter ticks "battle live" on the Submit tab (or `submit --live --live-calls-per-day N`) and sets how many live
calls a day their endpoint may receive. The model joins live matchmaking (arena/services/live.py) once its submission is
FINISHED and the arena hand-off found its replies servable (spoken replies with audio, not all held by the safety
screen: arena/services/handoff.py), and while it is not paused (in the arena, or from live battles by the rule below) and has
calls left in the last 24 hours.

Its endpoint is untrusted, as during evaluation: every call goes through the SSRF guard
(eval_backend/submissions/netguard.py: the address policy checked on each connection, redirects never followed),
the submission reply caps with no body excerpt in messages (eval_backend/clients/limits.py), and the live call
timeout. Its API key is the one stored encrypted with the submission (eval_backend/submissions/secrets.py: a job
that opted in keeps it after FINISHED; withdrawing deletes it); it lives decrypted only in this process's memory
(`KeyedModelSpec`), and neither it nor the endpoint ever reaches a voter: a failure is told in plain words of ours.

**A failed or slow call voids the battle** (HTTP 503 `void`, nothing stored: never a half-battle, never a silent
stand-in for a model the voter was about to rate) and counts against the model's live health: every call is
recorded (`arena_live_calls`: model, time, ok or the failure class). **Pause rule:** after `PAUSE_AFTER` (3) failed
calls in a row the model is paused from live battles (`arena_live_paused`, with the reason; its benchmark battles
go on); `python -m arena unpause MODEL` (the operator) lifts it, and failures before that no longer count.

    pool = SubmittedContestants(store, submission_settings)
    pool.specs()            # the submitted contestants now (cached a few seconds)
    await pool.call(spec, request, audio_b64, timeout_s, max_audio_s)   # an Answer, or raises SubmittedFailed
    pool.health()           # per model: calls and failures in 24 h, failures in a row, budget, paused
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time

from arena.services.writer import WRITER
from arena.tables import storage
from eval_backend.clients import openai_chat
from eval_backend.clients.failures import CallFailure
from eval_backend.config import ModelSpec
from eval_backend.store import register_migration
from eval_backend.submissions import secrets as secretstore
from eval_backend.submissions.netguard import AddressPolicy, guarded_session
from eval_backend.submissions.queue import Queue

log = logging.getLogger(__name__)

PAUSE_AFTER = 3            # failed live calls in a row that pause a submitted model from live battles
DAY_S = 86400.0
CACHE_S = 5.0
SUBMITTED = "submitted_job"       # ModelSpec.extra key: the submission id of a submitted contestant
FAILURE_WORDS = {"timeout": "it did not answer in time", "connection": "it could not be reached",
                 "bad_audio": "its reply had no usable audio", "too_large": "its reply was too large"}

register_migration("arena_live_submitted_0001", (
    """CREATE TABLE IF NOT EXISTS arena_live_calls (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    model       TEXT NOT NULL,
    at          REAL NOT NULL,
    ok          INTEGER NOT NULL CHECK (ok IN (0, 1)),
    error_class TEXT
)""",
    "CREATE INDEX IF NOT EXISTS arena_live_calls_model ON arena_live_calls (model, at)",
    """CREATE TABLE IF NOT EXISTS arena_live_paused (
    model       TEXT PRIMARY KEY,
    paused      INTEGER NOT NULL CHECK (paused IN (0, 1)),
    reason      TEXT,
    since       REAL NOT NULL
)""",
))


class SubmittedFailed(Exception):
    """A submitted contestant's live call failed: the battle is void (arena/services/live.py answers 503 `void` with
    `str(exc)`, a message of ours that names neither the model nor its endpoint)."""


def void_message(error_class: str) -> str:
    why = FAILURE_WORDS.get(error_class, "its reply failed")
    return (f"One of the two models could not take part ({why}), so this battle is void: nothing was kept. "
            "Please try again.")


def is_submitted(spec: ModelSpec) -> bool:
    return SUBMITTED in (spec.extra or {})


# ---------------------------------------------------------------- the tables' SQL
def calls_since(store, since: float) -> dict[str, int]:
    return {r["model"]: int(r["n"]) for r in store.query(
        "SELECT model, COUNT(*) AS n FROM arena_live_calls WHERE at > ? GROUP BY model", (since,))}


def live_paused(store) -> dict[str, str]:
    return {r["model"]: r["reason"] or "" for r in store.query(
        "SELECT model, reason FROM arena_live_paused WHERE paused=1")}


def record_call(store, model: str, at: float, ok: bool, error_class: str | None) -> str | None:
    """Record one live call of a submitted model; pause it when it has now failed PAUSE_AFTER times in a row
    (counted since its last unpause). Returns the pause reason when this call paused it."""
    with store.transaction() as conn:
        conn.execute("INSERT INTO arena_live_calls (model, at, ok, error_class) VALUES (?, ?, ?, ?)",
                     (model, at, int(ok), error_class))
        if ok:
            return None
        row = conn.execute("SELECT paused, since FROM arena_live_paused WHERE model=?", (model,)).fetchone()
        if row is not None and row["paused"]:
            return None
        since = row["since"] if row is not None else 0.0
        recent = conn.execute("SELECT ok, error_class FROM arena_live_calls WHERE model=? AND at >= ? "
                              "ORDER BY id DESC LIMIT ?", (model, since, PAUSE_AFTER)).fetchall()
        if len(recent) < PAUSE_AFTER or any(r["ok"] for r in recent):
            return None
        reason = (f"paused from live battles after {PAUSE_AFTER} failed live calls in a row "
                  f"({', '.join(r['error_class'] or 'failed' for r in reversed(recent))})")
        conn.execute("INSERT INTO arena_live_paused (model, paused, reason, since) VALUES (?, 1, ?, ?) "
                     "ON CONFLICT (model) DO UPDATE SET paused=1, reason=excluded.reason, since=excluded.since",
                     (model, reason, at))
    log.warning("live: %s %s", model, reason)
    return reason


def unpause_live(store, model: str, at: float) -> bool:
    """Lift a live pause; failures before now no longer count towards the next one. True when one was lifted."""
    with store.transaction() as conn:
        cur = conn.execute("UPDATE arena_live_paused SET paused=0, reason=NULL, since=? WHERE model=? AND paused=1",
                           (at, model))
        return cur.rowcount == 1


class SubmittedContestants:
    def __init__(self, store, settings, clock=time.time):
        """`settings`: the SubmissionSettings (its allowlist, reply caps and call timeout apply here too)."""
        store.migrate()             # this module's tables, when the store was opened before it was imported
        self.store = store
        self.settings = settings
        self.policy = AddressPolicy.from_strings(settings.allow)
        self.clock = clock
        self.queue = Queue(store)
        self._cached: tuple[float, list[ModelSpec]] = (-CACHE_S, [])
        self._lock = threading.Lock()

    def jobs(self):
        """FINISHED endpoint submissions that opted in, speak, and were found servable by the arena (newest per
        model)."""
        out = {}
        for job in reversed(self.queue.list(states=("FINISHED",))):
            if job.live_opt_in and job.kind == "endpoint" and job.audio_output and (job.arena or {}).get("servable"):
                out[job.model] = job
        return list(out.values())

    def specs(self) -> list[ModelSpec]:
        """The submitted contestants now: not paused (arena or live), with calls left in the last 24 h."""
        with self._lock:
            at, specs = self._cached
            if time.monotonic() - at < CACHE_S:
                return self._available(specs)
            specs = []
            for job in self.jobs():
                try:
                    key = self.queue.api_key(job.id) if job.has_api_key else None
                except secretstore.SecretsUnavailable as exc:
                    log.warning("live: submission #%s left out: %s", job.id, exc)
                    continue
                if job.has_api_key and key is None:
                    continue
                specs.append(secretstore.KeyedModelSpec(
                    name=job.model, base_url=job.base_url, model=job.model_id, audio_output=True, voice=job.voice,
                    timeout_s=self.settings.call_timeout_s, api_key=key,
                    extra={SUBMITTED: job.id, "calls_per_day": int(job.live_calls_per_day or 0)}))
            self._cached = (time.monotonic(), specs)
            return self._available(specs)

    def _available(self, specs: list[ModelSpec]) -> list[ModelSpec]:
        if not specs:
            return []
        paused = storage.paused_models(self.store) | set(live_paused(self.store))
        used = calls_since(self.store, self.clock() - DAY_S)
        return [s for s in specs if s.name not in paused and used.get(s.name, 0) < s.extra["calls_per_day"]]

    async def call(self, spec: ModelSpec, request, audio_b64: list[str], timeout_s: float, max_audio_s: float):
        """One live call through the SSRF guard and the submission caps; recorded for the model's health. A
        failure (or a reply without audio) raises SubmittedFailed with a message naming nothing of it."""
        limits = dataclasses.replace(self.settings.reply_limits(), max_audio_s=min(
            max_audio_s, self.settings.reply_limits().max_audio_s), show_body=False)
        failure = None
        try:
            async with asyncio.timeout(timeout_s), guarded_session(self.policy, 2) as session:
                answer = await openai_chat.call(session, spec, request, audio_b64, limits)
            if not answer.audio:
                failure = "bad_audio"
        except CallFailure as exc:
            failure = exc.error_class
        except TimeoutError:
            failure = "timeout"
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(WRITER, record_call, self.store, spec.name, self.clock(), failure is None, failure)
        if failure is not None:
            raise SubmittedFailed(void_message(failure))
        return answer

    def health(self) -> list[dict]:
        """Per submitted live model: calls and failures in the last 24 h, failures in a row, budget, pause."""
        since = self.clock() - DAY_S
        paused = live_paused(self.store)
        out = []
        for job in self.jobs():
            rows = self.store.query("SELECT ok FROM arena_live_calls WHERE model=? AND at > ? ORDER BY id DESC",
                                    (job.model, since))
            in_row = next((i for i, r in enumerate(rows) if r["ok"]), len(rows))
            out.append({"model": job.model, "calls_24h": len(rows), "failed_24h": sum(not r["ok"] for r in rows),
                        "failed_in_a_row": in_row, "calls_per_day": job.live_calls_per_day,
                        "paused": paused.get(job.model)})
        return out
