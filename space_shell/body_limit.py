"""Request-body caps for the whole app (the arena API, Gradio and its upload route), as ASGI middleware.

Wraps the outermost app, so nothing behind it (FastAPI, Gradio, the JSON parsers) ever holds more than the
cap of a request's body. A declared Content-Length above the cap is refused before a byte is read; a chunked
body is counted as it streams and refused once it passes the cap. Either way: 413 with a JSON
`{"error": "too_large", "message"}`, and the connection is closed rather than drained.

Caps by path prefix, the longest matching prefix wins (`app_caps`):
    /api/arena/            API_BODY_BYTES: a vote is a few hundred bytes; 2,000 reason characters escaped
                           as \\uXXXX surrogate pairs are 24 kB
    /gradio_api/upload     the predictions zip limit (SubmissionSettings.max_upload_bytes) plus
                           UPLOAD_FRAMING_BYTES of multipart framing (space_shell/gradio_guard.py then caps
                           each upload by what it is for, and budgets them per address)
    /api/arena/live/       LIVE_BODY_BYTES: one recording (8 MiB) and its multipart framing
    everything else        DEFAULT_BODY_BYTES (Gradio events carry form values and file references, not files)
"""
from __future__ import annotations

import json

from .asgi_layer import AsgiLayer

API_BODY_BYTES = 32 * 2**10
DEFAULT_BODY_BYTES = 1 * 2**20
UPLOAD_FRAMING_BYTES = 1 * 2**20
UPLOAD_PATH = "/gradio_api/upload"


class BodyTooLarge(Exception):
    pass


# one live recording (arena/services/live.py's max_upload_bytes; also the cap of a non-zip Gradio upload,
# space_shell/gradio_guard.py)
RECORDING_BYTES = 8 * 2**20
# /api/arena/live/: one recording plus the multipart framing
LIVE_PATH = "/api/arena/live/"
LIVE_BODY_BYTES = RECORDING_BYTES + 64 * 2**10


def app_caps(max_upload_bytes: int) -> dict[str, int]:
    return {"/api/arena/": API_BODY_BYTES, UPLOAD_PATH: max_upload_bytes + UPLOAD_FRAMING_BYTES,
            LIVE_PATH: LIVE_BODY_BYTES}


class BodyLimit(AsgiLayer):
    def __init__(self, app, caps: dict[str, int], default: int = DEFAULT_BODY_BYTES):
        self.app = app
        self.caps = sorted(caps.items(), key=lambda kv: -len(kv[0]))
        self.default = default

    def cap_for(self, path: str) -> int:
        for prefix, cap in self.caps:
            if path.startswith(prefix):
                return cap
        return self.default

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        cap = self.cap_for(scope.get("path", ""))
        declared = [v for k, v in scope.get("headers", []) if k == b"content-length"]
        if declared:
            try:
                size = max(int(v) for v in declared)
            except ValueError:
                return await _respond(send, 400, "bad_request", "Content-Length is not a number")
            if size > cap:
                return await _respond(send, 413, "too_large", _too_large(cap))

        received = 0
        overflow = started = False

        async def counting_receive():
            nonlocal received, overflow
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > cap:
                    overflow = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message):
            nonlocal started
            if overflow:          # whatever the app answers after the overflow (a 500 on the way out) is dropped
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except BodyTooLarge:
            pass
        if overflow and not started:
            await _respond(send, 413, "too_large", _too_large(cap))


def _too_large(cap: int) -> str:
    return f"the request body is larger than the limit of {cap:,} bytes"


async def _respond(send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": code, "message": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
