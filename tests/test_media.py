"""Serve only what is public (issue 10): audio through token routes, no file of the data dir otherwise.

Against the real Space (`python app.py`, the embedded default: data dir ./data in its working directory,
SQLite unless the suite runs on PostgreSQL) on loopback, with a seeded data dir that holds every private file:

1. the crawl: every route the app mounts (its own, Gradio's, FastAPI's docs), each path parameter and a query
   string filled with each private file spelled relative, relative to the working directory, absolute,
   URL-encoded, double-encoded, through `..` and file://, sent as raw HTTP (no client normalises the path):
   no response carries the file's bytes, and Gradio's file routes refuse every spelling;
2. the media routes serve what they should (battle clips from the database, signed reply and benchmark-clip
   tokens) and nothing for a forged, foreign or tampered token;
3. the Browse tab plays its audio from token URLs in a real browser;
4. the attack that lost votes (issue 10): 5 votes, the download attempts, `python -m arena ratings --json`,
   5 votes, kill -9, restart: all 10 acknowledged votes are there.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import re
import secrets
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from arena.web.media import MediaTokens
from eval_backend.showcase import in_showcase
from space_shell.signing import Signer
from eval_backend.store import Reply, Store
from tests.support.arena_fixtures import free_port, seed
from tests.support.browser import launch_chromium, new_page, wait_for_playable
from tests.support.processes import ServerProcess, python_path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("space",)   # the running app writes to the module's database (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


# ----------------------------------------------------------------------------------------------- the app
class SpaceProcess(ServerProcess):
    """`python app.py` in `cwd`, whose data dir is the default ./data (as on the Space), on a loopback port."""

    def __init__(self, cwd: Path, port: int | None = None, env: dict | None = None):
        self.cwd = cwd
        self.data = cwd / "data"
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__([str(ROOT / "app.py")], cwd / f"app_{self.port}.log", cwd=cwd, stop_timeout=30, env={
            "GRADIO_SERVER_PORT": str(self.port), "GRADIO_SERVER_NAME": "127.0.0.1", "EMPATHY_ARENA_BOOTSTRAP": "0",
            "EMPATHY_ARENA_WORKER": "0", "EMPATHY_ARENA_BENCHMARK": "demo", "HF_HUB_OFFLINE": "1",
            "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": python_path(ROOT), "EMPATHY_ARENA_DATA_DIR": None,
            **(env or {})})

    def start(self, timeout: float = 180) -> "SpaceProcess":  # type: ignore[override]
        # ready = serving battles (the benchmark is loaded)
        super().start(self.url + "/api/arena/battle", timeout, method="POST", json={})
        return self

    def kill9(self) -> None:
        self.kill()


def raw_request(port: int, target: str, method: str = "GET", body: bytes = b"", timeout: float = 5.0,
                max_bytes: int = 8 << 20) -> tuple[int, bytes]:
    """One HTTP/1.0 request with the target sent byte for byte (no client-side normalisation of `..` or
    %-escapes); returns (status, whole response). Event streams are read for a moment only."""
    head = (f"{method} {target} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode("latin-1")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head + body)
        data = b""
        deadline = time.monotonic() + timeout
        while len(data) < max_bytes and time.monotonic() < deadline:
            if b"text/event-stream" in data.split(b"\r\n\r\n", 1)[0] and b"\r\n\r\n" in data:
                s.settimeout(0.3)           # a stream never ends: what it sent in 0.3 s is what it sends
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            data += chunk
    try:
        status = int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = 0
    return status, data


def _marker(tag: str) -> bytes:
    return f"PRIVATE-{tag}-{secrets.token_hex(12)}".encode()


def plant_private_files(data: Path, models: tuple[str, ...]) -> dict[str, bytes]:
    """Every kind of private file in the data dir -> the bytes that must never come back."""
    out: dict[str, bytes] = {}
    store = Store(data)
    for name in ("store.sqlite3", "store.sqlite3-wal", "store.sqlite3-shm"):
        p = data / name
        if store.dialect == "sqlite":
            assert p.is_file() and p.stat().st_size > 0, name    # the app has the database open
        else:
            p.write_bytes(_marker(name))     # PostgreSQL run: a stand-in file, equally private
    # SQLite's headers (the database's is the same for every SQLite file: any such body is a leak)
    db = (data / "store.sqlite3").read_bytes()
    out["store.sqlite3"] = db[:16] if store.dialect == "sqlite" else db
    out["store.sqlite3-wal"] = (data / "store.sqlite3-wal").read_bytes()[:32]
    out["store.sqlite3-shm"] = (data / "store.sqlite3-shm").read_bytes()[:8]
    for name in ("arena_salt", "signing_key"):
        out[name] = (data / name).read_bytes().strip()
    upload = f"submissions/uploads/{secrets.token_hex(16)}"
    for rel in ("cache/judge_cache.sqlite3", "cache/arena_clips/0123456789abcdef.wav", f"{upload}/predictions.zip",
                f"{upload}/run/audio/0.wav", "benchmarks/hidden/benchmark.json", "benchmarks/hidden/audio/q0.wav",
                f"results/{models[0]}/in-progress.json", "secrets.env"):
        p = data / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        out[rel] = _marker(rel)
        p.write_bytes(b"RIFF" + out[rel] if p.suffix == ".wav" else out[rel])
    # public only through a token: a stored reply and a benchmark clip, by path
    reply = store.replies(model=models[0], status="ok")[0]
    out[reply.audio_path] = store.abspath(reply.audio_path).read_bytes()
    clip = sorted((data / "benchmarks" / "demo").rglob("*.wav"))[0]
    out[clip.relative_to(data).as_posix()] = clip.read_bytes()
    return out


def spellings(data: Path, cwd: Path, rel: str) -> list[str]:
    """The ways to name one file in a URL."""
    absolute = str(data / rel)
    bare = absolute.lstrip("/")
    rel_cwd = os.path.relpath(absolute, cwd)            # "data/store.sqlite3", as the attacker spelled it
    rel_root = os.path.relpath(absolute, ROOT)           # relative to the code's folder
    up = "../" * 12
    forms = [rel, rel_cwd, rel_root, "./" + rel_cwd, absolute, "/" + absolute, "file://" + absolute,
             str(data / "replies" / ".." / rel), f"{rel_cwd.split('/')[0]}/../{rel_cwd}", up + bare,
             quote(rel_cwd, safe=""), quote(absolute, safe=""), quote(quote(absolute, safe=""), safe=""),
             quote(quote(rel_cwd, safe=""), safe=""), "..%2F" * 12 + quote(bare, safe=""),
             "%2e%2e/" * 12 + bare, "%252e%252e%252f" * 12 + quote(quote(bare, safe=""), safe=""),
             absolute.replace("/", "%2F"), rel_cwd.replace("/", "//")]
    return list(dict.fromkeys(forms))


def mounted_routes(app) -> list[tuple[str, set[str]]]:
    """(path template, methods) of every HTTP route of the app, Gradio's included, FastAPI's docs too."""
    from fastapi.routing import _IncludedRouter
    from starlette.routing import Mount

    out: list[tuple[str, set[str]]] = []

    def walk(routes, prefix: str) -> None:
        for r in routes:
            if isinstance(r, _IncludedRouter):
                for c in [*r.effective_candidates(), *r.effective_low_priority_routes()]:
                    if isinstance(c, _IncludedRouter):
                        walk([c], prefix)
                    else:
                        out.append((prefix + c.path, set(getattr(c.original_route, "methods", None) or ())))
            elif isinstance(r, Mount):
                walk(r.routes or [], prefix + r.path)
            elif getattr(r, "methods", None):
                out.append((prefix + r.path, set(r.methods)))
    walk(app.routes, "")
    return out


def fill(template: str, param: str | None, value: str) -> str:
    """The template with `param` set to `value` and every other parameter to a harmless word."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: value if m.group(1) == param else "x", template)


