"""The operator's review of flagged votes (issue 23) on the Integrity health tab, and the same from the command
line: hidden and empty for everyone but the operator, who reverses a flag (its votes count again, through later
sweeps) and restores it; each decision logged with the operator's name.

The page is app.py's build_blocks on a real AppContext; the section's handlers are called as Gradio calls them,
with a request carrying (or not) the operator's session cookie issued by leaderboard/identity.py.
"""
from __future__ import annotations


import pytest

from arena.services import vote_flags
from arena.__main__ import main as arena_cli
from tests.support.page_fns import page_handlers, request

OPERATOR_TOKEN = "op-" + "z" * 40
T0 = 1_767_225_600.0


def bot_and_honest_votes(svc):
    """35 votes in 12 minutes from one session (cadence), 10 calm ones from ten others."""
    rows = [("bot", 20.0 * k, "A") for k in range(35)] + [(f"h{k}", 300.0 * k + 7, "B") for k in range(10)]
    svc.append_votes([{"battle_id": f"b{k}", "model_a": "m1", "model_b": "m2", "winner": "m1" if s == "A" else "m2",
                       "slot": s, "said": None, "sounded": None, "reason": None, "session_id": who, "user": None,
                       "ip_hash": f"ip-{who}", "first_heard": "A", "attribute": None, "dimension": None,
                       "benchmark_hash": "h", "request_id": "r", "created_at": T0 + t, "source": "live",
                       "battle_source": "benchmark"} for k, (who, t, s) in enumerate(rows)])


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("EMPATHY_ARENA_OPERATOR_TOKEN", OPERATOR_TOKEN)
    monkeypatch.setenv("EMPATHY_ARENA_BOOTSTRAP", "0")
    from app_context import AppContext

    ctx = AppContext.from_env(tmp_path / "data")
    bot_and_honest_votes(ctx.arena)
    ctx.arena.integrity_upkeep()
    return page_handlers(ctx)


def test_only_the_operator_sees_and_reverses_flags(page):
    from leaderboard.identity import OPERATOR_COOKIE

    listing, reverse, restore = (page.fns[n] for n in ("flags_listing", "flags_reverse", "flags_restore"))
    body, frame, pick = listing(None, request({}), None)
    assert body["visible"] is False and frame.empty and pick["choices"] == []
    stranger = request({OPERATOR_COOKIE: "forged"})
    assert listing(None, stranger, None)[1].empty
    bot = vote_flags.voter_subject(None, "bot")
    assert reverse(f"cadence|{bot}", "", stranger, None) == "Operator only."
    assert len(page.ctx.arena.vote_weights()) == 35

    operator = request({OPERATOR_COOKIE: page.ctx.identity.issue_operator_session()})
    body, frame, pick = listing(None, operator, None)
    assert body["visible"] is True and set(frame["subject"]) == {bot} and "cadence" in set(frame["kind"])
    assert "session:" in bot and "bot" not in bot.split(":", 1)[1]             # the session only as a hash
    for kind in sorted(set(frame["kind"])):                                     # every flag on the bot, reversed
        assert reverse(f"{kind}|{bot}", "load test by the team", operator, None).startswith("Reversed")
    assert page.ctx.arena.vote_weights() == {}
    page.ctx.arena.integrity_upkeep()                                           # a later sweep keeps it reversed
    assert page.ctx.arena.vote_weights() == {}
    decided = vote_flags.groups(page.ctx.store)
    assert {(g["state"], g["decided_by"], g["note"]) for g in decided} == {
        ("reversed", page.ctx.identity.cfg.operator_name, "load test by the team")}
    assert restore(f"cadence|{bot}", "", operator, None).startswith("Restored")
    assert len(page.ctx.arena.vote_weights()) == 35
    assert "flag is gone" in reverse("cadence|session:nobody", "", operator, None)


def test_the_command_line_lists_and_decides(tmp_path, capsys):
    from arena.services.service import ArenaService
    from eval_backend.store import Store

    data = tmp_path / "data"
    svc = ArenaService(Store(data))
    bot_and_honest_votes(svc)
    assert arena_cli(["sweep", "--data-dir", str(data)]) == 0
    assert "35 excluded" in capsys.readouterr().out
    assert arena_cli(["flags", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    bot = vote_flags.voter_subject(None, "bot")
    assert f"cadence    {bot}" in out and "in force" in out
    assert arena_cli(["reverse-flag", "cadence", bot, "--operator", "ops", "--note", "ours",
                      "--data-dir", str(data)]) == 0
    assert arena_cli(["reverse-flag", "nonsense", bot, "--operator", "ops", "--data-dir", str(data)]) == 2
    rows = {g["kind"]: g for g in vote_flags.groups(Store(data))}
    assert rows["cadence"]["state"] == "reversed" and rows["cadence"]["decided_by"] == "ops"
