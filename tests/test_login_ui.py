"""Sign-in and who sees what, in a real browser (Debian chromium via Playwright) against real processes.

On Spaces, Gradio's Hub login is OpenID Connect; here the app process (tests/support/space_app.py, app.py's production
app) runs with the variables Spaces sets (SYSTEM=spaces, SPACE_ID, OPENID_PROVIDER_URL, OAUTH_CLIENT_ID, ...)
pointed at tests/support/oidc_provider.py on loopback, and the browser goes through the real login: Gradio's
/login/huggingface → the provider's sign-in form → /login/callback (authlib checks the RS256 ID token against
the provider's JWKS) → back on the page. Off Spaces, a second app process shows guests and the operator token.
Submissions go to tests/support/fault_server.py (an OpenAI-compatible endpoint on loopback, allowlisted by the demo).

- a signed-in user submits, within the quota (3 per 7 days), and the 4th is refused;
- the operator (listed in EMPATHY_ARENA_OPERATORS) sees a job's endpoint and model id, and retries and cancels;
  another signed-in user and a signed-out visitor see neither and have no operator action;
- a forged, tampered or expired session, and an ID token signed with an unpublished key, are refused;
- off Spaces: a guest submits and sees only their own endpoints; the operator token (form or kept URL) signs the
  operator in; a forged operator cookie does not.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import time

import pytest

from eval_backend.store import Store
from tests.support.arena_fixtures import free_port, seed
from tests.support.fault_server import FaultServer
from tests.support.oidc_provider import OIDCProvider, User
from tests.support.processes import ServerProcess as Proc
from tests.test_submit_ui import _fill, _text, _wait_text

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

CLIENT_ID, CLIENT_SECRET = "empathy-arena-test", "client-secret-" + "s3cr" * 6
OPERATOR_TOKEN = "operator-token-" + "T0k3n" * 6
USERS = {"alice": User("pw-alice"), "carol": User("pw-carol"), "boss": User("pw-boss"),
         "dave": User("pw-dave", expires_in=25), "mallory": User("pw-mallory", forge=True)}
MODULE_DATABASE_FIXTURES = ("site",)       # both app processes write to the module's database


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data = tmp_path_factory.mktemp("login")
    seed(data, (), n_scripts=1)                                  # the demo benchmark (spec "demo") only
    endpoint = FaultServer().start()
    idp = OIDCProvider(CLIENT_ID, CLIENT_SECRET, USERS).start()
    common = {"EMPATHY_ARENA_BOOTSTRAP": "0", "EMPATHY_ARENA_BENCHMARK": "demo", "GRADIO_ANALYTICS_ENABLED": "False",
              "HF_HUB_OFFLINE": "1", "EMPATHY_ARENA_OPERATORS": "boss",
              # the demo allowlists only its baseline port: the test endpoint is allowed by name
              "EMPATHY_ARENA_ALLOW_ADDRESSES": f"127.0.0.1:{endpoint.port}"}
    sport, lport = free_port(), free_port()
    spaces = Proc(["-m", "tests.support.space_app", "--port", str(sport), "--data-dir", str(data)], data / "spaces.log",
                  {**common, **idp.space_env()})
    local = Proc(["-m", "tests.support.space_app", "--port", str(lport), "--data-dir", str(data)], data / "local.log",
                 {**common, "EMPATHY_ARENA_OPERATOR_TOKEN": OPERATOR_TOKEN})
    spaces.start(f"http://127.0.0.1:{sport}/api/arena/health")
    local.start(f"http://127.0.0.1:{lport}/api/arena/health")
    yield {"data": data, "endpoint": endpoint, "idp": idp, "spaces": f"http://127.0.0.1:{sport}",
           "local": f"http://127.0.0.1:{lport}", "logs": [data / "spaces.log", data / "local.log"]}
    for p in (spaces, local):
        p.stop()
    idp.stop()
    endpoint.stop()


@pytest.fixture(scope="module")
def browser(site, chromium):
    return chromium


def _page(browser, url: str, cookies: list[dict] | None = None):
    """A fresh browser profile (its own cookies) on the Submit tab."""
    ctx = browser.new_context()
    if cookies:
        ctx.add_cookies(cookies)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.goto(url + "/")
    pg.get_by_role("tab", name="Submit").click()
    _wait_text(pg, "submit-identity", " ")
    return pg


def _hub_sign_in(browser, site, user: str):
    pg = _page(browser, site["spaces"])
    pg.get_by_role("button", name="Sign in with Hugging Face").click()
    pg.wait_for_selector("#idp-username")                         # the provider's page, not ours
    assert pg.url.startswith(site["idp"].issuer + "/oauth/authorize")
    pg.fill("#idp-username", user)
    pg.fill("#idp-password", USERS[user].password)
    pg.click("#idp-authorize")
    pg.wait_for_url(site["spaces"] + "/**")
    pg.get_by_role("tab", name="Submit").click()
    return pg


def _submit(pg, site, name: str, model_id: str) -> str:
    _fill(pg, "submit-name", name)
    _fill(pg, "submit-base-url", site["endpoint"].base_url)
    _fill(pg, "submit-model-id", model_id)
    md = "#submit-outcome [data-testid=markdown]"      # the text itself; Gradio's progress sits beside it
    before = pg.inner_text(md)
    pg.click("#submit-go")
    pg.wait_for_function("([sel, before]) => { const t = document.querySelector(sel)?.innerText || '';"
                         " return t !== before && /Queued as request|Not queued|⚠️/.test(t); }", arg=[md, before],
                         timeout=120_000)
    return pg.inner_text(md)


def _pick(pg, job_id: int, name: str) -> str:
    pg.locator("#jobs-pick input").click()
    pg.get_by_role("option", name=re.compile(rf"^#{job_id} {re.escape(name)} ")).click()
    _wait_text(pg, "jobs-detail", f"#{job_id} {name}")
    return _text(pg, "jobs-detail")


def _job_id(outcome: str) -> int:
    return int(re.search(r"request #(\d+)", outcome).group(1))


def _db(site, sql, params=()):
    return [dict(r) for r in Store(site["data"]).query(sql, params)]


def _session_cookie(pg) -> dict:
    return next(c for c in pg.context.cookies() if c["name"] == "session")


def test_signed_in_user_submits_within_the_quota(site, browser):
    pg = _hub_sign_in(browser, site, "alice")
    _wait_text(pg, "submit-identity", "Signed in as alice")
    assert pg.get_by_role("button", name=re.compile("Logout \\(alice\\)")).is_visible()
    ids = []
    for i in (1, 2, 3):
        out = _submit(pg, site, f"Alice Model {i}", f"alice-secret-model-{i}")
        assert "Queued as request #" in out, out
        ids.append(_job_id(out))
    rows = _db(site, "SELECT submitter, model_id FROM submissions WHERE id IN (?, ?, ?) ORDER BY id", tuple(ids))
    assert [r["submitter"] for r in rows] == ["alice"] * 3
    out = _submit(pg, site, "Alice Model 4", "alice-secret-model-4")
    assert "Not queued" in out and "the limit is 3" in out
    assert _db(site, "SELECT COUNT(*) n FROM submissions WHERE submitter='alice'")[0]["n"] == 3
    # her own request: the endpoint and model id are hers to see; no operator action
    detail = _pick(pg, ids[0], "Alice Model 1")
    assert site["endpoint"].base_url in detail and "alice-secret-model-1" in detail
    assert not pg.locator("#jobs-retry").is_visible() and pg.locator("#jobs-cancel").is_visible()
    site["alice_job"] = ids[0]
    site["alice_cookie"] = _session_cookie(pg)
    pg.context.close()


def test_operator_and_others_see_different_things(site, browser):
    job = site["alice_job"]
    url = site["endpoint"].base_url
    hidden = "shown to its submitter and the operator only"
    # another signed-in user: no endpoint, no model id, no submitter name, no operator action
    carol = _hub_sign_in(browser, site, "carol")
    _wait_text(carol, "submit-identity", "Signed in as carol")
    detail = _pick(carol, job, "Alice Model 1")
    assert hidden in detail and url not in detail and "alice-secret-model" not in detail
    assert "alice" not in _text(carol, "jobs-table") and url not in carol.content()
    assert not carol.locator("#jobs-retry").is_visible()
    # Cancel only where the viewer may cancel (the service refuses anyway: tests/test_queue_worker.py)
    assert not carol.locator("#jobs-cancel").is_visible()
    carol.context.close()
    # signed out: the same public view, and no action at all
    anon = _page(browser, site["spaces"])
    _wait_text(anon, "submit-identity", "Signed out")
    detail = _pick(anon, job, "Alice Model 1")
    assert hidden in detail and url not in anon.content() and "alice-secret-model" not in anon.content()
    assert not anon.locator("#jobs-retry").is_visible() and not anon.locator("#jobs-cancel").is_visible()
    anon.context.close()
    # the operator: sees everything, cancels and retries alice's request
    boss = _hub_sign_in(browser, site, "boss")
    _wait_text(boss, "submit-identity", "operator")
    detail = _pick(boss, job, "Alice Model 1")
    assert url in detail and "alice-secret-model-1" in detail and "submitted\talice" in detail
    assert boss.locator("#jobs-retry").is_visible()
    boss.click("#jobs-cancel")
    _wait_text(boss, "jobs-action", f"#{job} is now CANCELLED")
    boss.click("#jobs-retry")
    _wait_text(boss, "jobs-action", f"#{job} is now PENDING")
    events = [(e["event"], e["actor"]) for e in _db(site, "SELECT event, actor FROM submission_events WHERE job_id=? "
                                                          "ORDER BY id", (job,))]
    assert events == [("submitted", "alice"), ("cancelled", "boss"), ("retried", "boss")]
    boss.context.close()


def _forge(payload: dict, secret: str, like: str | None = None) -> str:
    """A Starlette session cookie: base64(JSON), signed with itsdangerous under Gradio's secret derivation."""
    import itsdangerous
    data = base64.b64encode(json.dumps(payload).encode())
    if like is not None:                                     # keep a real cookie's timestamp and signature
        return data.decode() + "." + like.split(".", 1)[1]
    key = hashlib.sha256((secret + "-v4").encode()).hexdigest()
    return itsdangerous.TimestampSigner(key).sign(data).decode()


