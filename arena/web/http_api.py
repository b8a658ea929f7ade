"""A small JSON HTTP API for programmatic voting (and the load test), on the app's FastAPI server.

    POST /api/arena/battle  {"session": optional}      -> 200 battle view (no model names; "notice": the crisis
                                                           help notice in markdown when a reply in it was screened
                                                           as crisis, else null), or 503
    POST /api/arena/vote    {"battle_id", "session", "overall", "said"?, "sounded"?, "reason"?,
                             "listen"?: {"played_s": {clip: seconds}, "order": [clip, ...]}}
                                                        -> 200 reveal, or 4xx {"error": code, "message"}:
                                                           425 not_yet (+ "remaining_s": {clip: s}),
                                                           403 impossible (see arena/core/listening.py)
    POST /api/arena/skip    {"battle_id", "session"}    -> 200 {"battle_id", "skipped": true}: the battle is closed
                                                           without a vote (no rating, no refusal row, no rate
                                                           token); 404 unknown_battle, 403 wrong_session,
                                                           409 already_voted, 429 rate_limited (skips have their
                                                           own per-address budget). Then ask /battle.
    (all three: 400 bad_json, 403 bad_session, 413 too_large; battle and vote: 429 rate_limited | too_many_open
     with Retry-After)
    GET  /api/arena/audio/{battle_id}/{clip}            -> the wav of clip user | A | B of a served battle
                                                           (arena/web/media.py: mounted beside this API)
    GET  /api/arena/ratings?axis=overall&source=all     -> leaderboard rows (source: all | benchmark | live)
    GET  /api/arena/health                              -> {"ok": true}

Battles and votes (the writes) run on one worker thread per process, shared with
the Gradio tab (arena/services/writer.py): SQLite takes one writer at a time anyway, and
threads racing for its lock fall into its busy handler, which sleeps up to
100 ms per retry, unfairly. Measured at saturation (50 voters back to back): a
40-thread pool gave p99 7.7-8.7 s, the single writer 1.4-1.9 s, for ~20% fewer
votes/s. Reads (ratings) use the ordinary thread pool.

The session is a token the server issues, signed (space_shell/signing.py), with
the first battle when the client sends none; a session the server did not issue is
refused with 403 bad_session (not replaced: a client that lost its session should
know), so a client cannot choose one. The client never picks a model. Before a
request reaches the writer thread, the in-memory limits of arena/core/abuse.py apply
(battles per address, open battles per session, vote attempts per address), so a
flood is refused on the event loop and never queues in front of honest voters.
Client addresses come from space_shell/client_address.py (forwarding headers only
from configured proxies). Bodies are capped by space_shell/body_limit.py in front
of the whole app (API_BODY_BYTES here) and parsed by eval_backend/safejson.py
(nesting at most API_JSON_DEPTH; large bodies off the event loop).

A vote's 200 comes only after the service committed it, so an acknowledged vote survives a crash of the app
(SQLite: on the disk within ~1 s, eval_backend/sqlite_checkpoints.py). The service's blocking calls run in the thread pool.
Audio is served through battle-scoped URLs (arena/web/media.py), so no file path (which holds the
model name) reaches the client.
"""
from __future__ import annotations

import asyncio
import math
import os
import time

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from arena.core.abuse import Refused
from arena.services.pow import CHALLENGE_PATH, WIDGET_FILE, WIDGET_PATH
from arena.services.service import NoBattleAvailable, NotYet, SkipRefused, VoteRefused
from arena.services.writer import WRITER
from eval_backend import safejson
from eval_backend.numbers import json_number
from space_shell import client_address
from space_shell.body_limit import API_BODY_BYTES

PREFIX = "/api/arena"
MAX_SESSION_CHARS = 128
API_JSON_DEPTH = 4            # our bodies are flat objects
INLINE_PARSE_BYTES = 4096     # larger bodies are scanned and parsed on the thread pool, not the event loop
# Refusal code -> HTTP status. not_yet is 425 Too Early: the client may send the same vote again once it has
# listened more; impossible (a listening claim no client can make) is 403.
STATUS = {"bad_value": 422, "unknown_battle": 404, "wrong_session": 403, "already_voted": 409, "expired": 410,
          "not_yet": 425, "impossible": 403, "tampered": 409, "skipped": 409, "rate_limited": 429, "too_many_open": 429, "bad_session": 403,
          # proof of work (arena/services/pow.py): 428 Precondition Required when a solution is due; each answer carries a
          # fresh challenge ("pow") so the client can solve it and send the same vote again
          "pow_required": 428, "pow_invalid": 403, "pow_expired": 410, "pow_replayed": 409}


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status)


