"""Per-client budgets kept in memory: token buckets keyed by client address (or anything else).

Used by the arena's limits (arena/core/abuse.py: battles, votes, skips) and by the guard in front of Gradio's own
routes (space_shell/gradio_guard.py: uploads, new Gradio sessions, queue joins). Tables are bounded (least
recently used keys are dropped first, `MAX_KEYS`), per process, and start empty on restart.
"""
from __future__ import annotations

import ipaddress
import threading
from collections import OrderedDict
from typing import Callable

MAX_KEYS = 100_000


def address_key(address: str | None) -> str:
    """The rate-limit key of a client address: IPv4 as is, IPv6 by its /64."""
    if not address:
        return "-"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class TokenBuckets:
    """`per_minute` tokens per key (or `capacity` per `window_s`), refilled continuously; a bounded LRU table.

    `take(key)` spends one token. For an amount known only as it arrives (the bytes of an upload): admit while
    `wait(key)` is 0 (the key has at least one token left), then `charge` what arrives; the balance may go below
    zero, so one key gets at most `capacity` plus what its admitted requests carry per window, and the debt is
    repaid before the next admission."""

    def __init__(self, per_minute: float, clock: Callable[[], float], max_keys: int = MAX_KEYS,
                 window_s: float = 60.0):
        self.capacity = float(per_minute)
        self.window_s = float(window_s)
        self.rate = float(per_minute) / self.window_s
        self.clock = clock
        self.max_keys = max_keys
        self._items: OrderedDict[str, list[float]] = OrderedDict()    # key -> [tokens, last refill time]
        self._lock = threading.Lock()

    def _tokens(self, key: str, now: float) -> float:
        item = self._items.get(key)
        return self.capacity if item is None else min(self.capacity, item[0] + (now - item[1]) * self.rate)

    def wait(self, key: str, need: float = 1.0) -> float:
        """Seconds until `key` holds `need` tokens (0.0: now), without taking any."""
        if self.capacity <= 0:
            return self.window_s
        now = self.clock()
        with self._lock:
            tokens = self._tokens(key, now)
        return 0.0 if tokens >= need else (need - tokens) / self.rate

    def _refilled(self, key: str, now: float) -> list[float]:
        """The key's [tokens, time] brought up to `now` (a new key starts full); call under the lock."""
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = [self.capacity, now]
            while len(self._items) > self.max_keys:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(key)
            item[0] = min(self.capacity, item[0] + (now - item[1]) * self.rate)
            item[1] = now
        return item

    def take(self, key: str, cost: float = 1.0) -> float:
        """Take `cost` tokens: 0.0 when granted, else the seconds until they would be."""
        if self.capacity <= 0:                # a limit of 0 closes the door: ask again in a window
            return self.window_s
        now = self.clock()
        with self._lock:
            item = self._refilled(key, now)
            if item[0] >= cost:
                item[0] -= cost
                return 0.0
            return (cost - item[0]) / self.rate

    def charge(self, key: str, cost: float) -> None:
        """Spend `cost` more tokens of a grant already made (the bytes of an upload as they arrive)."""
        now = self.clock()
        with self._lock:
            self._refilled(key, now)[0] -= cost
