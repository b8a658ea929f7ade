"""One cold start of the Space, timed in a real browser: `python app.py` on an empty data dir, then Debian's chromium
(Playwright) asks for a battle until one is served, plays its clips and waits for the vote buttons to unlock.

    result = cold_start(tmp_dir)          # ColdStart: seconds from process start to each milestone, what the page said

Used by tests/test_cold_start.py (one start) and benchmarks/bench_cold_start.py (median of 3). The app is the real
one (app.py: bootstrap, demo build, baseline server, first slice, worker, health loop) on free loopback ports.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from arena.ui.pow_ui import PAYLOAD_JS
from tests.support.browser import launch_chromium, new_page, wait_for_vote
from tests.support.processes import ROOT, free_port, wait_until_answers

OPERATOR_STRINGS = ("HF_HUB_OFFLINE", "loopback port", "running baselines", "scoring baselines", "Traceback",
                    "first slice", "starting baselines")

# The banner's own text (not Gradio's tracker) when it is shown, and the header's status line, read in one step in the
# page: the banner goes away the moment a battle is served, so "is it visible?" and then "read it" as two Playwright
# calls can find it gone in between and wait a whole timeout for it (the CI failure of stop 39).
STATUS_JS = """() => {
  const banner = document.querySelector('#arena-opening .arena-opening');
  const header = document.querySelector('#page-status .prose');
  return {banner: banner && banner.checkVisibility() ? banner.innerText : '',
          header: header ? header.innerText : ''};
}"""


@dataclass
class ColdStart:
    page_s: float | None = None            # the page answered 200
    first_paint_banner: str = ""           # the banner's text right after the first page load
    battle_s: float | None = None          # a battle was served (players filled)
    votable_s: float | None = None         # the vote buttons unlocked after listening
    voted_s: float | None = None           # the vote was recorded ("✅")
    cpu_to_battle_s: float | None = None   # CPU seconds of app.py and its children (baseline server, espeak-ng)
                                           # up to the battle: the figure the machine's other load does not inflate
    banners: list[str] = field(default_factory=list)    # distinct banner texts seen while waiting
    headers: list[str] = field(default_factory=list)    # distinct header status lines seen
    operator_leaks: list[str] = field(default_factory=list)   # operator strings found in the public page
    load_avg: tuple = ()
    log_tail: str = ""
    log_text: str = ""        # the whole log (the tail fills with the runner's errors once the app is stopped)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "log_text"}     # the tail is enough for a report


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, reaped children included) of `pid` and its live descendants, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        p = int(stat.parent.name)
        parents[p] = int(fields[1])
        cpu[p] = sum(int(f) for f in fields[11:15]) / tick
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0.0)
        todo += [c for c, parent in parents.items() if parent == p]
    return total


def cold_start(work_dir: str | Path, timeout_s: float = 600.0, env: dict | None = None) -> ColdStart:
    """Start app.py on `work_dir/data` (must not exist yet), drive chromium to the first voted battle, stop the app."""
    work = Path(work_dir)
    data = work / "data"
    assert not data.exists(), "a cold start needs an empty data dir"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    full_env = {**os.environ, "EMPATHY_ARENA_DATA_DIR": str(data), "GRADIO_SERVER_PORT": str(port),
                "GRADIO_SERVER_NAME": "127.0.0.1", "EMPATHY_ARENA_BASELINE_PORT": str(free_port()),
                "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", **(env or {})}
    log_path = work / "app.log"
    out = ColdStart(load_avg=os.getloadavg())
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=full_env, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        wait_until_answers(url + "/", proc, timeout_s, log_path, what="app.py")
        out.page_s = time.monotonic() - t0
        with launch_chromium() as browser:
            page = new_page(browser, 60_000, viewport={"width": 1440, "height": 900})
            page.goto(url + "/")
            page.wait_for_selector("#arena-next")
            page.wait_for_timeout(500)          # the page-load hooks have answered
            out.first_paint_banner = page.evaluate(STATUS_JS)["banner"]
            try:
                _drive_to_vote(page, out, t0, timeout_s, proc)
            except Exception:
                page.screenshot(path=str(work / "failed.png"))       # what the page showed, for the report
                raise
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.log_text = log_path.read_text(errors="replace")
        out.log_tail = out.log_text[-8000:]
    return out


def _note(seen: list[str], text: str) -> None:
    text = re.sub(r"\s+", " ", text).strip()
    if text and (not seen or seen[-1] != text):
        seen.append(text)


def _drive_to_vote(page, out: ColdStart, t0: float, timeout_s: float, proc: subprocess.Popen) -> None:
    """Press "Start a battle" every ~3 s until a battle is served, play it, wait for the unlock, vote."""
    has_battle = "() => !!document.querySelector('.arena-meter')?.dataset.battle"
    while time.monotonic() - t0 < timeout_s:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited with {proc.returncode}")
        if page.evaluate(has_battle):
            out.battle_s = time.monotonic() - t0
            out.cpu_to_battle_s = tree_cpu_s(proc.pid)
            break
        status = page.evaluate(STATUS_JS)
        _note(out.banners, status["banner"])
        _note(out.headers, status["header"])
        body = page.inner_text("body")
        out.operator_leaks += [s for s in OPERATOR_STRINGS if s in body and s not in out.operator_leaks]
        start = page.locator("#arena-next")
        if start.is_visible():
            try:
                start.click(timeout=5_000)
            except Exception:       # busy (an answer pending) under load: look again
                pass
        try:
            page.wait_for_function(has_battle, timeout=3_000)
        except Exception:
            pass
    else:
        raise TimeoutError(f"no battle within {timeout_s:.0f} s")
    page.wait_for_function("() => document.querySelectorAll('audio').length >= 3 && "
                           "[...document.querySelectorAll('audio')].every(a => a.currentSrc && a.duration > 0)")
    # every clip at once at 2x (the fastest the rule allows): the quickest honest listening
    page.evaluate("() => document.querySelectorAll('audio').forEach(a => { a.playbackRate = 2; a.play(); })")
    wait_for_vote(page, 120_000)
    out.votable_s = time.monotonic() - t0
    # an anonymous voter's proof of work (arena/ui/pow_ui.py, on by default in app.py): wait, as a person would, until
    # the check says it is done
    page.wait_for_function(f"() => !document.querySelector('#arena-pow altcha-widget') || !!({PAYLOAD_JS})",
                           timeout=120_000)
    page.click("#arena-vote-a")
    page.click("#arena-send")          # no aspect answered: the vote waits for Send (issue 24)
    page.wait_for_selector("#arena-reveal", state="visible")      # counted (or, 5% of battles, a gold check's reveal)
    out.voted_s = time.monotonic() - t0
