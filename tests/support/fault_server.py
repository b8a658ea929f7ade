"""A loopback OpenAI-compatible /v1/chat/completions server that fails on request, for client and runner tests.

A fault is chosen per request by a marker in the user text, `[fault:NAME]` or `[fault:NAME:N]`:
    hang          never answer (until the client gives up)
    500[:N]       HTTP 500 (only the first N calls of that request id when N is given, then a normal reply)
    429[:N]       HTTP 429 with Retry-After (same counting)
    400           HTTP 400
    echo-key      HTTP 401 whose body echoes the Authorization header, as careless providers do
    garbage       200 with a body that is not JSON
    badb64        200 with audio data that is not base64
    truncwav      200 with a wav cut short of what its header declares
    nochoices     200 with `choices: []`
    nocontent     200 with a choice whose message has no text and no audio
    omni          vLLM-Omni shape: text in choice 0, audio in choice 1 with an empty transcript
    parts         message.content as a list of text parts
    slow:N        answer after N seconds
Unbounded replies (bodies generated lazily from one 1 MiB block: the server stays small):
    huge[:MB]     200 JSON of MB megabytes (default 300), chunked, no Content-Length
    huge-cl[:MB]  the same with its Content-Length declared
    endless       200 JSON that never ends (chunked)
    gzip-bomb     200 JSON of 300 MB sent gzip-compressed (~300 KB on the wire)
    endless-sse   200 text/event-stream of 64 KiB comment lines that never ends (also to non-stream requests)
    sse-flood     200 text/event-stream of text deltas that never ends (stream requests)
    trickle       200 that sends one byte every 0.1 s, forever
    longtext[:N]  200 JSON whose text has N characters (default 100,000)
    longaudio[:S] 200 JSON whose audio is S seconds of 8 kHz wav (default 30)
    redirect-private  307 to this server's /secret (a private URL serving a secret), which the client must not follow
    redirect-other    307 to another origin
    echo-key-text 200 whose text and transcript quote the Authorization key (raw, base64, hex, percent-encoded)
No marker: a normal reply, with audio when the request asks for it (`modalities` has "audio"): a tone at `tone_hz`
for the first model the server is asked for, four semitones higher for each further one, so two models on one
server do not send the very same clip (the arena never pits identical replies: issue 22); `one_voice=True` gives
every model the same tone.
`stream=true` requests get SSE chunks (audio as independently base64-encoded 16-bit PCM pieces,
Qwen-Omni style); `[fault:streamwav]` streams a whole wav cut at odd base64 positions instead, and
`[fault:weird]` an event of an impossible shape.
With `stream_only=True` a non-streaming request gets HTTP 400. `fault=NAME` applies NAME to every request without
a marker (a contestant that always fails, for the live arena's tests).

The server counts calls per request id (the `X-Client-Request-Id` header) and keeps the last payload
of each id (audio replaced by its length), so tests can prove what was asked and how often.

Also runnable as its own process: `python tests/support/fault_server.py serve --latency 1` (prints `READY <port>`).
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import sys
import threading
import time
import urllib.parse
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eval_backend.audio.io import encode_wav  # noqa: E402
from tests.support.processes import free_port  # noqa: E402

MARKER = re.compile(r"\[fault:([a-z0-9-]+)(?::([0-9.]+))?\]")
REPLY_RATE = 24000


def tone_pcm(seconds: float = 0.4, rate: int = REPLY_RATE, freq: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _user_text(payload: dict) -> str:
    texts = []
    for msg in payload.get("messages", []):
        if msg.get("role") == "user" and isinstance(msg.get("content"), list):
            texts += [p.get("text", "") for p in msg["content"] if p.get("type") == "text"]
    return "\n".join(texts)


def _strip(payload: dict) -> dict:
    """The payload with input audio replaced by its base64 length (a shallow rebuild: no deep copy of the audio)."""
    def part(p):
        if isinstance(p, dict) and p.get("type") == "input_audio":
            return {**p, "input_audio": {**p["input_audio"], "data": len(p["input_audio"].get("data", ""))}}
        return p
    messages = [{**m, "content": [part(p) for p in m["content"]]} if isinstance(m.get("content"), list) else m
                for m in payload.get("messages", [])]
    return {**payload, "messages": messages}


class FaultServer:
    def __init__(self, latency: float = 0.0, hang_s: float = 30.0, retry_after: float = 1.0,
                 stream_only: bool = False, port: int | None = None, fault: str | None = None,
                 tone_hz: float = 220.0, one_voice: bool = False):
        self.latency, self.hang_s, self.retry_after, self.stream_only = latency, hang_s, retry_after, stream_only
        self.fault = fault       # the fault of every request without a marker (a model that always fails)
        self.port = port or free_port()
        self.counts: Counter[str] = Counter()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.payloads: dict[str, dict] = {}
        self.auth_seen: list[str] = []
        self.inflight = self.max_inflight = 0
        self.lock = threading.Lock()
        self.tone_hz, self.one_voice = tone_hz, one_voice
        self.wav = encode_wav(tone_pcm(freq=tone_hz), REPLY_RATE)
        self.wav_b64 = base64.b64encode(self.wav).decode()
        self._voices: dict[str, str] = {}      # model -> base64 wav of its tone (the first model: self.wav_b64)
        self.secret = "SALT-" + "7f3a" * 8             # what /secret serves: must never reach a submitter
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.handle, methods=["POST"]),
                                     Route("/secret", lambda r: PlainTextResponse(self.secret))])
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- lifecycle ---
    def start(self) -> "FaultServer":
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off", timeout_graceful_shutdown=1, backlog=512)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.time() + 10
        while not self._server.started:
            if time.time() > deadline or not self._thread.is_alive():
                raise RuntimeError("fault server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    def __enter__(self) -> "FaultServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- replies ---
    def body(self, rid: str, text: str, audio: str | None, transcript: str = "", shape: str = "plain") -> dict:
        msg: dict = {"role": "assistant", "content": text}
        if shape == "parts":
            msg["content"] = [{"type": "text", "text": text[:5]}, {"type": "text", "text": text[5:]}]
        choices = [{"index": 0, "message": msg, "finish_reason": "stop"}]
        if audio is not None:
            if shape == "omni":
                choices.append({"index": 1, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": None,
                    "audio": {"id": "a1", "data": audio, "transcript": "", "expires_at": 0}}})
            else:
                msg["audio"] = {"id": "a0", "data": audio, "transcript": transcript or text, "expires_at": 0}
        return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()),
                "model": "fault", "choices": choices}

    def voice_b64(self, model) -> str:
        """The model's reply clip: this server's tone for its first model, 4 semitones up for each next one."""
        key = "" if self.one_voice else str(model)
        with self.lock:
            if key not in self._voices:
                n = len(self._voices)
                self._voices[key] = self.wav_b64 if n == 0 else base64.b64encode(
                    encode_wav(tone_pcm(freq=self.tone_hz * 2 ** (4 * n / 12)), REPLY_RATE)).decode()
            return self._voices[key]

    async def _sleep_unless_gone(self, req: HttpRequest, seconds: float) -> bool:
        """Sleep; False if the client disconnected meanwhile."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.sleep(min(0.05, end - time.monotonic()))
            if await req.is_disconnected():
                return False
        return True

    async def handle(self, req: HttpRequest) -> Response:
        with self.lock:
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            return await self._handle(req)
        finally:
            with self.lock:
                self.inflight -= 1

    async def _handle(self, req: HttpRequest) -> Response:
        raw = await req.body()
        try:
            payload = json.loads(raw)
        except ValueError:
            return JSONResponse({"error": {"message": "request body is not JSON"}}, status_code=400)
        text = _user_text(payload)
        rid = req.headers.get("x-client-request-id") or f"text:{hash(text)}"
        with self.lock:
            self.counts[rid] += 1
            n = self.counts[rid]
            self.times[rid].append(time.monotonic())
            self.payloads[rid] = _strip(payload)
            if req.headers.get("authorization"):
                self.auth_seen.append(req.headers["authorization"])
        m = MARKER.search(text)
        fault, arg = (m.group(1), m.group(2)) if m else (self.fault or "", None)
        stream = bool(payload.get("stream"))
        wants_audio = "audio" in (payload.get("modalities") or [])

        if self.latency:
            await asyncio.sleep(self.latency)   # plain sleep: polling for disconnects would cost CPU at scale
        if fault == "hang":
            await self._sleep_unless_gone(req, self.hang_s)
            return Response(status_code=499)
        if fault == "slow" and not await self._sleep_unless_gone(req, float(arg or 1)):
            return Response(status_code=499)
        limited = arg is None or n <= int(float(arg))
        if fault == "500" and limited:
            return JSONResponse({"error": {"message": "internal error", "type": "server_error"}}, status_code=500)
        if fault == "429" and limited:
            return JSONResponse({"error": {"message": "slow down", "type": "rate_limit"}}, status_code=429,
                                headers={"Retry-After": f"{self.retry_after:g}"})
        if fault == "400":
            return JSONResponse({"error": {"message": "bad request: unsupported field"}}, status_code=400)
        if fault == "echo-key":
            return JSONResponse({"error": {"message": f"Incorrect API key provided: "
                                                      f"{req.headers.get('authorization', '')}"}}, status_code=401)
        if self.stream_only and not stream:
            return JSONResponse({"error": {"message": "this model only supports stream=true"}}, status_code=400)

        unbounded = self._unbounded(req, fault, arg, rid)
        if unbounded is not None:
            return unbounded

        reply_text = f"I hear you ({rid})."
        if stream:
            return StreamingResponse(self._sse(rid, reply_text, wants_audio, fault), media_type="text/event-stream")
        if fault == "garbage":
            return PlainTextResponse("<html><body>502 Bad Gateway</body></html>", status_code=200)
        if fault == "nochoices":
            return JSONResponse({"id": "x", "object": "chat.completion", "choices": []})
        if fault == "nocontent":
            return JSONResponse({"id": "x", "object": "chat.completion",
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}}]})
        audio = self.voice_b64(payload.get("model")) if (wants_audio or fault in ("badb64", "truncwav", "omni")) \
            else None
        if fault == "badb64":
            audio = "@@this is not base64@@" * 4
        elif fault == "truncwav":
            audio = base64.b64encode(self.wav[: len(self.wav) * 6 // 10]).decode()
        shape = fault if fault in ("omni", "parts") else "plain"
        return JSONResponse(self.body(rid, reply_text, audio, shape=shape))

    def _unbounded(self, req: HttpRequest, fault: str, arg: str | None, rid: str) -> Response | None:
        """The replies that would exhaust a client that reads whole bodies (see the module doc)."""
        block = b"a" * 2**20
        head = b'{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": "'
        tail = b'"}}]}'

        async def body(megabytes: float | None):
            yield head
            sent = 0
            while megabytes is None or sent < megabytes:
                yield block
                sent += 1
                await asyncio.sleep(0)
            yield tail

        if fault in ("huge", "huge-cl"):
            mb = int(float(arg or 300))
            headers = {"content-length": str(len(head) + mb * len(block) + len(tail))} if fault == "huge-cl" else None
            return StreamingResponse(body(mb), media_type="application/json", headers=headers)
        if fault == "endless":
            return StreamingResponse(body(None), media_type="application/json")
        if fault == "gzip-bomb":            # ~300 KB on the wire, 300 MB once decompressed
            async def bomb():
                z = zlib.compressobj(9, zlib.DEFLATED, 31)
                async for piece in body(300):
                    out = z.compress(piece)
                    if out:
                        yield out
                yield z.flush()
            return StreamingResponse(bomb(), media_type="application/json", headers={"content-encoding": "gzip"})
        if fault == "endless-sse":
            async def comments():
                line = b": " + b"k" * (2**16 - 3) + b"\n"
                while True:
                    yield line
                    await asyncio.sleep(0)
            return StreamingResponse(comments(), media_type="text/event-stream")
        if fault == "sse-flood":
            async def deltas():
                event = ("data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "b" * 4000}}]})
                         + "\n\n").encode()
                while True:
                    yield event
                    await asyncio.sleep(0)
            return StreamingResponse(deltas(), media_type="text/event-stream")
        if fault == "trickle":
            async def drip():
                while True:
                    yield b" "
                    await asyncio.sleep(0.1)
            return StreamingResponse(drip(), media_type="application/json")
        if fault == "longtext":
            return JSONResponse(self.body(rid, "w" * int(float(arg or 100_000)), None))
        if fault == "longaudio":
            wav = encode_wav(np.zeros(int(float(arg or 30) * 8000), dtype=np.float32), 8000)
            return JSONResponse(self.body(rid, "long", base64.b64encode(wav).decode()))
        if fault == "redirect-private":
            return Response(status_code=307, headers={"location": f"http://127.0.0.1:{self.port}/secret"})
        if fault == "redirect-other":
            return Response(status_code=307, headers={"location": "http://other-origin.example/v1/chat/completions"})
        if fault == "echo-key-text":
            key = req.headers.get("authorization", "").removeprefix("Bearer ")
            quoted = (f"Your key is {key}; base64 {base64.b64encode(key.encode()).decode()}; "
                      f"hex {key.encode().hex()}; url {urllib.parse.quote(key, safe='')}.")
            return JSONResponse(self.body(rid, quoted, self.wav_b64, transcript="spoken: " + key))
        return None

    async def _sse(self, rid: str, text: str, wants_audio: bool, fault: str):
        def event(delta: dict, finish: str | None = None) -> str:
            return "data: " + json.dumps({"id": f"chatcmpl-{rid}", "object": "chat.completion.chunk",
                                          "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
        yield ": keep-alive\n\n"
        if fault == "weird":   # valid JSON, impossible shape
            yield 'data: {"choices": [{"index": "zero", "delta": {"content": "x"}}]}\n\ndata: [DONE]\n\n'
            return
        yield event({"role": "assistant", "content": ""})
        for word in text.split(" "):
            yield event({"content": word + " "})
            await asyncio.sleep(0)
        if wants_audio:
            if fault == "streamwav":
                b64 = self.wav_b64
                pieces = [b64[i:i + 1001] for i in range(0, len(b64), 1001)]   # odd cuts: not base64 alone
            else:
                pcm = (tone_pcm() * 32767).astype("<i2").tobytes()
                pieces = [base64.b64encode(pcm[i:i + 4800]).decode() for i in range(0, len(pcm), 4800)]
                if fault == "badb64":
                    pieces[1] = "!!broken!!"
            for i, piece in enumerate(pieces):
                yield event({"audio": {"id": "a0", "data": piece, "transcript": text if i == 0 else ""}})
        yield event({}, "stop")
        yield "data: [DONE]\n\n"


# --- helpers shared by the tests and the benchmark ---------------------------------------------

def make_benchmark(root: Path, contexts: list[str], name: str = "faults", audio: Path | None = None,
                   flagged: int = 0):
    """One AEQ-style context group per entry of `contexts` (markers go in there), over one clip each.

    Request ids are `context/g{i:04d}/c0`; `flagged` extra groups carry an unusable clip.
    """
    from eval_backend.audio.io import write_wav
    from eval_backend.benchmark.model import AudioRef, Benchmark, ContextCase, ContextGroup
    root.mkdir(parents=True, exist_ok=True)
    if audio is None:
        audio = write_wav(root / "user.wav", tone_pcm(0.5, 16000, 180.0), 16000)
    groups = [ContextGroup(id=f"g{i:04d}", utterance_text="I lost my keys again.", audio=AudioRef(str(audio)),
                           cases=[ContextCase(id="c0", context=c)]) for i, c in enumerate(contexts)]
    groups += [ContextGroup(id=f"bad{i}", utterance_text="x", audio=AudioRef(None, error="missing file"),
                            cases=[ContextCase(id="c0", context="flagged")], flags=["missing audio"])
               for i in range(flagged)]
    return Benchmark(name=name, version="1", context_groups=groups, hash=f"test-{name}-{len(contexts)}")


def _serve(args) -> None:
    server = FaultServer(latency=args.latency, stream_only=args.stream_only, port=args.port or None).start()
    print(f"READY {server.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--latency", type=float, default=0.0)
    s.add_argument("--stream-only", action="store_true")
    _serve(parser.parse_args())
