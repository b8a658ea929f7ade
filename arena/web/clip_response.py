"""The response that sends a battle clip: what the listening rule needs to know (which bytes left the server), and
nothing that ties the clip to any other route.

- No validators: no ETag, no Last-Modified (the file's, shared with any route that served the same file, and
  grouping files by the run that wrote them, i.e. by model), only `Cache-Control: private, no-store`.
- Ranges: one `bytes=a-b`, `bytes=a-` or `bytes=-n` range gets 206 (players seek); a range past the end 416;
  several ranges, or a malformed header, the whole clip (a server may ignore Range).
- `on_sent(start, end, size)` is called, on a worker thread, just before each chunk is handed to the server:
  bytes [start, end) of a `size`-byte file are sent (so the count is written before the client can hold them). The clip counts as fetched once what was sent
  covers what the rule asks (arena/tables/battle_clips.py), so one `Range: bytes=0-0` is not a fetch.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

import anyio
from starlette.responses import Response

CHUNK = 64 * 2**10
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str | None, size: int) -> tuple[int, int] | None | str:
    """[start, end) of a single byte range; None: the whole file; "unsatisfiable": 416."""
    if not header:
        return None
    m = _RANGE.match(header.strip())
    if not m or (not m.group(1) and not m.group(2)):
        return None                                  # several ranges, or not ours to understand: whole file
    if not m.group(1):                               # the last n bytes
        n = int(m.group(2))
        return (max(0, size - n), size) if n > 0 and size > 0 else "unsatisfiable"
    start = int(m.group(1))
    end = min(size, int(m.group(2)) + 1) if m.group(2) else size
    if start >= size or end <= start:
        return "unsatisfiable"
    return start, end


class ClipResponse(Response):
    """An ASGI response for one audio file (see the module's doc). A starlette Response, so a route may return it."""

    def __init__(self, path: Path, media_type: str, filename: str, on_sent: Callable[[int, int, int], None]):
        super().__init__(media_type=media_type)     # status and headers are set when the range is known
        self.path, self.filename, self.on_sent = Path(path), filename, on_sent
        self.clip_type = media_type

    async def __call__(self, scope, receive, send):
        try:
            fd = await anyio.to_thread.run_sync(os.open, self.path, os.O_RDONLY)
        except OSError:
            return await _plain(send, 404, b'{"error": "not_found", "message": "no such clip"}')
        try:
            size = os.fstat(fd).st_size
            headers = {k.lower().decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
            span = parse_range(headers.get("range"), size)
            if span == "unsatisfiable":
                return await _plain(send, 416, b"", [(b"content-range", f"bytes */{size}".encode())])
            start, end = span if isinstance(span, tuple) else (0, size)
            out = [(b"content-type", self.clip_type.encode()), (b"content-length", str(end - start).encode()),
                   (b"accept-ranges", b"bytes"), (b"cache-control", b"private, no-store"),
                   (b"x-content-type-options", b"nosniff"),
                   (b"content-disposition", f'inline; filename="{self.filename}"'.encode())]
            if isinstance(span, tuple):
                out.append((b"content-range", f"bytes {start}-{end - 1}/{size}".encode()))
            await send({"type": "http.response.start", "status": 206 if isinstance(span, tuple) else 200,
                        "headers": out})
            if scope.get("method") == "HEAD":
                return await send({"type": "http.response.body", "body": b""})
            pos = start
            while pos < end:
                chunk = await anyio.to_thread.run_sync(os.pread, fd, min(CHUNK, end - pos), pos)
                if not chunk:
                    break
                # counted before it is handed over: a client holding the last byte may vote at once, and the
                # vote must find the fetch (it lost that race now and then when the count came after the send)
                await anyio.to_thread.run_sync(self.on_sent, start, pos + len(chunk), size)
                await send({"type": "http.response.body", "body": chunk, "more_body": pos + len(chunk) < end})
                pos += len(chunk)
            if pos < end:                            # the file shrank under us: end the body
                await send({"type": "http.response.body", "body": b""})
        finally:
            os.close(fd)


async def _plain(send, status: int, body: bytes, extra: list | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
