"""Malformed tokens, sessions and battle ids get a 4xx, never a 500 (issue 21, point 6).

Against the real Space (`python app.py` on loopback): the routes that take a token, a session or a battle id are
taken from the app itself (every route of ours whose path has a parameter, every POST of the arena's API, every GET
whose handler reads a `battle_id` or `session` query parameter), and Hypothesis sends them arbitrary Unicode in
each place: lone surrogates (as JSON's \\ud800 escapes, and as their CESU-8 bytes in a URL), combining marks,
dots, a real token with anything after its last dot, a real battle id with junk. No answer is a 5xx, and the
app's log gains no traceback.
"""
from __future__ import annotations

import itertools
import json
import re
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from arena.web.media import MediaTokens
from space_shell.signing import Signer
from tests.support.arena_fixtures import seed
from tests.support.live_fixtures import utterance
from tests.test_media import SpaceProcess, mounted_routes

MODELS = ("warm-model", "flat-model")
MODULE_DATABASE_FIXTURES = ("space",)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
OURS = ("/api/arena", "/media/", "/operator/media/")
ID_FIELDS = ("battle_id", "session")


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("ids_cwd")
    seed(cwd / "data", MODELS, n_scripts=1)
    app = SpaceProcess(cwd).start()
    battle = httpx.post(app.url + "/api/arena/battle", json={}, timeout=30).json()
    tokens = MediaTokens(Signer.for_data_dir(cwd / "data"))
    yield {"app": app, "battle": battle, "tokens": tokens, "wav": utterance()}
    app.stop()


@pytest.fixture(scope="module")
def routes(space):
    """Our routes that take an id, from the app's own route table (the same build as the running app)."""
    from app import SpaceContext, build_app

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
        mp.setenv("EMPATHY_ARENA_BENCHMARK", "demo")
        app = build_app(SpaceContext(space["app"].data))
    found = {"path": [], "post": [], "query": []}
    for template, methods in mounted_routes(app):
        if not template.startswith(OURS):
            continue
        if "{" in template and methods & {"GET", "HEAD"}:
            found["path"].append(template)
        elif "POST" in methods:
            found["post"].append(template)
        elif "GET" in methods and _query_ids(app, template):
            found["query"].append(template)
    assert {"/api/arena/audio/{battle_id}/{clip}", "/media/reply/{token}", "/media/clip/{token}",
            "/operator/media/held/{token}"} <= set(found["path"])
    assert {"/api/arena/battle", "/api/arena/vote", "/api/arena/skip", "/api/arena/live/battle"} <= set(found["post"])
    assert "/api/arena/live/heard" in found["query"]
    return found


def _query_ids(app, template: str) -> bool:
    """Whether the route's handler reads a battle id or session from the query string (FastAPI's own record)."""
    from fastapi.routing import APIRoute, _IncludedRouter

    def walk(routes):
        for r in routes:
            if isinstance(r, _IncludedRouter):
                yield from walk(getattr(c, "original_route", c) for c in r.effective_candidates())
            elif isinstance(r, APIRoute):
                yield r
    inner = app
    while not hasattr(inner, "router"):
        inner = inner.app
    return any(p.name in ID_FIELDS for r in walk(inner.routes) if r.path == template
               for p in r.dependant.query_params)


def url_part(value: str) -> str:
    """A value in a URL as an attacker sends it: UTF-8, and a lone surrogate as its CESU-8 bytes."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def real_tokens(space) -> list[str]:
    b, t = space["battle"], space["tokens"]
    reply = t.reply_url(MODELS[0], "h", "conversation/s0/target").rsplit("/", 1)[1]
    return [b["battle_id"], b["session"], reply, t.clip_url("h", "scripts", "s0", 0).rsplit("/", 1)[1]]


junk = st.text(st.one_of(st.characters(), st.characters(categories=["Cs"]),
                         st.sampled_from([".", "\u0301", "\u0300", "%", "/", "é", "\u202e", "\x00"])), max_size=24)


@st.composite
def hostile(draw, space):
    kind = draw(st.sampled_from(["junk", "dotted", "real+junk", "surrogate"]))
    if kind == "junk":
        return draw(junk)
    if kind == "dotted":
        return draw(junk) + "." + draw(junk)
    if kind == "surrogate":
        return draw(st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)) + draw(junk)
    base = draw(st.sampled_from(real_tokens(space)))
    return base[:draw(st.integers(0, len(base)))] + draw(junk)


def test_malformed_ids_get_4xx_never_500(space, routes):
    app = space["app"]
    b = space["battle"]
    sources = itertools.count()
    seen: dict[str, set[int]] = {}

    def check(r: httpx.Response, what: str) -> None:
        seen.setdefault(what, set()).add(r.status_code)
        # a 503 refusal (the live models are not reachable here) is an answer; a crash is a 500
        assert r.status_code != 500 and (r.status_code < 500 or "error" in r.json()), (what, r.status_code,
                                                                                          r.text[:300])

    @settings(max_examples=60, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(value=hostile(space))
    def run(value):
        # each example from its own loopback address: the arena's per-address limits must not answer for the code
        local = f"127.0.0.{2 + next(sources) % 250}"
        with httpx.Client(base_url=app.url, timeout=30, transport=httpx.HTTPTransport(local_address=local)) as c:
            for template in routes["path"]:
                for param in re.findall(r"\{(\w+)\}", template):
                    filled = re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: url_part(value) if m.group(1) == param
                                    else ("A" if m.group(1) == "clip" else b["battle_id"]), template)
                    check(c.get(filled), template)
            for template in routes["query"]:
                for field in ID_FIELDS:
                    q = {"battle_id": b["battle_id"], "session": b["session"], field: "x"}
                    target = template + "?" + "&".join(f"{k}={url_part(value) if k == field else quote(v)}"
                                                       for k, v in q.items())
                    check(c.get(target + "&wait_s=0"), template)
            for template in routes["post"]:
                for field in ID_FIELDS:
                    body = {"battle_id": b["battle_id"], "session": b["session"], "overall": "A", field: value}
                    raw = json.dumps(body)                   # ensure_ascii: a lone surrogate as \ud800
                    check(c.post(template, content=raw, headers={"Content-Type": "application/json"}), template)
                    form = {k: v.encode("utf-8", "surrogatepass") for k, v in body.items()}
                    files = {"audio": ("voice.wav", space["wav"], "audio/wav")}
                    check(c.post(template, data=form, files=files), template + " (form)")
    run()
    print({k: sorted(v) for k, v in seen.items()})
    log = (app.cwd / f"app_{app.port}.log").read_text(errors="replace")
    assert "Traceback" not in log, log[log.find("Traceback"):][:3000]