def test_forged_tampered_and_expired_sessions_are_refused(site, browser):
    # an expired session (dave's access token lives 25 s): signed in first, so the forgeries below run while the
    # token ages instead of after it
    dave = _hub_sign_in(browser, site, "dave")
    _wait_text(dave, "submit-identity", "Signed in as dave")
    expires = json.loads(base64.b64decode(_session_cookie(dave)["value"].split(".", 1)[0]))["oauth_info"]["expires_at"]

    real = site["alice_cookie"]
    payload = json.loads(base64.b64decode(real["value"].split(".", 1)[0]))
    assert payload["oauth_info"]["userinfo"]["preferred_username"] == "alice"
    as_boss = json.loads(json.dumps(payload).replace('"alice"', '"boss"'))
    cookie = {k: real[k] for k in ("name", "domain", "path", "secure", "httpOnly", "sameSite")}
    # the construction is right: signed with the Space's real secret it is accepted (so the refusals below are
    # the signature's doing)
    control = _page(browser, site["spaces"], [{**cookie, "value": _forge(as_boss, CLIENT_SECRET)}])
    _wait_text(control, "submit-identity", "Signed in as boss")
    control.context.close()
    for value in (_forge(as_boss, "a-guessed-secret"), _forge(as_boss, CLIENT_SECRET, like=real["value"])):
        pg = _page(browser, site["spaces"], [{**cookie, "value": value}])
        _wait_text(pg, "submit-identity", "Signed out")
        assert not pg.locator("#jobs-retry").is_visible()
        out = _submit(pg, site, "Forged Model", "forged-model")
        assert "Sign in with Hugging Face first" in out
        pg.context.close()
    assert not _db(site, "SELECT id FROM submissions WHERE model='Forged Model'")

    # an ID token signed with a key the provider does not publish: authlib refuses it, nobody is signed in
    pg = _page(browser, site["spaces"])
    pg.get_by_role("button", name="Sign in with Hugging Face").click()
    pg.fill("#idp-username", "mallory")
    pg.fill("#idp-password", USERS["mallory"].password)
    pg.click("#idp-authorize")
    pg.wait_for_load_state()
    assert ("token", "mallory") in site["idp"].events
    pg.goto(site["spaces"] + "/")
    pg.get_by_role("tab", name="Submit").click()
    _wait_text(pg, "submit-identity", "Signed out")
    pg.context.close()

    # dave's expired session: signed out without a click
    time.sleep(max(0.0, expires - time.time()) + 1)
    _wait_text(dave, "submit-identity", "Signed out", timeout=30_000)     # the 3 s timer asks again
    out = _submit(dave, site, "Dave Model", "dave-model")
    assert "Sign in with Hugging Face first" in out
    assert not _db(site, "SELECT id FROM submissions WHERE submitter='dave'")
    dave.context.close()


