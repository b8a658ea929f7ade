"""Refusals are held back (space_shell/refusal_delay.py, issue 21 point 5): a 429 leaves only after the delay, any
other answer at once, and what is held at once is bounded per address and in all. The real server under a flood:
tests/test_flood.py (the flooder's request rate is bounded by its connections over the delay)."""
from __future__ import annotations

import asyncio
import time

from space_shell.refusal_delay import RefusalDelay

DELAY = 0.2


async def _app(scope, receive, send):
    status = 429 if scope["path"] == "/refused" else 200
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _scope(path: str, address: str) -> dict:
    return {"type": "http", "method": "POST", "path": path, "headers": [], "client": (address, 50000)}


async def _answer(app, path: str, address: str) -> tuple[int, float]:
    """(status, seconds until the response's first message was sent)."""
    t0 = time.monotonic()
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            sent.append((message["status"], time.monotonic() - t0))

    await app(_scope(path, address), receive, send)
    return sent[0]


def test_a_refusal_waits_and_an_answer_does_not():
    app = RefusalDelay(_app, DELAY)
    status, took = asyncio.run(_answer(app, "/refused", "10.0.0.1"))
    assert status == 429 and took >= DELAY
    status, took = asyncio.run(_answer(app, "/ok", "10.0.0.1"))
    assert status == 200 and took < DELAY / 2


def test_held_refusals_are_bounded_per_address_and_in_all():
    app = RefusalDelay(_app, DELAY, per_address=4, total=6)

    async def burst():
        # 7 refusals at once from one address, then 3 from another while they are held
        first = [asyncio.create_task(_answer(app, "/refused", "10.0.0.1")) for _ in range(7)]
        await asyncio.sleep(0.01)
        second = [asyncio.create_task(_answer(app, "/refused", "10.0.0.2")) for _ in range(3)]
        return await asyncio.gather(*first), await asyncio.gather(*second)

    first, second = asyncio.run(burst())
    held = lambda answers: sum(took >= DELAY for _, took in answers)   # noqa: E731
    assert held(first) == 4                # per address: 3 of the 7 were sent at once
    assert held(second) == 2               # in all: 4 + 2 = 6 held, the third went at once
    assert app._held == {} and app._held_total == 0      # every hold given back


def test_no_delay_when_set_to_zero():
    app = RefusalDelay(_app, 0)
    status, took = asyncio.run(_answer(app, "/refused", "10.0.0.1"))
    assert status == 429 and took < 0.05
