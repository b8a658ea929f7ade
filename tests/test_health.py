"""Integrity health: counted vs refused per hour on a real Store, alerts in the log, the admin figure."""
import logging

import pytest

from arena.services import health
from arena.services.service import ArenaService, VoteRefused
from eval_backend.store import Store

H = 3600.0
T0 = 1_767_225_600.0          # 2026-01-01 00:00 UTC, an hour boundary


def add_votes(svc, times):
    with svc.store.transaction() as conn:
        for k, t in enumerate(times):
            conn.execute("INSERT INTO arena_votes (model_a, model_b, winner, slot, created_at, source, session_id, "
                         "ip_hash) VALUES ('a', 'b', 'a', 'A', ?, 'live', ?, 'ip')", (t, f"s{k}"))


def add_refusals(svc, times, reason):
    with svc.store.transaction() as conn:
        for t in times:
            conn.execute("INSERT INTO arena_refused_votes (reason, message, created_at) VALUES (?, 'm', ?)",
                         (reason, t))


def add_battles(svc, times):
    with svc.store.transaction() as conn:
        for k, t in enumerate(times):
            conn.execute("INSERT INTO arena_battles (id, session_id, ip_hash, benchmark_hash, request_id, task, "
                         "item_id, variant, model_a, model_b, min_listen_s, served_at, expires_at) "
                         "VALUES (?, 's', 'ip', 'h', 'r', 't', 'i', 'v', 'a', 'b', 3, ?, ?)",
                         (f"b{t}-{k}", t, t + 1800))


@pytest.fixture
def svc(tmp_path):
    s = ArenaService(Store(tmp_path / "data"))
    # hour 0: healthy; hour 1: silence; hour 2: a rule fails closed and refuses most votes
    add_battles(s, [T0 + 10 + k for k in range(40)] + [T0 + 2 * H + 10 + k for k in range(40)])
    add_votes(s, [T0 + 100 + k for k in range(30)] + [T0 + 2 * H + 100 + k for k in range(5)])
    add_refusals(s, [T0 + 200, T0 + 300], "too_fast")
    add_refusals(s, [T0 + 2 * H + 200 + k for k in range(25)], "rate_limited")
    return s


def test_series_per_hour_with_reasons_and_gaps(svc):
    cfg = health.HealthConfig(history_s=3 * H)
    rep = health.health_report(svc.store, cfg, now=T0 + 3 * H)
    rows = rep["rows"]
    assert [r["start"] for r in rows] == [T0, T0 + H, T0 + 2 * H]
    assert rows[0]["start_utc"] == "2026-01-01 00:00"
    assert (rows[0]["served"], rows[0]["accepted"], rows[0]["refused"]) == (40, 30, 2)
    assert rows[0]["refused_by_reason"] == {"too_fast": 2}
    assert rows[0]["counted_share"] == pytest.approx(30 / 32)
    assert rows[1]["attempts"] == 0 and rows[1]["counted_share"] is None      # no share where nothing came
    assert rows[2]["refused_by_reason"] == {"rate_limited": 25}
    assert rows[2]["counted_share"] == pytest.approx(5 / 30)


def test_alert_when_the_counted_share_drops(svc):
    cfg = health.HealthConfig(window_s=H, alert_share=0.5, min_attempts=20)
    healthy = health.health_report(svc.store, cfg, now=T0 + H - 1)
    assert healthy["alert"] is None and healthy["window"]["accepted"] == 30
    bad = health.health_report(svc.store, cfg, now=T0 + 3 * H - 1)
    assert bad["window"] == {"served": 40, "accepted": 5, "refused": 25, "refused_by_reason": {"rate_limited": 25},
                             "counted_share": pytest.approx(5 / 30)}
    assert "17% of 30" in bad["alert"] and "rate_limited 25" in bad["alert"]
    # too few submissions: no alert; a lower threshold: no alert below it, but the drop from the earlier hours'
    # 94% is still told (issue 23), unless the drop allowed is as large
    assert health.health_report(svc.store, health.HealthConfig(min_attempts=31), now=T0 + 3 * H - 1)["alert"] is None
    dropped = health.health_report(svc.store, health.HealthConfig(alert_share=0.1), now=T0 + 3 * H - 1)["alert"]
    assert dropped.startswith("the counted share fell to 17% of 30 submissions") and "from 94% before" in dropped
    assert health.health_report(svc.store, health.HealthConfig(alert_share=0.1, max_share_drop=0.8),
                                now=T0 + 3 * H - 1)["alert"] is None


def test_alert_when_battles_are_served_but_no_vote_arrives(tmp_path):
    s = ArenaService(Store(tmp_path / "data"))
    add_battles(s, [T0 + k for k in range(60)])
    add_votes(s, [T0 + 100])
    rep = health.health_report(s.store, health.HealthConfig(), now=T0 + 1000)
    assert "60 battles served but only 1 votes submitted" in rep["alert"]


def test_monitor_logs_once_then_clears(svc, caplog):
    now = [T0 + 3 * H - 1]
    mon = health.HealthMonitor(svc.store, health.HealthConfig(), repeat_s=H, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="arena.services.health"):
        mon.check()
        now[0] += 60
        mon.check()                       # still alerting, within repeat_s: not logged again
        assert mon.status.startswith("ALERT")
        now[0] = T0 + 4 * H               # the bad hour has left the window
        mon.check()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "17%" in warnings[0].getMessage()
    assert any("cleared" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)
    assert mon.status.startswith("ok:")


def test_real_refusals_show_up_in_the_current_bucket(tmp_path):
    s = ArenaService(Store(tmp_path / "data"))
    for _ in range(3):
        with pytest.raises(VoteRefused):
            s.submit_vote("no-such-battle", "sess", "1.2.3.4", "A")
    rep = health.health_report(s.store, health.HealthConfig.from_settings(s.settings))
    assert rep["rows"][-1]["refused_by_reason"] == {"unknown_battle": 3}
    assert rep["window"]["counted_share"] == 0.0 and rep["alert"] is None      # 3 < min_attempts
    assert rep["config"]["alert_share"] == s.settings.counted_share_alert


def test_figure(svc):
    rows = health.health_report(svc.store, health.HealthConfig(history_s=3 * H), now=T0 + 3 * H)["rows"]
    fig = health.health_figure(rows, 0.5)
    names = [t.name for t in fig.data]
    assert names == ["counted", "refused: rate_limited", "refused: too_fast", "counted share"]
    assert list(fig.data[0].y) == [30, 0, 5]
    assert list(fig.data[-1].y)[1] is None
    assert health.health_figure([]).data[0].name == "counted"


def test_bad_config_is_refused():
    with pytest.raises(ValueError):
        health.HealthConfig(alert_share=1.5)
    with pytest.raises(ValueError):
        health.HealthConfig(bucket_s=0)


def test_cli_series(tmp_path, capsys):
    from arena.__main__ import main
    s = ArenaService(Store(tmp_path / "data"))
    with pytest.raises(VoteRefused):
        s.submit_vote("no-such-battle", "sess", "1.2.3.4", "A")
    assert main(["health", "--hours", "2", "--data-dir", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].endswith("unknown_battle 1") and out[-1] == "no alert"
    assert main(["health", "--hours", "2", "--json", "--data-dir", str(tmp_path / "data")]) == 0
    assert '"unknown_battle": 1' in capsys.readouterr().out
