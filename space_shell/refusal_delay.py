"""Refusals held back: every 429 the app sends waits `delay_s` before it leaves (issue 21, point 5).

A client past its budget is answered 429 by whichever layer counts it (arena/web/http_api.py's EarlyRefusal,
the arena's handlers, space_shell/gradio_guard.py). A refusal is cheap, but a client that sends its next request as
soon as the last one is answered turns cheap into thousands a second: with 8 connections, ~6,000 refused battle
requests a second kept the event loop busy (61 CPU-s a minute) and honest voters waited behind them. Held for a
quarter of a second (an `asyncio.sleep`, no thread, no CPU), the same client gets 8 / 0.25 = 32 answers a second.
Nobody within budget is delayed; a refused honest client was told to come back after `Retry-After` seconds anyway.

Bounded: at most `per_address` refusals are held at once for one address and `total` for all; past that a refusal is
sent at once (so holding costs at most `total` sleeping coroutines, whatever a client opens). Many connections, or
many addresses, still cost what they cost without this; docs/security.md says so.
"""
from __future__ import annotations

import asyncio

from . import client_address
from .asgi_layer import AsgiLayer
from .rate_limit import address_key


class RefusalDelay(AsgiLayer):
    """ASGI middleware in front of the whole app (space_shell/gradio_guard.py's mount_gradio puts it there)."""

    def __init__(self, app, delay_s: float, per_address: int = 32, total: int = 4096):
        self.app = app
        self.delay_s = delay_s
        self.per_address = per_address
        self.total = total
        self._held: dict[str, int] = {}     # address key -> refusals held now (the event loop's thread only)
        self._held_total = 0

    def _take(self, key: str) -> bool:
        if self._held_total >= self.total or self._held.get(key, 0) >= self.per_address:
            return False
        self._held[key] = self._held.get(key, 0) + 1
        self._held_total += 1
        return True

    def _give_back(self, key: str) -> None:
        self._held_total -= 1
        left = self._held[key] - 1
        if left:
            self._held[key] = left
        else:
            del self._held[key]

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or self.delay_s <= 0:
            return await self.app(scope, receive, send)

        async def delaying_send(message):
            if message["type"] == "http.response.start" and message.get("status") == 429:
                key = address_key(client_address.from_scope(scope))
                if self._take(key):
                    try:
                        await asyncio.sleep(self.delay_s)
                    finally:
                        self._give_back(key)
            await send(message)

        await self.app(scope, receive, delaying_send)
