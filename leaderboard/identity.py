"""Who is this request: one answer (a `Submitter`, or None) for every tab.

Rules, checked in this order:
1. The operator holds an operator session: a cookie this server issues at `/operator` to whoever presents the
   token in EMPATHY_ARENA_OPERATOR_TOKEN (compared in constant time, never logged; at least 24 characters, or
   token sign-in stays off). Named EMPATHY_ARENA_LOCAL_OPERATOR, else the first of EMPATHY_ARENA_OPERATORS, else
   "operator". The session lasts EMPATHY_ARENA_OPERATOR_SESSION_HOURS (12) and ends when the token changes.
2. On Spaces (Gradio's Hub sign-in): the signed-in Hub user; the operator when listed in EMPATHY_ARENA_OPERATORS.
   Gradio keeps the sign-in in its own signed session cookie and drops it when the access token expires.
3. Off Spaces only: an anonymous visitor is a guest, `guest:<12 hex>`, named from a random cookie this server
   issues with the page (HttpOnly, signed, gone when the browser closes). A guest submits with the normal quota,
   per browser session: a courtesy limit, not a defence (a new browser session is a new guest), so a public
   deployment signs people in (Spaces) or sets EMPATHY_ARENA_GUESTS=0.
4. Anyone else (signed out on Spaces; no guest cookie yet): None. Reads the public lists, submits nothing.

Nobody is the operator for merely opening the page. A guest name contains ':', which no Hub user name does.
"""
from __future__ import annotations

import hashlib
import hmac
import html
import logging
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request

from eval_backend.submissions import Submitter
from eval_backend.uploads import request_cookies  # noqa: F401  (one reader of a request's cookies; importable from here)
from space_shell.signing import Signer

log = logging.getLogger(__name__)

OPERATOR_TOKEN_ENV = "EMPATHY_ARENA_OPERATOR_TOKEN"
OPERATOR_SESSION_ENV = "EMPATHY_ARENA_OPERATOR_SESSION_HOURS"
LOCAL_OPERATOR_ENV = "EMPATHY_ARENA_LOCAL_OPERATOR"
GUESTS_ENV = "EMPATHY_ARENA_GUESTS"
OPERATOR_COOKIE = "ea_operator"
GUEST_COOKIE = "ea_guest"
MIN_TOKEN_CHARS = 24
MAX_FORM_BYTES = 4096
GUEST_PREFIX = "guest:"


def on_spaces() -> bool:
    """Gradio's own test (SYSTEM=spaces + SPACE_ID), so the login button and OAuth routes agree with it."""
    from gradio.utils import get_space
    return get_space() is not None


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class IdentityConfig:
    operators: tuple[str, ...] = ()
    operator_token: str | None = None        # None: token sign-in off
    operator_name: str = "operator"
    operator_session_s: float = 12 * 3600.0
    guests: bool = True                       # off Spaces only
    spaces: bool = False

    @classmethod
    def from_env(cls, operators: tuple[str, ...] = (), env: dict | None = None, spaces: bool | None = None):
        env = os.environ if env is None else env
        token = env.get(OPERATOR_TOKEN_ENV) or None
        if token is not None and len(token) < MIN_TOKEN_CHARS:
            log.warning("%s is shorter than %d characters: operator token sign-in is off", OPERATOR_TOKEN_ENV,
                        MIN_TOKEN_CHARS)
            token = None
        try:
            hours = float(env.get(OPERATOR_SESSION_ENV) or 12)
        except ValueError:
            hours = 12.0
        name = env.get(LOCAL_OPERATOR_ENV) or (operators[0] if operators else "operator")
        return cls(operators=tuple(operators), operator_token=token, operator_name=name,
                   operator_session_s=max(60.0, hours * 3600.0), guests=env.get(GUESTS_ENV, "1") != "0",
                   spaces=on_spaces() if spaces is None else spaces)


