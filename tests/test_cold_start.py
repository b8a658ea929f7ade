"""A fresh start of the Space, in a real browser, up to the first voted battle (issue 15).

`python app.py` on an empty data dir (demo build, baseline server, the first slice), Debian's chromium through
Playwright (tests/support/cold_start.py): the Arena tab's banner is there from the first paint with the real
status (step k of n, then an estimate), no operator diagnostics reach the public page, and a battle is served,
heard and voted without waiting for the baselines' full run. The time is printed (benchmarks/bench_cold_start.py
takes the median of three; target 120 s on 2 cores, which a machine shared with other jobs may miss, so the test
bounds it only by the 600 s it waits).
"""
from __future__ import annotations

import re

import pytest

from tests.support.cold_start import cold_start


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fresh_start_to_a_voted_battle(tmp_path):
    pytest.importorskip("playwright.sync_api")
    r = cold_start(tmp_path, timeout_s=600)
    print(f"page {r.page_s:.1f} s, battle {r.battle_s:.1f} s, vote unlocked {r.votable_s:.1f} s, "
          f"voted {r.voted_s:.1f} s (load average {r.load_avg[0]:.1f})")
    assert r.votable_s is not None and r.voted_s is not None, r.log_tail
    # the first paint: the real status, not a placeholder
    assert re.search(r"Step \d of \d", r.first_paint_banner), r.first_paint_banner
    assert "waiting" not in r.first_paint_banner.lower()
    # an estimate from the measured rate appeared while waiting, and a progress count
    assert any("The arena opens in ~" in b for b in r.banners), r.banners
    assert any(re.search(r"\d+ of \d+ (clips|replies)", b) for b in r.banners), r.banners
    assert r.operator_leaks == [], r.operator_leaks
    # the baselines' full run was still going when the battle was voted: the slice opened the arena
    # (the arena takes replies as they are stored: the battle may come while the first slice itself is running)
    assert "bootstrap: first slice" in r.log_text and "bootstrap: ready" not in r.log_text, r.log_tail
    # with EMPATHY_ARENA_DEMO_SIZE unset, an empty data dir gets the compact demo (the one that bootstraps in 6 min)
    assert "bootstrap: demo benchmark built (compact)" in r.log_text, r.log_tail
