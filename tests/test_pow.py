"""Proof of work for anonymous voters (issue 23, arena/services/pow.py): ALTCHA challenges solved as a script would (the
`altcha` package), verified by the server, spent once, due again every N votes, skipped by signed-in users;
every refusal is clear, logged and carries a fresh challenge.

Service-level tests drive the clock (expiry); tests/test_pow_api.py runs the real app on loopback with the default
challenge cost and follows the JSON API exactly as arena/README.md documents it.
"""
from __future__ import annotations

import base64
import json
import time

import pytest

from arena.services import pow as arena_pow
from tests.support.arena_fixtures import seed
from tests.support.integrity import fetch_all, maker, solve, vote_after_listening

MODELS = ("warm-model", "flat-model")
FAST = {"pow_every_votes": 3, "pow_counter_max": 40}      # cheap challenges for the service-level tests


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    root = tmp_path_factory.mktemp("pow_seed")
    seed(root, MODELS, n_scripts=2)
    return root


@pytest.fixture
def make(seeded, tmp_path, copy_database, module_database_url):
    return maker(seeded, tmp_path, lambda: copy_database(module_database_url), now=time.time, **FAST)


def refusal(svc, clock, view, session, **kw) -> str:
    from arena.services.service import VoteRefused
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


def test_the_listening_report_still_decides_first(make):
    """An early vote is "not yet" (not logged), even when its proof is missing: listening is checked first."""
    from arena.services.service import NotYet
    svc, clock = make(min_listen_s=3.0)
    view = svc.serve_battle("s1", "10.0.0.1")
    fetch_all(svc, view)
    with pytest.raises(NotYet):                           # nothing heard yet, and no proof sent
        svc.submit_vote(view.battle_id, "s1", "10.0.0.1", "A", listen={"played_s": {}, "order": []})
    assert refused_log(svc) == []