# ----------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def space(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("space_cwd")
    seed(cwd / "data", MODELS, n_scripts=1)
    app = SpaceProcess(cwd).start()
    private = plant_private_files(cwd / "data", MODELS)
    yield {"app": app, "cwd": cwd, "data": cwd / "data", "private": private,
           "tokens": MediaTokens(Signer.for_data_dir(cwd / "data"))}
    app.stop()


@pytest.fixture(scope="module")
def routes(space, tmp_path_factory):
    """The routes the app mounts: the same build (app.build_app) on the same data dir, in this process."""
    from app import SpaceContext, build_app

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
        mp.setenv("EMPATHY_ARENA_BENCHMARK", "demo")
        ctx = SpaceContext(space["data"])
        return mounted_routes(build_app(ctx))


# ----------------------------------------------------------------------------------------------- 1. crawl
def test_no_route_serves_a_private_file_however_it_is_spelled(space, routes):
    app, data, cwd, private = space["app"], space["data"], space["cwd"], space["private"]
    paths = {t for t, _ in routes}
    for expected in ("/gradio_api/file={path_or_url:path}", "/gradio_api/file/{path:path}", "/static/{path:path}",
                     "/assets/{path:path}", "/gradio_api/proxy={url_path:path}", "/gradio_api/upload",
                     "/api/arena/audio/{battle_id}/{clip}", "/media/reply/{token}", "/media/clip/{token}"):
        assert expected in paths, expected            # the crawl sees Gradio's routes and ours
    # Gradio's historical and static file routes, and the data dir's own name, tried even where not mounted
    extra = ["/file={p}", "/gradio_api/file={p}", "/gradio_api/file/{p}", "/static/{p}", "/assets/{p}",
             "/svelte/{p}", "/gradio_api/proxy={p}", "/{p}", "/data/{p}", "/gradio_api/{p}"]

    requests: list[tuple[str, str, str, bytes]] = []       # (file, method, target, body)
    for rel in private:
        forms = spellings(data, cwd, rel)
        few = forms[:5]                                   # relative, relative to cwd / code, absolute
        targets: set[str] = set()
        for spelled in forms:
            targets |= {e.format(p=spelled) for e in extra}
            for template, methods in routes:
                for param, converter in re.findall(r"\{(\w+)(:\w+)?\}", template):
                    # a segment parameter cannot hold a raw "/": there, the encoded and bare spellings
                    if converter == ":path" or "/" not in spelled:
                        targets.add(fill(template, param, spelled))
        for spelled in few:
            q = quote(spelled, safe="")
            for template, methods in routes:
                if methods & {"GET", "HEAD"}:
                    targets.add(fill(template, None, "x") + f"?path={q}&file={q}&url={q}&session_hash={q}")
                if "POST" in methods:
                    body = json.dumps({"path": spelled, "url": spelled, "files": [spelled],
                                       "data": [{"path": spelled, "url": spelled,
                                                 "meta": {"_type": "gradio.FileData"}}],
                                       "fn_index": 0, "session_hash": "crawl"}).encode()
                    requests.append((rel, "POST", fill(template, None, "x"), body))
        requests += [(rel, "GET", t, b"") for t in targets if " " not in t]

    def probe(req):
        rel, method, target, body = req
        status, raw = raw_request(app.port, target, method, body)
        return rel, method, target, status, raw

    leaks, gradio_file_ok = [], []
    file_routes = ("/gradio_api/file=", "/gradio_api/file/", "/file=")
    with ThreadPoolExecutor(8) as pool:
        for rel, method, target, status, raw in pool.map(probe, requests):
            if private[rel] in raw:
                leaks.append((rel, method, target, status))
            if target.startswith(file_routes) and 200 <= status < 300:
                gradio_file_ok.append((rel, target, status))
    print(f"crawl: {len(requests)} requests over {len(routes)} routes, {len(private)} private files")
    assert not leaks, leaks[:20]
    assert not gradio_file_ok, gradio_file_ok[:20]
    # the app still took every request in its stride
    assert httpx.get(app.url + "/api/arena/health", timeout=10).status_code == 200


