"""Hostile replies and model names on the real Space page make no request (issue 10, inert rendering).

A tiny HTTP server on loopback counts every request it gets. The seeded arena has two models, one of
them named with an <img> tag pointing at that server, and every stored reply (text and transcript) holds
Markdown images, links, autolinks and raw HTML pointing at it. The production app (tests/support/space_app.py:
app.py's build_app) runs on another loopback port; Debian's chromium opens the Browse tab, a battle and its
reveal, and the arena leaderboard. Each view must show the hostile text literally, hold no <img>/<a> of
theirs, and the counting server must see no request. A control request from the same page proves the
browser can reach that server, so "no request" means the markup was inert, not unreachable.
"""
from __future__ import annotations

import dataclasses
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from eval_backend.store import Store
from tests.support.arena_fixtures import seed
from tests.support.browser import new_page, wait_for_vote
from tests.support.processes import ServerProcess, free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parent.parent
MODULE_DATABASE_FIXTURES = ("env",)   # the running app reads and writes the module's database


class Hits:
    """A loopback HTTP server that records the path of every request (a 1x1 GIF for each)."""

    GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")

    def __init__(self):
        self.paths: list[str] = []
        hits = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                hits.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/gif")
                self.send_header("Content-Length", str(len(Hits.GIF)))
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                self.wfile.write(Hits.GIF)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def hostile_reply(port: int) -> str:
    u = f"http://127.0.0.1:{port}"
    return (f"HOSTILE-REPLY ![]({u}/md-image.gif) <img src=\"{u}/html-image.gif\"> [click]({u}/md-link) "
            f"<{u}/autolink> {u}/bare <a href=\"{u}/html-link\">a</a> **not bold** $$x^2$$\n\n"
            f"second line <script>fetch('{u}/script')</script>")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    hits = Hits()
    u = f"http://127.0.0.1:{hits.port}"
    evil = f"evil<img src=\"{u}/name-image.gif\">"
    models = (evil, "plain-model")
    data = tmp_path_factory.mktemp("inert")
    seed(data, models, n_scripts=1)
    store = Store(data)
    text = hostile_reply(hits.port)
    for m in models:
        for r in store.replies(model=m):
            store.put_reply(dataclasses.replace(r, text=text, transcript=text))
    port = free_port()
    proc = ServerProcess(["-m", "tests.support.space_app", "--port", str(port), "--data-dir", str(data)],
                         data / "app.log", {"EMPATHY_ARENA_BOOTSTRAP": "0", "EMPATHY_ARENA_BENCHMARK": "demo",
                                            "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"})
    proc.start(f"http://127.0.0.1:{port}/api/arena/health", 180)
    yield {"url": f"http://127.0.0.1:{port}", "hits": hits, "evil": evil, "text": text, "data": data}
    proc.stop()
    hits.stop()


@pytest.fixture(scope="module")
def page(env, chromium):
    return new_page(chromium, 60_000)


def _no_active_markup(page, port: int) -> None:
    """No element of the page points at the counting server."""
    found = page.evaluate("""(port) => [...document.querySelectorAll('img, a, script, iframe, source, image')]
        .map(e => e.getAttribute('src') || e.getAttribute('href') || e.getAttribute('xlink:href') || '')
        .filter(s => s.includes(':' + port))""", port)
    assert found == []


def _settle_and_count(page, env) -> list[str]:
    page.wait_for_timeout(1500)          # time for any image or fetch to go out
    return list(env["hits"].paths)


def _wait_ready(page) -> None:
    """tests/support/space_app.py serves only once the bootstrap is ready (the public header then says nothing of
    it, issue 15): wait for the page's tabs and for no "Preparing the arena" line."""
    page.wait_for_function("() => document.querySelector(\"[role='tab']\") !== null"
                           " && !/Preparing the arena/.test(document.body.innerText)", timeout=180_000)


