"""Screenshots of every tab at 1366×800 and 390×844 (Playwright, Debian's chromium: tests/support/browser.py), for reviewing layout.

    python3 scripts/screenshots.py [--out screenshots/] [--root /path/to/a/checkout] [--url http://...]
    python3 scripts/screenshots.py --readme        # the README's pictures, docs/screenshots/*.jpg (committed)

Without --url it seeds a fresh data dir (tests/support/arena_fixtures.py: two espeak-ng "models", a few votes so the
boards have rows) and starts the production app on it (tests/support/space_app.py, bootstrap off) from `--root`
(default: this checkout; another checkout, e.g. main, gives "before" pictures with the same seeding). Writes
`<out>/<width>x<height>/<NN>-<tab id>.png` (full page) and `<NN>-<tab id>-viewport.png` (what the first screen
shows), plus the arena's battle states (`arena-battle`, `arena-heard`, `arena-voted`). The output folder is not
committed (.gitignore).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VIEWPORTS = ((1366, 800, False), (390, 844, True))      # (width, height, phone)
README_DIR = ROOT / "docs" / "screenshots"                # --readme: the README's few small pictures
MODELS = ("warm-model", "flat-model", "calm-model")


def seed_data(data: Path, votes: int = 6) -> None:
    """The page fixtures (tests/support/page_fixtures.py): the arena fixtures' benchmark and espeak-ng replies of
    three models, scorer results on it (the benchmark board has rows) and a few accepted votes."""
    from tests.support.page_fixtures import seed_page
    seed_page(data, votes=votes, models=MODELS)


def start_app(root: Path, data: Path, port: int):
    """tests/support/space_app.py of the checkout at `root` on `port`; returns the started ServerProcess."""
    from tests.support.processes import ServerProcess

    env = {"EMPATHY_ARENA_BOOTSTRAP": "0", "EMPATHY_ARENA_BENCHMARK": "demo", "GRADIO_ANALYTICS_ENABLED": "False",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(root)}
    app = ServerProcess(["-m", "tests.support.space_app", "--port", str(port), "--data-dir", str(data)],
                        data / "app.log", env, cwd=root, stop_timeout=30)
    return app.start(f"http://127.0.0.1:{port}/api/arena/health", 180)


def tab_ids() -> list[tuple[str, str]]:
    """(label, id) of the page's tabs, read from the page itself (so an older checkout's tabs are found too)."""
    from app import TABS
    return [(t.label, t.id) for t in TABS]


def open_tab(page, label: str) -> None:
    """Click the tab; on a narrow screen Gradio may fold tabs into its overflow menu, which is opened first."""
    tab = page.get_by_role("tab", name=label, exact=True)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        return
    page.click("button[aria-label='More tabs']")          # Gradio's overflow menu ("⋯")
    page.locator(".overflow-dropdown button", has_text=label).first.click()


def full_page(page, path: Path) -> None:
    """The whole page. Playwright's full_page capture drops the touch emulation for the capture (keyboard-only
    hints would show), so the viewport is made as tall as the page instead, then restored."""
    size = page.viewport_size
    height = page.evaluate("() => document.documentElement.scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
    page.wait_for_timeout(300)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


def arena_states(page, out: Path) -> None:
    """The arena while a battle is open, once its clips are heard, and after the vote."""
    page.click("#arena-next")
    page.wait_for_function("() => document.querySelector('.arena-meter')?.dataset.battle", timeout=30_000)
    page.wait_for_function("() => [...document.querySelectorAll('audio')].length >= 3 && "
                           "[...document.querySelectorAll('audio')].every(a => a.currentSrc && a.duration > 0)",
                           timeout=30_000)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(out / "arena-battle-viewport.png"))
    page.evaluate("""() => { for (const a of document.querySelectorAll('audio')) { a.playbackRate = 2; a.play(); } }""")
    page.wait_for_function("() => !document.getElementById('arena-vote-a').disabled", timeout=60_000)
    page.screenshot(path=str(out / "arena-heard-viewport.png"))
    full_page(page, out / "arena-heard.png")
    page.click("#arena-vote-a")
    page.wait_for_selector("#arena-send", state="visible", timeout=30_000)   # the vote waits for its aspects
    page.screenshot(path=str(out / "arena-aspects-viewport.png"))
    page.locator("#arena-said label", has_text="A").first.click()
    page.locator("#arena-sounded label", has_text="B").first.click()        # both answered: the vote is sent
    page.wait_for_selector("#arena-reveal", state="visible", timeout=30_000)
    page.wait_for_timeout(500)
    page.screenshot(path=str(out / "arena-voted-viewport.png"))
    full_page(page, out / "arena-voted.png")


def readme_shots(url: str, out: Path) -> list[Path]:
    """The README's pictures, small (JPEG, the first screen only, phone at 1x): the arena on a desktop and a
    phone with a battle open and after a vote, and both boards on a desktop."""
    from tests.support.browser import launch_chromium

    out.mkdir(parents=True, exist_ok=True)
    shots = []

    def snap(page, name: str) -> None:
        page.wait_for_timeout(600)                 # let the last re-render and plotly's second layout pass land
        path = out / f"{name}.jpg"
        page.screenshot(path=str(path), type="jpeg", quality=70)
        shots.append(path)

    with launch_chromium() as browser:
        for width, height, phone in VIEWPORTS:
            kind = "phone" if phone else "desktop"
            ctx = browser.new_context(viewport={"width": width, "height": height}, has_touch=phone, is_mobile=phone)
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            page.goto(url + "/")
            page.click("#arena-next")
            page.wait_for_function("() => [...document.querySelectorAll('#arena-players audio')].length === 3 && "
                                   "[...document.querySelectorAll('#arena-players audio')].every(a => a.duration > 0)")
            page.evaluate("() => { for (const a of document.querySelectorAll('#arena-players audio')) "
                          "{ a.playbackRate = 2; a.play(); } }")
            page.wait_for_function("() => !document.getElementById('arena-vote-a').disabled")
            page.evaluate("() => document.getElementById('arena-players').scrollIntoView({block: 'start'})")
            snap(page, f"arena-{kind}-battle")
            page.locator("#arena-said label", has_text="A").first.click()
            page.locator("#arena-sounded label", has_text="Tie").first.click()
            page.click("#arena-vote-a")
            page.wait_for_selector("#arena-reveal", state="visible")
            snap(page, f"arena-{kind}-voted")
            if not phone:
                for label, name, ready in (("Arena leaderboard", "arena-board", "#arena-board-table"),
                                           ("Benchmark leaderboard", "bench-board", "#bench-table")):
                    page.get_by_role("tab", name=label).click()
                    page.wait_for_function("(sel) => (document.querySelector(sel)?.innerText || '').includes('-model')",
                                           arg=ready)
                    page.evaluate("() => window.scrollTo(0, 0)")
                    snap(page, name)
            ctx.close()
    return shots


def shoot(url: str, out: Path) -> list[Path]:
    from tests.support.browser import launch_chromium

    with launch_chromium() as browser:
        for width, height, phone in VIEWPORTS:
            folder = out / f"{width}x{height}"
            folder.mkdir(parents=True, exist_ok=True)
            ctx = browser.new_context(viewport={"width": width, "height": height}, has_touch=phone,
                                      is_mobile=phone, device_scale_factor=2 if phone else 1)
            page = ctx.new_page()
            page.set_default_timeout(30_000)
            page.goto(url + "/")
            page.wait_for_selector("#arena-next", timeout=60_000)
            page.wait_for_timeout(2500)                 # the page-load hooks fill their tables
            for n, (label, tid) in enumerate(tab_ids()):
                page.goto(url + "/")
                page.wait_for_selector("#arena-next")
                if n:
                    open_tab(page, label)
                page.wait_for_timeout(2000)
                page.screenshot(path=str(folder / f"{n:02d}-{tid}-viewport.png"))
                full_page(page, folder / f"{n:02d}-{tid}.png")
            page.goto(url + "/")
            page.wait_for_selector("#arena-next")
            page.wait_for_timeout(1000)
            arena_states(page, folder)
            ctx.close()
    return sorted(out.rglob("*.png"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "screenshots"))
    p.add_argument("--root", default=str(ROOT), help="the checkout whose app is photographed")
    p.add_argument("--url", default=None, help="photograph a running app instead of starting one")
    p.add_argument("--readme", action="store_true", help=f"only the README's pictures, into {README_DIR}")
    args = p.parse_args()
    out = README_DIR if args.readme else Path(args.out)
    take = readme_shots if args.readme else shoot
    if args.url:
        paths = take(args.url.rstrip("/"), out)
    else:
        from tests.support.processes import free_port
        with tempfile.TemporaryDirectory(prefix="screens_") as tmp:
            data = Path(tmp)
            seed_data(data)
            port = free_port()
            app = start_app(Path(args.root).resolve(), data, port)
            try:
                paths = take(f"http://127.0.0.1:{port}", out)
            finally:
                app.stop()
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
