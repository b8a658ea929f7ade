"""A clip counts as fetched only once its bytes were sent, enough to cover what the listening rule asks (issue 21,
point 7), over real HTTP against the arena app on loopback.

The rule asks each clip's first second here (`min_listen_s` 1); a vote that reports that listening is refused as
`impossible` / `not_fetched` while the server has sent only `Range: bytes=0-0`, or only a few hundred bytes, of a
clip; ranges that together cover the clip's first second (the share of its bytes) make it fetched; a full GET (a
player's `bytes=0-`) does at once. The clip responses carry no validator (no ETag, no Last-Modified).
"""
from __future__ import annotations

import io
import math
import time

import httpx
import pytest
import soundfile as sf

from tests.support.arena_fixtures import AppProcess, seed

MODULE_DATABASE_FIXTURES = ("app",)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
LISTEN_S = 1.0


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("fetched")
    seed(data, ("warm-model", "flat-model"), n_scripts=1)
    proc = AppProcess(data, {"min_listen_s": LISTEN_S}).start()
    yield proc
    proc.stop()


def vote(c: httpx.Client, b: dict) -> httpx.Response:
    played = {clip: v["need_s"] for clip, v in b["listening"]["clips"].items()}
    return c.post("/api/arena/vote", json={"battle_id": b["battle_id"], "session": b["session"], "overall": "A",
                                           "listen": {"played_s": played, "order": ["user", "A", "B"]}})


def test_one_byte_is_not_a_fetch_and_the_needed_bytes_are(app):
    with httpx.Client(base_url=app.url, timeout=60) as c:
        b = c.post("/api/arena/battle", json={}).json()
        one = {clip: c.get(url, headers={"Range": "bytes=0-0"}) for clip, url in b["audio"].items()}
        for r in one.values():
            assert r.status_code == 206 and len(r.content) == 1
            assert "etag" not in r.headers and "last-modified" not in r.headers
        time.sleep(LISTEN_S * 1.2)
        refused = vote(c, b)
        assert refused.status_code == 403 and refused.json()["error"] == "impossible", refused.text
        assert "never fetched" in refused.json()["message"]

        # the user's clip and B in full (what a player does); A only up to half of what its first second needs
        for clip in ("user", "B"):
            assert sf.info(io.BytesIO(c.get(b["audio"][clip]).content)).duration > 0
        size = int(one["A"].headers["content-range"].rsplit("/", 1)[1])
        need = math.ceil(size * min(1.0, LISTEN_S / b["listening"]["clips"]["A"]["seconds"]))
        assert c.get(b["audio"]["A"], headers={"Range": f"bytes=1-{need // 2}"}).status_code == 206
        time.sleep(LISTEN_S * 1.2)
        short = vote(c, b)
        assert short.status_code == 403 and "reply A was never fetched" in short.json()["message"], short.text
        # the rest of A's first second, in a second range: together they cover it
        assert c.get(b["audio"]["A"], headers={"Range": f"bytes={need // 2 + 1}-{need - 1}"}).status_code == 206
        time.sleep(LISTEN_S * 1.2)
        ok = vote(c, b)
        assert ok.status_code == 200, ok.text

        # a player's whole fetch (bytes=0-) is a fetch at once
        b2 = c.post("/api/arena/battle", json={"session": b["session"]}).json()
        for url in b2["audio"].values():
            r = c.get(url, headers={"Range": "bytes=0-"})
            assert r.status_code == 206 and r.content.startswith(b"RIFF")
        time.sleep(LISTEN_S * 1.2)
        assert vote(c, b2).status_code == 200
