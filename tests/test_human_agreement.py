"""Metric-human agreement: a seeded vote log whose preferences follow one metric and not another; the CLI on a
real store (votes imported through `python -m arena import-votes`, results documents on disk)."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arena.tables.storage import VoteRow
from eval_backend.scoring.human_agreement import agreement_rows, scores_from_docs

ROOT = Path(__file__).resolve().parent.parent
FOLLOW_P = 0.8
N = 600


def seeded_log(seed: int = 7):
    """Per request: two models' scores on three metrics and one vote. The person prefers (on every axis) the
    reply `follow` scores higher with probability FOLLOW_P; `noise` is independent of the vote; `wer` is
    `follow` negated with lower-is-better; `flat` scores both replies the same."""
    rng = np.random.default_rng(seed)
    scores = {("m1", "h"): {"follow": {}, "noise": {}, "wer": {}, "flat": {}},
              ("m2", "h"): {"follow": {}, "noise": {}, "wer": {}, "flat": {}}}
    votes, followed = [], 0
    for i in range(N):
        rid = f"conversation/s{i}/target"
        f1, f2 = rng.random(2)
        for model, f in (("m1", f1), ("m2", f2)):
            s = scores[(model, "h")]
            s["follow"][rid], s["noise"][rid], s["wer"][rid], s["flat"][rid] = f, rng.random(), -f, 0.5
        follow = rng.random() < FOLLOW_P
        followed += follow
        slot = ("A" if f1 > f2 else "B") if follow else ("B" if f1 > f2 else "A")
        votes.append(VoteRow(i + 1, "m1", "m2", "m1" if slot == "A" else "m2", slot, slot, slot, None, None, None,
                             None, "h", rid, 0.0, "import"))
    # not decisive: a tie and a "both bad" vote, and a vote on a request no metric scored
    votes.append(VoteRow(N + 1, "m1", "m2", "tie", "tie", "tie", "tie", None, None, None, None, "h",
                         "conversation/s0/target", 0.0, "import"))
    votes.append(VoteRow(N + 2, "m1", "m2", "both_bad", "both_bad", None, None, None, None, None, None, "h",
                         "conversation/s1/target", 0.0, "import"))
    votes.append(VoteRow(N + 3, "m1", "m2", "m1", "A", None, None, None, None, None, None, "h", "asr/x/target", 0.0,
                         "import"))
    return votes, scores, followed / N


def test_followed_metric_matches_the_seed_and_an_unrelated_one_sits_at_chance():
    votes, scores, share = seeded_log()
    rows = {(r.metric, r.axis): r for r in agreement_rows(votes, scores, {"follow": True, "noise": True,
                                                                          "wer": False, "flat": True})}
    for axis in ("overall", "said", "sounded"):
        f = rows[("follow", axis)]
        assert f.n == N and f.low <= share <= f.high and f.agree == pytest.approx(share)
        assert f.low > 0.7, f                      # well away from chance
        noise = rows[("noise", axis)]
        assert noise.n == N and noise.low <= 0.5 <= noise.high and noise.high < f.low, noise
        # lower-is-better is read the right way round
        assert rows[("wer", axis)].agree == f.agree
        flat = rows[("flat", axis)]
        assert flat.agree == 0.0 and flat.ties == N
    # the tie, the "both bad" vote and the unscored request are not counted
    assert all(r.n == N for r in rows.values())


def test_axes_count_only_their_own_decisive_votes():
    votes, scores, _ = seeded_log()
    # the person says nothing about the words on half of the votes
    halved = [dataclasses.replace(v, said=None) if v.id % 2 else v for v in votes]
    rows = {(r.metric, r.axis): r for r in agreement_rows(halved, scores, {"follow": True})}
    assert rows[("follow", "overall")].n == N and rows[("follow", "said")].n == N // 2


def _docs_for(scores: dict) -> list[dict]:
    docs = []
    for (model, h), per in scores.items():
        docs.append({"manifest": {"model": model, "benchmark": {"hash": h}, "timestamp": "2026-01-01T00:00:00"},
                     "metrics": {m: {"per_item": items, "higher_is_better": m != "wer"} for m, items in per.items()}})
    return docs


def test_scores_from_docs_keeps_the_newest_document_per_model_and_benchmark():
    _, scores, _ = seeded_log()
    docs = _docs_for(scores)
    older = json.loads(json.dumps(docs[0]))
    older["manifest"]["timestamp"] = "2025-01-01T00:00:00"
    older["metrics"]["follow"]["per_item"] = {}
    got, direction = scores_from_docs([older, *docs])
    assert got[("m1", "h")]["follow"] == scores[("m1", "h")]["follow"] and direction["wer"] is False


def test_cli_on_a_real_store(tmp_path):
    votes, scores, share = seeded_log()
    data = tmp_path / "data"
    for doc in _docs_for(scores):
        folder = data / "results" / doc["manifest"]["model"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "demo.json").write_text(json.dumps(doc))
    lines = [json.dumps({"model_a": v.model_a, "model_b": v.model_b, "winner": v.winner, "said": v.said,
                         "sounded": v.sounded, "request_id": v.request_id, "benchmark_hash": v.benchmark_hash})
             for v in votes]
    (tmp_path / "votes.jsonl").write_text("\n".join(lines) + "\n")
    env = {**os.environ}
    run = lambda *a: subprocess.run([sys.executable, "-m", *a], cwd=ROOT, env=env, capture_output=True,  # noqa: E731
                                    text=True, timeout=300)
    done = run("arena", "import-votes", str(tmp_path / "votes.jsonl"), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    done = run("leaderboard", "agreement", "--data-dir", str(data), "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert set(rows[0]) == {"metric", "axis", "agree", "n", "low", "high", "ties"}
    got = {(r["metric"], r["axis"]): r for r in rows}
    assert got[("follow", "sounded")]["n"] == N and got[("follow", "sounded")]["agree"] == pytest.approx(share)
    assert got[("noise", "overall")]["low"] <= 0.5 <= got[("noise", "overall")]["high"]
    text = run("leaderboard", "agreement", "--data-dir", str(data))
    assert text.returncode == 0 and "follow" in text.stdout


def test_benchmark_board_shows_the_table_and_no_visitor_judge_button(tmp_path):
    import types

    import gradio as gr

    from eval_backend.store import Store
    from leaderboard.bench_tab import build_bench_tab, metric_agreement_frame

    votes, scores, share = seeded_log()
    docs = {d["manifest"]["model"]: d for d in _docs_for(scores)}
    ctx = types.SimpleNamespace(store=Store(tmp_path / "data"), benchmark=None,
                                arena=types.SimpleNamespace(votes=lambda: votes))
    frame = metric_agreement_frame(ctx, docs)
    follow = frame[(frame["metric"] == "follow") & (frame["axis"] == "overall")].iloc[0]
    assert follow["agrees with people"] == pytest.approx(share, abs=1e-3) and follow["decisive votes"] == N
    empty = metric_agreement_frame(types.SimpleNamespace(store=ctx.store, benchmark=None, arena=None), docs)
    assert empty.iloc[0]["metric"].startswith("not computed")
    with gr.Blocks() as demo:
        build_bench_tab(ctx)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert "bench-metric-agreement" in ids and "bench-judge" not in ids
    # nothing on the page can start a judge: no button mentions one
    labels = [str(getattr(b, "value", "")) for b in demo.blocks.values() if isinstance(b, gr.Button)]
    assert not any("judge" in x.lower() for x in labels), labels
