"""Proof of work for anonymous voters (issue 23, arena/pow.py): ALTCHA challenges solved as a script would (the
`altcha` package), verified by the server, spent once, due again every N votes, skipped by signed-in users;
every refusal is clear, logged and carries a fresh challenge.

Service-level tests drive the clock (expiry); the HTTP tests run the real app on loopback with the default
challenge cost and follow the JSON API exactly as arena/README.md documents it.
"""
from __future__ import annotations

import base64
import json
import time

import httpx
import pytest

from arena import pow as arena_pow
from eval_backend.store import Store
from tests.support.arena_fixtures import AppProcess, seed
from tests.support.integrity import fetch_all, service_on_copy, solve, vote_after_listening

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("app",)
FAST = {"pow_every_votes": 3, "pow_counter_max": 40}      # cheap challenges for the service-level tests


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    root = tmp_path_factory.mktemp("pow_seed")
    seed(root, MODELS, n_scripts=2)
    return root


@pytest.fixture
def make(seeded, tmp_path, copy_database, module_database_url):
    def _make(**overrides):
        dest = tmp_path / f"data{len(list(tmp_path.iterdir()))}"
        svc, clock = service_on_copy(seeded, dest, copy_database(module_database_url), **{**FAST, **overrides})
        clock.t = time.time()      # the altcha package also checks a challenge's expiry against the real time
        return svc, clock
    return _make


def refusal(svc, clock, view, session, **kw) -> str:
    from arena.service import VoteRefused
    with pytest.raises(VoteRefused) as exc:
        vote_after_listening(svc, clock, view, session, "10.0.0.1", "A", **kw)
    assert exc.value.message == arena_pow.MESSAGES[exc.value.reason_code]
    return exc.value.reason_code


def refused_log(svc) -> list[str]:
    return [r["reason"] for r in svc.store.query("SELECT reason FROM arena_refused_votes ORDER BY id")]


def test_a_proof_is_due_first_then_every_n_votes_and_is_spent_once(make):
    svc, clock = make()
    view = svc.serve_battle("s1", "10.0.0.1")
    assert view.pow_required
    assert refusal(svc, clock, view, "s1") == "pow_required"
    proof = solve(svc.pow.challenge())
    vote_after_listening(svc, clock, view, "s1", "10.0.0.1", "A", pow=proof)
    for _ in range(2):                                   # the proof covers this vote and the next two
        view = svc.serve_battle("s1", "10.0.0.1")
        assert not view.pow_required
        vote_after_listening(svc, clock, view, "s1", "10.0.0.1", "B")
    view = svc.serve_battle("s1", "10.0.0.1")
    assert view.pow_required
    assert refusal(svc, clock, view, "s1") == "pow_required"
    assert refusal(svc, clock, view, "s1", pow=proof) == "pow_replayed"         # the same solution again
    vote_after_listening(svc, clock, view, "s1", "10.0.0.1", "A", pow=solve(svc.pow.challenge()))
    assert len(svc.votes()) == 4
    assert refused_log(svc) == ["pow_required", "pow_required", "pow_replayed"]   # the health view sees them


def test_expired_tampered_and_malformed_solutions_are_refused(make):
    svc, clock = make()
    challenge = svc.pow.challenge()
    old = solve(challenge)
    clock.t += svc.settings.pow_ttl_s + 1
    view = svc.serve_battle("s1", "10.0.0.1")
    assert refusal(svc, clock, view, "s1", pow=old) == "pow_expired"
    fresh = json.loads(base64.b64decode(solve(svc.pow.challenge())))
    wrong_key = {**fresh, "solution": {**fresh["solution"], "derivedKey": "00" * 32}}
    cheaper = {**fresh, "challenge": {**fresh["challenge"],
                                      "parameters": {**fresh["challenge"]["parameters"], "cost": 1}}}
    for bad in (wrong_key, cheaper):
        assert refusal(svc, clock, view, "s1", pow=base64.b64encode(json.dumps(bad).encode()).decode()) == "pow_invalid"
    for junk in ("not base64!", base64.b64encode(b"[[[[[[[[[[]]]]]]]]]]").decode(), "A" * 5000, 42):
        assert refusal(svc, clock, view, "s1", pow=junk) == "pow_invalid"
    assert svc.votes() == []


def test_signed_in_users_skip_it_and_an_unneeded_solution_is_not_spent(make):
    svc, clock = make()
    view = svc.serve_battle("s1", "10.0.0.1", user="alice")
    assert not view.pow_required
    vote_after_listening(svc, clock, view, "s1", "10.0.0.1", "A", user="alice")
    # an anonymous session that proved work sends its payload with a vote that does not need it: left unspent
    proof = solve(svc.pow.challenge())
    view = svc.serve_battle("s2", "10.0.0.2")
    vote_after_listening(svc, clock, view, "s2", "10.0.0.2", "A", pow=proof)
    view = svc.serve_battle("s2", "10.0.0.2")
    vote_after_listening(svc, clock, view, "s2", "10.0.0.2", "B", pow=proof)      # not due: ignored, no refusal
    assert refused_log(svc) == [] and len(svc.votes()) == 3


def test_a_foreign_servers_solution_is_invalid(make):
    svc, clock = make()
    other, _ = make()
    assert svc.pow._secrets != other.pow._secrets            # two data dirs, two signing keys
    view = svc.serve_battle("s1", "10.0.0.1")
    assert refusal(svc, clock, view, "s1", pow=solve(other.pow.challenge())) == "pow_invalid"


# ---------------------------------------------------------------- the JSON API, as a script uses it
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


def test_the_listening_report_still_decides_first(make):
    """An early vote is "not yet" (not logged), even when its proof is missing: listening is checked first."""
    from arena.service import NotYet
    svc, clock = make(min_listen_s=3.0)
    view = svc.serve_battle("s1", "10.0.0.1")
    fetch_all(svc, view)
    with pytest.raises(NotYet):                           # nothing heard yet, and no proof sent
        svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A", listen={"played_s": {}, "order": []})
    assert refused_log(svc) == []
