"""Gradio's own routes, bounded (issue 21, points 3–5), against real app processes on loopback.

1. Uploads (behind Debian's nginx, clients on their own loopback addresses): one address sending 20 recordings of
   8 MiB is refused with 429 (Retry-After) once past its hourly budget, while another address still uploads; each
   upload is capped by what it is for (a recording 8 MiB, a predictions zip its own limit); one file per request.
2. Sessions: 5,000 `queue/join`s with new session hashes from one address grow the app (`python app.py`, every tab)
   by at most 64 MiB; past the budget they get 429; another address is still served meanwhile.
3. Live retention covers every copy: a recording sent through the page's Gradio protocol (upload, consent, send)
   makes a live battle; nothing of it stays in Gradio's folder (`/gradio_api/file=` answers as for a path that never
   existed: Gradio's one answer, 403, for every file it does not serve), and after the retention sweep nothing of it
   stays anywhere (data dir, Gradio's folder) and the battle's clip route answers 404.
"""
from __future__ import annotations

import io
import secrets
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import numpy as np
import pytest
import soundfile as sf

from eval_backend.store import Store
from tests.support import nginx_proxy as ng
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.gradio_stream import session_lines
from tests.support.live_fixtures import utterance
from tests.support.speaking_server import SpeakingServer
from tests.test_media import SpaceProcess

MODELS = ("warm-model", "flat-model")
PROXY_SOURCE = "127.0.0.254"
MODULE_DATABASE_FIXTURES = ("live_app", "space")
MiB = 2**20
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
# (space_shell/gradio_guard.py keeps its budgets in memory; the retention sweep below deletes what the store names)
GRADIO_ROUTES = pytest.mark.store_incidental("Gradio's upload and session limits: the store only backs the page")


def client(source: str, **kw) -> httpx.Client:
    """A client whose connections come from `source` (a loopback address of its own)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=120, **kw)


def recording(n_bytes: int) -> bytes:
    """A wav of noise of about `n_bytes` (16 kHz mono 16-bit)."""
    samples = np.random.default_rng(n_bytes).uniform(-0.3, 0.3, (n_bytes - 44) // 2).astype(np.float32)
    buf = io.BytesIO()
    sf.write(buf, samples, 16000, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def upload(c: httpx.Client, url: str, content: bytes, name: str = "voice.wav") -> httpx.Response:
    return c.post(url + "/gradio_api/upload", files={"files": (name, content, "application/octet-stream")})


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def settled_rss_mib(pid: int) -> float:
    """The process's resident memory once it has settled: the median of 5 readings a second apart, after 3 s."""
    time.sleep(3)
    readings = []
    for _ in range(5):
        readings.append(rss_mib(pid))
        time.sleep(1)
    return sorted(readings)[2]


def config_parts(url: str):
    cfg = httpx.get(url + "/config", timeout=60).json()
    comps = {c["id"]: c for c in cfg["components"]}
    by_elem = {c["props"].get("elem_id"): c["id"] for c in cfg["components"] if c["props"].get("elem_id")}
    return cfg, comps, by_elem


def join(c: httpx.Client, url: str, fn_index: int, data: list, session: str) -> httpx.Response:
    return c.post(url + "/gradio_api/queue/join", json={"data": data, "fn_index": fn_index, "session_hash": session,
                                                        "event_data": None, "trigger_id": None})


def wait_events(c: httpx.Client, url: str, session: str, event_ids: set[str], timeout: float = 180) -> list[dict]:
    """The session's completed events (their messages), read until the app closes the stream once every event has
    completed (never hang up first: tests/support/gradio_stream.py)."""
    done = []
    for _, msg in session_lines(c, url, session, timeout):
        if (msg or {}).get("msg") == "process_completed":
            done.append(msg)
            event_ids.discard(msg.get("event_id"))
    return done


def _answer(c: httpx.Client, url: str, path: str, mask: str) -> tuple[int, str]:
    r = c.get(url + "/gradio_api/file=" + quote(path))
    return r.status_code, r.text.replace(path, mask)


# ----------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def gradio_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("gradio_tmp")


