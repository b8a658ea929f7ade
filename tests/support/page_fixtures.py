"""A data dir for the whole production page (issue 24): battles to vote on, a few votes, and scorer results on
the served benchmark, so every tab of app.py has something real to show.

    python -m tests.support.page_fixtures DATA_DIR          # seed only
    PageSpace(DATA_DIR).start()                              # the production app (tests/support/space_app.py)
    open_page(browser, url, PHONE)                           # a fresh context and page, desktop or phone

`seed_page(data)`: the arena fixtures' benchmark and espeak-ng replies (tests/support/arena_fixtures.py), the
models' answers to its questions scored by the real scorer (results JSON on the served benchmark's hash, so the
Benchmark leaderboard ranks them), and `votes` accepted votes (the listening rule off for seeding only), which
leave every model under the provisional floor (30 votes): the state a new Space is in.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from tests.support.processes import ServerProcess, free_port, python_path

MODELS = ("warm-model", "flat-model", "calm-model")
# per model: the letter it answers to the benchmark's question and selection item (q0: answer B; e0: answer A)
ANSWERS = {"warm-model": ("B", "A"), "flat-model": ("A", "A"), "calm-model": ("B", "B")}
METRICS = ["l1.understanding_acc", "l2.*", "sel.*", "l3.judge.c1"]


def seed_page(data: str | Path, votes: int = 6, models: tuple[str, ...] = MODELS) -> dict:
    from arena.config import settings_from_env
    from arena.services.service import ArenaService
    from eval_backend.benchmark.loaders import load_benchmark
    from eval_backend.scoring.results import score, write_results
    from eval_backend.store import Reply, Store
    from tests.support.arena_fixtures import seed

    data = Path(data)
    info = seed(data, models, n_scripts=2)
    store = Store(data)
    bench = load_benchmark(str(data / "benchmarks" / "demo"))
    for model in models:
        mcq, sel = ANSWERS.get(model, ("A", "A"))
        store.put_reply(Reply(model, bench.hash, "mcq_understanding/q0/-", "mcq_understanding", "q0", "-", "ok",
                              text=mcq))
        store.put_reply(Reply(model, bench.hash, "selection/e0/-", "selection", "e0", "-", "ok", text=sel))
        write_results(store.root, score(bench, store.replies(model=model), model, store, metrics=METRICS).doc)
    svc = ArenaService(store, settings_from_env(store.root, min_listen_s=0.0))
    session = svc.new_session()
    for k in range(votes):
        view = svc.serve_battle(session, "127.0.0.1")
        for clip in ("user", "A", "B"):
            svc.clip_fetched(view.battle_id, clip)
        svc.submit_vote(view.battle_id, session, "127.0.0.1", ("A", "B", "tie")[k % 3],
                        said="A" if k % 2 else None, sounded="B" if k % 2 else None)
    return info


class PageSpace(ServerProcess):
    """The production app (app.py's build_app through tests/support/space_app.py, bootstrap off) on a free
    loopback port over a seeded data dir."""

    def __init__(self, data_dir: str | Path, env: dict | None = None, root: Path | None = None):
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # PAGE_APP_ROOT: serve another checkout's app (e.g. an export of main, to see a test fail without a fix)
        self.root = Path(root or os.environ.get("PAGE_APP_ROOT") or Path(__file__).resolve().parents[2])
        super().__init__(["-m", "tests.support.space_app", "--port", str(self.port), "--data-dir", str(self.data_dir)],
                         self.data_dir / f"space_{self.port}.log", cwd=self.root, stop_timeout=30, env={
                             "EMPATHY_ARENA_BOOTSTRAP": "0", "EMPATHY_ARENA_BENCHMARK": "demo",
                             "EMPATHY_ARENA_WORKER": "0", "GRADIO_ANALYTICS_ENABLED": "False",
                             "HF_HUB_OFFLINE": "1", "PYTHONPATH": python_path(self.root), **(env or {})})

    def start(self, timeout: float = 180.0) -> "PageSpace":  # type: ignore[override]
        super().start(f"{self.url}/api/arena/health", timeout)
        return self


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data_dir")
    p.add_argument("--votes", type=int, default=6)
    args = p.parse_args()
    info = seed_page(args.data_dir, args.votes)
    print(f"seeded {len(info['requests'])} requests x {len(info['models'])} models into {args.data_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ----------------------------------------------------------------------------------------- the browser
DESKTOP = dict(viewport={"width": 1366, "height": 800})
PHONE = dict(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, device_scale_factor=2)
DEVICES = {"desktop": DESKTOP, "phone": PHONE}


def open_page(browser, url: str, device: dict = DESKTOP, wait_for: str | None = "#arena-next"):
    """A new browser context (own cookies, own Gradio session) and page at `url`; returns (context, page).
    `page.traffic` (Traffic) waits for the page's Gradio events to be done."""
    ctx = browser.new_context(**device)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    page.traffic = Traffic(page)
    page.goto(url)
    if wait_for:
        page.wait_for_selector(wait_for, state="attached")
    return ctx, page


class Traffic:
    """Gradio's requests in flight for one page (its long-lived heartbeat left out): `settle()` waits until the
    page's events are done, i.e. no request to the app has been open for `quiet_s` (Playwright's "networkidle"
    never comes: the heartbeat stays open)."""

    def __init__(self, page):
        self.page, self.open, self.seen = page, set(), 0
        page.on("request", self._start)
        page.on("requestfinished", self._end)
        page.on("requestfailed", self._end)

    def _start(self, request) -> None:
        if "/gradio_api/" in request.url and "/heartbeat/" not in request.url:
            self.open.add(request)
            self.seen += 1

    def _end(self, request) -> None:
        self.open.discard(request)

    def settle(self, quiet_s: float = 0.5, timeout_s: float = 60.0, streams: bool = False) -> None:
        """`streams`: a page with a running gr.Timer keeps its event stream (/queue/data) open: then only the
        events' own requests count, and no output may still be marked pending. The production page always has one
        (the Submit tab's 3 s identity timer), so its tests pass streams=True: without, a slow tick (PostgreSQL on a
        busy machine) kept the stream open past the 60 s and failed the test."""
        import time
        deadline, quiet_since = time.monotonic() + timeout_s, None
        while time.monotonic() < deadline:
            self.page.wait_for_timeout(50)        # lets Playwright deliver the request events
            busy = [r for r in self.open if not (streams and "/queue/data" in r.url)]
            if streams and not busy:
                busy = self.page.evaluate("() => document.querySelectorAll('.pending').length > 0")
            if busy or not self.seen:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= quiet_s:
                return
        still = sorted(r.url.split("?", 1)[0] for r in self.open)
        raise TimeoutError(f"the page's requests did not settle in {timeout_s:.0f} s: {len(self.open)} open {still}")


def click_or_explain(locator, timeout_ms: float = 45_000) -> None:
    """`locator.click()`, and if it times out, say why in the failure: Playwright's click waits for the element to
    stay put over two animation frames, so a page that stops producing frames (its main thread blocked, or chromium
    not drawing) looks like a button that never becomes clickable. The probes are bounded (5 s each): timers
    (setTimeout polling) and frames (requestAnimationFrame polling)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        locator.click(timeout=timeout_ms)
    except PlaywrightTimeout as error:
        page = locator.page

        def answers(polling) -> bool:
            try:
                page.wait_for_function("() => true", polling=polling, timeout=5_000)
                return True
            except PlaywrightTimeout:
                return False
        timers, frames = answers(100), answers("raf")
        shown = page.evaluate("() => document.visibilityState") if timers else "?"   # needs the main thread
        raise AssertionError(f"click timed out; the page still runs timers: {timers}, draws frames: {frames} "
                             f"(state: {shown})") from error
