"""Gradio's own routes, bounded and checked: ASGI middleware in front of the mounted Gradio app, and the mount.

Gradio's routes are public like ours: `/gradio_api/upload` stores files, `queue/join` (and `call/`, `run/`) runs
any event with data the sender chose, each new `session_hash` costs server memory (Gradio keeps a copy of the
page's state per session, about half a megabyte here). `mount_gradio` mounts the Blocks and wraps the app in
`GradioGuard`, which, per client address (space_shell/client_address.py, then rate_limit.address_key):

- uploads: at most `uploads_per_hour` files and `upload_bytes_per_hour` bytes an hour (an upload is admitted
  while the address has budget left, and charged as its bytes arrive), `uploads_in_flight` at once, one file
  per request, each capped by what it is for (a `.zip`: the predictions zip limit; anything else: one live
  recording, `body_limit.RECORDING_BYTES`); all uploads held together at most `upload_total_bytes`. Refusals:
  429 (budget, with Retry-After), 413 (size), 503 (the folder is full), 400 (more than one file). Each stored path
  goes into the upload ledger (eval_backend/uploads.py) under the browser's `ea_uploads` cookie.
- every other POST under /gradio_api/ must be a JSON body (nesting at most `JSON_DEPTH`), and every file reference
  in it must name an upload of the same browser (`uploads.file_refs_allowed`): 403 with one neutral message
  otherwise, before Gradio reads anything.
- sessions: a `session_hash` this process has not seen (in queue/join, call, run, heartbeat, queue/data) spends one
  of `new_sessions_per_minute`; joins (queue/join, call/, run/, api/) spend one of `joins_per_minute`. 429 past
  either, answered here, so a flood never reaches Gradio's queue or its session table.

`mount_gradio` also turns on Gradio's own input check for the mounted app (`enable_input_checks`: Gradio checks an
input's file path only once its Blocks "has launched", which a mounted app never does), caps Gradio's session
table (`session_capacity`), deletes uploads and cache files older than `upload_max_age_s` on a schedule
(`delete_cache`), turns off the run-history routes, and puts the body caps (space_shell/body_limit.py) in front.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Callable

from eval_backend import safejson, uploads
from space_shell import client_address
from space_shell.asgi_layer import AsgiLayer
from space_shell.body_limit import (
    DEFAULT_BODY_BYTES,
    RECORDING_BYTES,
    UPLOAD_FRAMING_BYTES,
    UPLOAD_PATH,
    BodyLimit,
    app_caps,
)
from space_shell.refusal_delay import RefusalDelay
from space_shell.rate_limit import MAX_KEYS, TokenBuckets, address_key

log = logging.getLogger(__name__)

API = "/gradio_api/"
JOIN_PREFIXES = ("/gradio_api/queue/join", "/gradio_api/call/", "/gradio_api/run/", "/gradio_api/api/")
SESSION_GETS = re.compile(r"^/gradio_api/(?:heartbeat/(?P<hb>[^/]*)|queue/data)$")
JSON_DEPTH = 32                 # Gradio's bodies nest a few levels (data -> FileData -> meta)
MAX_SESSION_HASH = 64           # Gradio's page makes 11 characters
HEAD_PEEK_BYTES = 16 * 2**10    # the first part's headers of an upload must arrive within this
MiB = 2**20


@dataclass(frozen=True)
class GuardSettings:
    """Limits of Gradio's routes (environment: EMPATHY_ARENA_<NAME upper-cased>, e.g.
    EMPATHY_ARENA_UPLOAD_BYTES_PER_HOUR)."""
    upload_bytes_per_hour: int = 64 * MiB
    uploads_per_hour: int = 60
    uploads_in_flight: int = 2
    upload_total_bytes: int = 2048 * MiB
    upload_max_age_s: int = 3600          # uploads and Gradio's cache files are deleted once this old
    cache_sweep_s: int = 300              # how often (Gradio's delete_cache frequency)
    new_sessions_per_minute: int = 30
    joins_per_minute: int = 300
    session_capacity: int = 2000          # sessions Gradio keeps in memory (least recently used dropped)
    recording_bytes: int = RECORDING_BYTES
    refusal_delay_ms: int = 250           # every 429 of the app waits this long (space_shell/refusal_delay.py)

    @classmethod
    def from_env(cls, env=None) -> "GuardSettings":
        env = os.environ if env is None else env
        values = {}
        for f in fields(cls):
            raw = env.get(f"EMPATHY_ARENA_{f.name.upper()}")
            if raw:
                try:
                    values[f.name] = int(raw)
                except ValueError:
                    raise ValueError(f"EMPATHY_ARENA_{f.name.upper()} must be a whole number, not {raw!r}") from None
        return cls(**values)


def _reply(status: int, code: str, message: str, retry_after: float | None = None, close: bool = False):
    body = json.dumps({"error": code, "message": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(max(1, math.ceil(retry_after))).encode()))
    if close:
        headers.append((b"connection", b"close"))

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    return app


def _cookie(scope, owner: str) -> bytes:
    """The upload owner's cookie. On Spaces the page runs in huggingface.co's iframe, where only a cookie marked
    SameSite=None (Secure, Partitioned) is sent; elsewhere Strict, as the app's other cookies."""
    from gradio.utils import get_space
    if get_space() is not None:
        return f"{uploads.UPLOAD_COOKIE}={owner}; Path=/; HttpOnly; Secure; SameSite=None; Partitioned".encode()
    secure = "; Secure" if scope.get("scheme") in ("https", "wss") else ""
    return f"{uploads.UPLOAD_COOKIE}={owner}; Path=/; HttpOnly; SameSite=Strict{secure}".encode()


