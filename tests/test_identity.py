"""Who is this request (leaderboard/identity.py) and what each viewer sees of a job (SubmissionService.*_for).

The rules are checked on plain objects; the operator sign-in routes and the guest cookie over real HTTP
(uvicorn on loopback). The Hub sign-in through a real OpenID provider is tests/test_login_ui.py.
"""
from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.requests import Request

from space_shell.signing import Signer
from eval_backend.store import Store
from eval_backend.submissions import SubmissionService, SubmissionSettings, Submitter
from eval_backend.submissions.service import HIDDEN
from leaderboard.identity import (GUEST_COOKIE, OPERATOR_COOKIE, Identity, IdentityConfig, OPERATOR_TOKEN_ENV,
                                  request_cookies)
from tests.support.arena_fixtures import free_port

TOKEN = "op-token-" + "x7Q2" * 6          # 33 characters


def req(**cookies):
    """A request as Gradio's queue rebuilds it (kwargs only)."""
    import gradio as gr
    return gr.Request(cookies=cookies)


def make(env=None, spaces=False, operators=("boss",), clock=time.time, key=b"k" * 32) -> Identity:
    return Identity(IdentityConfig.from_env(operators, env=env or {}, spaces=spaces), Signer(key), clock)


# ---------------------------------------------------------------------- rules
def test_nobody_is_the_operator_for_opening_the_page():
    for env in ({}, {OPERATOR_TOKEN_ENV: TOKEN}):
        for spaces in (False, True):
            ident = make(env, spaces)
            assert ident.who(req()) is None and ident.who(None) is None


def test_a_guest_gets_a_stable_unforgeable_name_per_browser_session_and_only_off_spaces():
    ident = make()
    c1, c2 = ident.issue_guest(), ident.issue_guest()
    g1 = ident.who(req(**{GUEST_COOKIE: c1}))
    assert g1.name.startswith("guest:") and not g1.is_operator and len(g1.name) == len("guest:") + 12
    assert ident.who(req(**{GUEST_COOKIE: c1})) == g1                      # the same browser session
    assert ident.who(req(**{GUEST_COOKIE: c2})).name != g1.name              # another one
    value, _, mac = c1.rpartition(".")
    assert ident.who(req(**{GUEST_COOKIE: value + "." + "0" * len(mac)})) is None     # forged MAC
    assert ident.who(req(**{GUEST_COOKIE: "chosen-by-me." + mac})) is None            # chosen value
    assert make(key=b"other" * 8).who(req(**{GUEST_COOKIE: c1})) is None    # another server's key
    assert make({"EMPATHY_ARENA_GUESTS": "0"}).who(req(**{GUEST_COOKIE: c1})) is None
    assert make(spaces=True).who(req(**{GUEST_COOKIE: c1})) is None         # Spaces: sign in


def test_on_spaces_the_hub_user_is_the_submitter_and_the_listed_one_the_operator():
    ident = make(spaces=True, operators=("boss", "deputy"))
    prof = lambda name: SimpleNamespace(username=name)          # noqa: E731 (gr.OAuthProfile's field)
    assert ident.who(req(), prof("alice")) == Submitter("alice", False)
    assert ident.who(req(), prof("deputy")) == Submitter("deputy", True)
    assert ident.who(req(), prof("Boss")) == Submitter("Boss", False)       # names compare exactly
    assert make(spaces=False).who(req(), prof("boss")) is None              # no profile counts off Spaces


def test_the_operator_token_session_checks_token_mac_expiry_and_token_changes():
    now = [1000.0]
    ident = make({OPERATOR_TOKEN_ENV: TOKEN}, clock=lambda: now[0])
    assert ident.token_matches(TOKEN)
    for wrong in ("", TOKEN[:-1], TOKEN + "x", TOKEN.upper(), None, 123, ["x"]):
        assert not ident.token_matches(wrong)
    cookie = ident.issue_operator_session()
    person = ident.who(req(**{OPERATOR_COOKIE: cookie}))
    assert person == Submitter("boss", True)                    # the first listed operator's name
    value, _, mac = cookie.rpartition(".")
    expires, fp, nonce = value.split("~")
    forged = [value + "." + "f" * len(mac), f"99999999999~{fp}~{nonce}." + mac, "1", "",
              Signer(b"other" * 8).sign("operator-session", value),
              ident.signer.sign("guest", value)]                # signed for another purpose
    for c in forged:
        assert ident.who(req(**{OPERATOR_COOKIE: c})) is None, c
    now[0] = float(expires) + 1                                 # expired
    assert ident.who(req(**{OPERATOR_COOKIE: cookie})) is None
    now[0] = 1000.0
    changed = Identity(IdentityConfig.from_env(("boss",), env={OPERATOR_TOKEN_ENV: TOKEN + "-new"}), ident.signer,
                       lambda: now[0])
    assert changed.who(req(**{OPERATOR_COOKIE: cookie})) is None            # the token changed: sessions end
    off = Identity(IdentityConfig.from_env(("boss",), env={}), ident.signer, lambda: now[0])
    assert off.who(req(**{OPERATOR_COOKIE: cookie})) is None                # token sign-in turned off


