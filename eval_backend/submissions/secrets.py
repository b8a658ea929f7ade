"""Submitted API keys: encrypted at rest, kept only while their job is alive.

A key is encrypted with Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) under a key
taken from EMPATHY_ARENA_SECRET_KEY: either a Fernet key (`Fernet.generate_key()`) or any
passphrase, which is stretched with SHA-256 into one. Without that variable a submission that
carries an API key is REFUSED with a clear message: no key file is generated under the data dir,
because a key lying next to the ciphertext protects nothing when the data dir is copied or exported.

The ciphertext lives in its own table `submission_secrets` (never joined into listings or
exports) and is deleted in the same transaction that ends the job (FINISHED, FAILED, CANCELLED) — except a FINISHED
job whose submitter opted in to live battles (issue 22, arena/services/live_submitted.py): its key stays until the model is
withdrawn from live battles (queue.withdraw_live deletes it).
The clear key exists only in the worker's memory while the job runs (`KeyedModelSpec`).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import time

from ..config import ModelSpec

SECRET_KEY_ENV = "EMPATHY_ARENA_SECRET_KEY"
NO_KEY_MESSAGE = (f"API keys cannot be accepted here: the operator has not set {SECRET_KEY_ENV}, so the key "
                  "could not be stored encrypted. Submit without a key, or ask the operator to set it.")


class SecretsUnavailable(RuntimeError):
    pass


def _fernet(env: dict | None = None):
    from cryptography.fernet import Fernet
    value = (env if env is not None else os.environ).get(SECRET_KEY_ENV, "")
    if not value:
        raise SecretsUnavailable(NO_KEY_MESSAGE)
    try:
        if len(base64.urlsafe_b64decode(value.encode())) == 32:
            return Fernet(value.encode())
    except (binascii.Error, ValueError):
        pass
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(value.encode()).digest()))


def available(env: dict | None = None) -> bool:
    try:
        _fernet(env)
        return True
    except SecretsUnavailable:
        return False


def encrypt(secret: str, env: dict | None = None) -> bytes:
    return _fernet(env).encrypt(secret.encode())


def decrypt(token: bytes, env: dict | None = None) -> str:
    from cryptography.fernet import InvalidToken
    try:
        return _fernet(env).decrypt(bytes(token)).decode()
    except InvalidToken:
        raise SecretsUnavailable("the stored API key cannot be decrypted: "
                                 f"{SECRET_KEY_ENV} changed since it was submitted") from None


# --- the private table (called inside the queue's transactions) ---------------------------

def put(conn, job_id: int, secret: str) -> None:
    conn.execute("INSERT INTO submission_secrets (job_id, ciphertext, created_at) VALUES (?, ?, ?) "
                 "ON CONFLICT (job_id) DO UPDATE SET ciphertext=excluded.ciphertext, created_at=excluded.created_at",
                 (job_id, encrypt(secret), time.time()))


def get(conn, job_id: int) -> str | None:
    row = conn.execute("SELECT ciphertext FROM submission_secrets WHERE job_id=?", (job_id,)).fetchone()
    return decrypt(row[0]) if row else None


def delete(conn, job_id: int) -> None:
    conn.execute("DELETE FROM submission_secrets WHERE job_id=?", (job_id,))


class KeyedModelSpec(ModelSpec):
    """A ModelSpec whose key is held in memory, not in the environment (the Space's worker is a
    thread: an environment variable would be visible to every thread and child process).
    The key is not a dataclass field, so repr(), asdict() and dataclasses.fields() never show it."""

    def __init__(self, *args, api_key: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        object.__setattr__(self, "_secret", api_key)

    def api_key(self) -> str | None:
        return self._secret
