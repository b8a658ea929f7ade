"""A scripted OpenAI-compatible moderation server on 127.0.0.1 (`POST /v1/moderations`) for the safety tests.

    with ModerationServer() as server:
        server.scores = {"harassment": 0.97}               # category_scores of the next answers (others 0.0)
        server.mode = "ok" | "slow" | "5xx" | "429" | "not_json" | "no_results" | "bad_scores" | "huge" |
                      "huge_chunked" | "redirect"
        ... EMPATHY_ARENA_MODERATION_URL=server.url ...
        server.requests                                    # (lower-cased headers, body) of every request

The answers follow the protocol's shape: {"id", "model", "results": [{"flagged", "categories", "category_scores"}]}.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROTOCOL_CATEGORIES = ("harassment", "harassment/threatening", "hate", "hate/threatening", "illicit",
                       "illicit/violent", "self-harm", "self-harm/intent", "self-harm/instructions", "sexual",
                       "sexual/minors", "violence", "violence/graphic")
SECRET_IN_BODY = "BODY-SECRET-do-not-echo"


class ModerationServer:
    def __init__(self):
        self.scores: dict[str, float] = {}
        self.mode = "ok"
        self.delay_s = 3.0
        self.requests: list[tuple[dict, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None):
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", "Content-Length": str(len(body)),
                             **(headers or {})}.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:          # the client stopped reading (too large): expected
                    pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length))
                server.requests.append(({k.lower(): v for k, v in self.headers.items()}, request))
                mode = server.mode
                if self.path != "/v1/moderations":
                    return self._send(404, b'{"error": "no route"}')
                if mode == "slow":
                    time.sleep(server.delay_s)
                if mode == "5xx":
                    return self._send(503, json.dumps({"error": SECRET_IN_BODY}).encode())
                if mode == "429":
                    return self._send(429, b'{"error": "slow down"}')
                if mode == "redirect":
                    return self._send(302, b"", {"Location": "http://127.0.0.1:1/"})
                if mode == "not_json":
                    return self._send(200, f"<html>{SECRET_IN_BODY}</html>".encode())
                if mode == "no_results":
                    return self._send(200, json.dumps({"id": "modr-1", "note": SECRET_IN_BODY}).encode())
                scores = {c: float(server.scores.get(c, 0.0)) for c in PROTOCOL_CATEGORIES}
                if mode == "bad_scores":
                    scores["harassment"] = 7.5
                flags = {c: s >= 0.5 for c, s in scores.items()}
                answer = {"id": "modr-1", "model": request.get("model"),
                          "results": [{"flagged": any(flags.values()), "categories": flags,
                                       "category_scores": scores}]}
                body = json.dumps(answer).encode()
                if mode == "huge":
                    answer["padding"] = SECRET_IN_BODY * 100_000
                    return self._send(200, json.dumps(answer).encode())
                if mode == "huge_chunked":      # no Content-Length: the client must count what it reads
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b" " * 65536
                    try:
                        for _ in range(64):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.write(b"0\r\n\r\n")
                    except OSError:
                        pass
                    return
                return self._send(200, body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "ModerationServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