def test_a_short_operator_token_turns_token_sign_in_off(caplog):
    with caplog.at_level(logging.WARNING):
        ident = make({OPERATOR_TOKEN_ENV: "short-token"})
    assert not ident.token_sign_in and not ident.token_matches("short-token")
    assert "short-token" not in caplog.text and "shorter than 24" in caplog.text


def test_the_operator_name_comes_from_the_local_operator_setting():
    assert make({OPERATOR_TOKEN_ENV: TOKEN, "EMPATHY_ARENA_LOCAL_OPERATOR": "ops"}).cfg.operator_name == "ops"
    assert make({OPERATOR_TOKEN_ENV: TOKEN}, operators=()).cfg.operator_name == "operator"


def test_request_cookies_reads_live_and_queued_requests():
    live = Request({"type": "http", "headers": [(b"cookie", b"a=1; ea_guest=v.m")]})
    import gradio as gr
    assert request_cookies(gr.Request(request=live))["ea_guest"] == "v.m"
    assert request_cookies(gr.Request(cookies={"a": "2"})) == {"a": "2"}
    assert request_cookies(None) == {}


# ---------------------------------------------------------------------- what each viewer sees
def _job(svc: SubmissionService, who: str, base_url: str, model_id: str) -> int:
    row = {"model": f"Public Name {len(model_id)}", "organisation": None, "link": None, "licence": "mit", "open_weights": 0,
           "kind": "endpoint", "base_url": base_url, "model_id": model_id, "audio_output": 0, "voice": "alloy",
           "predictions_dir": None, "predictions_jsonl": None, "predictions_hash": None, "benchmark": "demo",
           "tasks": None, "limit_n": None, "dedup_key": "k" + str(len(who)), "submitter": who}
    with svc.store.transaction() as conn:
        return svc.queue.insert(conn, row, None)


def test_a_jobs_endpoint_is_shown_to_its_submitter_and_the_operator_only(tmp_path):
    svc = SubmissionService(Store(tmp_path), SubmissionSettings(operators=("boss",)))
    jid = _job(svc, "alice", "https://secret-host.example:8443/v1", "secret-model-7")
    svc.queue.fail(svc.queue.claim("w1", 60, 3).id, "w1", "endpoint_failed",
                   "Cannot connect to host secret-host.example:8443 ssl:default; model secret-model-7",
                   log_excerpt="GET https://secret-host.example:8443/v1 ...")
    alice, bob, boss = Submitter("alice"), Submitter("bob"), Submitter("boss")    # boss: listed operator
    for viewer in (alice, boss, Submitter("anyone", is_operator=True)):
        job = svc.job_for(jid, viewer)
        assert job.base_url == "https://secret-host.example:8443/v1" and job.model_id == "secret-model-7"
        assert "secret-host" in job.reason and job.log_excerpt and job.submitter == "alice"
        assert any(e["actor"] for e in svc.events_for(jid, viewer))
    for viewer in (bob, None, Submitter("guest:0123456789ab")):
        job = svc.job_for(jid, viewer)
        shown = repr(job) + repr(svc.events_for(jid, viewer)) + repr([j for j in svc.jobs_for(viewer)])
        assert "secret-host" not in shown and "secret-model" not in shown and "alice" not in shown
        assert job.base_url == HIDDEN and job.model_id == HIDDEN and job.voice is None and job.log_excerpt is None
        assert job.state == "FAILED" and job.reason.startswith("endpoint_failed: Cannot connect to host [hidden]")
        assert job.model == "Public Name 14" and job.created_at and job.updated_at        # name, times
        assert job.dedup_key == "" and job.predictions_hash is None   # a hash of the endpoint confirms a guess
        assert [e["event"] for e in svc.events_for(jid, viewer)] == ["submitted", "claimed", "failed"]


