"""The arena tab's "Use my voice" section: consent, record (or upload), two live replies, the ordinary vote.

Thin: `LiveService` (arena/services/live.py) decides everything. The section fills the arena tab's own battle components
(its server-side state, the three players, the listening meter, the vote buttons), so a live battle is voted on
by exactly the code that votes on benchmark battles; after the vote, the section shows what was heard.

Consent comes first and says plainly what is kept and for how long; the two answers (store for scoring;
include in the public data) are separate checkboxes, and the recorder appears only once they are given.
"""
from __future__ import annotations

import gradio as gr

from arena.services.live_intake import LiveRefused
from arena.ui.arena_tab import AUDIO_LABELS, _meter_html, build_arena_tab, clip_html, message_markdown
from arena.ui.opening_banner import build_opening_banner
from eval_backend import uploads
from eval_backend.inert import md
from space_shell import client_address
from space_shell.tab_contract import PageLoad, TabHandles

SEND_QUEUE = "arena_live"


def consent_markdown(settings) -> str:
    hours = settings.retention_s / 3600
    keep = f"{settings.keep_days:g} days" if settings.keep_days else "as long as the arena runs"
    sign_in = "\n- You need to **sign in with Hugging Face** to use your voice here." if settings.require_sign_in else ""
    return f"""### Use my voice
Say something about how you feel (at most **{settings.max_utterance_s:g} seconds**). Two anonymous models answer
you live; you then vote for the more empathetic reply, as in any battle. Before you record:

- **What is sent:** your recording goes to the two models that answer (models this arena is configured with), and
  it is transcribed here so the reveal can show what was heard. Every text is screened for safety.
- **What is kept, and for how long:** without the first box below, your recording, its transcript and the two
  replies are **deleted {hours:g} hour{'s' if hours != 1 else ''} after the battle**. With it, they are kept for
  {keep} so the arena's scoring can use them. Your vote itself (which reply won) is always kept, without audio.
- **Public data:** only with the second box may your recording and its transcript appear in a public data release.
{sign_in}"""


def build_arena_live_tab(ctx) -> TabHandles:
    """The Arena tab (arena/ui/arena_tab.py) with the "Use my voice" section below it when `ctx.live` is set (the
    tab contract of space_shell/tab_contract.py: the section's page-load hook joins the tab's own)."""
    opening = build_opening_banner(ctx)       # "the arena opens in ~1 min" until a battle can be served
    handles = build_arena_tab(ctx)
    live = getattr(ctx, "live", None)
    if live is None:
        return TabHandles(loads=(opening, *handles.loads))
    return TabHandles(loads=(opening, *handles.loads, *build_live_section(live, handles.parts)))


