"""The app's edge, attacked from loopback: client addresses, per-client limits, sessions, body caps, JSON depth.

One real app process (tests/support/arena_app.py, uvicorn as in production: proxy_headers off) that trusts only the
address of a real nginx in front of it (tests/support/nginx_proxy.py). Distinct clients are sockets bound to distinct
loopback addresses (127.0.0.2, 127.0.0.3, ...: Linux routes all of 127/8 to lo). Small limits make the bounds
visible: 5 battles a minute per address, 3 open battles per session, 6 vote attempts a minute per address.
Each test uses its own client addresses, so the buckets of one test do not leak into another.
"""
from __future__ import annotations

import json
import socket

import httpx
import pytest

from arena.config import settings_from_env
from arena.services.service import ArenaService
from space_shell.signing import Signer
from eval_backend.store import Store
from tests.support import nginx_proxy as ng
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.browser import launch_chromium, new_page, wait_for_vote

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(not ng.available(), reason="needs Debian's nginx (packages-test.txt)")]

MODELS = ("warm-model", "flat-model")
LIMITS = {"ip_battles_per_minute": 5, "session_open_battles": 3, "ip_vote_attempts_per_minute": 6,
          "min_listen_s": 0.0}
PROXY_SOURCE = "127.0.0.254"

MODULE_DATABASE_FIXTURES = ("app",)   # the running app writes to the module's database (tests/conftest.py)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("edge")
    seed(data, MODELS, n_scripts=1)
    proc = AppProcess(data, LIMITS, env={"EMPATHY_ARENA_TRUSTED_PROXIES": PROXY_SOURCE}).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def proxy(app):
    with ng.nginx_proxy(f"127.0.0.1:{app.port}", source=PROXY_SOURCE) as p:
        yield p