def test_the_submit_tab_renders_the_public_view_without_the_endpoint(tmp_path):
    from leaderboard.submit_tab import job_markdown, jobs_frame
    svc = SubmissionService(Store(tmp_path), SubmissionSettings())
    jid = _job(svc, "alice", "https://secret-host.example/v1", "secret-model-7")
    svc.queue.claim("host-a:123:abc", 60, 3)
    public = job_markdown(svc.job_for(jid, None), svc.events_for(jid, None))
    table = jobs_frame(svc.jobs_for(None)).to_string()
    for text in (public, table):
        assert "secret" not in text and "alice" not in text and "host-a" not in text
    assert "shown to its submitter and the operator only" in public and "RUNNING" in table
    own = job_markdown(svc.job_for(jid, Submitter("alice")), svc.events_for(jid, Submitter("alice")))
    from eval_backend.inert import md_inline           # shown as inert text (escaped Markdown)
    assert md_inline("https://secret-host.example/v1") in own and md_inline("secret-model-7") in own


# ---------------------------------------------------------------------- over HTTP
@pytest.fixture
def server(tmp_path):
    """identity.mount on a real uvicorn; /page is an HTML page, /who says who the request is."""
    ident = Identity(IdentityConfig.from_env(("boss",), env={OPERATOR_TOKEN_ENV: TOKEN}, spaces=False),
                     Signer.for_data_dir(tmp_path))
    app = FastAPI()
    ident.mount(app)

    @app.get("/page")
    async def page():
        return HTMLResponse("<p>hi</p>")

    @app.get("/who")
    async def who(request: Request):
        p = ident.who(request)
        return JSONResponse(None if p is None else {"name": p.name, "operator": p.is_operator})

    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    while not srv.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", ident
    srv.should_exit = True
    t.join(10)


def test_operator_sign_in_over_http(server, caplog):
    url, ident = server
    with httpx.Client(base_url=url, follow_redirects=False) as c, caplog.at_level(logging.INFO):
        assert c.get("/who").json() is None
        assert "operator-form" in c.get("/operator").text
        bad = c.post("/operator/login", data={"token": TOKEN[:-1] + "y"})
        assert bad.status_code == 403 and OPERATOR_COOKIE not in bad.headers.get("set-cookie", "")
        assert TOKEN[:-1] not in bad.text
        cross = c.post("/operator/login", data={"token": TOKEN}, headers={"Origin": "https://evil.example"})
        assert cross.status_code == 403 and "set-cookie" not in cross.headers
        big = c.post("/operator/login", content=b"token=" + b"a" * 10_000,
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert big.status_code == 413
        ok = c.post("/operator/login", data={"token": TOKEN}, headers={"Origin": url})
        assert ok.status_code == 303 and ok.headers["location"] == "/"
        cookie = ok.headers["set-cookie"]
        assert cookie.startswith(OPERATOR_COOKIE + "=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert c.get("/who").json() == {"name": "boss", "operator": True}
        assert "Signed in as the operator" in c.get("/operator").text
        c.post("/operator/logout", headers={"Origin": url})
        after = c.get("/who").json()            # a guest now (the /operator page came with a guest cookie)
        assert after["operator"] is False and after["name"].startswith("guest:")
    assert TOKEN not in caplog.text and "refused" in caplog.text


def test_the_guest_cookie_comes_with_html_pages_only(server):
    url, ident = server
    with httpx.Client(base_url=url) as c:
        assert "set-cookie" not in c.get("/who").headers         # JSON: no cookie
        first = c.get("/page").headers["set-cookie"]
        assert first.startswith(GUEST_COOKIE + "=") and "HttpOnly" in first and "SameSite=Strict" in first
        assert "Max-Age" not in first                             # ends with the browser session
        me = c.get("/who").json()
        assert me["name"].startswith("guest:") and me["operator"] is False
        assert "set-cookie" not in c.get("/page").headers        # kept while valid
    with httpx.Client(base_url=url, cookies={GUEST_COOKIE: "forged.0000"}) as c:
        assert c.get("/who").json() is None
        assert c.get("/page").headers["set-cookie"].startswith(GUEST_COOKIE + "=")   # replaced
