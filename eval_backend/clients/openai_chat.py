"""An async client for OpenAI-compatible /chat/completions endpoints that speak and listen.

One call sends a `tasks.Request` (system text, user text, wav clips as
`input_audio` parts) and returns an `Answer`, or raises `CallFailure` with one
of the store's failure classes. Shapes it understands:
- OpenAI-style: `choices[0].message.content` (a string or a list of parts) and
  `choices[0].message.audio = {data: base64 wav, transcript}`;
- vLLM-Omni: the audio arrives as a separate choice with an empty transcript,
  so every choice is read and merged;
- streaming-only providers (`spec.stream`): SSE deltas with `delta.content`
  and untyped extra fields `delta.audio.{data,transcript}`; audio chunks may be
  wav or raw 16-bit PCM (Qwen-Omni streams PCM), which is wrapped into a wav.

Transport is aiohttp: at 32 calls in flight httpx spent ~5 ms of CPU per call in
its connection pool against ~1 ms for aiohttp (docs/benchmarks.md, Runner).

The API key is read from the environment per call and sent only in the
Authorization header; every message, text, transcript and raw body that leaves
this module has been through `failures.redact`.

Bounds (limits.py): the body is read chunk by chunk and abandoned past `max_body_bytes`, text and
audio are checked against their caps (streamed text and PCM as they arrive), the whole call has one
wall-clock timeout (`spec.timeout_s`, not per read), and redirects are never followed (`redirect`).
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import numpy as np
import soundfile as sf

from .. import safejson
from ..audio.io import BadAudio, b64_wav, decode_wav_bytes, encode_wav, read_wav
from ..benchmark.model import AudioRef
from ..config import ModelSpec
from ..tasks import Request
from .failures import CallFailure, clip, parse_retry_after, redact, status_class
from .limits import DEFAULT as DEFAULT_LIMITS
from .limits import ReplyLimits

DEFAULT_PCM_RATE = 24000   # Qwen-Omni / OpenAI stream 24 kHz 16-bit mono PCM


@dataclass
class Answer:
    text: str | None
    transcript: str | None
    audio: bytes | None            # validated wav bytes
    raw: str                       # the reply body as JSON, audio base64 replaced by a placeholder
    latency_s: float
    ttfab_s: float | None          # time to first audio byte; None when no audio came


# --- request side ---------------------------------------------------------------------------

def input_audio_b64(ref: AudioRef) -> str:
    """The clip as base64 wav (no data: prefix). Non-wav files are re-encoded; unreadable ones raise BadAudio."""
    if not ref.ok:
        raise BadAudio(ref.error or "audio has no path")
    try:
        data = Path(ref.path).read_bytes()
    except OSError as exc:
        raise BadAudio(f"cannot read {ref.path}: {exc.strerror or exc}") from None
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        samples, sr = read_wav(ref.path)
        data = encode_wav(samples, sr)
    return b64_wav(data)


def build_payload(request: Request, spec: ModelSpec, audio_b64: list[str]) -> dict:
    content: list[dict] = [{"type": "input_audio", "input_audio": {"data": b, "format": "wav"}} for b in audio_b64]
    if request.text:
        content.append({"type": "text", "text": request.text})
    messages: list[dict] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": content})
    payload: dict = {"model": spec.model, "messages": messages}
    if spec.audio_output and request.wants_audio:
        payload["modalities"] = ["text", "audio"]
        audio = {"format": spec.extra.get("audio_format", "wav")}
        if spec.voice:
            audio["voice"] = spec.voice
        payload["audio"] = audio
    if spec.stream:
        payload["stream"] = True
    params = spec.extra.get("params")  # e.g. {temperature: 0, max_tokens: 256} from the models YAML
    if isinstance(params, dict):
        payload.update({k: v for k, v in params.items() if k not in payload})
    return payload


# --- reply side (pure) ----------------------------------------------------------------------

def content_text(content) -> str | None:
    """message.content as text: a string, or the text of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def check_wav_complete(data: bytes) -> None:
    """A wav whose data chunk is shorter than its header says was cut off (libsndfile reads it silently)."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return
    pos = 12
    while pos + 8 <= len(data):
        chunk, size = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], "little")
        if chunk == b"data":
            if size in (0, 0xFFFFFFFF):   # streaming writers leave the length open
                return
            have = len(data) - pos - 8
            if have < size:
                raise BadAudio(f"truncated wav: header declares {size} data bytes, {have} present")
            return
        pos += 8 + size + (size & 1)
    raise BadAudio("wav has no complete data chunk")


def audio_seconds(data: bytes) -> float:
    """The duration a wav's header declares, read without decoding the samples."""
    try:
        info = sf.info(io.BytesIO(data))
    except Exception as exc:   # soundfile raises several types for corrupt input
        raise BadAudio(f"cannot decode audio: {exc}") from None
    return info.frames / info.samplerate if info.samplerate > 0 else 0.0