def test_off_spaces_guests_and_the_operator_token(site, browser):
    url = site["endpoint"].base_url
    guest = _page(browser, site["local"])
    _wait_text(guest, "submit-identity", "guest:")
    me = re.search(r"guest:[0-9a-f]{12}", _text(guest, "submit-identity")).group(0)
    out = _submit(guest, site, "Guest Model", "guest-secret-model")
    assert "Queued as request #" in out, out
    job = _job_id(out)
    assert _db(site, "SELECT submitter FROM submissions WHERE id=?", (job,))[0]["submitter"] == me
    assert "guest-secret-model" in _pick(guest, job, "Guest Model")
    assert not guest.locator("#jobs-retry").is_visible()

    other = _page(browser, site["local"])
    _wait_text(other, "submit-identity", "guest:")
    assert me not in _text(other, "submit-identity")                   # another browser, another guest
    detail = _pick(other, job, "Guest Model")
    assert "guest-secret-model" not in detail and url not in other.content() and me not in other.content()
    assert not other.locator("#jobs-cancel").is_visible()       # not theirs: nothing they can cancel
    # a made-up operator cookie changes nothing
    other.context.add_cookies([{"name": "ea_operator", "value": f"{int(time.time()) + 3600}~0~0.{'0' * 32}",
                                "url": site["local"]}])
    other.reload()
    other.get_by_role("tab", name="Submit").click()
    _wait_text(other, "submit-identity", "guest:")
    assert not other.locator("#jobs-retry").is_visible()
    # the wrong token, then the right one, through the sign-in form
    other.goto(site["local"] + "/operator")
    other.fill("#operator-token", OPERATOR_TOKEN[:-1] + "x")
    other.click("#operator-submit")
    assert "Wrong token" in _text(other, "operator-status")
    other.fill("#operator-token", OPERATOR_TOKEN)
    other.click("#operator-submit")
    other.wait_for_url(site["local"] + "/")
    other.get_by_role("tab", name="Submit").click()
    _wait_text(other, "submit-identity", "operator")
    detail = _pick(other, job, "Guest Model")
    assert url in detail and "guest-secret-model" in detail
    assert other.locator("#jobs-retry").is_visible()
    other.click("#jobs-cancel")
    _wait_text(other, "jobs-action", f"#{job} is now CANCELLED")
    other.context.close()
    # a kept URL: the token in the fragment, which never reaches the server
    kept = guest.context.new_page()
    kept.goto(site["local"] + "/operator#token=" + OPERATOR_TOKEN)
    kept.wait_for_url(site["local"] + "/")
    kept.get_by_role("tab", name="Submit").click()
    _wait_text(kept, "submit-identity", "operator")
    guest.context.close()
    for log in site["logs"]:
        text = log.read_text(errors="replace")
        assert OPERATOR_TOKEN not in text and CLIENT_SECRET not in text
