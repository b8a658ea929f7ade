"""Proof of work for anonymous voters: ALTCHA (PoW v2), verified here, solved by the voter's browser (the
self-hosted widget, arena/static/altcha/) or by a script (the `altcha` package, or any ALTCHA v2 solver).

Rule: a session that is not a signed-in Hub user proves work before its first counted vote, and again after
every `pow_every_votes` votes (EMPATHY_ARENA_POW_EVERY, 50). Why per N votes and not once per session: a
person voting at a listener's pace (one battle in ~30-60 s) solves once or twice an hour, in the background
while the clips play; a script pays for every 50 votes it casts, on top of the session and address limits.
Signed-in users skip it: their account is the identity the per-account limits hold (leaderboard/identity.py).

The challenge (ALTCHA's "deterministic" mode): PBKDF2-HMAC-SHA256 with `pow_cost` (1,000) iterations per
attempt, and the solution is a counter drawn uniformly from [pow_counter_max / 2, pow_counter_max] (5,000), so
a solver runs on average 3,750 x 1,000 = 3.75 million PBKDF2 iterations: about a second of one core for a script
with the `altcha` package, a second or two in a desktop browser's widget (several workers), a few seconds on a
phone, spent while the voter listens to the clips (figures: docs/benchmarks.md, "Integrity checks"). The server derives the key once when it makes the challenge (one attempt's cost)
and signs it, so checking a solution is one HMAC comparison. A challenge expires after `pow_ttl_s` (10 min)
and is spent by its first accepted use (its nonce is kept until it expires): a replayed or expired solution is
refused, and the voter's page fetches a fresh challenge.

    gate = PowGate(signer, settings, clock)
    gate.challenge()                    -> the JSON the widget fetches (GET /api/arena/pow/challenge)
    proof = gate.check(payload)         -> Proof (before the vote's transaction: CPU only)
    code = gate.admit(conn, session_id, user, proof)   -> None, or a refusal code (in the vote's transaction)

Refusal codes (logged as refused votes, so a broken widget shows up in the integrity health at once):
pow_required (no solution sent when one is due), pow_invalid (malformed, tampered or wrong), pow_expired,
pow_replayed.
"""
from __future__ import annotations

import base64
import binascii
import functools
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from altcha import Payload, create_challenge, verify_solution

from arena.tables import storage
from eval_backend import safejson
from eval_backend.store import Store, register_migration

register_migration("arena_0009_pow", """
CREATE TABLE IF NOT EXISTS arena_pow_passes (
    session_id      TEXT PRIMARY KEY,
    verified_at     REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS arena_pow_spent (
    nonce           TEXT PRIMARY KEY,
    expires_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS arena_pow_spent_expiry ON arena_pow_spent (expires_at)
""")

ALGORITHM = "PBKDF2/SHA-256"
MAX_PAYLOAD_CHARS = 4096
WIDGET_DIR = Path(__file__).resolve().parents[1] / "static" / "altcha"
WIDGET_FILE = WIDGET_DIR / "altcha.min.js"
CHALLENGE_PATH = "/api/arena/pow/challenge"
WIDGET_PATH = "/api/arena/pow/altcha.js"
MESSAGES = {
    "pow_required": "Anonymous votes need a quick automatic check first (your browser solves a small puzzle; it "
                    "takes a second or two). Wait until the check says it is done, then vote again.",
    "pow_invalid": "The automatic check's answer is not valid; a new check has started: vote again once it is done.",
    "pow_expired": "The automatic check expired; a new one has started: vote again once it is done.",
    "pow_replayed": "That automatic check was already used; a new one has started: vote again once it is done.",
}


@dataclass(frozen=True)
class Proof:
    """A checked solution: `code` None when it is valid (then `nonce` and `expires_at` identify it)."""
    code: str | None
    nonce: str = ""
    expires_at: float = 0.0


