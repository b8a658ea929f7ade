"""OpenAI-compatible HTTP front of the baselines (FastAPI).

POST /v1/chat/completions (models cascade-blind, cascade-cue; stream or not; audio out
when `modalities` has "audio"), GET /v1/models, GET /health, GET /stats (request counts,
for tests and benchmarks). Errors use OpenAI's body: {"error": {message, type, param, code}}.
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import time
from collections import Counter

import numpy as np
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from ..audio.io import BadAudio, decode_b64_wav, decode_wav_bytes, sha256_bytes
from . import replies
from .engine import FINGERPRINT, MODELS, Answer, Clip, Engine
from .speech import SpeechError

log = logging.getLogger(__name__)
AUDIO_TTL_S = 3600
STREAM_B64_CHUNK = 32_768          # a multiple of 4: every streamed piece decodes on its own


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 type_: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type_

    def response(self) -> JSONResponse:
        return JSONResponse({"error": {"message": self.message, "type": self.type, "param": self.param,
                                       "code": self.code}}, status_code=self.status)


def _parts(content) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return content
    raise ApiError(400, "message content must be a string or a list of content parts", "messages")


def _audio_from_part(part: dict, where: str) -> bytes:
    kind = part.get("type")
    if kind == "input_audio":
        spec = part.get("input_audio")
        if not isinstance(spec, dict):
            raise ApiError(400, f"{where}: input_audio must be an object with data and format", where)
        data = spec.get("data")
    else:  # audio_url with a data: URL (vLLM style)
        spec = part.get("audio_url")
        data = spec.get("url") if isinstance(spec, dict) else spec
        if not isinstance(data, str) or not data.startswith("data:"):
            raise ApiError(400, f"{where}: only data: URLs are accepted for audio_url (no network fetches)", where)
    try:
        return decode_b64_wav(data)
    except BadAudio as exc:
        raise ApiError(400, f"{where}: {exc}", where, "invalid_audio") from None


def parse_body(body) -> tuple[str, str, list[bytes], dict]:
    """(system text, user text, user audio wavs in order, options) from a chat-completions body."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list", "messages")
    system, text, audios = [], [], []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("system", "developer", "user", "assistant", "tool"):
            raise ApiError(400, f"messages[{i}] needs a role of system, developer, user or assistant", f"messages[{i}]")
        for j, part in enumerate(_parts(msg.get("content"))):
            kind = part.get("type")
            if kind == "text":
                (system if msg["role"] in ("system", "developer") else text).append(str(part.get("text", "")))
            elif kind in ("input_audio", "audio_url") and msg["role"] == "user":
                audios.append(_audio_from_part(part, f"messages[{i}].content[{j}]"))
            elif kind in ("input_audio", "audio_url"):
                raise ApiError(400, f"messages[{i}]: audio is accepted only in user messages", f"messages[{i}]")
            else:
                raise ApiError(400, f"messages[{i}].content[{j}]: unsupported content part type {kind!r}",
                               f"messages[{i}].content[{j}].type")
    if not audios:
        raise ApiError(400, "no audio in the request: these speech baselines need an input_audio part", "messages",
                       "missing_audio")
    modalities = body.get("modalities") or ["text"]
    if not isinstance(modalities, list) or not set(modalities) <= {"text", "audio"}:
        raise ApiError(400, "modalities must be a list of 'text' and/or 'audio'", "modalities")
    audio_opts = body.get("audio") or {}
    fmt = audio_opts.get("format", "wav") if isinstance(audio_opts, dict) else None
    if fmt not in ("wav", "pcm16"):
        raise ApiError(400, "audio.format must be 'wav' or 'pcm16'", "audio.format")
    opts = {"audio_out": "audio" in modalities, "format": fmt, "stream": bool(body.get("stream")),
            "include_usage": bool((body.get("stream_options") or {}).get("include_usage"))}
    return "\n".join(system), "\n".join(text), audios, opts


def _pcm16_24k(wav: bytes) -> bytes:
    """OpenAI's pcm16: raw little-endian 16-bit mono at 24 kHz."""
    from scipy.signal import resample_poly
    x, sr = decode_wav_bytes(wav)
    y = resample_poly(x, 24_000, sr) if sr != 24_000 else x
    return (np.clip(y, -1, 1) * 32767).astype("<i2").tobytes()