def _cookies(scope) -> dict:
    from starlette.requests import HTTPConnection
    try:
        return dict(HTTPConnection(scope).cookies)
    except (ValueError, KeyError):
        return {}


class _TooLarge(Exception):
    pass


class GradioGuard(AsgiLayer):
    """The middleware (see the module's doc). `clock`: for the budgets (tests)."""

    def __init__(self, app, settings: GuardSettings, zip_bytes: int, ledger: uploads.UploadLedger = uploads.LEDGER,
                 clock: Callable[[], float] = time.time):
        self.app = app
        self.s = settings
        self.zip_bytes = zip_bytes
        self.ledger = ledger
        self.upload_count = TokenBuckets(settings.uploads_per_hour, clock, window_s=3600)
        self.upload_bytes = TokenBuckets(settings.upload_bytes_per_hour, clock, window_s=3600)
        self.new_sessions = TokenBuckets(settings.new_sessions_per_minute, clock)
        self.joins = TokenBuckets(settings.joins_per_minute, clock)
        self._sessions: OrderedDict[str, None] = OrderedDict()     # session hashes admitted (bounded)
        self._in_flight: dict[str, int] = {}
        self._in_flight_bytes = 0
        self._lock = threading.Lock()
        self.refused: dict[str, int] = {}

    def _refuse(self, code: str):
        with self._lock:
            self.refused[code] = self.refused.get(code, 0) + 1

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(API):
            return await self.app(scope, receive, send)
        method = scope.get("method")
        key = address_key(client_address.from_scope(scope))
        if method == "POST" and path == UPLOAD_PATH:
            return await self._upload(scope, receive, send, key)
        if method == "POST":
            return await self._event(scope, receive, send, key, path)
        m = SESSION_GETS.match(path) if method == "GET" else None
        if m:
            session = m.group("hb")
            if session is None:
                from urllib.parse import parse_qs
                qs = parse_qs(scope.get("query_string", b"").decode("latin-1"))
                session = (qs.get("session_hash") or [None])[0]
            refusal = self._admit_session(session, key)
            if refusal is not None:
                return await refusal(scope, receive, send)
        return await self.app(scope, receive, send)

    # ------------------------------------------------------------------ sessions and joins
    def _admit_session(self, session, key: str):
        if session is None:
            return None
        if not isinstance(session, str) or not 0 < len(session) <= MAX_SESSION_HASH or not session.isascii():
            self._refuse("bad_session")
            return _reply(400, "bad_session", f"session_hash must be 1 to {MAX_SESSION_HASH} ASCII characters")
        with self._lock:
            if session in self._sessions:
                self._sessions.move_to_end(session)
                return None
        wait = self.new_sessions.take(key)
        if wait:
            self._refuse("new_sessions")
            return _reply(429, "rate_limited", "too many new sessions from this network address (the limit is "
                          f"{self.s.new_sessions_per_minute} a minute); reload the page later", wait)
        with self._lock:
            self._sessions[session] = None
            while len(self._sessions) > MAX_KEYS:
                self._sessions.popitem(last=False)
        return None

    async def _event(self, scope, receive, send, key: str, path: str):
        """Any other POST under /gradio_api/: a bounded JSON body whose file references are this browser's."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return                                       # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > DEFAULT_BODY_BYTES:                    # BodyLimit stops these first; this holds without it
                return await _reply(413, "too_large", "the request body is too large", close=True)(scope, receive,
                                                                                                    send)
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        try:
            body = safejson.loads(raw, max_depth=JSON_DEPTH) if raw else {}
        except ValueError:
            self._refuse("bad_json")
            return await _reply(400, "bad_json", "the body must be JSON (nesting at most "
                                f"{JSON_DEPTH} levels)")(scope, receive, send)
        if path.startswith(JOIN_PREFIXES):
            wait = self.joins.take(key)
            if wait:
                self._refuse("joins")
                return await _reply(429, "rate_limited", "too many requests from this network address (the limit "
                                    f"is {self.s.joins_per_minute} a minute)", wait)(scope, receive, send)
        if isinstance(body, dict) and "session_hash" in body:
            refusal = self._admit_session(body["session_hash"], key)
            if refusal is not None:
                return await refusal(scope, receive, send)
        owner = uploads.valid_owner(_cookies(scope).get(uploads.UPLOAD_COOKIE))
        if not uploads.file_refs_allowed(body, owner, self.ledger):
            self._refuse("file_ref")
            return await _reply(403, "not_available", uploads.NOT_AVAILABLE)(scope, receive, send)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()
        return await self.app(scope, replay, send)

    # ------------------------------------------------------------------ uploads
    def _upload_refusal(self, key: str):
        with self._lock:
            busy = self._in_flight.get(key, 0) >= self.s.uploads_in_flight
            in_flight_bytes = self._in_flight_bytes
        if busy:
            self._refuse("uploads_in_flight")
            return _reply(429, "rate_limited", f"at most {self.s.uploads_in_flight} uploads at once from one "
                          "network address", 5)
        full = self.ledger.total_bytes() + in_flight_bytes >= self.s.upload_total_bytes
        if full:
            self._refuse("uploads_full")
            return _reply(503, "busy", "this Space holds as many uploads as it can; try again in a while", 300)
        wait = self.upload_bytes.wait(key)
        if wait:
            self._refuse("upload_bytes")
            return _reply(429, "rate_limited", "this network address has uploaded its limit of "
                          f"{self.s.upload_bytes_per_hour / MiB:g} MiB for the hour", wait)
        wait = self.upload_count.take(key)
        if wait:
            self._refuse("upload_count")
            return _reply(429, "rate_limited", "this network address has uploaded its limit of "
                          f"{self.s.uploads_per_hour} files for the hour", wait)
        return None

    async def _upload(self, scope, receive, send, key: str):
        refusal = self._upload_refusal(key)
        if refusal is not None:
            return await refusal(scope, receive, send)
        boundary = _boundary(scope)
        if boundary is None:
            return await _reply(400, "bad_request", "an upload is a multipart/form-data body")(scope, receive, send)
        with self._lock:
            self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            return await self._stream_upload(scope, receive, send, key, boundary)
        finally:
            with self._lock:
                n = self._in_flight.get(key, 1) - 1
                if n > 0:
                    self._in_flight[key] = n
                else:
                    self._in_flight.pop(key, None)

    async def _stream_upload(self, scope, receive, send, key: str, boundary: bytes):
        # the first part's headers name the file, and so its cap (a zip, or one recording)
        buffered: list[dict] = []
        head = b""
        while b"\r\n\r\n" not in head:
            message = await receive()
            if message["type"] != "http.request":
                return
            buffered.append(message)
            head += message.get("body", b"")
            if b"\r\n\r\n" in head[:HEAD_PEEK_BYTES]:
                break
            if len(head) > HEAD_PEEK_BYTES or not message.get("more_body"):
                return await _reply(400, "bad_request", "no file part in the upload", close=True)(scope, receive,
                                                                                                   send)
        name = _filename(head)
        cap = self.zip_bytes if name.lower().endswith(".zip") else self.s.recording_bytes
        cap += 64 * 2**10                                    # the multipart framing
        declared = [int(v) for k, v in scope.get("headers", []) if k == b"content-length" and v.isdigit()]
        if declared and max(declared) > cap:
            self._refuse("upload_size")
            if buffered[-1].get("more_body"):
                await self._drain(receive, key, min(max(declared), self.zip_bytes + UPLOAD_FRAMING_BYTES) - len(head))
            return await _reply(413, "too_large", _too_large(name, cap), close=True)(scope, receive, send)
        owner = uploads.valid_owner(_cookies(scope).get(uploads.UPLOAD_COOKIE))
        minted = owner is None
        owner = owner or uploads.new_owner()
        delimiter = b"\r\n--" + boundary
        state = {"received": 0, "tail": b"", "parts": 0, "over": None, "status": 0, "body": b"", "started": False,
                 "ended": False}

        def account(chunk: bytes) -> None:
            state["received"] += len(chunk)
            self.upload_bytes.charge(key, len(chunk))
            with self._lock:
                self._in_flight_bytes += len(chunk)
            window = state["tail"] + chunk
            state["parts"] += window.count(delimiter + b"\r\n")
            state["tail"] = window[-(len(delimiter) + 2):]
            if state["received"] > cap:
                state["over"] = (413, "too_large", _too_large(name, cap))
                raise _TooLarge
            if state["parts"] > 0:              # a second file part in one request
                state["over"] = (400, "bad_request", "one file per upload")
                raise _TooLarge

        replay = list(buffered)

        async def counting_receive():
            message = replay.pop(0) if replay else await receive()
            if message["type"] == "http.request":
                state["ended"] = not message.get("more_body")
                account(message.get("body", b""))
            return message

        async def capturing_send(message):
            if state["over"]:
                return
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                state["started"] = True
                if minted and message["status"] == 200:
                    message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", _cookie(scope,
                                                                                                           owner))]}
            elif message["type"] == "http.response.body" and state["status"] == 200:
                state["body"] += message.get("body", b"")
                if not message.get("more_body"):
                    self._record(state["body"], owner, key, state["received"])
            await send(message)

        try:
            await self.app(scope, counting_receive, capturing_send)
        except _TooLarge:
            pass
        finally:
            with self._lock:
                self._in_flight_bytes -= state["received"]
        if state["over"] and not state["started"]:
            self._refuse("upload_size")
            if not state["ended"]:                       # asking past the body's end would wait for ever
                await self._drain(receive, key, self.zip_bytes + UPLOAD_FRAMING_BYTES - state["received"])
            await _reply(*state["over"], close=True)(scope, receive, send)

    async def _drain(self, receive, key: str, limit: int) -> None:
        """Reads and drops what is left of a refused upload's body, at most `limit` bytes (BodyLimit has already
        capped the body at the zip limit), charging them to the address's budget. A proxy that buffers the body
        (nginx's default) is still sending it when we refuse; closing before it is read makes the proxy answer 502
        instead of our 413."""
        while limit > 0:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunk = message.get("body", b"")
            limit -= len(chunk)
            self.upload_bytes.charge(key, len(chunk))
            if not message.get("more_body"):
                return

    def _record(self, body: bytes, owner: str, key: str, size: int) -> None:
        try:
            paths = json.loads(body)
        except ValueError:
            return
        if isinstance(paths, list) and all(isinstance(p, str) for p in paths):
            self.ledger.record(paths, owner, key, size)
        self.ledger.expire(self.s.upload_max_age_s)


def _too_large(name: str, cap: int) -> str:
    what = "a predictions zip" if name.lower().endswith(".zip") else "a recording (any file but a .zip)"
    return f"the upload is larger than the limit for {what}: {cap:,} bytes"


def _boundary(scope) -> bytes | None:
    ctype = next((v for k, v in scope.get("headers", []) if k == b"content-type"), b"")
    m = re.search(rb'^multipart/form-data\s*;.*?boundary="?([^";]{1,200})"?', ctype, re.I)
    return m.group(1) if m else None


def _filename(head: bytes) -> str:
    block = head.split(b"\r\n\r\n", 1)[0]
    m = re.search(rb'filename="([^"\r\n]*)"', block) or re.search(rb"filename=([^;\r\n]*)", block)
    return m.group(1).decode("utf-8", "replace").strip() if m else ""


# ---------------------------------------------------------------------------------------------- the mount
def enable_input_checks(blocks) -> None:
    """Make Gradio check input file paths for a mounted Blocks: its check (processing_utils._check_allowed: a
    preprocessed input must be in the upload folder and not in blocked_paths) returns at once while
    `blocks.has_launched` is false, and only `launch()` sets it; Gradio's own reloader sets it the same way for a
    running app. Then checks that the check runs: if a Gradio upgrade moves it, the app refuses to start rather
    than serve unchecked paths."""
    from gradio import processing_utils
    from gradio.context import LocalContext
    from gradio.exceptions import InvalidPathError

    blocks.has_launched = True
    token = LocalContext.blocks.set(blocks)
    try:
        processing_utils._check_allowed(os.devnull, True)
    except InvalidPathError:
        return
    finally:
        LocalContext.blocks.reset(token)
    raise RuntimeError("Gradio accepted a file path outside its upload folder as an event's input; this Gradio "
                       "version checks input paths differently: see space_shell/gradio_guard.py")


def settle_matplotlib() -> None:
    """Gradio runs every event inside `utils.MatplotlibBackendMananger`, which imports matplotlib and asks for its
    backend; the first ask resolves it by importing pyplot. Both happen on the event loop with the first Gradio
    event a process runs (~0.7 s of CPU on the 2-core machine), stalling every request in flight then (issue 21:
    the flood benchmark's honest voters, when the first page or flooder join arrives). Done here at the mount
    instead, and resolved to Agg (a server draws off screen) without importing pyplot at all."""
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("agg")


def mount_gradio(app, blocks, *, data_dir, zip_bytes: int, settings: GuardSettings | None = None,
                 **mount_kwargs) -> BodyLimit:
    """`gr.mount_gradio_app(app, blocks, path="/")` with Gradio's input check on, the data dir blocked, uploads
    capped and expiring, the session table bounded; wrapped in GradioGuard, the refusal delay and the body caps.
    Returns the ASGI app to serve."""
    import gradio as gr

    s = settings or GuardSettings.from_env()
    blocks.delete_cache = (s.cache_sweep_s, s.upload_max_age_s)
    blocks.state_session_capacity = s.session_capacity
    app = gr.mount_gradio_app(app, blocks, path="/", blocked_paths=[str(data_dir)], max_file_size=zip_bytes,
                              run_history=False, **mount_kwargs)
    enable_input_checks(blocks)
    settle_matplotlib()
    guard = GradioGuard(app, s, zip_bytes)
    return BodyLimit(RefusalDelay(guard, s.refusal_delay_ms / 1000), app_caps(zip_bytes))