def build_live_section(live, parts: dict) -> tuple[PageLoad, ...]:
    """Build the section inside the arena tab. `parts`: the arena tab's battle components (`ArenaTabHandles.parts`:
    its state, players, meter, vote buttons and reveal). Returns the section's page-load hook (the status line)."""
    s = live.settings
    consent_state = gr.State({})        # {"store": bool, "release": bool} once the consent step is done
    def show_status():
        n = len(live.reachable())
        if n >= 2:
            return f"Live mode is ready: {n} models can answer."
        return ("Live mode is not available yet: the models that answer live are not reachable (they may be "
                "starting).")

    with gr.Accordion("🎙️ Use my voice: two models answer you live", open=False, elem_id="live-section") as section:
        status = gr.Markdown(elem_id="live-status")      # filled on every page load (the hook returned below)
        with gr.Group(visible=True, elem_id="live-consent") as consent_box:
            gr.Markdown(consent_markdown(s))
            store_box = gr.Checkbox(label="Store my recording, its transcript and the replies for scoring "
                                          f"(else they are deleted after {s.retention_s / 3600:g} h)",
                                    value=False, elem_id="live-consent-store")
            release_box = gr.Checkbox(label="Include my recording and its transcript in the public data release "
                                            "(needs the first box)", value=False, elem_id="live-consent-release")
            agree = gr.Button("I have read this: continue", elem_id="live-consent-ok")
        with gr.Group(visible=False, elem_id="live-recorder") as recorder:
            # format=None: no conversion before the handler (Gradio would decode any other format with ffmpeg);
            # the handler reads only what libsndfile reads (arena/services/live.py)
            mic = gr.Audio(sources=["microphone", "upload"], type="filepath", format=None, elem_id="live-mic",
                           label=f"Your voice (at most {s.max_utterance_s:g} s; play it back before sending)")
            send = gr.Button("Send to two models", variant="primary", elem_id="live-send")
            change = gr.Button("Change my consent answers", size="sm", elem_id="live-consent-change")
        progress = gr.Markdown(elem_id="live-progress")
        crisis = gr.Markdown(visible=False, elem_id="live-crisis")
        heard = gr.Markdown(visible=False, elem_id="live-heard")

    def give_consent(store_v: bool, release_v: bool):
        if release_v and not store_v:
            return ({}, gr.update(), gr.update(),
                    "⚠️ A recording can enter the public data only if it may be stored: tick both or only the first.")
        return ({"store": bool(store_v), "release": bool(release_v)}, gr.update(visible=False),
                gr.update(visible=True), "")

    def reset_consent():
        return {}, gr.update(visible=True), gr.update(visible=False), ""

    state, buttons = parts["state"], parts["buttons"]
    locked = [gr.update(interactive=False)] * len(buttons)

    def asking():
        return "⏳ Two models are listening and answering…", gr.update(visible=False, value=""), \
            gr.update(visible=False, value="")

    def start(path, consent: dict, st: dict, request: gr.Request, profile: gr.OAuthProfile | None):
        keep = [gr.update()] * (len(battle_outputs))

        def refuse(text: str):
            # the state is kept (an open battle stays votable) but marked, so the crisis check that follows a
            # send does not show an earlier battle's notice again
            return ({**(st or {}), "refused": True}, *keep[1:], message_markdown(text), gr.update(visible=False))
        if not consent:
            return refuse("Answer the consent questions first.")
        if not path:
            return refuse("Record (or upload) something first.")
        try:      # only a file this browser uploaded (eval_backend/uploads.py): the path is the sender's choice
            data = uploads.read_upload(path, request, s.max_upload_bytes)
        except uploads.UploadRefused as exc:
            return refuse(exc.message)
        session = st.get("session") or live.arena.new_session()
        ip = client_address.from_request(request) or "unknown"
        user = getattr(profile, "username", None) if profile is not None else None
        try:
            b = live.battle_sync(data, session, ip, user=user, consent_store=consent["store"],
                                 consent_release=consent["release"])
        except LiveRefused as exc:
            return refuse(exc.message)
        uploads.consume(path)       # the battle keeps its own copy (retention, arena/tables/live_store.py): none stays here
        new_state = {"session": session, "battle_id": b.battle_id, "voted": False, "live": True}
        return (new_state, gr.update(visible=False, value=""),
                clip_html(AUDIO_LABELS["user"], b.audio["user"]), clip_html(AUDIO_LABELS["a"], b.audio["A"]),
                clip_html(AUDIO_LABELS["b"], b.audio["B"]), _meter_html(b.battle_id, b.listening),
                *locked, gr.update(value=None, interactive=True), gr.update(value=None, interactive=True),
                gr.update(value="", interactive=True), "", gr.update(visible=False, value=""),
                gr.update(visible=False), gr.update(visible=True),       # next hidden, Skip shown (as any battle)
                "✅ Both replies are ready: play the three clips above, then vote.",
                gr.update(visible=bool(b.crisis_notice), value=b.crisis_notice or ""))

    def after_vote(st: dict):
        """Once the battle is voted on, show what was heard (the voter's own words, as inert text)."""
        if not st.get("live") or not st.get("voted"):
            return gr.update(visible=False, value="")
        found = live.heard(st["battle_id"], st.get("session") or "", wait_s=10.0)
        words = found.transcript if found is not None else None
        return gr.update(visible=True, value="**What we heard you say:** " + (md(words) if words else "(nothing)"))

    battle_outputs = parts["battle_outputs"]
    agree.click(give_consent, [store_box, release_box], [consent_state, consent_box, recorder, progress],
                api_visibility="private")
    change.click(reset_consent, None, [consent_state, consent_box, recorder, progress], api_visibility="private")
    def crisis_after(st: dict):
        """The battle does not wait for the voter's transcript; its crisis notice (if any) comes right after."""
        if not st.get("live") or st.get("voted") or st.get("refused"):
            return gr.update()
        found = live.heard(st["battle_id"], st.get("session") or "", wait_s=10.0)
        notice = found.crisis_notice if found is not None else None
        return gr.update(visible=True, value=notice) if notice else gr.update()

    send.click(asking, None, [progress, crisis, heard], api_visibility="private", show_progress="hidden").then(
        start, [mic, consent_state, state], [*battle_outputs, progress, crisis],
        concurrency_limit=s.concurrency, concurrency_id=SEND_QUEUE, api_visibility="private").then(
        crisis_after, [state], [crisis], api_visibility="private", show_progress="hidden")
    parts["reveal"].change(after_vote, [state], [heard], api_visibility="private", show_progress="hidden")
    section.expand(show_status, None, status, api_visibility="private", show_progress="hidden")
    return (PageLoad(show_status, None, status, dict(api_visibility="private", show_progress="hidden")),)
