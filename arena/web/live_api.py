"""The live battle's JSON API, beside the arena's (arena/web/http_api.py):

    POST /api/arena/live/battle   multipart: audio (file: wav, flac or ogg), session (optional: a new one is
                                  issued), consent_store, consent_release (true | false, both required)
        -> 200 the shape of POST /api/arena/battle (session, battle_id, audio URLs of user | A | B,
           min_listen_s, first_heard, expires_at) plus source "live", transcript (what was heard),
           crisis_notice (markdown or null) and replaced (contestants replaced on the way), once both replies
           are ready; the vote goes to POST /api/arena/vote. The battle does not wait for the voter's
           transcript: when it is not ready yet, transcript and crisis_notice are null and transcript_pending is
           true; then ask GET /heard.
        -> 4xx/5xx {"error": code, "message"}: 400 bad_form, 401 sign_in, 403 bad_session, 413 too_large |
           too_long, 415 not_audio, 422 missing_consent | bad_consent | no_audio | too_short | silent,
           429 rate_limited | too_many_open (Retry-After), 503 busy | void | no_contestants. Nothing is stored.
    GET  /api/arena/live/heard?battle_id=&session=&wait_s=  -> {"transcript", "crisis_notice", "pending"}: what
           was heard in the voter's clip, waiting up to wait_s (at most 10) while it is being made; 404 when the
           battle is not a live battle of this session
    GET  /api/arena/live/status   -> {"ready": bool, "contestants": n}: live mode is up once two contestants answer

The body is capped in front of the app (space_shell/body_limit.py, LIVE_BODY_BYTES) and the form parser is
held to one file and a few fields. The user is the Hub sign-in Gradio keeps in its session (on Spaces); live mode
requires it there (LiveSettings.require_sign_in).
"""
from __future__ import annotations

import math

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse

from arena.services.live_intake import LiveRefused
from arena.tables.storage import plausible_id
from arena.web.http_api import MAX_SESSION_CHARS, PREFIX
from space_shell import client_address

LIVE_PREFIX = PREFIX + "/live"
FORM_FIELDS = 8
MAX_HEARD_WAIT_S = 10.0


def _error(status: int, code: str, message: str, retry_after_s: float | None = None) -> JSONResponse:
    response = JSONResponse({"error": code, "message": message}, status_code=status)
    if retry_after_s:
        response.headers["Retry-After"] = str(max(1, math.ceil(retry_after_s)))
    return response


def hub_user(request: Request) -> str | None:
    """The Hub user name Gradio's OAuth keeps in the session cookie (only where its session middleware runs)."""
    if "session" not in request.scope:
        return None
    info = request.session.get("oauth_info") or {}
    name = (info.get("userinfo") or {}).get("preferred_username") if isinstance(info, dict) else None
    return name if isinstance(name, str) and name else None


def build_live_router(live) -> APIRouter:
    router = APIRouter(prefix=LIVE_PREFIX)
    arena = live.arena

    @router.get("/status")
    async def status():
        from starlette.concurrency import run_in_threadpool
        names = await run_in_threadpool(live.reachable)
        return {"ready": len(names) >= 2, "contestants": len(names)}

    @router.get("/heard")
    async def heard(battle_id: str = "", session: str = "", wait_s: float = 10.0):
        from starlette.concurrency import run_in_threadpool
        if not plausible_id(battle_id) or len(session) > MAX_SESSION_CHARS:
            return _error(404, "not_found", "no live battle of this session has that id")
        wait = min(MAX_HEARD_WAIT_S, wait_s) if math.isfinite(wait_s) else 0.0
        found = await run_in_threadpool(live.heard, battle_id, session, wait)
        if found is None:
            return _error(404, "not_found", "no live battle of this session has that id")
        return {"battle_id": battle_id, "transcript": found.transcript, "crisis_notice": found.crisis_notice,
                "pending": found.pending}

    @router.post("/battle")
    async def battle(request: Request):
        try:
            form = await request.form(max_files=1, max_fields=FORM_FIELDS,
                                      max_part_size=live.settings.max_upload_bytes)
        except Exception:    # starlette's MultiPartException, a malformed body, a part over the size
            return _error(400, "bad_form", "send multipart/form-data with an 'audio' file and the consent fields")
        upload = form.get("audio")
        session = form.get("session") or None
        if session is not None and (not isinstance(session, str) or len(session) > MAX_SESSION_CHARS):
            return _error(422, "bad_value", f"session must be text of at most {MAX_SESSION_CHARS} characters")
        if session is not None and not arena.session_valid(session):
            return _error(403, "bad_session", "this session was not issued by this server; send no session to "
                                              "get a new one")
        if upload is None or isinstance(upload, str):
            data = b""
        else:
            data = await upload.read(live.settings.max_upload_bytes + 1)
        consent = [form.get(k) for k in ("consent_store", "consent_release")]
        consent = [c if isinstance(c, str) else None for c in consent]
        try:
            result = await live.battle(data, session or arena.new_session(), client_address.from_request(request),
                                       user=hub_user(request), consent_store=consent[0], consent_release=consent[1])
        except LiveRefused as exc:
            return _error(exc.status, exc.code, exc.message, exc.retry_after_s)
        finally:
            await form.close()
        timing = result.timing
        response = JSONResponse({
            "session": result.session, "battle_id": result.battle_id, "context_text": None,
            "audio": result.audio, "min_listen_s": result.min_listen_s, "first_heard": result.first_heard,
            "listening": result.listening,
            "expires_at": result.expires_at, "source": "live", "transcript": result.transcript,
            "crisis_notice": result.crisis_notice, "replaced": result.replaced,
            "transcript_pending": result.transcript_pending})
        # read by benchmarks/bench_live.py: replies ready, whole handling, the slower contestant's own latency
        response.headers["Server-Timing"] = ", ".join(f"{k};dur={1000 * v:.1f}" for k, v in timing.items())
        return response

    return router


def mount_live_api(app: FastAPI, live) -> None:
    """Add the live routes to `app` (before Gradio is mounted at "/")."""
    app.include_router(build_live_router(live))
