"""Gradio wiring for the integrity-health view: votes counted, down-weighted, excluded and refused over time, and
why; gold checks; the alert state. The operator also sees the flagged votes and can reverse a flag
(leaderboard/flags_review.py)."""
from __future__ import annotations

import time

import gradio as gr
import pandas as pd

from arena.services.health import health_figure, live_models_line, pairs_line
from arena.tables import storage as arena_storage
from eval_backend.inert import md
from space_shell.tab_contract import PageLoad, TabHandles

from . import plots
from .flags_review import build_flags_review
from .operator_status import build_operator_status

COLUMNS = ["hour (UTC)", "served", "counted", "down-weighted", "excluded", "refused", "why (refused · excluded)",
           "gold checks passed / failed", "counted share"]
EMPTY = ["—", 0, 0, 0, 0, 0, "—", "—", "—"]


def share_text(share) -> str:
    """A counted share as a percentage ("67%"), "—" when nothing was submitted (no share, not 0%)."""
    return "—" if share is None else f"{100 * share:.0f}%"


def health_frame(rows: list[dict]) -> pd.DataFrame:
    """The hours with any activity, newest last; one row saying so when there is none (never a bare header)."""
    rows = [r for r in rows if r["served"] or r["accepted"] or r["refused"] or r.get("gold")]
    if not rows:
        return pd.DataFrame([["no battle served in this period", *EMPTY[1:]]], columns=COLUMNS)
    return pd.DataFrame([[r["start_utc"], r["served"], r.get("counted", r["accepted"]), r.get("down_weighted", 0),
                          r.get("excluded", 0), r["refused"], why_text(r),
                          gold_text(r.get("gold") or {}), share_text(r["counted_share"])] for r in rows],
                        columns=COLUMNS)


def why_text(row: dict) -> str:
    """Refusal reasons, then the flags that excluded or down-weighted votes ("excluded cadence: 4")."""
    parts = [f"{k}: {v}" for k, v in row["refused_by_reason"].items()]
    parts += [f"flagged {k}: {v}" for k, v in row.get("excluded_by_reason", {}).items()]
    return ", ".join(parts) or "—"


def gold_text(checks: dict) -> str:
    n = checks.get("pass", 0) + checks.get("fail", 0)
    return f"{checks.get('pass', 0)} / {checks.get('fail', 0)}" if n else "—"


def live_health(ctx) -> list[dict]:
    """Submitted models that battle live, with their calls, failures and pause (arena/services/live_submitted.py)."""
    submitted = getattr(ctx.live, "submitted", None) if getattr(ctx, "live", None) is not None else None
    return submitted.health() if submitted is not None else []


def aspects_line(day: dict, ever: dict) -> str:
    """How many votes carry the two aspects ("what was said", "how it sounded"), which feed the aspect boards:
    the last 24 h and all votes (arena.tables.storage.aspect_counts); no share where there is no vote."""
    def part(c: dict) -> str:
        if not c["votes"]:
            return "no votes"
        return (f"{share_text(c['said'] / c['votes'])} carry *what was said*, {share_text(c['sounded'] / c['votes'])} "
                f"*how it sounded* (of {c['votes']} votes)")
    return f"**Aspects answered:** last 24 h: {part(day)}; all votes: {part(ever)}."


def build_health_tab(ctx) -> TabHandles:
    """Renders the app's one monitor (ctx.health, whose check() also logs alerts): on page load and Refresh
    here, and on the context's own schedule (app_context.py) so alerts reach the log with no page open."""
    monitor = ctx.health
    gr.Markdown("Share of vote submissions counted in full; the others were refused, or accepted but down-weighted "
                "or excluded by the integrity checks (gold checks, agreement with the other voters, sweeps for "
                "cadence, one-model bias and rings: arena/README.md), and why. An anti-abuse rule that voids honest "
                "votes shows up here as a drop in the counted share, which raises an alert.")
    status = gr.Markdown()
    aspects = gr.Markdown(elem_id="health-aspects")      # the share of votes that feed the aspect boards
    pairs = gr.Markdown(elem_id="health-pairs")      # battles left out of matchmaking, and why (issue 22)
    plot = gr.Plot(elem_id="health-plot", show_label=False)
    table = gr.Dataframe(pd.DataFrame([["loading…", *EMPTY[1:]]], columns=COLUMNS), interactive=False,
                         max_height=300, elem_id="health-table")
    refresh = gr.Button("Refresh")

    def render():
        report = monitor.check()
        store = ctx.store
        line = aspects_line(arena_storage.aspect_counts(store, time.time() - 86400), arena_storage.aspect_counts(store))
        pairs_text = (pairs_line(ctx.arena.left_out_pairs()).capitalize() + "."
                      + (f"\n\n{md(live_models_line(live))}" if (live := live_health(ctx)) else ""))
        return (f"**{monitor.status}**", line, plots.fit(health_figure(report["rows"], monitor.cfg.alert_share)),
                health_frame(report["rows"]), pairs_text)

    outputs = [status, aspects, plot, table, pairs]
    refresh.click(render, None, outputs)
    operator = build_operator_status(ctx)        # bootstrap and Hub detail, for the operator only
    flags = build_flags_review(ctx)              # flagged votes and reversals, for the operator only
    return TabHandles(loads=(PageLoad(render, None, outputs), operator, flags))
