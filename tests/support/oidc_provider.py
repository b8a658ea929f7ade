"""A small OpenID Connect provider on loopback, standing in for the Hugging Face Hub's sign-in in tests.

It speaks the protocol Gradio's Hub login uses (authlib's authorization-code flow, discovered through
`OPENID_PROVIDER_URL/.well-known/openid-configuration`): an authorize page where the browser signs in with a
user name and password, single-use codes bound to the client, redirect URI, nonce and PKCE challenge, a token
endpoint that authenticates the client (client_secret_basic or client_secret_post), ID tokens signed RS256 with
a real RSA key published at the JWKS endpoint, and a userinfo endpoint. Claims are HF's: sub, name,
preferred_username, profile, picture.

    with OIDCProvider("client-id", "client-secret", users={"alice": User("pw-a")}) as idp:
        env = idp.space_env()          # OPENID_PROVIDER_URL, OAUTH_CLIENT_ID, ... for the app process
        idp.events                     # what happened: ("authorize", user), ("token", user), ("refused", why)

A user with `expires_in=3` gets an access token (and so a Gradio session) that expires after 3 s; a user with
`forge=True` gets an ID token signed with a key the JWKS does not publish (the relying party must refuse it).
Run alone: `python -m tests.support.oidc_provider --port 8900 --user alice:pw` (prints `READY <port>`).
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

MAX_BODY = 16 * 1024
CODE_TTL_S = 60.0


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_b64(n: int) -> str:
    return b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


class RSAKey:
    """An RS256 signing key and its public JWK."""

    def __init__(self, kid: str):
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self) -> dict:
        pub = self.private.public_key().public_numbers()
        return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid, "n": _int_b64(pub.n),
                "e": _int_b64(pub.e)}

    def sign_jwt(self, claims: dict) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "."
                         + b64url(json.dumps(claims, separators=(",", ":")).encode()))
        sig = self.private.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(sig)


@dataclass
class User:
    password: str
    name: str = ""
    expires_in: int = 3600           # the access token's lifetime (Gradio ends its session then)
    forge: bool = False              # sign this user's ID token with an unpublished key


@dataclass
class _Code:
    user: str
    client_id: str
    redirect_uri: str
    nonce: str | None
    scope: str
    challenge: str | None
    method: str | None
    expires: float
    used: bool = False


class OIDCProvider:
    def __init__(self, client_id: str, client_secret: str, users: dict[str, User], port: int = 0,
                 redirect_prefixes: tuple[str, ...] = ("http://127.0.0.1:", "http://localhost:")):
        self.client_id, self.client_secret = client_id, client_secret
        self.users = users
        self.redirect_prefixes = redirect_prefixes
        self.key = RSAKey("test-key-1")
        self.rogue = RSAKey("test-key-1")          # same kid, never published
        self.codes: dict[str, _Code] = {}
        self.tokens: dict[str, tuple[str, float]] = {}    # access token -> (user, expires)
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.port = self.server.server_address[1]
        self.thread: threading.Thread | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def space_env(self, scopes: str = "openid profile") -> dict[str, str]:
        """What Spaces sets for a Space with `hf_oauth: true`, pointed at this provider."""
        return {"OPENID_PROVIDER_URL": self.issuer, "OAUTH_CLIENT_ID": self.client_id,
                "OAUTH_CLIENT_SECRET": self.client_secret, "OAUTH_SCOPES": scopes, "SYSTEM": "spaces",
                "SPACE_ID": "tests/empathy-arena"}

    def metadata(self) -> dict:
        i = self.issuer
        return {"issuer": i, "authorization_endpoint": f"{i}/oauth/authorize", "token_endpoint": f"{i}/oauth/token",
                "userinfo_endpoint": f"{i}/oauth/userinfo", "jwks_uri": f"{i}/oauth/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"], "scopes_supported": ["openid", "profile"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "code_challenge_methods_supported": ["S256"],
                "claims_supported": ["sub", "name", "preferred_username", "profile", "picture"]}

    def claims(self, user: str) -> dict:
        return {"sub": hashlib.sha256(user.encode()).hexdigest()[:24], "name": self.users[user].name or user,
                "preferred_username": user, "profile": f"https://huggingface.co/{user}",
                "picture": f"https://huggingface.co/avatars/{user}.svg"}

    def note(self, kind: str, what: str) -> None:
        with self.lock:
            self.events.append((kind, what))

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "OIDCProvider":
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="oidc-provider")
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "OIDCProvider":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ protocol
    def check_authorize(self, q: dict[str, str]) -> str | None:
        if q.get("response_type") != "code":
            return "unsupported_response_type"
        if q.get("client_id") != self.client_id:
            return "unknown client"
        uri = q.get("redirect_uri", "")
        if not uri.startswith(self.redirect_prefixes) or urlsplit(uri).path != "/login/callback":
            return "redirect_uri not registered"
        if "openid" not in q.get("scope", "").split():
            return "scope must include openid"
        if not q.get("state"):
            return "state missing"
        return None

    def issue_code(self, user: str, q: dict[str, str]) -> str:
        code = secrets.token_urlsafe(24)
        with self.lock:
            self.codes[code] = _Code(user, q["client_id"], q["redirect_uri"], q.get("nonce"), q.get("scope", ""),
                                     q.get("code_challenge"), q.get("code_challenge_method"),
                                     time.time() + CODE_TTL_S)
        self.note("authorize", user)
        return code

    def exchange(self, form: dict[str, str], basic: tuple[str, str] | None) -> tuple[int, dict]:
        client_id, secret = basic if basic else (form.get("client_id", ""), form.get("client_secret", ""))
        if not (secrets.compare_digest(client_id, self.client_id)
                and secrets.compare_digest(secret, self.client_secret)):
            self.note("refused", "client authentication")
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != "authorization_code":
            return 400, {"error": "unsupported_grant_type"}
        with self.lock:
            code = self.codes.get(form.get("code", ""))
            ok = code is not None and not code.used and code.expires > time.time()
            if code is not None:
                code.used = True                          # single use, even when this exchange fails
        if not ok or code.client_id != client_id or code.redirect_uri != form.get("redirect_uri"):
            self.note("refused", "code")
            return 400, {"error": "invalid_grant"}
        if code.challenge:
            verifier = form.get("code_verifier", "")
            if code.method != "S256" or b64url(hashlib.sha256(verifier.encode()).digest()) != code.challenge:
                self.note("refused", "pkce")
                return 400, {"error": "invalid_grant"}
        user = self.users[code.user]
        access = "hf_oauth_" + secrets.token_urlsafe(24)
        now = int(time.time())
        with self.lock:
            self.tokens[access] = (code.user, now + user.expires_in)
        id_claims = {**self.claims(code.user), "iss": self.issuer, "aud": self.client_id, "iat": now,
                     "exp": now + 3600, "auth_time": now,
                     "at_hash": b64url(hashlib.sha256(access.encode()).digest()[:16])}
        if code.nonce:
            id_claims["nonce"] = code.nonce
        signer = self.rogue if user.forge else self.key
        self.note("token", code.user)
        return 200, {"access_token": access, "token_type": "bearer", "expires_in": user.expires_in,
                     "scope": code.scope, "id_token": signer.sign_jwt(id_claims)}

    def userinfo(self, bearer: str) -> tuple[int, dict]:
        with self.lock:
            user, expires = self.tokens.get(bearer, (None, 0))
        if user is None or expires < time.time():
            return 401, {"error": "invalid_token"}
        return 200, self.claims(user)

    # ------------------------------------------------------------------ HTTP
    def _handler(self):
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):       # quiet; tests read idp.events
                pass

            def _send(self, status: int, body: bytes, ctype: str, headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, obj: dict) -> None:
                self._send(status, json.dumps(obj).encode(), "application/json")

            def _form(self) -> dict[str, str] | None:
                n = int(self.headers.get("Content-Length") or 0)
                if n > MAX_BODY:
                    return None
                raw = self.rfile.read(n).decode("utf-8", "replace")
                return {k: v[0] for k, v in parse_qs(raw, max_num_fields=32).items()}

            def _query(self) -> dict[str, str]:
                return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query, max_num_fields=32).items()}

            def _login_page(self, q: dict[str, str], message: str = "", status: int = 200) -> None:
                hidden = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                                 for k, v in q.items())
                page = (f"<!doctype html><title>Sign in - test Hub</title><h1>Sign in to the test Hub</h1>"
                        f"<p id='idp-message'>{html.escape(message)}</p>"
                        f"<form method='post' action='/oauth/authorize'>{hidden}"
                        f"<input name='username' id='idp-username'> <input name='password' type='password' "
                        f"id='idp-password'> <button id='idp-authorize' type='submit'>Authorize</button></form>")
                self._send(status, page.encode(), "text/html; charset=utf-8")

            def do_GET(self):
                path = urlsplit(self.path).path
                if path == "/.well-known/openid-configuration":
                    return self._json(200, idp.metadata())
                if path == "/oauth/jwks":
                    return self._json(200, {"keys": [idp.key.jwk()]})
                if path == "/oauth/authorize":
                    q = self._query()
                    why = idp.check_authorize(q)
                    if why:
                        idp.note("refused", why)
                        return self._send(400, why.encode(), "text/plain")
                    return self._login_page(q)
                if path == "/oauth/userinfo":
                    auth = self.headers.get("Authorization", "")
                    status, body = idp.userinfo(auth[7:] if auth.lower().startswith("bearer ") else "")
                    return self._json(status, body)
                self._send(404, b"not found", "text/plain")

            def do_POST(self):
                path = urlsplit(self.path).path
                form = self._form()
                if form is None:
                    return self._json(413, {"error": "invalid_request"})
                if path == "/oauth/authorize":
                    user, password = form.pop("username", ""), form.pop("password", "")
                    why = idp.check_authorize(form)
                    if why:
                        idp.note("refused", why)
                        return self._send(400, why.encode(), "text/plain")
                    known = idp.users.get(user)
                    if known is None or not secrets.compare_digest(password, known.password):
                        idp.note("refused", "password")
                        return self._login_page(form, "Wrong user name or password.", 401)
                    code = idp.issue_code(user, form)
                    target = form["redirect_uri"] + ("&" if "?" in form["redirect_uri"] else "?") + urlencode(
                        {"code": code, "state": form["state"]})
                    return self._send(302, b"", "text/plain", {"Location": target})
                if path == "/oauth/token":
                    basic = None
                    auth = self.headers.get("Authorization", "")
                    if auth.lower().startswith("basic "):
                        try:
                            cid, _, sec = base64.b64decode(auth[6:]).decode().partition(":")
                        except ValueError:
                            return self._json(401, {"error": "invalid_client"})
                        from urllib.parse import unquote_plus
                        basic = (unquote_plus(cid), unquote_plus(sec))
                    status, body = idp.exchange(form, basic)
                    return self._json(status, body)
                self._send(404, b"not found", "text/plain")

        return Handler


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--client-id", default="test-client")
    p.add_argument("--client-secret", default="test-secret")
    p.add_argument("--user", action="append", default=[], help="NAME:PASSWORD")
    args = p.parse_args()
    users = {u.split(":", 1)[0]: User(u.split(":", 1)[1]) for u in args.user}
    idp = OIDCProvider(args.client_id, args.client_secret, users, args.port).start()
    print(f"READY {idp.port}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        idp.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
