"""The operator's service status on the Integrity health tab: the bootstrap's stages and errors and the Hub sync
state (e.g. "HF_HUB_OFFLINE=1: serving local data only…"). Shown only to the operator (leaderboard/identity.py);
the public sees the plain line of arena/ui/opening_banner.py instead. Everything here is also in the log."""
from __future__ import annotations

import gradio as gr

from space_shell.tab_contract import PageLoad


def build_operator_status(ctx) -> PageLoad:
    """A hidden Markdown, filled and shown on page load when the visitor is the operator."""
    box = gr.Markdown(visible=False, elem_id="operator-status")

    def render(request: gr.Request, profile: gr.OAuthProfile | None = None):
        person = ctx.identity.who(request, profile)
        if person is None or not person.is_operator:
            return gr.update(visible=False, value="")
        return gr.update(visible=True, value="**Service status (operator)**\n\n" + ctx.operator_status_line())

    return PageLoad(render, None, [box], {"show_progress": "hidden"})
