"""Bounds on what one client can ask of the arena, checked in memory before anything reaches the database.

Battles and votes are written by the process's single writer thread (writer.WRITER). A flood that reached
it would queue in front of every honest voter, so these checks run on the caller's thread (the event loop,
or Gradio's handler) and cost a dict lookup:

- battle issuance per client address: a token bucket of `ip_battles_per_minute` tokens, refilled at that
  rate per minute (bursts up to the full minute's worth);
- open battles per session: served, not voted on, not expired; at most `session_open_battles`. A slot is
  reserved at admission, so concurrent requests of one session cannot all pass before any is recorded;
- vote attempts per client address: `ip_vote_attempts_per_minute`, same bucket shape. The accepted-vote
  limits (session/address/account per minute and day) stay in the vote's transaction (service.py); this one
  keeps a stream of bogus votes off the writer;
- skips per client address (`POST /api/arena/skip`, the tab's Skip): their own bucket of the same size as vote
  attempts, so skipping never spends a voter's vote budget, and a stream of skips still stays off the writer;
- proof-of-work challenges per client address (`GET /api/arena/pow/challenge`, arena/services/pow.py: each costs the
  server one key derivation): their own bucket of the size of the battles' one.

IPv6 clients are keyed by their /64: one host usually holds a whole /64 and could otherwise rotate through it.
State is per process (replicas each keep their own) and starts empty on restart; the tables are bounded
(least recently used keys are dropped first, `MAX_KEYS`).
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from space_shell.rate_limit import MAX_KEYS, TokenBuckets, address_key  # noqa: F401  (importable from here)


class Refused(Exception):
    """Too much, too fast: `reason_code` (rate_limited | too_many_open), a message for the client, and how
    long to wait (seconds) before trying again."""

    def __init__(self, reason_code: str, message: str, retry_after_s: float):
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message
        self.retry_after_s = retry_after_s


@dataclass
class Ticket:
    """An admitted battle request: holds one of its session's open-battle slots until served or released."""
    session: str
    slot: object = field(default_factory=object)


class BattleGate:
    """The arena's in-memory limits (one per ArenaService, shared by its HTTP API and Gradio tab)."""

    def __init__(self, ip_battles_per_minute: float, session_open_battles: int, ip_vote_attempts_per_minute: float,
                 battle_ttl_s: float, clock: Callable[[], float], max_keys: int = MAX_KEYS):
        self.clock = clock
        self.ttl = battle_ttl_s
        self.open_cap = session_open_battles
        self.max_keys = max_keys
        self.battles = TokenBuckets(ip_battles_per_minute, clock, max_keys)
        self.votes = TokenBuckets(ip_vote_attempts_per_minute, clock, max_keys)
        self.skips = TokenBuckets(ip_vote_attempts_per_minute, clock, max_keys)
        self.challenges = TokenBuckets(ip_battles_per_minute, clock, max_keys)
        self._open: OrderedDict[str, dict[object, float]] = OrderedDict()   # session -> {battle id | slot: expiry}
        self._lock = threading.Lock()
        self.refused: dict[str, int] = {"battle_rate": 0, "open_battles": 0, "vote_rate": 0, "skip_rate": 0,
                                        "challenge_rate": 0}

    def _count(self, kind: str) -> None:
        with self._lock:
            self.refused[kind] += 1

    def admit_battle(self, session: str, address: str | None) -> Ticket:
        """Reserve a battle for `session` from `address`, or raise Refused."""
        now = self.clock()
        with self._lock:
            held = self._open.get(session)
            if held is not None:
                for k in [k for k, exp in held.items() if exp <= now]:
                    del held[k]
                if len(held) >= self.open_cap:
                    self.refused["open_battles"] += 1
                    wait = max(1.0, min(held.values()) - now)
                    raise Refused("too_many_open", f"this session has {len(held)} battles open (the limit is "
                                                   f"{self.open_cap}): vote on one, or wait {wait / 60:.0f} min "
                                                   "until the oldest expires", wait)
        wait = self.battles.take(address_key(address))
        if wait:
            raise self._rate_refusal("battle", wait)
        ticket = Ticket(session)
        with self._lock:
            held = self._open.get(session)
            if held is None:
                held = self._open[session] = {}
                while len(self._open) > self.max_keys:
                    self._open.popitem(last=False)
            else:
                self._open.move_to_end(session)
            held[ticket.slot] = now + self.ttl
        return ticket

    def opened(self, ticket: Ticket, battle_id: str, expires_at: float) -> None:
        """The reserved battle was served: its slot now stands for the battle until voted on or expired."""
        with self._lock:
            held = self._open.get(ticket.session)
            if held is not None and held.pop(ticket.slot, None) is not None:
                held[battle_id] = expires_at

    def release(self, ticket: Ticket) -> None:
        """The reserved battle was not served (no battle available, an error): give the slot back."""
        with self._lock:
            held = self._open.get(ticket.session)
            if held is not None:
                held.pop(ticket.slot, None)

    def closed(self, session: str, battle_id: str) -> None:
        """A vote on the battle was accepted."""
        with self._lock:
            held = self._open.get(session)
            if held is not None:
                held.pop(battle_id, None)

    def early_refusal(self, kind: str, address: str | None) -> Refused | None:
        """For a front door that answers before any framework runs: the refusal a `kind` request ("battle" or
        "vote") from `address` is sure to get now, or None (then the full check runs, and takes the token)."""
        wait = self._buckets(kind).wait(address_key(address))
        return self._rate_refusal(kind, wait) if wait else None

    def _rate_refusal(self, kind: str, wait: float) -> Refused:
        self._count(f"{kind}_rate")
        what = {"battle": "battles", "vote": "vote attempts", "skip": "skips", "challenge": "check challenges"}[kind]
        buckets = self._buckets(kind)
        return Refused("rate_limited", f"too many {what} from this network address (the limit is "
                                       f"{buckets.capacity:g} a minute); try again in {math.ceil(wait)} s", wait)

    def _buckets(self, kind: str) -> TokenBuckets:
        return {"battle": self.battles, "vote": self.votes, "skip": self.skips, "challenge": self.challenges}[kind]

    def admit_skip(self, address: str | None) -> None:
        """The in-memory skip limit per address; raises Refused (rate_limited)."""
        wait = self.skips.take(address_key(address))
        if wait:
            raise self._rate_refusal("skip", wait)

    def admit_challenge(self, address: str | None) -> None:
        """The in-memory proof-of-work challenge limit per address; raises Refused (rate_limited)."""
        wait = self.challenges.take(address_key(address))
        if wait:
            raise self._rate_refusal("challenge", wait)

    def admit_vote(self, address: str | None) -> None:
        wait = self.votes.take(address_key(address))
        if wait:
            raise self._rate_refusal("vote", wait)

    def open_count(self, session: str) -> int:
        now = self.clock()
        with self._lock:
            return sum(exp > now for exp in self._open.get(session, {}).values())
