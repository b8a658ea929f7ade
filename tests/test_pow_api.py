"""Proof of work over the JSON API (issue 23): the real app on loopback with the default challenge cost, used
exactly as arena/README.md documents it for a script (the `altcha` package solves the challenge); the widget's
own routes (a challenge, the vendored widget file)."""
from __future__ import annotations

import base64
import json

import httpx
import pytest

from arena.services import pow as arena_pow
from eval_backend.store import Store
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.integrity import solve

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("app",)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("pow_app")
    seed(data, MODELS, n_scripts=2)
    # default challenge cost (pow_counter_max 5000); a proof every 2 votes, so one test sees it due twice
    proc = AppProcess(data, settings={"min_listen_s": 0, "pow_every_votes": 2},
                      env={"EMPATHY_ARENA_POW": "1"}).start()
    yield proc
    proc.stop()


@pytest.mark.timeout(300)
def test_the_documented_script_flow_over_http(app):
    with httpx.Client(base_url=app.url, timeout=60) as http:
        b = http.post("/api/arena/battle", json={}).json()
        session = b["session"]
        assert b["pow"]["every_votes"] == 2 and b["pow"]["algorithm"] == "PBKDF2/SHA-256"
        assert b["pow"]["challenge"]["parameters"]["cost"] == 1000 and b["pow"]["challenge"]["signature"]

        def vote(battle, **extra):
            for url in battle["audio"].values():
                http.get(url)
            body = {"battle_id": battle["battle_id"], "session": session, "overall": "A",
                    "listen": {"played_s": {c: 0 for c in battle["audio"]}, "order": []}, **extra}
            return http.post("/api/arena/vote", json=body)

        r = vote(b)                                               # no solution: 428 with a fresh challenge
        assert r.status_code == 428 and r.json()["error"] == "pow_required"
        assert "automatic check" in r.json()["message"] and r.json()["pow"]["challenge"]["parameters"]["nonce"]
        proof = solve(r.json()["pow"]["challenge"])
        assert vote(b, altcha=proof).status_code == 200
        b = http.post("/api/arena/battle", json={"session": session}).json()
        assert b["pow"] is None and vote(b).status_code == 200     # covered by the proof
        b = http.post("/api/arena/battle", json={"session": session}).json()
        assert b["pow"] is not None                               # due again after 2 votes
        r = vote(b, altcha=proof)
        assert (r.status_code, r.json()["error"]) == (409, "pow_replayed") and r.json()["pow"]
        tampered = json.loads(base64.b64decode(solve(b["pow"]["challenge"])))
        tampered["solution"]["counter"] += 1
        tampered["solution"]["derivedKey"] = "ff" * 32
        r = vote(b, altcha=base64.b64encode(json.dumps(tampered).encode()).decode())
        assert (r.status_code, r.json()["error"]) == (403, "pow_invalid")
        assert vote(b, altcha=solve(b["pow"]["challenge"])).status_code == 200
        # the widget's own routes: a challenge, and the widget file the app serves itself
        c = http.get("/api/arena/pow/challenge")
        assert c.status_code == 200 and c.headers["cache-control"] == "no-store" and c.json()["parameters"]
        js = http.get("/api/arena/pow/altcha.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert js.content == arena_pow.WIDGET_FILE.read_bytes()
    refused = [r["reason"] for r in Store(app.data_dir).query("SELECT reason FROM arena_refused_votes ORDER BY id")]
    assert refused == ["pow_required", "pow_replayed", "pow_invalid"]