@pytest.fixture(scope="module")
def live_app(tmp_path_factory, gradio_tmp):
    """The arena app with live mode (two speaking models on loopback) behind nginx, retention 3 s."""
    data = tmp_path_factory.mktemp("limits_data")
    seed(data, MODELS, n_scripts=1)
    lines = {"cascade-blind": lambda rid: ("I am sorry, that sounds really hard.", None),
             "cascade-cue": lambda rid: ("Oh no. I can hear that you are upset.", None)}
    with SpeakingServer(lines) as models:
        env = {"EMPATHY_ARENA_TRUSTED_PROXIES": PROXY_SOURCE, "GRADIO_TEMP_DIR": str(gradio_tmp),
               "EMPATHY_ARENA_TEST_LIVE_URL": models.base_url, "EMPATHY_ARENA_LIVE_RETENTION_S": "3",
               "EMPATHY_ARENA_LIVE_SWEEP_EVERY_S": "1"}
        proc = AppProcess(data, {"min_listen_s": 0.0}, env=env).start()
        try:
            with ng.nginx_proxy(f"127.0.0.1:{proc.port}", source=PROXY_SOURCE) as proxy:
                yield proc, proxy
        finally:
            proc.stop()


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("sessions_cwd")
    seed(cwd / "data", MODELS, n_scripts=1)
    # the session flood below sends 5,000 joins one after another: each refusal held back a quarter of a second
    # (space_shell/refusal_delay.py, tested by tests/test_refusal_delay.py and test_flood.py) would take 20 minutes
    app = SpaceProcess(cwd, env={"EMPATHY_ARENA_REFUSAL_DELAY_MS": "0"}).start()
    yield app
    app.stop()


# ----------------------------------------------------------------------------------------------- 1. uploads
@GRADIO_ROUTES
def test_one_address_is_refused_past_its_upload_budget_while_another_still_uploads(live_app):
    _, proxy = live_app
    eight = recording(8 * MiB - 4096)
    statuses, refusal = [], None
    with client("127.0.0.2") as flood, client("127.0.0.3") as other:
        for _ in range(20):
            r = upload(flood, proxy.url, eight)
            statuses.append(r.status_code)
            if r.status_code == 429:
                refusal = r
            assert upload(other, proxy.url, recording(64 * 1024)).status_code == 200   # the other address
        accepted = statuses.count(200)
        print(f"20 x 8 MiB from one address: {accepted} accepted, then {statuses.count(429)} refused (429)")
        assert statuses == [200] * accepted + [429] * (20 - accepted) and 1 <= accepted <= 9, statuses
        assert int(refusal.headers["retry-after"]) > 0 and "MiB" in refusal.json()["message"]
        # caps by what the upload is for; one file per request
        third = client("127.0.0.4")
        assert upload(third, proxy.url, recording(9 * MiB)).status_code == 413            # a recording: 8 MiB
        assert upload(third, proxy.url, b"PK\x05\x06" + bytes(9 * MiB), "p.zip").status_code == 200   # a zip
        two = third.post(proxy.url + "/gradio_api/upload",
                         files=[("files", ("a.wav", b"RIFF" + bytes(100))), ("files", ("b.wav", b"RIFF" + bytes(9)))])
        assert two.status_code == 400
        third.close()


@GRADIO_ROUTES
def test_uploads_at_once_are_bounded_and_the_app_keeps_answering(live_app):
    """Four slow uploads at once from one address: two are taken, the others refused at once (429); the app
    answers another request meanwhile."""
    from concurrent.futures import ThreadPoolExecutor

    _, proxy = live_app
    boundary = "b" * 16

    def slow_body():
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"s.wav\"\r\n"
               "Content-Type: audio/wav\r\n\r\n").encode()
        for _ in range(12):
            time.sleep(0.25)
            yield b"\0" * 4096
        yield f"\r\n--{boundary}--\r\n".encode()

    def slow_upload(_):
        with client("127.0.0.8") as c:
            return c.post(proxy.url + "/gradio_api/upload", content=slow_body(),
                          headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}).status_code

    with ThreadPoolExecutor(4) as pool:
        running = pool.map(slow_upload, range(4))
        time.sleep(1.0)
        with client("127.0.0.9") as other:
            t0 = time.monotonic()
            assert other.get(proxy.url + "/api/arena/health").status_code == 200
            answered_s = time.monotonic() - t0
        statuses = sorted(running)
    assert statuses.count(200) == 2 and statuses.count(429) == 2, statuses
    assert answered_s < 5.0, answered_s


