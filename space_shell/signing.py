"""The server's signing key and signed tokens (session ids, opaque media tokens).

The key comes from EMPATHY_ARENA_SIGNING_KEY, else it is generated once and kept in
`<data dir>/signing_key` (mode 600; never served: see docs/security.md). Replicas that share a database
must share the key (set the variable, or share the data dir), or tokens issued by one are refused by another.

    signer = Signer.for_data_dir(data_dir)
    token = signer.sign("session", "abc")        # "abc.<mac>"
    signer.unsign("session", token)              # "abc", or None when forged / for another purpose
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

SIGNING_KEY_ENV = "EMPATHY_ARENA_SIGNING_KEY"
SIGNING_KEY_FILE = "signing_key"
_MAC_CHARS = 32            # 128 bits of HMAC-SHA256, hex


def load_or_create_key(data_dir: Path, env: dict | None = None) -> bytes:
    value = (env if env is not None else os.environ).get(SIGNING_KEY_ENV, "")
    if value:
        return value.encode()
    path = Path(data_dir) / SIGNING_KEY_FILE
    if not path.exists():
        tmp = path.with_name(f".{SIGNING_KEY_FILE}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)          # the first writer wins when two processes race
        except FileExistsError:
            pass
        tmp.unlink(missing_ok=True)
    return path.read_text().strip().encode()


class Signer:
    def __init__(self, key: bytes):
        if not key:
            raise ValueError("a signing key must not be empty")
        self._key = key

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> "Signer":
        return cls(load_or_create_key(data_dir))

    def mac(self, purpose: str, value: str) -> str:
        """A MAC bound to its purpose, so a token made for one use is worthless for another."""
        return hmac.new(self._key, f"{purpose}\x00{value}".encode(), hashlib.sha256).hexdigest()[:_MAC_CHARS]

    def sign(self, purpose: str, value: str) -> str:
        return f"{value}.{self.mac(purpose, value)}"

    def unsign(self, purpose: str, token) -> str | None:
        if not isinstance(token, str) or "." not in token or len(token) > 512 or not token.isascii():
            return None            # a token we sign is ASCII; hmac.compare_digest refuses other text with an error
        value, _, mac = token.rpartition(".")
        return value if value and hmac.compare_digest(mac, self.mac(purpose, value)) else None

    def new_token(self, purpose: str) -> str:
        """A fresh random value, signed: what the server issues (a client cannot choose it)."""
        return self.sign(purpose, secrets.token_urlsafe(18))