def _open_tab(page, name: str, shows) -> None:
    """Click a tab until `shows` (a locator inside it) is visible: a click that lands while the page is still
    hydrating on a loaded machine can be lost."""
    for _ in range(5):
        page.get_by_role("tab", name=name).click()
        try:
            shows.wait_for(state="visible", timeout=15_000)
            return
        except Exception:          # playwright's TimeoutError: click again
            continue
    shows.wait_for(state="visible", timeout=15_000)


def test_browse_shows_a_hostile_reply_as_text(env, page):
    page.goto(env["url"] + "/")
    _wait_ready(page)
    _open_tab(page, "Browse benchmark", page.locator("button:visible", has_text="Refresh").first)
    # Refresh lists the first collection's items first (switching collection straight away can race the item
    # dropdown: "s0 is not in the list of choices"), then the context groups' showcase request
    page.locator("button:visible", has_text="Refresh").first.click()
    page.wait_for_function("() => document.body.innerText.includes('Words:')")
    page.get_by_text("AEQ context variation").click()
    # a showcase request (eval_backend/showcase.py): arena-pool replies are not shown with their model's name
    from eval_backend.benchmark.loaders import load_benchmark
    from leaderboard import browse
    showcase = browse.request_label(load_benchmark("demo", env["data"]), "context/g0/c1")
    page.get_by_label("Request", exact=True).click()
    page.get_by_role("option", name=showcase, exact=True).click()
    page.wait_for_function("() => document.body.innerText.includes('HOSTILE-REPLY')")
    body = page.inner_text("body")
    assert f"![](http://127.0.0.1:{env['hits'].port}/md-image.gif)" in body       # shown literally
    assert "<script>" in body and "**not bold**" in body and "$$x^2$$" in body
    _no_active_markup(page, env["hits"].port)
    assert _settle_and_count(page, env) == []


def test_arena_reveal_and_board_show_hostile_names_and_transcripts_as_text(env, page):
    page.goto(env["url"] + "/")
    _wait_ready(page)
    page.click("#arena-next")
    page.wait_for_function("() => document.querySelector('.arena-meter')?.dataset.battle")
    page.wait_for_function("() => [...document.querySelectorAll('#arena-audio-a audio, #arena-audio-b audio')]"
                           ".every(a => a.currentSrc && a.duration > 0)")
    page.keyboard.press("p")                                   # play all: the vote unlocks once heard
    wait_for_vote(page, 120_000)
    page.keyboard.press("1")
    page.wait_for_selector("#arena-send", state="visible")       # no aspect answered: Enter sends it as it is
    page.keyboard.press("Enter")
    page.wait_for_selector("#arena-reveal", state="visible")
    page.wait_for_function("() => document.querySelector('#arena-reveal').innerText.includes('HOSTILE-REPLY')")
    reveal = page.inner_text("#arena-reveal")
    assert env["evil"] in reveal                               # the name, tag and all, as text
    assert f"<img src=\"http://127.0.0.1:{env['hits'].port}/html-image.gif\">" in reveal
    _no_active_markup(page, env["hits"].port)
    assert _settle_and_count(page, env) == []

    page.get_by_role("tab", name="Arena leaderboard").click()
    page.click("#arena-board-refresh")                         # the board loaded before the vote
    page.wait_for_function("(n) => (document.querySelector('#arena-board-table')?.innerText || '').includes(n)",
                           arg=env["evil"])
    _no_active_markup(page, env["hits"].port)
    assert _settle_and_count(page, env) == []


def test_the_counting_server_is_reachable_from_the_page(env, page):
    """The control: the same page can load an image from the counting server, so zero hits above means inert."""
    page.evaluate("(u) => { const i = new Image(); i.src = u; document.body.appendChild(i); }",
                  f"http://127.0.0.1:{env['hits'].port}/control.gif")
    page.wait_for_function("() => [...document.images].some(i => i.src.endsWith('/control.gif') && i.complete)")
    assert env["hits"].paths == ["/control.gif"]
