"""A scripted OpenAI-compatible judge on 127.0.0.1: a real HTTP server for the judge tests.

    with ScriptedJudge() as judge:
        judge.push('{"ves": {"score": 4, "reason": "ok"}}')            # next answer
        judge.push({"delay": 2.0, "content": "..."})                   # answer late
        judge.push({"status": 500})                                    # fail
        judge.responder = lambda body: "..."                           # when the script is empty
        ... JudgeSettings(base_url=judge.base_url, model="scripted") ...
        judge.requests                                                 # every request body received

Run alone (`python tests/support/judge_server.py --port 8911 --answer '{...}'`) it serves one fixed answer.
"""
from __future__ import annotations

import argparse
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class ScriptedJudge:
    def __init__(self, port: int = 0):
        self.requests: list[dict] = []
        self.script: deque = deque()
        self.responder: Callable[[dict], Any] | None = None
        self._lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                with judge._lock:
                    judge.requests.append(body)
                    step = judge.script.popleft() if judge.script else None
                if step is None:
                    if judge.responder is None:
                        return self._send(500, {"error": {"message": "script exhausted"}})
                    step = judge.responder(body)
                if isinstance(step, str):
                    step = {"content": step}
                if step.get("delay"):
                    time.sleep(step["delay"])
                if step.get("status", 200) != 200:
                    return self._send(step["status"], {"error": {"message": "scripted failure"}})
                self._send(200, {
                    "id": f"chatcmpl-{len(judge.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": step["content"]}}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                })

            def _send(self, status: int, doc: dict):
                data = json.dumps(doc).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def push(self, *steps: Any) -> None:
        with self._lock:
            self.script.extend(steps)

    def start(self) -> "ScriptedJudge":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "ScriptedJudge":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def user_texts(self) -> list[str]:
        """The text part of the user message of every request received."""
        return [user_text(body) for body in self.requests]


def user_text(body: dict) -> str:
    """The text part of a request's first user message."""
    content = [m for m in body["messages"] if m["role"] == "user"][0]["content"]
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8911)
    ap.add_argument("--answer", required=True, help="the content every request gets")
    args = ap.parse_args()
    judge = ScriptedJudge(args.port)
    judge.responder = lambda body: args.answer
    print(f"scripted judge at {judge.base_url}", flush=True)
    judge.server.serve_forever()


if __name__ == "__main__":
    main()
