"""Live mode in a real browser (issue 13): Debian chromium with a fake microphone that plays an espeak-ng wav,
the test app process with live mode on, the baseline server as the two live contestants.

Consent, record, send; both replies play; vote; the reveal names both models and shows what was heard; the vote
row says battle_source = live and the live ratings moved.
"""
from __future__ import annotations

import subprocess

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from eval_backend.store import Store
from tests.support.baselines import BaselineServer
from tests.support.browser import new_page, wait_for_vote
from tests.support.arena_fixtures import AppProcess

# the models file's offline contestants (four since issue 22): a live battle pairs any two of them
BASELINES = ("cascade-blind", "cascade-cue", "cascade-reflect-piper", "cascade-advice-cue")
MODULE_DATABASE_FIXTURES = ("app",)


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    path = tmp_path_factory.mktemp("voice") / "voice.wav"
    # slow speech: the cue-aware baseline answers the pace, so the two baselines' replies differ (issue 22)
    subprocess.run(["espeak-ng", "-v", "en", "-s", "90", "-w", str(path),
                    "I lost my job today and I feel awful about it."], check=True, capture_output=True, timeout=60)
    return path


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with BaselineServer() as baselines:
        proc = AppProcess(tmp_path_factory.mktemp("live_ui"), settings={"min_listen_s": 1.0},
                          env={"EMPATHY_ARENA_TEST_LIVE_URL": baselines.base_url,
                               # this test is the whole flow, not the deadline (tests/test_live.py times that):
                               # under CI's load the baselines' Whisper and Piper run 2-3x slower than alone
                               "EMPATHY_ARENA_LIVE_DEADLINE_S": "120", "EMPATHY_ARENA_LIVE_CALL_TIMEOUT_S": "100"}
                          ).start()
        yield proc
        proc.stop()


@pytest.fixture(scope="module")
def chromium_args(voice):
    return ("--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={voice}")


@pytest.fixture(scope="module")
def page(app, chromium):
    return new_page(chromium, 60_000)


PROGRESS = "#live-progress [data-testid=markdown]"
METER_BATTLE = "document.querySelector('.arena-meter')?.dataset.battle"


def _battle_or_refusal(page, app) -> str:
    """The live battle's id once its meter shows, else fail with what the page says (a refusal in the progress
    line, a toast) and the app's log: a void battle or a clip sent before its upload must say so."""
    try:
        page.wait_for_function(f"() => {METER_BATTLE} || (t => t && !t.includes('⏳'))"
                               f"(document.querySelector('{PROGRESS}')?.innerText.trim())", timeout=180_000)
    except PlaywrightTimeout:
        pass
    battle = page.evaluate(f"() => {METER_BATTLE}")
    if not battle:
        toasts = page.locator(".toast-body, [data-testid=toast-body]").all_inner_texts()
        pytest.fail(f"no live battle: the page says {page.inner_text(PROGRESS)!r}, toasts {toasts}; the app's "
                    f"log ends {app.log()[-1500:]}")
    return battle


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_use_my_voice_end_to_end(app, page):
    page.goto(app.url + "/")
    page.click("#live-section > button")
    page.wait_for_function("() => document.querySelector('#live-status')?.innerText.includes('ready')")
    assert not page.locator("#live-mic").is_visible()            # no recorder before the consent step
    page.check("#live-consent-store input")
    page.click("#live-consent-ok")
    page.wait_for_selector("#live-mic button.record-button", state="visible")
    page.click("#live-mic button.record-button")
    page.wait_for_timeout(5000)                                   # the fake microphone speaks the wav
    # the recording is uploaded when it stops: Send before the upload has answered would send no clip
    with page.expect_response(lambda r: r.url.endswith("/gradio_api/upload") and r.request.method == "POST",
                              timeout=60_000) as upload:
        page.click("#live-mic button.stop-button")
    assert upload.value.ok
    # playback before sending: the recorded clip is in the component, ready to play
    page.wait_for_selector("#live-mic audio, #live-mic [data-testid='waveform-controls']", state="attached")
    page.click("#live-send")
    battle_id = _battle_or_refusal(page, app)
    store = Store(app.data_dir)
    row = store.query("SELECT source, model_a, model_b FROM arena_battles WHERE id=?", (battle_id,))[0]
    assert row["source"] == "live" and row["model_a"] != row["model_b"]
    assert {row["model_a"], row["model_b"]} <= set(BASELINES)
    # both replies (and the user's clip) load and play; no name in the page before the vote
    page.wait_for_function("() => document.querySelectorAll('.media-clip audio').length === 3 && "
                           "[...document.querySelectorAll('.media-clip audio')].every(a => a.duration > 0)")
    assert not any(m in page.content() for m in BASELINES)
    page.keyboard.press("p")
    wait_for_vote(page, 90_000)
    page.click("#arena-vote-a")
    page.click("#arena-send")              # no aspect answered: send the vote as it is (issue 24)
    page.wait_for_function("() => document.querySelector('#arena-reveal')?.innerText.includes('cascade-')")
    reveal = page.inner_text("#arena-reveal")
    assert row["model_a"] in reveal and row["model_b"] in reveal
    page.wait_for_function("() => document.querySelector('#live-heard')?.innerText.toLowerCase().includes('job')")
    vote = store.query("SELECT winner, source, battle_source FROM arena_votes")[0]
    assert (vote["source"], vote["battle_source"], vote["winner"]) == ("live", "live", row["model_a"])
    from arena.services.service import ArenaService
    live_table = {r["model"]: r for r in ArenaService(store).replayed_table(rounds=10, source="live")}
    assert live_table[row["model_a"]]["mu"] > live_table[row["model_b"]]["mu"]
