"""Over HTTP a gold battle looks like any other (issue 23): the real app on loopback serves gold and ordinary
battles side by side; their JSON has the same fields, their clips the same headers (no file dates), and a check
clip carries its real reply's own wav header and length."""
from __future__ import annotations

import json

import httpx
import pytest

from arena.services import gold
from eval_backend.store import Store
from tests.support.arena_fixtures import AppProcess, seed
from tests.test_gold import data_chunk

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("app",)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("gold_app")
    seed(data, MODELS, n_scripts=2)
    proc = AppProcess(data, settings={"gold_share": 0.5, "min_listen_s": 0},
                      env={"EMPATHY_ARENA_GOLD_SHARE": "0.5"}).start()
    yield proc
    proc.stop()


def shape(value):
    """A JSON value's shape: its keys, all the way down (a value may be null in any battle: context_text)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else "value"


@pytest.mark.timeout(300)
def test_over_http_a_gold_battle_looks_like_any_other(app):
    gold_seen, normal_seen = [], []
    with httpx.Client(base_url=app.url, timeout=30) as http:
        session = None
        for _ in range(40):
            answer = http.post("/api/arena/battle", json={"session": session} if session else {})
            # no handling time to compare (EMPATHY_ARENA_SERVER_TIMING is off, as in public)
            assert not {"server-timing", "x-arena-service-ms"} & {k.lower() for k in answer.headers}
            b = answer.json()
            session = b["session"]
            clips = {}
            for clip, url in b["audio"].items():
                r = http.get(url)
                assert r.status_code == 200
                clips[clip] = (r.content, {k.lower() for k in r.headers} - {"date"}, r.headers["content-type"],
                               r.headers.get("cache-control"))
            row = Store(app.data_dir).query("SELECT * FROM arena_battles WHERE id=?", (b["battle_id"],))[0]
            good = gold.parse(row)
            (gold_seen if good else normal_seen).append((b, clips, good[1] if good else None))
            http.post("/api/arena/skip", json={"battle_id": b["battle_id"], "session": session})
            if len(gold_seen) >= 3 and len(normal_seen) >= 3:
                break
    assert len(gold_seen) >= 3 and len(normal_seen) >= 3
    reference = normal_seen[0]
    for b, clips, good in gold_seen + normal_seen:
        assert shape(b) == shape(reference[0]) and json.dumps(b).count("gold") == 0
        for clip in ("user", "A", "B"):
            assert clips[clip][1:] == reference[1][clip][1:]          # same header names, type, caching
            assert not {"last-modified", "etag"} & clips[clip][1]     # no file date to compare
    for b, clips, good in gold_seen:
        bad = "B" if good == "A" else "A"
        real_bytes, bad_bytes = clips[good][0], clips[bad][0]
        assert bad_bytes[:data_chunk(real_bytes)] == real_bytes[:data_chunk(real_bytes)]
        assert len(bad_bytes) == len(real_bytes) and bad_bytes != real_bytes
        assert b["listening"]["clips"][bad]["seconds"] == b["listening"]["clips"][good]["seconds"]