def client(source: str) -> httpx.Client:
    """An HTTP client whose connections come from `source` (a loopback address)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30)


def ip_hash(app, address: str) -> str:
    return ArenaService(Store(app.data_dir), settings_from_env(app.data_dir)).ip_hash(address)


def battle_hashes(app, battle_ids) -> set[str]:
    return {r[0] for r in Store(app.data_dir).query(
        f"SELECT ip_hash FROM arena_battles WHERE id IN ({','.join('?' * len(battle_ids))})", tuple(battle_ids))}


def battles_until_refused(c: httpx.Client, url: str, headers=None, n: int = 8) -> tuple[list[str], dict]:
    """Ask for battles (a new session each) until one is refused; the served ids and the refusal."""
    served = []
    for _ in range(n):
        r = c.post(url + "/api/arena/battle", json={}, headers=headers or {})
        if r.status_code != 200:
            return served, {"status": r.status_code, **r.json(), "retry_after": r.headers.get("retry-after")}
        served.append(r.json()["battle_id"])
    return served, {}


def test_spoofed_forwarded_for_straight_to_the_app_is_ignored(app):
    # From 127.0.0.1 too, the address uvicorn's default (forwarded_allow_ips) would have believed.
    for source in ("127.0.0.1", "127.0.0.5"):
        with client(source) as c:
            served, refusal = [], {}
            for k in range(8):
                r = c.post(app.url + "/api/arena/battle", json={}, headers={"X-Forwarded-For": f"10.9.8.{k}"})
                if r.status_code != 200:
                    refusal = {"status": r.status_code, **r.json()}
                    break
                served.append(r.json()["battle_id"])
        assert len(served) == LIMITS["ip_battles_per_minute"], source     # one bucket, whatever the header said
        assert refusal["status"] == 429 and refusal["error"] == "rate_limited"
        assert battle_hashes(app, served) == {ip_hash(app, source)}


def test_through_the_proxy_each_client_is_limited_on_its_own_address(app, proxy):
    sources = ("127.0.0.2", "127.0.0.3")
    for source in sources:
        with client(source) as c:
            # a spoofed header is kept by nginx on the left of what it appends: still ignored
            served, refusal = battles_until_refused(c, proxy.url, {"X-Forwarded-For": "6.6.6.6, " + PROXY_SOURCE})
        assert len(served) == LIMITS["ip_battles_per_minute"], (source, refusal)
        assert refusal["status"] == 429 and refusal["error"] == "rate_limited"
        assert int(refusal["retry_after"]) >= 1
        assert battle_hashes(app, served) == {ip_hash(app, source)}         # the client, not the proxy
    # the proxy's access log saw both clients: the requests did go through nginx
    log = (proxy.dir / "access.log").read_text()
    assert all(s in log for s in sources)


def test_open_battles_per_session_are_capped_and_a_vote_frees_one(app, proxy):
    with client("127.0.0.6") as c:
        first = c.post(proxy.url + "/api/arena/battle", json={}).json()
        session, ids = first["session"], [first["battle_id"]]
        for _ in range(LIMITS["session_open_battles"] - 1):
            ids.append(c.post(proxy.url + "/api/arena/battle", json={"session": session}).json()["battle_id"])
        r = c.post(proxy.url + "/api/arena/battle", json={"session": session})
        assert r.status_code == 429 and r.json()["error"] == "too_many_open", r.text
        assert "vote on one" in r.json()["message"]
        # another session from the same address is not held by this one's cap
        assert c.post(proxy.url + "/api/arena/battle", json={}).status_code == 200
        v = c.post(proxy.url + "/api/arena/vote", json={"battle_id": ids[0], "session": session, "overall": "A"})
        assert v.status_code == 200, v.text
        assert c.post(proxy.url + "/api/arena/battle", json={"session": session}).status_code == 200
    stored = Store(app.data_dir).query("SELECT COUNT(*) FROM arena_battles WHERE session_id=?", (session,))[0][0]
    assert stored == LIMITS["session_open_battles"] + 1       # the refused request wrote nothing


def test_sessions_are_issued_and_signed_by_the_server(app):
    with client("127.0.0.7") as c:
        chosen = c.post(app.url + "/api/arena/battle", json={"session": "i-choose-this"})
        assert chosen.status_code == 403 and chosen.json()["error"] == "bad_session"
        other_key = Signer(b"not the server's key").new_token("arena-session")
        assert c.post(app.url + "/api/arena/battle", json={"session": other_key}).status_code == 403
        issued = c.post(app.url + "/api/arena/battle", json={}).json()
        assert Signer.for_data_dir(app.data_dir).unsign("arena-session", issued["session"])
        forged = {"battle_id": issued["battle_id"], "session": issued["session"][:-1] + "0", "overall": "A"}
        if forged["session"] == issued["session"]:
            forged["session"] = issued["session"][:-1] + "1"
        v = c.post(app.url + "/api/arena/vote", json=forged)
        assert v.status_code == 403 and v.json()["error"] == "bad_session"
        ok = c.post(app.url + "/api/arena/vote", json={**forged, "session": issued["session"]})
        assert ok.status_code == 200, ok.text


def test_vote_attempts_per_address_are_limited_before_the_database(app):
    before = Store(app.data_dir).query("SELECT COUNT(*) FROM arena_refused_votes")[0][0]
    with client("127.0.0.8") as c:
        session = c.post(app.url + "/api/arena/battle", json={}).json()["session"]
        codes = [c.post(app.url + "/api/arena/vote", json={"battle_id": f"nope{k}", "session": session,
                                                             "overall": "A"}).status_code for k in range(10)]
    n = LIMITS["ip_vote_attempts_per_minute"]
    assert codes == [404] * n + [429] * (10 - n)
    after = Store(app.data_dir).query("SELECT COUNT(*) FROM arena_refused_votes")[0][0]
    assert after - before == n                 # the refused flood never reached the writer


def _raw(app, head: str, body: bytes = b"", source: str = "127.0.0.9") -> tuple[int, bytes]:
    """Send raw bytes; return the status and the response (the server may answer before the body is sent)."""
    with socket.create_connection(("127.0.0.1", app.port), timeout=30, source_address=(source, 0)) as s:
        s.sendall(head.encode() + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.find(b"\r\n\r\n") + 20:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def test_declared_oversize_bodies_are_refused_before_reading(app):
    # 300 MB declared, nothing sent: the answer comes at once, from the headers alone
    for path in ("/api/arena/vote", "/gradio_api/queue/join", "/gradio_api/upload"):
        status, data = _raw(app, f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                 f"Content-Length: {300 * 2**20}\r\n\r\n")
        assert status == 413, (path, data[:300])
        assert b"too_large" in data


def test_streamed_bodies_are_counted_and_capped(app):
    def chunks(total: int, size: int = 8192):
        sent = 0
        while sent < total:
            yield b" " * min(size, total - sent)
            sent += size

    with client("127.0.0.10") as c:
        big = c.post(app.url + "/api/arena/battle", content=chunks(64 * 2**10),
                     headers={"Content-Type": "application/json"})
        assert big.status_code == 413 and big.json()["error"] == "too_large"
        gradio = c.post(app.url + "/gradio_api/queue/join", content=chunks(2 * 2**20),
                        headers={"Content-Type": "application/json"})
        assert gradio.status_code == 413
        # the upload route takes a legitimate upload larger than the default cap
        files = {"files": ("p.zip", b"\0" * (2 * 2**20), "application/zip")}
        up = c.post(app.url + "/gradio_api/upload", files=files)
        assert up.status_code == 200, up.text[:300]


def test_json_depth_and_size_get_clear_4xx(app):
    with client("127.0.0.11") as c:
        deep = "[" * 5000 + "]" * 5000
        r = c.post(app.url + "/api/arena/battle", content=deep, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"] == "bad_json" and "nests" in r.json()["message"]
        # a legitimate vote near the cap (2,000 reason characters, escaped as \uXXXX pairs) is not refused
        # for its size: it reaches the service, which refuses the unknown battle
        issued = c.post(app.url + "/api/arena/battle", json={}).json()
        body = json.dumps({"battle_id": "unknown", "session": issued["session"], "overall": "A",
                           "reason": "😀" * 2000})
        assert len(body) > 20_000
        r = c.post(app.url + "/api/arena/vote", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 404 and r.json()["error"] == "unknown_battle", r.text
        assert c.post(app.url + "/api/arena/vote", content=b"\xff\xfe",
                      headers={"Content-Type": "application/json"}).status_code == 400


# ---------------------------------------------------------------- the Gradio tab, in a real browser, behind nginx
BROWSER_LIMITS = {**LIMITS, "ip_battles_per_minute": 2}


@pytest.fixture(scope="module")
def browser_app(app):
    """A second process on the same data dir (its own in-memory limits, as a replica has), behind its own nginx."""
    proc = AppProcess(app.data_dir, BROWSER_LIMITS, env={"EMPATHY_ARENA_TRUSTED_PROXIES": PROXY_SOURCE}).start()
    try:
        with ng.nginx_proxy(f"127.0.0.1:{proc.port}", source=PROXY_SOURCE) as p:
            yield proc, p
    finally:
        proc.stop()


@pytest.mark.browser
def test_gradio_tab_uses_the_resolved_address_a_signed_session_and_the_limits(browser_app):
    proc, proxy = browser_app
    with launch_chromium() as browser:
        page = new_page(browser, 30_000)
        page.goto(proxy.url + "/")
        page.wait_for_selector("#arena-next", timeout=120_000)       # Gradio renders after its config loads
        ids = []
        for _ in range(BROWSER_LIMITS["ip_battles_per_minute"]):
            page.click("#arena-next")
            page.wait_for_function(f"() => {{ const b = document.querySelector('.arena-meter')?.dataset.battle;"
                                   f" return b && !{json.dumps(ids)}.includes(b); }}")
            ids.append(page.evaluate("() => document.querySelector('.arena-meter').dataset.battle"))
            # vote (no minimum listening here), so "next" is offered again
            wait_for_vote(page)
            page.click("#arena-vote-a")
            page.click("#arena-send")          # no aspect answered: send the vote as it is (issue 24)
            page.wait_for_selector("#arena-reveal", state="visible")
        page.click("#arena-next")              # past this address's budget: refused, and said so
        page.wait_for_function("() => document.querySelector('#arena-message')?.innerText"
                               ".includes('too many battles')")
    rows = [dict(r) for r in Store(proc.data_dir).query(
        f"SELECT session_id, ip_hash FROM arena_battles WHERE id IN ({','.join('?' * len(ids))})", tuple(ids))]
    assert len(rows) == len(ids)
    # chromium reached nginx from 127.0.0.1; the app's peer was the proxy (127.0.0.254)
    assert {r["ip_hash"] for r in rows} == {ip_hash(proc, "127.0.0.1")}
    # one session for the page, issued and signed by the server
    assert len({r["session_id"] for r in rows}) == 1
    assert Signer.for_data_dir(proc.data_dir).unsign("arena-session", rows[0]["session_id"])