class Service:
    """State shared by the handlers: the engine and the request counters."""

    def __init__(self, engine: Engine | None = None):
        self.engine = engine or Engine()
        self.lock = threading.Lock()
        self.requests: Counter = Counter()     # (model, task) -> count
        self.statuses: Counter = Counter()
        self.started = time.time()

    def count(self, model: str, task: str, status: int) -> None:
        with self.lock:
            self.requests[(model, task)] += 1
            self.statuses[str(status)] += 1

    def complete(self, body: dict) -> tuple[dict, Answer, bytes | None, dict]:
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        model = body.get("model")
        if model not in MODELS:
            raise ApiError(404, f"The model {model!r} does not exist; this server has {', '.join(MODELS)}",
                           "model", "model_not_found")
        system, text, wavs, opts = parse_body(body)
        clips = []
        for wav in wavs:
            samples, sr = decode_wav_bytes(wav)
            clips.append(Clip(sha256_bytes(wav), samples, sr))
        prompt = replies.parse_prompt(system, text, len(clips))
        answer = self.engine.answer(model, prompt, clips)
        audio = None
        if opts["audio_out"]:
            try:
                audio = self.engine.speak(answer.text, answer.style)
            except SpeechError as exc:
                raise ApiError(500, str(exc), None, "speech_failed", "server_error") from None
            if opts["format"] == "pcm16":
                audio = _pcm16_24k(audio)
        return body, answer, audio, opts


def _ids(model: str, body: dict, answer: Answer) -> tuple[str, str]:
    key = hashlib.sha256(json.dumps([model, answer.text, answer.style.name], sort_keys=True).encode()).hexdigest()
    return f"chatcmpl-baseline-{key[:24]}", f"audio_baseline_{key[24:48]}"


def _usage(answer: Answer) -> dict:
    n = max(1, len(answer.text.split()))
    return {"prompt_tokens": 0, "completion_tokens": n, "total_tokens": n}


def completion_json(model: str, body: dict, answer: Answer, audio: bytes | None) -> dict:
    cid, aid = _ids(model, body, answer)
    message: dict = {"role": "assistant", "content": answer.text, "refusal": None}
    if audio is not None:
        message["audio"] = {"id": aid, "data": base64.b64encode(audio).decode("ascii"),
                            "transcript": answer.text, "expires_at": int(time.time()) + AUDIO_TTL_S}
    return {"id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
            "system_fingerprint": FINGERPRINT, "service_tier": "baseline",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": _usage(answer), "baseline": {"task": answer.task, **answer.detail}}


def stream_events(model: str, body: dict, answer: Answer, audio: bytes | None, include_usage: bool):
    cid, aid = _ids(model, body, answer)
    created = int(time.time())

    def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> str:
        obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
               "system_fingerprint": FINGERPRINT,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}] if delta
               is not None else []}
        if usage is not None:
            obj["usage"] = usage
        return f"data: {json.dumps(obj)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for i, piece in enumerate(answer.text.split(" ")):
        yield chunk({"content": piece if i == 0 else " " + piece})
    if audio is not None:
        yield chunk({"audio": {"id": aid, "transcript": answer.text}})
        b64 = base64.b64encode(audio).decode("ascii")
        for start in range(0, len(b64), STREAM_B64_CHUNK):
            yield chunk({"audio": {"id": aid, "data": b64[start:start + STREAM_B64_CHUNK]}})
        yield chunk({"audio": {"id": aid, "expires_at": created + AUDIO_TTL_S}}, "stop")
    else:
        yield chunk({}, "stop")
    if include_usage:
        yield chunk(None, usage=_usage(answer))
    yield "data: [DONE]\n\n"


def create_app(service: Service | None = None) -> FastAPI:
    svc = service or Service()
    app = FastAPI(title="Empathy Arena baselines (cascade-blind, cascade-cue)", docs_url=None, redoc_url=None)
    app.state.service = svc

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "models": list(MODELS), "kind": "baseline",
                "uptime_s": round(time.time() - svc.started, 1)}

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "empathy-arena-baseline", "description": desc}
            for name, desc in MODELS.items()]}

    @app.get("/stats")
    def stats() -> dict:
        with svc.lock:
            per = {}
            for (model, task), n in sorted(svc.requests.items()):
                per.setdefault(model, {})[task] = n
            return {"requests": per, "total": sum(svc.requests.values()), "statuses": dict(svc.statuses),
                    **svc.engine.stats()}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        model, task = "?", "?"
        try:
            try:
                body = json.loads(await request.body())
            except (ValueError, UnicodeDecodeError):
                raise ApiError(400, "the request body is not valid JSON") from None
            if isinstance(body, dict) and isinstance(body.get("model"), str):
                model = body["model"]
            body, answer, audio, opts = await run_in_threadpool(svc.complete, body)
            task = answer.task
        except ApiError as exc:
            svc.count(model, "error", exc.status)
            return exc.response()
        except BadAudio as exc:
            svc.count(model, "error", 400)
            return ApiError(400, str(exc), "messages", "invalid_audio").response()
        except Exception as exc:  # an OpenAI-style 500 (retryable for the runner), never a bare traceback
            log.exception("baseline request failed")
            svc.count(model, "error", 500)
            return ApiError(500, f"internal error: {type(exc).__name__}: {exc}", None, "internal_error",
                            "server_error").response()
        svc.count(model, task, 200)
        if opts["stream"]:
            return StreamingResponse(stream_events(model, body, answer, audio, opts["include_usage"]),
                                     media_type="text/event-stream")
        return JSONResponse(completion_json(model, body, answer, audio))

    return app