def _refused(exc: Refused) -> JSONResponse:
    response = _error(STATUS[exc.reason_code], exc.reason_code, exc.message)
    response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_s)))
    return response


async def _json_body(request: Request) -> dict | JSONResponse:
    raw = await request.body()
    if len(raw) > API_BODY_BYTES:         # body_limit.BodyLimit stops these first; this holds without it
        return _error(413, "too_large", f"the request body is larger than the limit of {API_BODY_BYTES:,} bytes")
    try:
        if len(raw) <= INLINE_PARSE_BYTES:
            body = safejson.loads(raw, max_depth=API_JSON_DEPTH)
        else:
            body = await run_in_threadpool(safejson.loads, raw, max_depth=API_JSON_DEPTH)
    except safejson.JSONLimitError as exc:
        return _error(400, "bad_json", str(exc))
    except ValueError:                    # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
        return _error(400, "bad_json", "the request body must be a JSON object")
    if not isinstance(body, dict):
        return _error(400, "bad_json", "the request body must be a JSON object")
    if safejson.unstorable_text(body):    # "\ud800" or "\u0000": not text every database and response can hold
        return _error(400, "bad_json", "the request body holds text that cannot be stored (a lone surrogate or a "
                                       "NUL character)")
    return body


_num = json_number     # NaN / inf -> None (JSON has neither), other values unchanged


# Server-Timing only where asked for (the benchmarks): in public, a battle's handling time, to the microsecond,
# would tell a gold battle (arena/services/gold.py: one more row written, ~0.8 ms) from an ordinary one before the vote.
SERVER_TIMING_ENV = "EMPATHY_ARENA_SERVER_TIMING"


def _timing(response: Response, t0: float) -> None:
    """Server-side handling time (W3C Server-Timing), read by the latency benchmark: `app` from the handler's
    start (queueing for the writer included), `svc` inside the service call; only with
    EMPATHY_ARENA_SERVER_TIMING=1."""
    svc = response.headers.get("X-Arena-Service-Ms")
    if svc is not None:
        del response.headers["X-Arena-Service-Ms"]
    if os.environ.get(SERVER_TIMING_ENV) == "1":
        response.headers["Server-Timing"] = (f"app;dur={1000 * (time.perf_counter() - t0):.3f}"
                                             + (f", svc;dur={svc}" if svc else ""))


class EarlyRefusal:
    """ASGI middleware: a battle or vote from an address whose budget is spent (arena/core/abuse.py) is answered 429
    here, before routing, dependency solving or body parsing. A flood past its budget then costs the event
    loop about a third of a full request, which is what honest voters wait behind. Requests with budget left
    go on to the handlers, which take the token and run every other check."""

    def __init__(self, app, service):
        self.app = app
        self.service = service
        self.kinds = {f"{PREFIX}/battle": "battle", f"{PREFIX}/vote": "vote", f"{PREFIX}/skip": "skip"}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope.get("method") == "POST":
            kind = self.kinds.get(scope.get("path", ""))
            if kind is not None:
                refusal = self.service.gate.early_refusal(kind, client_address.from_scope(scope))
                if refusal is not None:
                    return await _refused(refusal)(scope, receive, send)
        await self.app(scope, receive, send)