def validate_audio(b64: object, max_audio_s: float | None = None) -> bytes:
    """Strict base64 -> complete wav bytes that decode; the duration is checked before the samples are."""
    if not isinstance(b64, str) or not b64:
        raise CallFailure("bad_audio", "audio data is empty or not a string")
    if b64.startswith("data:"):
        b64 = b64.split(",", 1)[-1]
    try:
        data = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CallFailure("bad_audio", f"audio is not valid base64: {exc}") from None
    try:
        check_wav_complete(data)
        if max_audio_s is not None and (seconds := audio_seconds(data)) > max_audio_s:
            raise _too_large(f"the reply audio ({seconds:.1f} s)", f"{max_audio_s:g} s")
        decode_wav_bytes(data)
    except BadAudio as exc:
        raise CallFailure("bad_audio", str(exc)) from None
    return data


def strip_audio(body: dict) -> dict:
    """A copy of the body with every audio base64 string replaced by a short placeholder."""
    def walk(node):
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if k == "data" and isinstance(v, str) and len(v) > 64:
                    out[k] = f"<audio base64 removed: {len(v)} chars>"
                else:
                    out[k] = walk(v)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node
    return walk(body)


def extract(body: object) -> tuple[str | None, str | None, object | None]:
    """(text, transcript, audio base64) merged over every choice; raises malformed_body."""
    if not isinstance(body, dict):
        raise CallFailure("malformed_body", f"reply is JSON but not an object: {type(body).__name__}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        detail = body.get("error")
        hint = f"error: {clip(json.dumps(detail), 200)}" if detail else ""
        raise CallFailure("malformed_body", "reply has no choices", detail=hint)
    texts: list[str] = []
    transcript: str | None = None
    audio: object | None = None
    for choice in choices:
        msg = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(msg, dict):
            continue
        for t in (content_text(msg.get("content")), msg.get("refusal")):
            if isinstance(t, str) and t.strip() and t not in texts:
                texts.append(t)
        a = msg.get("audio")
        if isinstance(a, dict):
            if audio is None and a.get("data"):
                audio = a["data"]
            if not transcript and isinstance(a.get("transcript"), str) and a["transcript"].strip():
                transcript = a["transcript"]
    text = "\n".join(texts) or None
    if text is None and audio is None:
        if transcript:   # a transcript without its audio still is the model's answer
            return transcript, transcript, None
        raise CallFailure("malformed_body", f"reply has no content: no text and no audio in {len(choices)} choice(s)")
    return text, transcript, audio


def decode_chunks(chunks: list[str]) -> bytes:
    """Streamed audio: chunks may each be base64 on their own or one base64 string cut anywhere."""
    try:
        if all(len(c) % 4 == 0 for c in chunks):
            return b"".join(base64.b64decode(c, validate=True) for c in chunks)
        return base64.b64decode("".join(chunks), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CallFailure("bad_audio", f"streamed audio is not valid base64: {exc}") from None


class StreamAssembler:
    """Folds SSE chat.completion.chunk events into one chat.completion-shaped body.

    Text and transcript are held to `limits.max_text_chars` and raw PCM audio to `limits.max_audio_s`
    as they arrive, so an endless stream of small events fails early instead of growing."""

    def __init__(self, pcm_rate: int = DEFAULT_PCM_RATE, limits: ReplyLimits | None = None):
        self.pcm_rate = pcm_rate
        self.limits = limits or DEFAULT_LIMITS
        self.events = 0
        self.meta: dict = {}
        self.choices: dict[int, dict] = {}

    def _grow(self, slot: dict, part: str, value: str) -> None:
        slot[part].append(value)
        slot["size"][part] = slot["size"].get(part, 0) + len(value)
        lim = self.limits
        if part in ("text", "transcript") and slot["size"][part] > lim.max_text_chars:
            raise _too_large(f"the streamed {part}", f"{lim.max_text_chars:,} characters")
        # raw PCM: 3/4 byte per base64 character, 2 bytes per sample (a streamed wav, "RIFF" = "UklGR" in
        # base64, has its own rate and is checked once whole; the body cap bounds it meanwhile)
        if part == "audio" and not slot["audio"][0].startswith("UklGR") \
                and slot["size"][part] * 3 / 8 / self.pcm_rate > lim.max_audio_s:
            raise _too_large("the streamed audio", f"{lim.max_audio_s:g} s")

    def feed(self, event: dict) -> bool:
        """Adds one event; True if it carried audio bytes."""
        self.events += 1
        if "error" in event and not event.get("choices"):
            raise CallFailure("http_5xx", "error event in stream", detail=clip(json.dumps(event["error"]), 300))
        for k in ("id", "model", "usage"):
            if event.get(k) is not None:
                self.meta[k] = event[k]
        got_audio = False
        for ch in event.get("choices") or []:
            if not isinstance(ch, dict):
                continue
            slot = self.choices.setdefault(int(ch.get("index") or 0),
                                           {"text": [], "audio": [], "transcript": [], "finish_reason": None,
                                            "size": {}})
            if len(self.choices) > 16:
                raise CallFailure("malformed_body", "stream has more than 16 choices")
            delta = ch.get("delta") or ch.get("message") or {}
            if not isinstance(delta, dict):
                continue
            t = content_text(delta.get("content"))
            if t:
                self._grow(slot, "text", t)
            a = delta.get("audio")
            if isinstance(a, dict):
                if isinstance(a.get("data"), str) and a["data"]:
                    self._grow(slot, "audio", a["data"])
                    got_audio = True
                if isinstance(a.get("transcript"), str):
                    self._grow(slot, "transcript", a["transcript"])
            if ch.get("finish_reason"):
                slot["finish_reason"] = ch["finish_reason"]
        return got_audio

    def body(self) -> dict:
        choices = []
        for index in sorted(self.choices):
            slot = self.choices[index]
            message: dict = {"role": "assistant", "content": "".join(slot["text"]) or None}
            if slot["audio"]:
                data = decode_chunks(slot["audio"])
                if data[:3] == b"ID3" or data[:4] in (b"OggS", b"fLaC") or data[:2] in (b"\xff\xfb", b"\xff\xf3"):
                    raise CallFailure("bad_audio", "streamed audio is a compressed format, not wav or PCM")
                if data[:4] != b"RIFF":   # raw 16-bit mono PCM
                    if len(data) % 2:
                        raise CallFailure("bad_audio", f"streamed PCM has an odd byte count ({len(data)})")
                    pcm = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
                    data = encode_wav(pcm, self.pcm_rate)
                message["audio"] = {"data": b64_wav(data), "transcript": "".join(slot["transcript"])}
            elif slot["transcript"]:
                message["audio"] = {"transcript": "".join(slot["transcript"])}
            choices.append({"index": index, "message": message, "finish_reason": slot["finish_reason"]})
        return {**self.meta, "object": "chat.completion", "streamed_events": self.events, "choices": choices}


# --- transport ------------------------------------------------------------------------------

ERROR_EXCERPT_BYTES = 4096   # of an error body, read only to quote it where the limits allow


def _http_failure(status: int, headers, body: bytearray, complete: bool) -> CallFailure:
    cls = status_class(status)
    retry_after = parse_retry_after(headers) if cls in ("rate_limited", "http_5xx") else None
    size = f"{len(body):,} bytes" + ("" if complete else "+")
    return CallFailure(cls, f"HTTP {status} ({size} of body)", retry_after,
                       detail=clip(body.decode("utf-8", "replace"), 300))


def _redirect_failure(status: int) -> CallFailure:
    return CallFailure("redirect", f"HTTP {status}: the endpoint redirects; redirects are not followed "
                                   f"(give the final URL)")


def _parse_json(data: bytearray | str, what: str = "reply") -> object:
    try:
        return safejson.loads(data, what=what)
    except safejson.JSONLimitError as exc:
        raise CallFailure("malformed_body", str(exc)) from None
    except ValueError:
        text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else data
        raise CallFailure("malformed_body", f"{what} is not JSON ({len(data):,} bytes)",
                          detail=repr(clip(text, 200))) from None


def _too_large(what: str, limit: str) -> CallFailure:
    return CallFailure("too_large", f"{what} is larger than the limit of {limit}")


async def _read_capped(resp: aiohttp.ClientResponse, cap: int) -> tuple[bytearray, bool]:
    """At most `cap` bytes of the body, and whether that was all of it. Reads chunk by chunk, so an
    endless or huge body costs `cap` bytes of memory, not its size (a bytearray: no copy at the end)."""
    buf = bytearray()
    async for chunk in resp.content.iter_any():
        room = cap - len(buf)
        if len(chunk) > room:
            buf += chunk[:room]
            return buf, False
        buf += chunk
    return buf, True


async def _read_body(resp: aiohttp.ClientResponse, limits: ReplyLimits) -> bytearray:
    declared = resp.content_length
    if declared is not None and declared > limits.max_body_bytes:
        raise _too_large(f"the reply body ({declared:,} bytes declared)", f"{limits.max_body_bytes:,} bytes")
    body, complete = await _read_capped(resp, limits.max_body_bytes)
    if not complete:
        raise _too_large("the reply body", f"{limits.max_body_bytes:,} bytes")
    return body


async def _check_status(resp: aiohttp.ClientResponse) -> None:
    if 300 <= resp.status < 400:
        raise _redirect_failure(resp.status)
    if resp.status >= 400:
        body, complete = await _read_capped(resp, ERROR_EXCERPT_BYTES)
        raise _http_failure(resp.status, resp.headers, body, complete)


async def _post_plain(session: aiohttp.ClientSession, url: str, content: bytes,
                      headers: dict, limits: ReplyLimits) -> tuple[object, float | None]:
    async with session.post(url, data=content, headers=headers, allow_redirects=False) as resp:
        await _check_status(resp)
        body = await _read_body(resp, limits)
    return _parse_json(body), None


async def _sse_lines(resp: aiohttp.ClientResponse, cap: int):
    """Lines of an SSE body; split here because aiohttp's line reader caps a line at 64 KiB (audio events
    are larger). At most `cap` bytes in all are read: past that the stream is `too_large`."""
    buf = bytearray()
    total = 0
    async for chunk in resp.content.iter_any():
        total += len(chunk)
        if total > cap:
            raise _too_large("the reply stream", f"{cap:,} bytes")
        start = len(buf)
        buf += chunk
        cut = buf.rfind(b"\n", start)
        if cut < 0:
            continue       # no line ends in this chunk: keep collecting (a bytearray grows in place)
        lines, buf = bytes(buf[:cut]).split(b"\n"), bytearray(buf[cut + 1:])
        for line in lines:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
    if buf:
        yield bytes(buf).rstrip(b"\r").decode("utf-8", "replace")


async def _post_stream(session: aiohttp.ClientSession, url: str, content: bytes, headers: dict, t0: float,
                       pcm_rate: int, limits: ReplyLimits) -> tuple[object, float | None]:
    async with session.post(url, data=content, headers=headers, allow_redirects=False) as resp:
        await _check_status(resp)
        if "text/event-stream" not in resp.headers.get("content-type", ""):
            # some providers answer a stream request with one plain body
            return _parse_json(await _read_body(resp, limits)), None
        assembler, ttfab, done = StreamAssembler(pcm_rate, limits), None, False
        async for line in _sse_lines(resp, limits.max_body_bytes):
            if not line.startswith("data:"):
                continue   # comments, event: lines, keep-alives
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            event = _parse_json(data, "stream event")
            if not isinstance(event, dict):
                raise CallFailure("malformed_body", "stream event is not a JSON object")
            if assembler.feed(event) and ttfab is None:
                ttfab = time.perf_counter() - t0
        if assembler.events == 0:
            raise CallFailure("malformed_body", "stream ended without any event")
        body = assembler.body()
        body["stream_done"] = done
        return body, ttfab


def new_session(concurrency: int) -> aiohttp.ClientSession:
    """One session per run: `concurrency` pooled connections, deadlines set per call."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency),
                                 timeout=aiohttp.ClientTimeout(total=None))


async def call(session: aiohttp.ClientSession | None, spec: ModelSpec, request: Request,
               audio_b64: list[str], limits: ReplyLimits | None = None) -> Answer:
    """One attempt. Raises CallFailure (message already redacted) on any failure.

    `session` is the run's pooled aiohttp session; anything else (None, or an httpx client from
    before the switch to aiohttp) opens a session for this one call. `limits` caps the reply
    (default `limits.DEFAULT`; submitted endpoints get `limits.SUBMITTED` sizes, without body excerpts).
    """
    limits = limits or DEFAULT_LIMITS
    if not isinstance(session, aiohttp.ClientSession):
        async with new_session(1) as own:
            return await call(own, spec, request, audio_b64, limits)
    key = spec.api_key()
    try:
        try:
            return await _call(session, spec, request, audio_b64, key, limits)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
            # a body shaped unlike any chat completion (e.g. `"index": "a"`): the model's fault, not a crash
            raise CallFailure("malformed_body", f"unexpected reply shape ({type(exc).__name__})",
                              detail=str(exc)) from None
    except CallFailure as exc:
        message = f"{exc.message}: {exc.detail}" if exc.detail and limits.show_body else exc.message
        raise CallFailure(exc.error_class, redact(message, [key]) or "", exc.retry_after) from None


async def _call(session: aiohttp.ClientSession, spec: ModelSpec, request: Request, audio_b64: list[str],
                key: str | None, limits: ReplyLimits) -> Answer:
    headers = {"Content-Type": "application/json", "X-Client-Request-Id": request.id}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = spec.base_url.rstrip("/") + "/chat/completions"
    content = json.dumps(build_payload(request, spec, audio_b64)).encode()
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(spec.timeout_s):   # the whole call, not each read: a trickle ends here too
            if spec.stream:
                body, ttfab = await _post_stream(session, url, content, headers, t0,
                                                 int(spec.extra.get("pcm_sample_rate", DEFAULT_PCM_RATE)), limits)
            else:
                body, ttfab = await _post_plain(session, url, content, headers, limits)
    except TimeoutError:   # also aiohttp's ServerTimeoutError
        raise CallFailure("timeout", f"no complete reply within {spec.timeout_s:g} s") from None
    except aiohttp.ClientConnectorError as exc:
        # the connection was never made: the reason is local (the OS, our address policy), safe to show
        reason = getattr(exc.os_error, "strerror", None) or type(exc.os_error).__name__
        raise CallFailure("connection", f"transport error, no HTTP status: cannot connect ({type(exc).__name__}): "
                                        f"{reason}") from None
    except aiohttp.ClientError as exc:
        # no HTTP status at all (reset, protocol error): a server-side failure to us, retried as one;
        # the exception's text may quote what the server sent (a non-HTTP banner), so it is a detail
        raise CallFailure("connection", f"transport error, no HTTP status ({type(exc).__name__})",
                          detail=str(exc)) from None
    latency = time.perf_counter() - t0
    text, transcript, audio_b64_out = extract(body)
    for what, value in (("text", text), ("transcript", transcript)):
        if value is not None and len(value) > limits.max_text_chars:
            raise _too_large(f"the reply {what} ({len(value):,} characters)", f"{limits.max_text_chars:,} characters")
    audio = validate_audio(audio_b64_out, limits.max_audio_s) if audio_b64_out is not None else None
    if audio is not None and ttfab is None:
        ttfab = latency   # non-streaming: the first audio byte is usable once the whole body is in
    raw = redact(json.dumps(strip_audio(body), ensure_ascii=False), [key]) or ""
    if len(raw) > limits.max_raw_chars:
        raise _too_large(f"the reply without its audio ({len(raw):,} characters)", f"{limits.max_raw_chars:,}")
    # an endpoint that echoes the API key in its answer must not get it stored (or pushed to the Hub)
    return Answer(text=redact(text, [key]), transcript=redact(transcript, [key]), audio=audio, raw=raw,
                  latency_s=latency, ttfab_s=ttfab)
