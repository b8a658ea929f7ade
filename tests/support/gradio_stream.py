"""One Gradio session's event stream (`/gradio_api/queue/data`), read as Gradio's own client reads it: to the
app's `close_stream`, which it sends once the session has no event left.

Why never hang up first: the app streams through Starlette, which cancels the stream's task when the client goes
away; Gradio then deletes the session's message queue and its queued events (routes.py, `sse_stream`'s
CancelledError branch). Events the same session joins right after are lost with it: they never complete, and the
next read waits out its whole timeout. That was test_gradio_inputs' 37-160 s spread between runs.

    for line, msg in session_lines(client, url, session, timeout=120):   # msg: the parsed `data:` JSON, or None
        ...
"""
from __future__ import annotations

import json
import time
from typing import Iterator

import httpx


def session_lines(client: httpx.Client, url: str, session: str, timeout: float = 120.0
                  ) -> Iterator[tuple[str, dict | None]]:
    """Each line of the session's stream with its message, until the app closes the stream or `timeout` s pass
    (then it stops after the next line: the app sends a heartbeat every 15 s)."""
    with client.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": session},
                       timeout=httpx.Timeout(timeout, read=timeout)) as r:
        deadline = time.monotonic() + timeout
        for line in r.iter_lines():
            msg = json.loads(line[5:]) if line.startswith("data:") else None
            yield line, msg
            if (msg or {}).get("msg") == "close_stream" or time.monotonic() > deadline:
                return
