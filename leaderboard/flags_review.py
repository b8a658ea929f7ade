"""The operator's review of flagged votes, on the Integrity health tab: every (kind, subject) the integrity checks
flagged (arena/services/vote_flags.py: gold checks, agreement, cadence, one-model bias, rings), how many votes, why, and
the operator's Reverse (the votes count again, for this subject and kind, through later sweeps too) or Restore.

Operator only, like the Moderation tab (leaderboard/identity.py): hidden from everyone else, its load hook fills
nothing for a non-operator, and each action checks the operator again on the server and is logged with their
name (arena_flag_decisions). Subjects are shown as stored: a session only as a hash, an address as a hash prefix.
"""
from __future__ import annotations

import gradio as gr
import pandas as pd

from arena.services import vote_flags
from eval_backend.inert import md_inline
from space_shell.tab_contract import PageLoad

COLUMNS = ["#", "kind", "subject", "votes", "weight", "why (one example)", "state"]
ACTIONS = {"reverse": "Reversed", "restore": "Restored"}


def flags_frame(groups: list[dict]) -> pd.DataFrame:
    """One row per flagged (kind, subject), plain text (pure)."""
    return pd.DataFrame([{"#": i, "kind": g["kind"], "subject": g["subject"], "votes": g["votes"],
                          "weight": "excluded" if g["weight"] == 0 else f"× {g['weight']:g}",
                          "why (one example)": g["detail"],
                          "state": g["state"] + (f" by {g['decided_by']}" if g["decided_by"] else "")}
                         for i, g in enumerate(groups, start=1)], columns=COLUMNS)


def build_flags_review(ctx) -> PageLoad:
    """A hidden column, filled and shown on page load (and Refresh) when the visitor is the operator."""
    with gr.Column(visible=False, elem_id="flags-review") as body:
        gr.Markdown("**Flagged votes (operator).** Votes the integrity checks excluded or down-weighted stay in "
                    "the log and out of the public fit. Reverse a flag the checks got wrong: its votes count "
                    "again, also through later sweeps. Every decision is logged with your name.")
        table = gr.Dataframe(headers=COLUMNS, interactive=False, max_height=320, wrap=True, elem_id="flags-table")
        with gr.Row():
            pick = gr.Dropdown(label="Flag (#)", choices=[], interactive=True, elem_id="flags-pick")
            refresh = gr.Button("Refresh", scale=0, elem_id="flags-refresh")
        note = gr.Textbox(label="Note (logged with the decision)", max_lines=2, max_length=500, elem_id="flags-note")
        with gr.Row():
            reverse = gr.Button("Reverse (count these votes)", elem_id="flags-reverse")
            restore = gr.Button("Restore the flag", variant="stop", elem_id="flags-restore")
        message = gr.Markdown(elem_id="flags-message")

    def operator(request, profile):
        person = ctx.identity.who(request, profile) if request is not None else None
        return person if person is not None and person.is_operator else None

    def flags_listing(picked, request: gr.Request, profile: gr.OAuthProfile | None):
        if operator(request, profile) is None:           # nothing of the flags leaves the server
            return gr.update(visible=False), pd.DataFrame(columns=COLUMNS), gr.update(choices=[], value=None)
        groups = vote_flags.groups(ctx.store)
        choices = [(f"#{i} {g['kind']} · {g['subject']} ({g['state']})", f"{g['kind']}|{g['subject']}")
                   for i, g in enumerate(groups, start=1)]
        keys = [c[1] for c in choices]
        return (gr.update(visible=True), flags_frame(groups),
                gr.update(choices=choices, value=picked if picked in keys else (keys[0] if keys else None)))

    def decide(action: str, picked, note_v, request, profile) -> str:
        person = operator(request, profile)
        if person is None:
            return "Operator only."
        if not picked or "|" not in picked:
            return "Choose a flag first."
        kind, subject = picked.split("|", 1)
        if not any(g["kind"] == kind and g["subject"] == subject for g in vote_flags.groups(ctx.store)):
            return "That flag is gone (a later sweep no longer raises it): refresh."
        vote_flags.decide(ctx.store, kind, subject, action, person.name, (note_v or "").strip() or None)
        return f"{ACTIONS[action]}: {md_inline(kind)} flags of {md_inline(subject)}, logged as {md_inline(person.name)}."

    def flags_reverse(picked, note_v, request: gr.Request, profile: gr.OAuthProfile | None):
        return decide("reverse", picked, note_v, request, profile)

    def flags_restore(picked, note_v, request: gr.Request, profile: gr.OAuthProfile | None):
        return decide("restore", picked, note_v, request, profile)

    outputs = [body, table, pick]
    refresh.click(flags_listing, [pick], outputs, api_visibility="private")
    for button, fn in ((reverse, flags_reverse), (restore, flags_restore)):
        button.click(fn, [pick, note], [message], api_visibility="private").then(
            flags_listing, [pick], outputs, api_visibility="private")
    return PageLoad(flags_listing, [pick], outputs, {"api_visibility": "private"})
