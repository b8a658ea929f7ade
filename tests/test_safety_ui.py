"""The operator's Moderation tab and the About tab's help section (issue 14), on the app's real page.

The page is app.py's build_blocks on a real AppContext; the tab's own handlers are called as Gradio calls them,
with a request carrying (or not) the operator's session cookie issued by leaderboard/identity.py.
"""
from __future__ import annotations


import pytest
from tests.support.page_fns import page_handlers, request

OPERATOR_TOKEN = "op-" + "y" * 40


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_OPERATOR_TOKEN", OPERATOR_TOKEN)
    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    from app_context import AppContext
    from eval_backend.moderation import ledger
    from eval_backend.safety import screen_text

    ctx = AppContext.from_env(tmp_path / "data")
    for kind, subject, text in (("reply", '["m","h","conversation/s0/target","replies/m/x.wav"]',
                                 "heard: shut up, you stupid worthless idiot"),
                                ("reason", "sha256:1", "You are a worthless idiot, shut up."),
                                ("reason", "sha256:2", "B sounded kinder.")):
        ledger.record(ctx.store, kind, subject, text, screen_text(text.removeprefix("heard: ")))
    return page_handlers(ctx)


def test_the_moderation_tab_is_hidden_and_empty_for_everyone_but_the_operator(page):
    from leaderboard.identity import OPERATOR_COOKIE

    tabs = [b for b in page.demo.blocks.values() if type(b).__name__ == "Tab"]
    moderation = [t for t in tabs if t.id == "moderation"]
    assert len(moderation) == 1 and moderation[0].visible is False          # built hidden
    assert all(t.visible for t in tabs if t.id != "moderation")
    listing = page.fns["moderation_listing"]
    tab, body, frame, pick = listing(None, request({}), None)
    assert tab["visible"] is False and body["visible"] is False and frame.empty and pick["choices"] == []
    stranger = request({OPERATOR_COOKIE: "forged"})
    assert listing(None, stranger, None)[2].empty
    assert page.fns["moderation_release"](1, "", stranger, None) == "Operator only."

    operator = request({OPERATOR_COOKIE: page.ctx.identity.issue_operator_session()})
    tab, body, frame, pick = listing(None, operator, None)
    assert tab["visible"] is True and body["visible"] is True
    assert sorted(frame["kind"]) == ["reason", "reply"]                      # the clean reason is not held
    assert set(frame["category"]) == {"abuse"}
    reply_id = next(i for label, i in pick["choices"] if "reply" in label)
    detail, audio = page.fns["moderation_show"](reply_id, operator, None)
    assert "idiot" in detail and "/operator/media/held/" in audio["value"]   # a token route, not a file path
    assert "replies/m/x.wav" not in audio["value"].split("src=")[-1]
    msg = page.fns["moderation_keep"](reply_id, "abusive", operator, None)
    assert msg.startswith("Keep hidden")
    msg = page.fns["moderation_release"](reply_id, "false positive after all", operator, None)
    assert msg.startswith("Release")
    from eval_backend.safety import records
    log = records.actions(page.ctx.store, "reply")
    assert [a["action"] for a in log] == ["keep_hidden", "release"] and log[-1]["note"] == "false positive after all"
    assert sorted(listing(None, operator, None)[2]["kind"]) == ["reason"]    # released: out of the queue


def test_the_about_tab_always_carries_the_help_resources(page):
    from eval_backend.safety import crisis_notice_markdown

    texts = [b.value for b in page.demo.blocks.values() if type(b).__name__ == "Markdown" and b.elem_id == "about-help"]
    assert len(texts) == 1 and crisis_notice_markdown() in texts[0]
    about = next(b.value for b in page.demo.blocks.values() if getattr(b, "elem_id", None) == "about-text")
    assert "## Safety" in about and "screened when it is stored" in about


def test_the_arena_page_shows_a_battles_crisis_notice_and_hides_it_otherwise(page):
    """The arena tab's battle state carries the battle's notice (BattleView.notice); the page's box follows it."""
    from eval_backend.safety import crisis_notice_markdown

    boxes = [b for b in page.demo.blocks.values() if getattr(b, "elem_id", None) == "arena-crisis"]
    assert len(boxes) == 1 and boxes[0].visible is False
    show = page.fns["show_notice"]
    shown = show({"battle_id": "b1", "notice": crisis_notice_markdown()})
    assert shown["visible"] is True and shown["value"] == crisis_notice_markdown()
    assert show({"battle_id": "b2", "notice": None})["visible"] is False
    assert show({})["visible"] is False
