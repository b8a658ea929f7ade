"""The operator's Moderation tab: what the safety screen held, and the operator's Release / Keep hidden.

Operator only (leaderboard/identity.py, as the Submit tab's operator actions): the tab itself is hidden from
everyone else (app.py: `operator_only`), its page-load hook fills nothing for a non-operator, and every action
checks the operator again on the server. Held items come from the screening records (eval_backend/moderation/
ledger.py over eval_backend.safety.records): kind, strongest category and score, the screen, the text that was
screened (inert), and for a reply its audio through an operator-only expiring token route (arena/web/media.py), never
a file path. Each action is logged with the operator's name by `records.act`; a released reply is playable in
the arena at the next battle (the battle index follows the decisions' version).
"""
from __future__ import annotations

import time

import gradio as gr
import pandas as pd

from arena.web.media import audio_html
from eval_backend.inert import md, md_inline
from eval_backend.moderation import ledger
from eval_backend.moderation.replies import KIND as REPLY
from space_shell.tab_contract import PageLoad, TabHandles

COLUMNS = ["#", "kind", "category", "score", "screen", "operator action", "text"]
TEXT_CUT = 160
ACTION_LABELS = {"release": "Release", "keep_hidden": "Keep hidden"}


def top_category(result) -> tuple[str, float | None]:
    if result.status != "screened":
        return "not screened", None
    if not result.categories:
        return "—", None
    cat, score = max(result.categories.items(), key=lambda kv: kv[1])
    return cat, round(float(score), 3)


def held_frame(items: list) -> pd.DataFrame:
    """One row per held item (pure; plain-text cells)."""
    rows = []
    for it in items:
        cat, score = top_category(it.result)
        text = " ".join((it.text or "").split())
        rows.append({"#": it.id, "kind": it.kind, "category": cat, "score": score, "screen": it.result.screen,
                     "operator action": f"{it.action} by {it.action_by}" if it.action else "",
                     "text": text[:TEXT_CUT] + ("…" if len(text) > TEXT_CUT else "")})
    return pd.DataFrame(rows, columns=COLUMNS)


def item_markdown(it) -> str:
    """The whole decision as inert text."""
    cats = ", ".join(f"{md_inline(c)} {v:.2f}" for c, v in sorted(it.result.categories.items(), key=lambda kv: -kv[1])
                     if v > 0) or "none above zero"
    lines = [f"**{md_inline(it.kind)}** · screen {md_inline(it.result.screen)} · {md_inline(it.result.status)}",
             f"**Reason:** {md(it.result.reason) or '—'}", f"**Scores:** {cats}",
             f"**Crisis reading:** {'yes' if it.result.crisis else 'no'}",
             f"**Subject:** {md_inline(it.subject)}", f"**Screened text:**\n\n{md(it.text) or '—'}"]
    if it.action:
        lines.append(f"**Last action:** {md_inline(it.action)} by {md_inline(it.action_by or '')}")
    return "\n\n".join(lines)


def build_moderation_tab(ctx) -> TabHandles:
    """ctx.store (the records), ctx.identity (who is the operator), ctx.media (the held-audio tokens)."""
    ident = ctx.identity
    from gradio.context import Context
    tab = Context.block          # the gr.Tab this is built in (app.py builds it hidden: operator_only)
    with gr.Column(visible=False, elem_id="moderation-body") as body:
        gr.Markdown("Items the safety screen held (flagged, or not screenable): nothing here reaches a voter, "
                    "Browse or a release until released. Every action is logged with your name.")
        table = gr.Dataframe(headers=COLUMNS, interactive=False, max_height=360, wrap=True,
                             elem_id="moderation-table")
        with gr.Row():
            pick = gr.Dropdown(label="Held item (#)", choices=[], interactive=True, elem_id="moderation-pick")
            refresh = gr.Button("Refresh", scale=0, elem_id="moderation-refresh")
        detail = gr.Markdown(elem_id="moderation-detail")
        audio = gr.HTML(audio_html("held reply audio", None), visible=False, elem_id="moderation-audio")
        note = gr.Textbox(label="Note (logged with the action)", max_lines=2, max_length=500,
                          elem_id="moderation-note")
        with gr.Row():
            release = gr.Button("Release", elem_id="moderation-release")
            keep = gr.Button("Keep hidden", variant="stop", elem_id="moderation-keep")
        message = gr.Markdown(elem_id="moderation-message")

    def operator(request, profile):
        person = ident.who(request, profile) if request is not None else None
        return person if person is not None and person.is_operator else None

    def items_by_id() -> dict[int, object]:
        return {it.id: it for it in ledger.held(ctx.store)}

    def moderation_listing(picked, request: gr.Request, profile: gr.OAuthProfile | None):
        if operator(request, profile) is None:          # nothing of the queue leaves the server
            return (gr.update(visible=False), gr.update(visible=False), pd.DataFrame(columns=COLUMNS),
                    gr.update(choices=[], value=None))
        items = items_by_id()
        choices = [(f"#{i} {it.kind}", i) for i, it in items.items()]
        value = picked if picked in items else (choices[0][1] if choices else None)
        return (gr.update(visible=True), gr.update(visible=True), held_frame(list(items.values())),
                gr.update(choices=choices, value=value))

    def moderation_show(picked, request: gr.Request, profile: gr.OAuthProfile | None):
        if operator(request, profile) is None or picked is None:
            return "", gr.update(visible=False, value=audio_html("held reply audio", None))
        it = items_by_id().get(picked)
        if it is None:
            return "_No longer held (refresh)._", gr.update(visible=False)
        url = ctx.media.held_url(it.subject, time.time()) if it.kind == REPLY else None
        return item_markdown(it), gr.update(visible=bool(url), value=audio_html("held reply audio", url))

    def act(action: str, picked, note_v, request, profile):
        person = operator(request, profile)
        if person is None:
            return "Operator only."
        it = items_by_id().get(picked)
        if it is None:
            return "Choose a held item first (it may have been released meanwhile)."
        ledger.act(ctx.store, it.kind, it.subject, action, person.name, (note_v or "").strip())
        return f"{ACTION_LABELS[action]}: #{it.id} ({md_inline(it.kind)}), logged as {md_inline(person.name)}."

    def moderation_release(picked, note_v, request: gr.Request, profile: gr.OAuthProfile | None):
        return act("release", picked, note_v, request, profile)

    def moderation_keep(picked, note_v, request: gr.Request, profile: gr.OAuthProfile | None):
        return act("keep_hidden", picked, note_v, request, profile)

    refresh.click(moderation_listing, [pick], [tab, body, table, pick], api_visibility="private")
    pick.change(moderation_show, [pick], [detail, audio], api_visibility="private")
    for button, fn in ((release, moderation_release), (keep, moderation_keep)):
        button.click(fn, [pick, note], [message], api_visibility="private").then(
            moderation_listing, [pick], [tab, body, table, pick], api_visibility="private")
    return TabHandles(loads=(PageLoad(moderation_listing, [pick], [tab, body, table, pick], dict(api_visibility="private")),))
