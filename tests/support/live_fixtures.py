"""Shared pieces of the live-arena tests and benchmark: an arena + live app on a loopback port, utterances."""
from __future__ import annotations

import io
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from eval_backend.config import ModelSpec


def espeak_bytes(text: str, rate: int = 150) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "u.wav"
        subprocess.run(["espeak-ng", "-v", "en", "-s", str(rate), "-w", str(path), text], check=True,
                       capture_output=True, timeout=60)
        return path.read_bytes()


def utterance(seconds: float | None = None, text: str = "I lost my job today and I feel awful about it.",
              rate: int = 150) -> bytes:
    """espeak-ng speech; with `seconds`, padded with its own repetitions (and cut) to that length."""
    data = espeak_bytes(text, rate)
    if seconds is None:
        return data
    samples, sr = sf.read(io.BytesIO(data), dtype="float32")
    n = int(seconds * sr)
    gap = np.zeros(int(0.2 * sr), dtype=np.float32)
    out = samples
    while len(out) < n:
        out = np.concatenate([out, gap, samples])
    buf = io.BytesIO()
    sf.write(buf, out[:n], sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def wav(samples: np.ndarray, sr: int = 16000) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, samples.astype(np.float32), sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def spec(name: str, base_url: str, **kw) -> ModelSpec:
    return ModelSpec(name=name, base_url=base_url, model=kw.pop("model", name), audio_output=True, **kw)


def baseline_specs(base_url: str) -> list[ModelSpec]:
    return [spec("cascade-blind", base_url), spec("cascade-cue", base_url)]


class LiveApp:
    """The arena JSON API, the clips' route and the live route (as app.py mounts them) on a loopback port."""

    def __init__(self, data_dir, contestants, live_settings=None, arena_overrides=None, **live_kw):
        from fastapi import FastAPI

        from arena.config import settings_from_env
        from arena.web.http_api import mount_http_api
        from arena.services.live import LiveService, LiveSettings
        from arena.web.live_api import mount_live_api
        from arena.web.media import mount_media
        from arena.services.service import ArenaService
        from space_shell.body_limit import BodyLimit, app_caps
        from eval_backend.store import Store

        self.store = Store(data_dir)
        overrides = {"min_listen_s": 0.3, **(arena_overrides or {})}
        self.arena = ArenaService(self.store, settings_from_env(self.store.root, **overrides), benchmarks=[])
        self.live = LiveService(self.arena, contestants, live_settings or LiveSettings(), **live_kw)
        app = FastAPI()
        mount_http_api(app, self.arena)
        mount_media(app, self.arena)
        mount_live_api(app, self.live)
        self.app = BodyLimit(app, app_caps(64 * 2**20))

    def __enter__(self) -> "LiveApp":
        import socket

        import uvicorn
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off", proxy_headers=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("live app did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def stored(self) -> dict:
        """What a refused request must not have left: rows and files."""
        live_dir = Path(self.store.root) / "live"
        return {"battles": self.store.query("SELECT COUNT(*) FROM arena_battles")[0][0],
                "live": self.store.query("SELECT COUNT(*) FROM arena_live")[0][0],
                "votes": self.store.query("SELECT COUNT(*) FROM arena_votes")[0][0],
                "files": sorted(str(p.relative_to(live_dir)) for p in live_dir.rglob("*")) if live_dir.exists()
                else []}


def post_live(client, audio: bytes | None, consent_store="false", consent_release="false", session=None,
              filename="voice.wav", content_type="audio/wav"):
    data = {}
    if consent_store is not None:
        data["consent_store"] = consent_store
    if consent_release is not None:
        data["consent_release"] = consent_release
    if session:
        data["session"] = session
    files = {"audio": (filename, audio, content_type)} if audio is not None else None
    return client.post("/api/arena/live/battle", data=data, files=files)