class Identity:
    """Resolves a request to a Submitter; issues and checks the operator and guest cookies."""

    def __init__(self, config: IdentityConfig, signer: Signer, clock=time.time):
        self.cfg = config
        self.signer = signer
        self.clock = clock

    @classmethod
    def from_env(cls, operators: tuple[str, ...], data_dir: Path, **kw) -> "Identity":
        return cls(IdentityConfig.from_env(operators, **kw), Signer.for_data_dir(data_dir))

    # ------------------------------------------------------------------ who
    def who(self, request, profile=None) -> Submitter | None:
        cookies = request_cookies(request)
        if self.operator_session_ok(cookies.get(OPERATOR_COOKIE)):
            return Submitter(self.cfg.operator_name, is_operator=True)
        if self.cfg.spaces:
            name = getattr(profile, "username", None) if profile is not None else None
            return Submitter(name, is_operator=name in self.cfg.operators) if name else None
        if self.cfg.guests:
            return self.guest(cookies.get(GUEST_COOKIE))
        return None

    def describe(self, person: Submitter | None) -> str:
        """One line for the page: who you are here and what that allows."""
        if person is None:
            return ("Signed out: sign in with Hugging Face to submit." if self.cfg.spaces else
                    "Anonymous submissions are off here; ask the operator.")
        if person.is_operator:
            return f"Signed in as **{person.name}** (operator: no quota; retry and cancel any request)."
        if person.name.startswith(GUEST_PREFIX):
            return (f"Submitting as guest **{person.name}** for this browser session (the normal quota applies; "
                    "your requests' endpoints are shown to you and the operator only).")
        return f"Signed in as **{person.name}**."

    # ------------------------------------------------------------------ operator session
    @property
    def token_sign_in(self) -> bool:
        return self.cfg.operator_token is not None

    def token_matches(self, presented) -> bool:
        """Constant time (over fixed-length digests, so not even the length leaks)."""
        if not self.token_sign_in or not isinstance(presented, str) or not presented:
            return False
        return hmac.compare_digest(_digest(presented), _digest(self.cfg.operator_token))

    def _fingerprint(self) -> str:
        # Binds a session to the current token: changing the token ends every operator session.
        return self.signer.mac("operator-token", self.cfg.operator_token or "")[:16]

    def issue_operator_session(self) -> str:
        expires = int(self.clock() + self.cfg.operator_session_s)
        return self.signer.sign("operator-session", f"{expires}~{self._fingerprint()}~{secrets.token_hex(8)}")

    def operator_session_ok(self, cookie) -> bool:
        if not self.token_sign_in or not cookie:
            return False
        value = self.signer.unsign("operator-session", cookie)
        parts = value.split("~") if value else []
        if len(parts) != 3 or not parts[0].isdigit():
            return False
        return int(parts[0]) > self.clock() and hmac.compare_digest(parts[1], self._fingerprint())

    # ------------------------------------------------------------------ guests
    def issue_guest(self) -> str:
        return self.signer.new_token("guest")

    def guest(self, cookie) -> Submitter | None:
        value = self.signer.unsign("guest", cookie) if cookie else None
        return Submitter(GUEST_PREFIX + self.signer.mac("guest-name", value)[:12]) if value else None

    # ------------------------------------------------------------------ HTTP
    def mount(self, app) -> None:
        """The operator's sign-in page and, off Spaces, the guest cookie. Call before mounting Gradio at /."""
        mount_routes(app, self)
        if not self.cfg.spaces and self.cfg.guests:
            app.add_middleware(GuestCookieMiddleware, identity=self)


def _secure(scope) -> bool:
    return scope.get("scheme") in ("https", "wss")


def _cookie_header(name: str, value: str, secure: bool, max_age: int | None = None) -> str:
    # SameSite=Strict: a cross-site page can never make the browser send these with a request it forges.
    parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