# ----------------------------------------------------------------------------------------------- 2. routes
def test_battle_clips_come_from_the_database_and_any_replica_finds_them(space):
    from arena.config import ArenaSettings
    from arena.services.service import ArenaService

    app, data = space["app"], space["data"]
    battle = httpx.post(app.url + "/api/arena/battle", json={}, timeout=30).json()
    assert set(battle["audio"]) == {"user", "A", "B"}
    public = json.dumps(battle)
    assert not any(m in public for m in MODELS) and str(data) not in public and ".wav" not in public
    store = Store(data)
    row = store.query("SELECT * FROM arena_battles WHERE id=?", (battle["battle_id"],))[0]
    # a replica that never served this battle (its own, empty index) resolves its clips from the row
    replica = ArenaService(store, ArenaSettings())
    for clip, model in (("A", row["model_a"]), ("B", row["model_b"]), ("user", None)):
        url = battle["audio"][clip]
        assert url == f"/api/arena/audio/{battle['battle_id']}/{clip}"
        r = httpx.get(app.url + url, timeout=30)
        assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
        assert "model" not in r.headers.get("content-disposition", "")
        path = replica.battle_clip(battle["battle_id"], clip)
        assert r.content == path.read_bytes()
        if model:
            reply = store.query("SELECT audio_path FROM replies WHERE model=? AND request_id=?",
                                (model, row["request_id"]))[0][0]
            assert path == replica.heard.clip(store.abspath(reply)).path     # the reply as heard (issue 22)
        part = httpx.get(app.url + url, headers={"Range": "bytes=0-99"}, timeout=30)   # browsers seek
        assert part.status_code == 206 and part.content == r.content[:100]
    for bad in ("A" * 32, battle["battle_id"] + "x", "..", quote("../store.sqlite3", safe="")):
        assert httpx.get(f"{app.url}/api/arena/audio/{bad}/A", timeout=30).status_code == 404
    assert httpx.get(f"{app.url}/api/arena/audio/{battle['battle_id']}/a", timeout=30).status_code == 404
    # expired: nothing (the replica's clock is an hour ahead)
    later = ArenaService(store, ArenaSettings(), clock=lambda: time.time() + 3600)
    assert later.battle_clip(battle["battle_id"], "A") is None


