"""A small JSON HTTP API for programmatic voting (and the load test), on the app's FastAPI server.

    POST /api/arena/battle  {"session": optional}      -> 200 battle view (no model names), or 503
    POST /api/arena/vote    {"battle_id", "session", "overall", "said"?, "sounded"?, "reason"?}
                                                        -> 200 reveal, or 4xx {"error": code, "message"}
    GET  /api/arena/audio/{battle_id}/{clip}            -> the wav of clip user | A | B of a served battle
                                                           (arena/media.py: mounted beside this API)
    GET  /api/arena/ratings?axis=overall                -> leaderboard rows
    GET  /api/arena/health                              -> {"ok": true}

Battles and votes (the writes) run on one worker thread per process, shared with
the Gradio tab (`run_write`): SQLite takes one writer at a time anyway, and
threads racing for its lock fall into its busy handler, which sleeps up to
100 ms per retry, unfairly. Measured at saturation (50 voters back to back): a
40-thread pool gave p99 7.7-8.7 s, the single writer 1.4-1.9 s, for ~20% fewer
votes/s. Reads (ratings) use the ordinary thread pool.

The session is a token the server issues with the first battle when the client
sends none; the client never picks a model. A vote's 200 comes only after the
service committed it (SQLite, synchronous=FULL), so an acknowledged vote
survives a crash. The service's blocking calls run in the thread pool.
Audio is served through battle-scoped URLs (arena/media.py), so no file path
(which holds the model name) reaches the client.
"""
from __future__ import annotations

import asyncio
import math
import secrets
import time
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

PREFIX = "/api/arena"
MAX_SESSION_CHARS = 128
# Refusal code -> HTTP status. too_fast is 425 Too Early: the client may retry the same vote later.
STATUS = {"bad_value": 422, "unknown_battle": 404, "wrong_session": 403, "already_voted": 409, "expired": 410,
          "too_fast": 425, "tampered": 409, "rate_limited": 429}


# The process's one writer thread for arena battles and votes (HTTP API and Gradio tab alike).
WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-writer")


def run_write(fn, *args, **kwargs):
    """Run a writing service call on the writer thread and wait for it (for synchronous callers)."""
    return WRITER.submit(fn, *args, **kwargs).result()


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status)


async def _json_body(request: Request) -> dict | JSONResponse:
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "bad_json", "the request body must be a JSON object")
    if not isinstance(body, dict):
        return _error(400, "bad_json", "the request body must be a JSON object")
    return body


def _num(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _timing(response: Response, t0: float) -> None:
    """Server-side handling time (W3C Server-Timing), read by the latency benchmark: `app` from the handler's
    start (queueing for the writer included), `svc` inside the service call."""
    svc = response.headers.get("X-Arena-Service-Ms")
    response.headers["Server-Timing"] = (f"app;dur={1000 * (time.perf_counter() - t0):.3f}"
                                         + (f", svc;dur={svc}" if svc else ""))


def build_router(service) -> APIRouter:
    from .service import NoBattleAvailable, VoteRefused

    router = APIRouter(prefix=PREFIX)

    async def write(response: Response | None, fn, *args, **kwargs):
        def timed():
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if response is not None:   # time inside the service, without the wait for the writer thread
                    response.headers["X-Arena-Service-Ms"] = f"{1000 * (time.perf_counter() - t0):.3f}"
        return await asyncio.get_running_loop().run_in_executor(WRITER, timed)

    @router.get("/health")
    async def health():
        return {"ok": True}

    @router.post("/battle")
    async def battle(request: Request, response: Response):
        t0 = time.perf_counter()
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        session = body.get("session") or secrets.token_urlsafe(18)
        if not isinstance(session, str) or len(session) > MAX_SESSION_CHARS:
            return _error(422, "bad_value", f"session must be text of at most {MAX_SESSION_CHARS} characters")
        ip = request.client.host if request.client else None
        try:
            view = await write(response, service.serve_battle, session, ip)
        except NoBattleAvailable as exc:
            return _error(503, "no_battle", str(exc))
        except ValueError as exc:
            return _error(422, "bad_value", str(exc))
        _timing(response, t0)
        return {"session": session, "battle_id": view.battle_id, "context_text": view.context_text,
                "audio": {"user": view.user_audio, "A": view.audio_a, "B": view.audio_b},
                "min_listen_s": view.min_listen_s, "first_heard": view.first_heard,
                "expires_at": view.expires_at}

    @router.post("/vote")
    async def vote(request: Request, response: Response):
        t0 = time.perf_counter()
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        missing = [k for k in ("battle_id", "session", "overall") if not body.get(k)]
        if missing:
            return _error(422, "bad_value", f"missing field(s): {', '.join(missing)}")
        ip = request.client.host if request.client else None
        reason = body.get("reason")
        try:
            result = await write(response, service.submit_vote, body["battle_id"], body["session"], ip,
                                 body["overall"], said=body.get("said") or None,
                                 sounded=body.get("sounded") or None, reason=reason if reason else None)
        except VoteRefused as exc:
            return _error(STATUS.get(exc.reason_code, 400), exc.reason_code, exc.message)
        _timing(response, t0)
        return {"vote_id": result.vote_id, "battle_id": result.battle_id, "slot": result.slot,
                "winner": result.winner,
                **{slot: {"model": side.model, "transcript": side.transcript, "mu": side.rating.mu,
                          "sigma": side.rating.sigma, "votes": side.votes}
                   for slot, side in (("A", result.a), ("B", result.b))}}

    @router.get("/ratings")
    async def ratings(axis: str = "overall"):
        try:
            rows = await run_in_threadpool(service.ratings_table, axis)
        except ValueError as exc:
            return _error(422, "bad_value", str(exc))
        return {"axis": axis, "rows": [{k: _num(v) for k, v in row.items()} for row in rows]}

    return router


def mount_http_api(app: FastAPI, service) -> None:
    """Add the arena routes to `app`: either a FastAPI app before `gr.mount_gradio_app(app, demo, path="/")`
    (the first matching route wins), or `demo.app` after `demo.launch(prevent_thread_lock=True)` (both tested).
    The clips' audio route is arena/media.py's `mount_media`, mounted beside it."""
    app.include_router(build_router(service))