def build_router(service) -> APIRouter:

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
        session = body.get("session") or service.new_session()
        if not isinstance(session, str) or len(session) > MAX_SESSION_CHARS:
            return _error(422, "bad_value", f"session must be text of at most {MAX_SESSION_CHARS} characters")
        if not service.session_valid(session):
            return _error(403, "bad_session", "this session was not issued by this server; send no session to "
                                              "get a new one")
        ip = client_address.from_request(request)
        try:
            ticket = service.admit_battle(session, ip)
        except Refused as exc:
            return _refused(exc)
        try:
            view = await write(response, service.serve_battle, session, ip, ticket=ticket)
        except NoBattleAvailable as exc:
            return _error(503, "no_battle", str(exc))
        except ValueError as exc:
            return _error(422, "bad_value", str(exc))
        pow_ = service.pow.for_client() if view.pow_required else None   # made off the writer thread
        _timing(response, t0)
        return {"session": session, "battle_id": view.battle_id, "context_text": view.context_text,
                "audio": {"user": view.user_audio, "A": view.audio_a, "B": view.audio_b},
                "min_listen_s": view.min_listen_s, "first_heard": view.first_heard,
                "listening": view.listening, "expires_at": view.expires_at, "notice": view.notice, "pow": pow_}

    @router.post("/vote")
    async def vote(request: Request, response: Response):
        t0 = time.perf_counter()
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        missing = [k for k in ("battle_id", "session", "overall") if not body.get(k)]
        if missing:
            return _error(422, "bad_value", f"missing field(s): {', '.join(missing)}")
        ip = client_address.from_request(request)
        try:
            service.admit_vote(ip)
        except Refused as exc:
            return _refused(exc)
        if not service.session_valid(body["session"]):
            return _error(403, "bad_session", "this session was not issued by this server; load a new battle")
        reason = body.get("reason")
        try:
            result = await write(response, service.submit_vote, body["battle_id"], body["session"], ip,
                                 body["overall"], said=body.get("said") or None,
                                 sounded=body.get("sounded") or None, reason=reason if reason else None,
                                 listen=body.get("listen"), pow=body.get("altcha"))
        except NotYet as exc:
            return JSONResponse({"error": exc.reason_code, "message": exc.message,
                                 "remaining_s": {c: round(r, 3) for c, r in exc.remaining_s.items()}},
                                status_code=STATUS[exc.reason_code])
        except VoteRefused as exc:
            if exc.reason_code.startswith("pow_"):
                return JSONResponse({"error": exc.reason_code, "message": exc.message,
                                     "pow": service.pow.for_client()}, status_code=STATUS[exc.reason_code])
            return _error(STATUS.get(exc.reason_code, 400), exc.reason_code, exc.message)
        _timing(response, t0)
        return {"vote_id": result.vote_id, "battle_id": result.battle_id, "slot": result.slot,
                "winner": result.winner, "gold": result.gold,
                **{slot: {"model": side.model, "transcript": side.transcript,
                          "mu": side.rating.mu if side.rating else None,
                          "sigma": side.rating.sigma if side.rating else None, "votes": side.votes}
                   for slot, side in (("A", result.a), ("B", result.b))}}

    @router.get(CHALLENGE_PATH.removeprefix(PREFIX))
    async def pow_challenge(request: Request):
        """A fresh ALTCHA challenge (the widget fetches it; scripts get one with each battle that needs it)."""
        try:
            service.gate.admit_challenge(client_address.from_request(request))   # arena/core/abuse.py
        except Refused as exc:
            return _refused(exc)
        return JSONResponse(service.pow.challenge(), headers={"Cache-Control": "no-store"})

    @router.get(WIDGET_PATH.removeprefix(PREFIX))
    async def pow_widget():
        """The ALTCHA widget, served by the app itself (vendored from npm: arena/static/altcha/)."""
        return FileResponse(WIDGET_FILE, media_type="text/javascript; charset=utf-8",
                            headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"})

    @router.post("/skip")
    async def skip(request: Request):
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        missing = [k for k in ("battle_id", "session") if not body.get(k)]
        if missing:
            return _error(422, "bad_value", f"missing field(s): {', '.join(missing)}")
        try:
            service.admit_skip(client_address.from_request(request))
        except Refused as exc:
            return _refused(exc)
        if not isinstance(body["session"], str) or not service.session_valid(body["session"]):
            return _error(403, "bad_session", "this session was not issued by this server; load a new battle")
        try:
            await write(None, service.skip_battle, body["battle_id"], body["session"])
        except SkipRefused as exc:
            return _error(STATUS.get(exc.reason_code, 400), exc.reason_code, exc.message)
        return {"battle_id": body["battle_id"], "skipped": True}

    @router.get("/ratings")
    async def ratings(axis: str = "overall", source: str = "all"):
        try:
            rows = await run_in_threadpool(service.ratings_table, axis, None, source)
        except ValueError as exc:
            return _error(422, "bad_value", str(exc))
        return {"axis": axis, "source": source, "rows": [{k: _num(v) for k, v in row.items()} for row in rows]}

    return router


def mount_http_api(app: FastAPI, service) -> None:
    """Add the arena routes to `app`: either a FastAPI app before `gr.mount_gradio_app(app, demo, path="/")`
    (the first matching route wins), or `demo.app` after `demo.launch(prevent_thread_lock=True)` (both tested).
    The clips' audio route is arena/web/media.py's `mount_media`, mounted beside it."""
    app.include_router(build_router(service))
    try:
        app.add_middleware(EarlyRefusal, service=service)
    except RuntimeError:     # demo.app after launch: too late for middleware; the handlers still refuse
        pass