def test_reply_and_clip_tokens_map_to_one_file_and_cannot_be_forged(space):
    app, data, tokens = space["app"], space["data"], space["tokens"]
    store = Store(data)
    # a showcase reply: one battles can play is not served with its model's name (eval_backend/showcase.py)
    reply = next(r for r in store.replies(model=MODELS[1], status="ok") if in_showcase(r.request_id))
    url = tokens.reply_url(reply.model, reply.benchmark_hash, reply.request_id)
    assert "/" not in url.removeprefix("/media/reply/") and reply.audio_path not in url
    r = httpx.get(app.url + url, timeout=30)
    assert r.status_code == 200 and r.content == store.abspath(reply.audio_path).read_bytes()

    token = url.removeprefix("/media/reply/")
    value, mac = token.rsplit(".", 1)
    other = MediaTokens(Signer(b"another server's key"))
    forged = [value + "." + ("0" if mac[0] != "0" else "1") + mac[1:],              # a changed MAC
              other.reply_url(reply.model, reply.benchmark_hash, reply.request_id).rsplit("/", 1)[1],
              tokens.signer.sign("session", value),                              # another purpose's token
              value, "", "x" * 600]
    for bad in forged:
        assert httpx.get(f"{app.url}/media/reply/{quote(bad, safe='')}", timeout=30).status_code == 404, bad

    # a tampered row (e.g. a doctored Hub restore) pointing out of replies/: a valid token still gets nothing
    store.put_reply(Reply(model="evil-model", benchmark_hash=reply.benchmark_hash, request_id=reply.request_id,
                          task=reply.task, item_id=reply.item_id, variant=reply.variant, status="ok", text="hi",
                          audio_path="../data/store.sqlite3"))
    evil = httpx.get(app.url + tokens.reply_url("evil-model", reply.benchmark_hash, reply.request_id), timeout=30)
    assert evil.status_code == 404 and space["private"]["store.sqlite3"] not in evil.content

    # benchmark clips: the served benchmark's item clips only
    from eval_backend.benchmark.loaders import load_benchmark
    from leaderboard import browse

    b = load_benchmark("demo", data)
    label, path = browse.item_view(b, "scripts", b.scripts[0].id).clips[0]
    clip = httpx.get(app.url + tokens.clip_url(b.hash, "scripts", b.scripts[0].id, 0), timeout=30)
    assert clip.status_code == 200 and clip.content == Path(path).read_bytes()
    for args in ((b.hash, "scripts", b.scripts[0].id, 7), ("0" * 64, "scripts", b.scripts[0].id, 0),
                 (b.hash, "secrets", "x", 0), (b.hash, "scripts", "../../store.sqlite3", 0)):
        assert httpx.get(app.url + tokens.clip_url(*args), timeout=30).status_code == 404, args
    reply_token = url.removeprefix("/media/reply/")
    assert httpx.get(f"{app.url}/media/clip/{reply_token}", timeout=30).status_code == 404   # wrong purpose