class PowGate:
    """Makes and checks ALTCHA challenges; keeps which sessions have proved work (one per ArenaService)."""

    def __init__(self, signer: Callable[[], object], settings, clock):
        """`signer()`: the server's Signer (space_shell/signing.py), asked only once a challenge is made or
        checked, so an arena without proof of work never creates a signing key for it."""
        self.settings, self.clock, self._signer = settings, clock, signer
        self._rng = random.SystemRandom()

    @functools.cached_property
    def _secrets(self) -> tuple[str, str]:
        """Two secrets from the server key (replicas share it): one signs the challenge, one the expected key."""
        signer = self._signer()
        return signer.mac("altcha-challenge", "v2"), signer.mac("altcha-key", "v2")

    @property
    def enabled(self) -> bool:
        return self.settings.pow_every_votes > 0

    def challenge(self) -> dict:
        s = self.settings
        counter = self._rng.randint(max(1, s.pow_counter_max // 2), max(1, s.pow_counter_max))
        return create_challenge(ALGORITHM, s.pow_cost, counter=counter, expires_at=int(self.clock() + s.pow_ttl_s),
                                hmac_secret=self._secrets[0], hmac_key_secret=self._secrets[1]).to_dict()

    def check(self, payload) -> Proof | None:
        """None when no payload was sent; else a Proof (valid, or with its refusal code). Pure CPU: base64, a
        depth-capped JSON parse, one HMAC of the challenge and one of the derived key."""
        if payload is None or payload == "":
            return None
        if not isinstance(payload, str) or len(payload) > MAX_PAYLOAD_CHARS:
            return Proof("pow_invalid")
        try:
            data = safejson.loads(base64.b64decode(payload, validate=True), max_depth=6)
            parsed = Payload.from_dict(data)
            params = parsed.challenge.parameters
            expires_at, nonce = params.expires_at, params.nonce
        except (ValueError, binascii.Error, KeyError, TypeError, AttributeError):
            return Proof("pow_invalid")
        if not isinstance(nonce, str) or not isinstance(expires_at, (int, float)) or params.algorithm != ALGORITHM:
            return Proof("pow_invalid")
        if expires_at < self.clock():
            return Proof("pow_expired")
        try:
            result = verify_solution(parsed, self._secrets[0], hmac_key_secret=self._secrets[1])
        except (ValueError, TypeError, AttributeError):
            return Proof("pow_invalid")
        if result.expired:
            return Proof("pow_expired")
        if not result.verified or not params.key_signature:   # only our signed, key-signed challenges count
            return Proof("pow_invalid")
        return Proof(None, nonce, float(expires_at))

    def needed(self, conn, session_id: str, user: str | None) -> bool:
        """Does this session owe a proof before its next vote? (read in a transaction of the caller's)"""
        if not self.enabled or user:
            return False
        row = conn.execute("SELECT verified_at FROM arena_pow_passes WHERE session_id=?", (session_id,)).fetchone()
        return row is None or storage.session_votes_since(conn, session_id, row["verified_at"]) >= \
            self.settings.pow_every_votes

    def admit(self, conn, session_id: str, user: str | None, proof: Proof | None, now: float) -> str | None:
        """Inside the vote's transaction: None when the vote may go on (no proof due, or a valid one, now
        spent: it covers this vote and the next pow_every_votes - 1), else the refusal code. A proof sent when
        none is due is left unspent."""
        if not self.needed(conn, session_id, user):
            return None
        if proof is None:
            return "pow_required"
        if proof.code:
            return proof.code
        if conn.execute("INSERT INTO arena_pow_spent (nonce, expires_at) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
                        (proof.nonce, proof.expires_at)).rowcount != 1:
            return "pow_replayed"
        conn.execute("INSERT INTO arena_pow_passes (session_id, verified_at) VALUES (?, ?) ON CONFLICT (session_id) "
                     "DO UPDATE SET verified_at=excluded.verified_at", (session_id, now))
        return None

    def for_client(self) -> dict:
        """What a battle's JSON or a pow_* refusal carries so a script can solve and vote (arena/README.md)."""
        return {"challenge": self.challenge(), "every_votes": self.settings.pow_every_votes,
                "algorithm": ALGORITHM, "solver": "ALTCHA v2: e.g. Python `altcha.solve_challenge`"}


def purge_spent(store: Store, now: float) -> int:
    """Forget spent challenges that have expired (an expired one is refused as expired anyway)."""
    with store.transaction() as conn:
        return conn.execute("DELETE FROM arena_pow_spent WHERE expires_at < ?", (now,)).rowcount