# ----------------------------------------------------------------------------------------------- 2. sessions
@GRADIO_ROUTES
def test_new_session_flood_is_bounded_in_memory_and_others_are_still_served(space):
    cfg, comps, _ = config_parts(space.url)
    dep = next(d for d in cfg["dependencies"] if d.get("backend_fn") and not d["inputs"])   # e.g. a page-load
    flood_ok = flood_429 = 0
    with client("127.0.0.2") as warm:            # warm up first (from another address): first requests allocate
        for _ in range(300):                     # for good, whatever comes next
            join(warm, space.url, dep["id"], [], "warm" + secrets.token_hex(8))
    before = settled_rss_mib(space.proc.pid)
    other_ok = []
    with client("127.0.0.5") as flood, client("127.0.0.6") as other:
        for n in range(5000):
            r = join(flood, space.url, dep["id"], [], "flood" + secrets.token_hex(8))
            flood_ok += r.status_code == 200
            flood_429 += r.status_code == 429
            if n % 500 == 0:
                other_ok.append(join(other, space.url, dep["id"], [], "other" + secrets.token_hex(8)).status_code)
    grown = settled_rss_mib(space.proc.pid) - before          # once the admitted events have run
    print(f"5,000 new sessions from one address: {flood_ok} admitted, {flood_429} refused (429); the app's "
          f"resident memory {before:.0f} -> {before + grown:.0f} MiB ({grown:+.1f} MiB)")
    assert flood_ok + flood_429 == 5000 and flood_429 >= 4900
    assert set(other_ok) == {200}, other_ok
    assert grown <= 64, grown


# ----------------------------------------------------------------------------------------------- 3. retention
def test_live_recording_leaves_no_copy_after_the_retention_sweep(live_app, gradio_tmp):
    proc, proxy = live_app
    cfg, comps, by_elem = config_parts(proxy.url)
    consent = next(d for d in cfg["dependencies"] if d["inputs"] == [by_elem["live-consent-store"],
                                                                      by_elem["live-consent-release"]])
    send = next(d for d in cfg["dependencies"] if d.get("backend_fn") and by_elem["live-mic"] in d["inputs"])
    voice = utterance(4.0)
    window = voice[4000:4096]                          # 96 bytes of its samples, to find any copy of it
    session = "live" + secrets.token_hex(8)
    with client("127.0.0.7") as c:
        path = c.post(proxy.url + "/gradio_api/upload", files={"files": ("voice.wav", voice, "audio/wav")}).json()[0]
        assert c.get(proxy.url + "/gradio_api/file=" + quote(path)).content == voice
        ids = {join(c, proxy.url, consent["id"], [False, False], session).json()["event_id"]}
        wait_events(c, proxy.url, session, ids)
        fd = {"path": path, "url": None, "orig_name": "voice.wav", "size": len(voice), "mime_type": "audio/wav",
              "meta": {"_type": "gradio.FileData"}}
        ids = {join(c, proxy.url, send["id"], [fd, None, None], session).json()["event_id"]}
        wait_events(c, proxy.url, session, ids)
        store = Store(proc.data_dir)
        rows = store.query("SELECT battle_id FROM arena_live")
        assert len(rows) == 1, "no live battle was made"
        battle = rows[0]["battle_id"]
        user = c.get(f"{proxy.url}/api/arena/audio/{battle}/user")
        assert user.status_code == 200 and user.content.startswith(b"RIFF")
        # the battle keeps its own copy; Gradio's is gone at once: Gradio's file route answers as for a path that
        # never existed (it gives every file it does not serve one answer, 403, so it tells nothing of existence)
        never = str(Path(path).parent.parent / secrets.token_hex(32) / "voice.wav")
        gone = c.get(proxy.url + "/gradio_api/file=" + quote(path))
        assert gone.status_code in (403, 404) and not gone.content.startswith(b"RIFF")
        assert (gone.status_code, gone.text.replace(path, "P")) == _answer(c, proxy.url, never, "P")
        assert not Path(path).exists()
        deadline = time.monotonic() + 60                 # retention 3 s, the sweep every second
        while store.query("SELECT deleted_at FROM arena_live WHERE battle_id=?", (battle,))[0][0] is None:
            assert time.monotonic() < deadline, "the retention sweep did not run"
            time.sleep(0.2)
        assert c.get(f"{proxy.url}/api/arena/audio/{battle}/user").status_code == 404
        assert _answer(c, proxy.url, path, "P") == _answer(c, proxy.url, never, "P")
    copies = [str(p) for root in (proc.data_dir, gradio_tmp) for p in Path(root).rglob("*")
              if p.is_file() and window in p.read_bytes()]
    assert not copies, copies
