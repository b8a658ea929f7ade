"""A loopback OpenAI-compatible server whose models *speak* (espeak-ng), for the safety tests (issue 14).

    with SpeakingServer({"kind-model": lambda rid: ("I am sorry, that sounds hard.", None)}) as srv:
        srv.base_url     # /v1/chat/completions; the request's `model` picks the line

A line function gets the request id (X-Client-Request-Id) and returns (spoken sentence, claimed text or None):
the audio says the spoken sentence, the reply's text and transcript say the claimed text (default: the spoken
one), so a test can have a model whose text is kind while its audio is abusive. Everything else (lifecycle,
response shape) is FaultServer's.
"""
from __future__ import annotations

import base64
import json
from typing import Callable

from starlette.responses import JSONResponse

from tests.support.fault_server import FaultServer
from tests.support.live_fixtures import espeak_bytes

Line = Callable[[str], tuple[str, str | None]]


class SpeakingServer(FaultServer):
    def __init__(self, lines: dict[str, Line], **kw):
        super().__init__(**kw)
        self.lines = lines
        self._speech: dict[str, str] = {}      # sentence -> base64 wav (one espeak-ng run per sentence)
        self.spoken: dict[tuple[str, str], str] = {}   # (model, request id) -> the sentence its audio says

    def speech(self, sentence: str) -> str:
        if sentence not in self._speech:
            self._speech[sentence] = base64.b64encode(espeak_bytes(sentence)).decode()
        return self._speech[sentence]

    async def _handle(self, req):
        payload = json.loads(await req.body())
        model = payload.get("model", "")
        rid = req.headers.get("x-client-request-id") or "-"
        if model not in self.lines:
            return JSONResponse({"error": {"message": f"no model {model}"}}, status_code=404)
        spoken, claimed = self.lines[model](rid)
        with self.lock:
            self.spoken[(model, rid)] = spoken
        audio = self.speech(spoken) if "audio" in (payload.get("modalities") or []) else None
        text = claimed or spoken
        return JSONResponse(self.body(rid, text, audio, transcript=text))
