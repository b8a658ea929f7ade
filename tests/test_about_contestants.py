"""Issue 22: a visitor is told what the default contestants are, so nobody takes them for speech models.

Enumerated from the app itself: every baseline the default models file declares (what the bootstrap runs and live
mode serves) must be named on the About tab, with what it does, and be one the baseline server knows.
"""
from __future__ import annotations

from eval_backend import config
from eval_backend.baselines.engine import CONTESTANTS
from leaderboard.about_tab import about_text


def test_about_names_every_default_contestant_and_says_they_are_stand_ins():
    text = about_text()
    section = text.split("## The default contestants", 1)[1].split("\n## ", 1)[0]
    assert "not speech language" in section and "stand-ins" in section
    baselines = [s.name for s in config.load_models(None).values() if s.baseline]
    assert len(baselines) >= 4
    for name in baselines:
        assert f"**{name}**" in section, name
        assert CONTESTANTS[name].blurb and CONTESTANTS[name].blurb in section
    assert "__CONTESTANTS__" not in text


def test_the_default_contestants_differ_in_wording_or_voice():
    baselines = [CONTESTANTS[s.name] for s in config.load_models(None).values() if s.baseline]
    assert len({(c.wording, c.voice, c.matched_delivery) for c in baselines}) == len(baselines)
    assert len({c.wording for c in baselines}) >= 4 and len({c.voice for c in baselines}) >= 3