class GuestCookieMiddleware:
    """Gives every HTML page response a guest cookie when the browser has no valid one (pure ASGI)."""

    def __init__(self, app, identity: Identity):
        self.app, self.identity = app, identity

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET":
            return await self.app(scope, receive, send)
        from starlette.requests import HTTPConnection
        if self.identity.guest(HTTPConnection(scope).cookies.get(GUEST_COOKIE)) is not None:
            return await self.app(scope, receive, send)

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if ctype.startswith(b"text/html"):
                    headers.append((b"set-cookie", _cookie_header(GUEST_COOKIE, self.identity.issue_guest(),
                                                                  _secure(scope)).encode()))
                    message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, send_with_cookie)


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Operator sign-in · Empathy Arena</title>
<meta name="referrer" content="same-origin"></head><body style="font-family:sans-serif;max-width:32em;margin:3em auto">
<h1>Operator sign-in</h1><p id="operator-status">{status}</p>{body}
<p><a href="/">Back to Empathy Arena</a></p>
<script>
// A kept URL /operator#token=... signs in without the token ever reaching a server log (fragments are not sent).
const m = location.hash.match(/^#token=(.+)$/);
if (m) {{ history.replaceState(null, "", location.pathname);
  const f = document.getElementById("operator-form");
  if (f) {{ f.token.value = decodeURIComponent(m[1]); f.submit(); }} }}
</script></body></html>"""
FORM = ('<form id="operator-form" method="post" action="/operator/login"><label>Operator token '
        '<input type="password" name="token" id="operator-token" autocomplete="current-password"></label> '
        '<button type="submit" id="operator-submit">Sign in</button></form>')
LOGOUT = ('<form method="post" action="/operator/logout"><button type="submit" id="operator-logout">Sign out'
          '</button></form>')


def mount_routes(app, identity: Identity) -> None:
    from starlette.responses import HTMLResponse, RedirectResponse

    def page(status: str, body: str, code: int = 200) -> HTMLResponse:
        return HTMLResponse(PAGE.format(status=html.escape(status), body=body), status_code=code,
                            headers={"Cache-Control": "no-store"})

    def same_origin(request) -> bool:
        """A POST whose Origin names another site is a forged cross-site form."""
        origin = request.headers.get("origin")
        if not origin or origin == "null":
            return origin is None
        return urlsplit(origin).netloc == request.headers.get("host", "")

    @app.get("/operator", include_in_schema=False)
    async def operator_page(request: Request):
        if not identity.token_sign_in:
            return page("Operator token sign-in is not configured on this server"
                        + (" (sign in with Hugging Face instead)." if identity.cfg.spaces else "."), "", 404)
        if identity.operator_session_ok(request.cookies.get(OPERATOR_COOKIE)):
            return page(f"Signed in as the operator ({identity.cfg.operator_name}).", LOGOUT)
        return page("Not signed in.", FORM)

    @app.post("/operator/login", include_in_schema=False)
    async def operator_login(request: Request):
        if not identity.token_sign_in:
            return page("Operator token sign-in is not configured on this server.", "", 404)
        if not same_origin(request):
            return page("Refused: this form was posted from another site.", FORM, 403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return page("Refused: the form is too large.", FORM, 413)
        try:
            token = parse_qs(body.decode("utf-8"), max_num_fields=4).get("token", [""])[0]
        except (UnicodeDecodeError, ValueError):
            token = ""
        if not identity.token_matches(token):
            log.warning("operator sign-in refused (wrong token)")
            return page("Wrong token.", FORM, 403)
        log.info("operator signed in with the operator token")
        resp = RedirectResponse("/", status_code=303)
        resp.headers.append("set-cookie", _cookie_header(OPERATOR_COOKIE, identity.issue_operator_session(),
                                                         _secure(request.scope) or identity.cfg.spaces,
                                                         int(identity.cfg.operator_session_s)))
        return resp

    @app.post("/operator/logout", include_in_schema=False)
    async def operator_logout(request: Request):
        if not same_origin(request):
            return page("Refused: this form was posted from another site.", "", 403)
        resp = RedirectResponse("/", status_code=303)
        resp.headers.append("set-cookie", _cookie_header(OPERATOR_COOKIE, "", _secure(request.scope), 0))
        return resp
