"""Gradio wiring for the integrity-health view: counted vs refused votes over time, and the alert state."""
from __future__ import annotations

import gradio as gr
import pandas as pd

from arena.health import health_figure
from eval_backend.tab_contract import PageLoad, TabHandles

from .operator_status import build_operator_status


def build_health_tab(ctx) -> TabHandles:
    """Renders the app's one monitor (ctx.health, whose check() also logs alerts): on page load and Refresh
    here, and on the context's own schedule (app_context.py) so alerts reach the log with no page open."""
    monitor = ctx.health
    gr.Markdown("Share of vote submissions that were counted, and why the others were refused. An anti-abuse "
                "rule that voids honest votes shows up here as a drop in the counted share.")
    status = gr.Markdown()
    plot = gr.Plot()
    table = gr.Dataframe(interactive=False, max_height=300)
    refresh = gr.Button("Refresh")

    def render():
        report = monitor.check()
        rows = [r for r in report["rows"] if r["served"] or r["accepted"] or r["refused"]]
        frame = pd.DataFrame([{"hour (UTC)": r["start_utc"], "served": r["served"], "counted": r["accepted"],
                               "refused": r["refused"],
                               "refused by reason": ", ".join(f"{k}: {v}" for k, v in r["refused_by_reason"].items()),
                               "counted share": r["counted_share"]} for r in rows])
        return f"**{monitor.status}**", health_figure(report["rows"], monitor.cfg.alert_share), frame

    refresh.click(render, None, [status, plot, table])
    operator = build_operator_status(ctx)        # bootstrap and Hub detail, for the operator only
    return TabHandles(loads=(PageLoad(render, None, [status, plot, table]), operator))
