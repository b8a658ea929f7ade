"""`python -m arena` commands run as subprocesses against a real data dir."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import trueskill

from arena.services.service import board_order

ROOT = Path(__file__).resolve().parent.parent


def run(*args, env_dir=None, database_url=None):
    env = {k: v for k, v in os.environ.items() if k != "EMPATHY_ARENA_DATA_DIR"}
    if env_dir is not None:
        env["EMPATHY_ARENA_DATA_DIR"] = str(env_dir)
    if database_url:
        env["DATABASE_URL"] = database_url
    return subprocess.run([sys.executable, "-m", "arena", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_import_ratings_export_round_trip(tmp_path, fresh_database_url):
    data = tmp_path / "data"
    votes = tmp_path / "votes.csv"
    rows = [("m1", "m2", "m1"), ("m2", "m3", "tie"), ("m3", "m1", "m3"), ("m1", "m2", "both_bad"),
            ("m2", "m1", "m1"), ("m3", "m2", "m2")] * 5
    with votes.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model_a", "model_b", "winner", "timestamp"])
        for k, r in enumerate(rows):
            w.writerow([*r, 1_767_000_000 + k])
    p = run("import-votes", str(votes), "--data-dir", str(data))
    assert p.returncode == 0, p.stderr
    assert "imported 30 votes" in p.stdout

    p = run("ratings", "--json", "--rounds", "100", "--data-dir", str(data))
    assert p.returncode == 0, p.stderr
    table = json.loads(p.stdout)
    assert [set(r) for r in table] == [{"model", "mu", "sigma", "conservative", "bt", "bt_low", "bt_high",
                                        "bt_rank", "provisional", "votes"}] * 3
    by = {r["model"]: r for r in table}
    assert {m: by[m]["votes"] for m in by} == {"m1": 20, "m2": 25, "m3": 15}   # both-bad counted
    # the replayed TrueSkill is the package's, vote by vote in file order
    ref = {m: trueskill.Rating() for m in by}
    for a, b, w in rows:
        if w == "tie":
            ref[a], ref[b] = trueskill.rate_1vs1(ref[a], ref[b], drawn=True)
        elif w != "both_bad":
            loser = b if w == a else a
            ref[w], ref[loser] = trueskill.rate_1vs1(ref[w], ref[loser])
    for m, r in by.items():
        assert abs(r["mu"] - ref[m].mu) < 1e-9 and abs(r["sigma"] - ref[m].sigma) < 1e-9
        assert abs(r["conservative"] - (r["mu"] - 3 * r["sigma"])) < 1e-12
        # under 30 rated votes each: provisional, no Bradley-Terry number at all (not a zero-width interval)
        assert r["provisional"] and r["bt"] is None and r["bt_low"] is None and r["bt_rank"] is None
    assert table == sorted(table, key=board_order)

    # EMPATHY_ARENA_DATA_DIR is honoured when --data-dir is absent
    out = tmp_path / "export.jsonl"
    p = run("export", "--format", "jsonl", "--out", str(out), env_dir=data)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 30 and lines[0]["winner"] == "m1" and lines[0]["created_at"] == 1_767_000_000
    assert not any("ip_hash" in x or "session_id" in x or "user" in x for x in lines)
    out_csv = tmp_path / "export.csv"
    assert run("export", "--format", "csv", "--out", str(out_csv), "--data-dir", str(data)).returncode == 0
    assert out_csv.read_text().count("\n") == 31

    # an empty data dir has no votes: an empty table, not zeros
    empty = run("ratings", "--json", "--data-dir", str(tmp_path / "empty"), database_url=fresh_database_url())
    assert empty.returncode == 0 and json.loads(empty.stdout) == []


def test_import_error_reports_lines_and_changes_nothing(tmp_path):
    data = tmp_path / "data"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"model_a": "a", "model_b": "b", "winner": "a"}\n'
                   '{"model_a": "a", "model_b": "b", "winner": "c"}\n'
                   'not json\n')
    p = run("import-votes", str(bad), "--data-dir", str(data))
    assert p.returncode == 2
    assert "line 2" in p.stderr and "line 3" in p.stderr and "nothing imported" in p.stderr
    assert json.loads(run("ratings", "--json", "--data-dir", str(data)).stdout) == []


def test_pause_and_health(tmp_path):
    data = tmp_path / "data"
    assert run("pause", "m1", "--reason", "outage", "--data-dir", str(data)).returncode == 0
    from eval_backend.store import Store
    from arena.tables.storage import paused_models
    assert paused_models(Store(data)) == {"m1"}
    assert run("unpause", "m1", "--data-dir", str(data)).returncode == 0
    assert paused_models(Store(data)) == set()
    h = run("health", "--json", "--data-dir", str(data))
    assert h.returncode == 0 and json.loads(h.stdout)["counted_share"] is None


def test_import_of_deeply_nested_json_is_a_line_error(tmp_path):
    data = tmp_path / "data"
    bad = tmp_path / "deep.jsonl"
    bad.write_text('{"model_a": "a", "model_b": "b", "winner": "a"}\n'
                   '{"model_a": ' + "[" * 5000 + "]" * 5000 + "}\n"
                   '{"model_a": "a", "model_b": "b", "winner": "a", "reason": "' + "x" * 70_000 + '"}\n')
    p = run("import-votes", str(bad), "--data-dir", str(data))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "line 2" in p.stderr and "nests 5001 levels deep" in p.stderr
    assert "line 3" in p.stderr and "too large" in p.stderr and "nothing imported" in p.stderr


def test_boards_per_vocal_state_and_the_style_board(tmp_path):
    """import-votes takes attribute and a_*/b_* columns; `ratings --attribute` ranks on that vocal state only (with
    the vote floor), `--style` adds the style-controlled fit, `style-effects` says what length does."""
    from tests.support.vote_logs import vocal_state_log
    data, votes = tmp_path / "data", vocal_state_log(tmp_path / "votes.csv")
    assert run("import-votes", str(votes), "--data-dir", str(data)).returncode == 0

    def board(*args):
        p = run("ratings", "--json", "--rounds", "100", *args, "--data-dir", str(data))
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    sad, whisper = board("--attribute", "sad"), board("--attribute", " Whisper ")
    assert sad[0]["model"] == "ear" and whisper[-1]["model"] == "ear"
    assert sum(r["votes"] for r in sad) == 2 * 150 and all(not r["provisional"] for r in sad)
    styled = board("--style")
    assert all({"style_bt", "style_bt_low", "style_bt_high", "style_bt_rank", "style_bt_provisional",
                "style_bt_votes"} <= set(r) for r in styled)
    assert [r["bt"] for r in styled] == [r["bt"] for r in board()]     # the plain fit unchanged beside it
    assert all(r["style_bt_low"] <= r["style_bt"] <= r["style_bt_high"] for r in styled)
    p = run("style-effects", "--json", "--rounds", "100", "--data-dir", str(data))
    effects = json.loads(p.stdout)["effects"]
    assert effects["duration"]["coef"] > 0 and effects["duration"]["low"] > 0
    assert effects["loudness"]["not_fitted"] == "not measured in these battles"
    text = run("style-effects", "--rounds", "100", "--data-dir", str(data)).stdout
    assert "when one reply is twice as long as the other, it wins" in text
    bad = run("ratings", "--json", "--attribute", "grumpy", "--data-dir", str(data))
    assert bad.returncode == 2 and "not neutral, a label of the vocabulary" in bad.stderr and not bad.stdout
    # few votes on a vocal state: every model provisional, no score
    few = tmp_path / "few.csv"
    few.write_text("model_a,model_b,winner,attribute\nx,y,x,breathless\nx,y,y,breathless\n")
    assert run("import-votes", str(few), "--data-dir", str(data)).returncode == 0
    rows = board("--attribute", "breathless")
    assert {r["model"] for r in rows} == {"x", "y"} and all(r["provisional"] and r["bt"] is None for r in rows)