# ----------------------------------------------------------------------------------------------- 3. browser
@pytest.mark.browser
def test_browse_tab_plays_audio_from_token_urls(space):
    app, data = space["app"], space["data"]
    with launch_chromium() as browser:      # closed within the test: later tests here use asyncio.run
        page = new_page(browser, 60_000)
        page.goto(app.url + "/")
        page.get_by_role("tab", name="Browse benchmark").click()
        wait_for_playable(page, "#browse-clip-0 audio")
        # a showcase request: arena-pool replies are not shown with their model's name (eval_backend/showcase.py)
        page.get_by_text("AEQ context variation").click()
        page.wait_for_function("() => document.body.innerText.includes('context: The speaker')")
        page.get_by_label("Model", exact=True).click()                 # not another test's evil-model
        page.get_by_role("option", name=MODELS[0]).click()
        from eval_backend.benchmark.loaders import load_benchmark
        from leaderboard import browse
        showcase = browse.request_label(load_benchmark("demo", data), "context/g0/c1")
        page.get_by_label("Request", exact=True).click()
        page.get_by_role("option", name=showcase, exact=True).click()
        wait_for_playable(page, "#browse-reply-audio audio")
        srcs = page.evaluate("() => [...document.querySelectorAll('audio')].map(a => a.getAttribute('src'))"
                             ".filter(Boolean)")
        assert any(s.startswith("/media/clip/") for s in srcs) and any(s.startswith("/media/reply/") for s in srcs)
        html = page.content()
        assert str(data) not in html and "replies/" not in html and "gradio_api/file=" not in html


# ----------------------------------------------------------------------------------------------- 4. votes
def _cast_votes(url: str, n: int) -> list[str]:
    """n votes through the HTTP API (battles served and their audio fetched together, so the listening time
    passes once); returns the battle ids whose vote was acknowledged (200)."""
    async def run():
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            battles = [(await http.post("/api/arena/battle", json={})).json() for _ in range(n)]
            for b in battles:
                for clip_url in b["audio"].values():
                    assert (await http.get(clip_url)).status_code == 200
            await asyncio.sleep(max(sum(b["min_listen_s"].values()) for b in battles) + 0.5)
            acked = []
            for b in battles:
                r = await http.post("/api/arena/vote", json={"battle_id": b["battle_id"], "session": b["session"],
                                                              "overall": random.choice(["A", "B", "tie"]),
                                                              "listen": {"played_s": b["min_listen_s"]}})
                assert r.status_code == 200, r.text
                acked.append(b["battle_id"])
            return acked
    return asyncio.run(run())


def test_download_attempts_then_crash_lose_no_acknowledged_vote(tmp_path):
    cwd = tmp_path / "space"
    seed(cwd / "data", MODELS, n_scripts=2)
    app = SpaceProcess(cwd).start()
    try:
        acked = _cast_votes(app.url, 5)
        data = str(cwd / "data")
        for name in ("store.sqlite3", "store.sqlite3-wal", "store.sqlite3-shm", "arena_salt", "signing_key"):
            for spelled in (f"data/{name}", f"{data}/{name}", quote(f"{data}/{name}", safe="")):
                for route in ("/gradio_api/file=", "/gradio_api/file/", "/file="):
                    status, _ = raw_request(app.port, route + spelled)
                    assert status in (403, 404), (route + spelled, status)
        cli = subprocess.run([sys.executable, "-m", "arena", "ratings", "--json", "--data-dir", data], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert cli.returncode == 0, cli.stderr
        assert sum(r["votes"] for r in json.loads(cli.stdout)) == 2 * 5
        # any other process that opens and closes the database (an operator's sqlite3 shell, a backup):
        # were the app's locks gone, its close would checkpoint and delete the WAL under the running app
        peek = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                "print(c.execute('SELECT COUNT(*) FROM arena_votes').fetchone()[0]); c.close()")
        if Store(data).dialect == "sqlite":
            out = subprocess.run([sys.executable, "-c", peek, f"{data}/store.sqlite3"], capture_output=True,
                                 text=True, timeout=120)
            assert out.returncode == 0 and out.stdout.strip() == "5", out.stderr
        acked += _cast_votes(app.url, 5)
        app.kill9()
        app = SpaceProcess(cwd).start()
        rows = Store(cwd / "data").query("SELECT battle_id FROM arena_votes")
        assert set(acked) <= {r[0] for r in rows} and len(acked) == 10
        board = httpx.get(app.url + "/api/arena/ratings", timeout=60).json()["rows"]
        assert sum(r["votes"] for r in board) == 2 * 10
    finally:
        app.stop()
