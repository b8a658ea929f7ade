"""The arena's Gradio tab: a blind battle between two models' spoken replies.

Thin by design: every decision (which pair, whether a vote counts, the ratings)
belongs to `ArenaService`; this module only wires events to it.

- The session is issued and signed by the server (`service.new_session`) and kept
  in the tab's gr.State, which lives on the server: the browser cannot choose it
  (Gradio's `session_hash` is chosen by the browser). The user is the HF OAuth
  profile (None locally), the IP the client address (space_shell/client_address.py;
  the service salts and hashes it). The in-memory limits (arena/core/abuse.py) are
  checked before a battle or vote goes to the writer thread. The browser never
  holds a model name before the vote.
- Audio: plain <audio> elements whose `src` is the battle's clip route
  (arena/web/media.py: battle id + clip, never a file path), so Gradio is never
  handed a file from the data dir.
- Listening: one rule for page and server (arena/core/listening.py). The battle
  carries the rule's numbers (per clip: seconds to hear; the tolerance; the
  fastest playback rate, which the page enforces on its players). The page
  measures each clip's seconds actually played from its <audio> element's
  `played` ranges (so clips played together or at 2x count honestly), shows a
  countdown, unlocks the vote buttons when every clip is covered, and sends
  those numbers and the order the clips were first played with the vote; the
  service applies the same rule to them ("not yet" is shown, not logged).
- Keyboard: 1/a = A better, 2/b = B better, 3/t = tie, 4/x = both bad,
  p = play all in order, n = skip the open battle (or the next one), Enter =
  send a vote that waits for its aspects; a vote key pressed before the vote
  unlocks says why instead. The hints show only on devices with a keyboard
  (arena/ui/layout_css.py). The scripts are arena/ui/arena_page_js.py.
- The two aspects (what was said, how it sounded) are in view beside the vote;
  answered before the overall vote they go with it, else the overall vote
  waits (names hidden) until both are answered or "Send my vote" is pressed.
- Layout (phone first; the CSS is arena/ui/layout_css.py): the start / next button
  and Skip at the top, then the user's clip and the two replies (stacked on a
  phone), the meter and the vote row (fixed at the bottom of a phone's screen
  while a battle is open). Nothing empty is shown before a battle.
- Reveal on the panels: after the vote each player is relabelled with its
  model's name and vote count, all playback stops, the meter goes and the
  confirmation and "Next battle" come on screen; the transcripts follow below.
- Skip: closes the open battle without a vote (service.skip_battle: no rating,
  no refusal, no abuse counter) and serves the next one; "Next"/"Start" also
  skips an open battle (the live section's, say) before serving another.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

import gradio as gr

from arena.core.abuse import Refused
from arena.services.service import NoBattleAvailable, NotYet, SkipRefused, VoteRefused
from arena.services.writer import run_write
from arena.ui import pow_ui
from arena.ui.arena_page_js import AFTER_VOTE_JS, LISTEN_JS, METER_JS, PLAY_ALL_JS
from arena.web.media import audio_html, battle_clip_url
from eval_backend import safejson
from eval_backend.inert import md, md_inline
from space_shell import client_address
from space_shell.tab_contract import TabHandles

AUDIO_IDS = {"user": "arena-audio-user", "a": "arena-audio-a", "b": "arena-audio-b"}
AUDIO_LABELS = {"user": "The user says", "a": "Reply A", "b": "Reply B"}
VOTE_IDS = {"A": "arena-vote-a", "B": "arena-vote-b", "tie": "arena-vote-tie", "both_bad": "arena-vote-bad"}
# the keys' "(1)"... suffixes are CSS (arena/ui/layout_css.py), shown only on devices with a keyboard
VOTE_LABELS = {"A": "👈 A is better", "B": "👉 B is better", "tie": "🤝 Tie", "both_bad": "👎 Both bad"}
SUB_CHOICES = [("A", "A"), ("B", "B"), ("Tie", "tie")]
AXES_NOTE = "**Also judge two aspects** (optional; before your overall vote, or right after it):"


def pending_note(slot: str) -> str:
    return (f"**Your vote: {VOTE_LABELS[slot]}, not sent yet.** Answer both aspects to send it, or press "
            "**Send my vote**. The names are shown once it is sent.")
WRITE_QUEUE = "arena_writes"

LEAD = ("**Voice arena:** hear what the user said, then two anonymous spoken replies; vote for the one that answers "
        "**more empathetically**, in its words *and* its voice. Names are revealed after your vote.")
HELP = """The vote buttons unlock once you have heard the start of each clip (the countdown shows how long is left;
clips may play together, or at up to 2× speed). Can't judge this one? **Skip** it: a skip is not counted anywhere.
"""
KEYS_HELP = ("**Keys:** `1`/`a` A better · `2`/`b` B better · `3`/`t` tie · `4`/`x` both bad · `p` play all in order · "
             "`n` skip / next battle · `Enter` send a vote that waits for its aspects")

def clip_html(label: str, url: str | None) -> str:
    """A clip's player; preloaded, so the meter knows each clip's length at once."""
    return audio_html(label, url, preload="auto")


def revealed_clip_html(slot: str, side, url: str, won: bool) -> str:
    """A reply's player after the vote: the model's name (inert: escaped) and its vote count after this vote.
    No rating number: the board's headline is Bradley–Terry with an interval (TrueSkill, which the vote
    updates, is behind its "All columns"), so the reveal points there instead of showing a number the board
    hides. A new <audio> element, so nothing keeps playing from before the vote."""
    rating = (f"{side.votes} vote{'' if side.votes == 1 else 's'} · rank on the Arena leaderboard"
              if side.rating is not None else "a check clip, not a model")     # a gold battle (arena/services/gold.py)
    return (f'<div class="media-clip arena-revealed"><div class="media-clip-label"><strong>{slot}: '
            f'{html.escape(side.model)}</strong>{" 🏆" if won else ""} <span class="arena-rating">{rating}</span></div>'
            f'<audio controls preload="auto" src="{html.escape(url)}" '
            f'aria-label="Reply {slot}: {html.escape(side.model)}"></audio></div>')


def _meter_html(battle_id: str | None, listening: dict | None, text: str = "") -> str:
    """The meter: `listening` is the battle's rule payload (listening.ListenRule.payload), read by METER_JS."""
    hint = '<span class="arena-meter-hint" role="status" aria-live="polite"></span>'
    live = '<span class="arena-meter-live visually-hidden" aria-live="polite"></span>'   # METER_JS: start, unlock
    if not battle_id:
        return f'<div class="arena-meter"><span class="arena-meter-status">{html.escape(text)}</span> {hint}</div>'
    return (f'<div class="arena-meter" data-battle="{html.escape(battle_id)}" '
            f'data-listen="{html.escape(json.dumps(listening or {}))}">'
            f'<span class="arena-meter-status">Play each clip to unlock the vote.</span> {hint}{live}</div>')


def _identity(st: dict, request: gr.Request | None, profile: gr.OAuthProfile | None
              ) -> tuple[str | None, str, str | None]:
    session = st.get("session")          # server-issued, from the server-side gr.State
    ip = client_address.from_request(request) or "unknown"
    user = getattr(profile, "username", None) if profile is not None else None
    return session, ip, user


MAX_LISTEN_REPORT_BYTES = 2048


def listen_report(text: str | None, battle_id: str | None) -> dict | None:
    """The page's listen report for this battle (None when absent, unreadable or for another battle: then the
    service sees no listening, and answers "not yet")."""
    try:
        report = safejson.loads(text or "null", max_depth=3, max_bytes=MAX_LISTEN_REPORT_BYTES)
    except ValueError:
        return None
    if not isinstance(report, dict) or report.get("battle_id") != battle_id:
        return None
    return report


# After a gold battle (arena/services/gold.py): no rating changed; the voter learns it was a check and how it went
GOLD_THANKS = {"pass": "✅ Thank you! This one was a check: one clip was made unlistenable on purpose, and you "
                       "picked the real reply. Checks like this keep the votes honest.",
               "fail": "This one was a check: one clip was made unlistenable on purpose (see below). Please listen "
                       "to both replies before voting: votes that miss these checks count for less.",
               "neutral": "This one was a check: one clip was made unlistenable on purpose (see below). Thank you!"}


def reveal_markdown(result) -> str:
    """What each reply said, under its model's name (names and transcripts: inert text); the names and ratings
    are also on the players themselves (revealed_clip_html)."""
    lines = ["### What each reply said"]
    for slot, side in (("A", result.a), ("B", result.b)):
        won = " 🏆" if result.winner == side.model else ""
        lines.append(f"**{slot}: {md_inline(side.model)}**{won}")
        if side.transcript:
            lines.append(f"> {md(side.transcript)}")
    return "\n\n".join(lines)


def context_markdown(context_text: str | None) -> str:
    """The battle's context (benchmark text) as inert Markdown; empty when there is none."""
    return md(context_text) if context_text else ""


def message_markdown(text: str) -> str:
    """A service message (it may quote a model name or a stored text) behind a warning sign."""
    return f"⚠️ {md(text)}"


@dataclass(frozen=True)
class ArenaTabHandles(TabHandles):
    """The tab contract's handles plus the battle's components, which the live section reuses."""
    parts: dict = field(default_factory=dict)


def build_arena_tab(ctx) -> ArenaTabHandles:
    """Build the arena tab's components inside the current gr.Blocks/gr.Tab context (ctx.arena: the service).
    The handles also carry the battle's components (state, vote buttons, battle outputs, reveal) for the live
    section (arena/ui/live_ui.py)."""
    service = ctx.arena

    state = gr.State({})     # {"session", "battle_id", "voted"}: per browser session, server-side only
    gr.Markdown(LEAD, elem_id="arena-lead")
    with gr.Row(elem_id="arena-top"):
        next_btn = gr.Button("Start a battle", variant="primary", elem_id="arena-next", scale=3)
        skip_btn = gr.Button("Skip", visible=False, elem_id="arena-skip", scale=1)
    message = gr.Markdown(elem_id="arena-message")
    context_md = gr.Markdown(visible=False, elem_id="arena-context")
    # the calm help notice, when a reply in this battle was screened as crisis (eval_backend/safety)
    notice_md = gr.Markdown(visible=False, elem_id="arena-crisis")
    def player(key: str) -> gr.HTML:
        return gr.HTML(clip_html(AUDIO_LABELS[key], None), elem_id=AUDIO_IDS[key], js_on_load=None,
                       container=True, padding=True)

    with gr.Column(elem_id="arena-players"):       # hidden until a battle has clips (arena/ui/layout_css.py)
        audio_user = player("user")
        with gr.Row(elem_id="arena-replies"):        # side by side; stacked on a phone
            audio_a, audio_b = player("a"), player("b")
    meter = gr.HTML(_meter_html(None, None, ""), js_on_load=METER_JS, elem_id="arena-meter")
    play_all = gr.Button("▶ Play all in order", elem_id="arena-play-all", size="sm")
    pow_box = pow_ui.build_pow_box()               # the anonymous voter's proof of work, while one is due
    # the two aspects, in view with the vote (hidden before a battle, arena/ui/layout_css.py); answered before the
    # overall vote, or right after it: the overall vote then waits (names hidden) until both are answered or
    # "Send my vote" is pressed, so every axis answer is as blind as the overall one
    with gr.Column(elem_id="arena-axes"):
        axes_note = gr.Markdown(AXES_NOTE, elem_id="arena-axes-note")
        with gr.Row():
            said = gr.Radio(SUB_CHOICES, label="What was said (the words)", elem_id="arena-said")
            sounded = gr.Radio(SUB_CHOICES, label="How it sounded (the voice)", elem_id="arena-sounded")
    with gr.Row(elem_id="arena-vote-row"):         # fixed at the bottom of a phone's screen during a battle
        vote_buttons = {slot: gr.Button(label, interactive=False, elem_id=VOTE_IDS[slot],
                                        variant="primary" if slot in ("A", "B") else "secondary")
                        for slot, label in VOTE_LABELS.items()}
        send_btn = gr.Button("📨 Send my vote", visible=False, variant="primary", elem_id="arena-send")
    reveal = gr.Markdown(visible=False, elem_id="arena-reveal")
    with gr.Accordion("Say why (optional)", open=False, elem_id="arena-why"):
        reason = gr.Textbox(label="Reason (optional)", max_lines=3, max_length=500, elem_id="arena-reason")
    listen_box = gr.Textbox(visible=False, elem_id="arena-listen")    # the page's listen report (LISTEN_JS)
    pow_input = gr.Textbox(visible=False, elem_id="arena-pow-payload")  # the solved proof of work (LISTEN_JS)
    pow_input = gr.Textbox(visible=False, elem_id="arena-pow-payload")  # the solved proof of work (LISTEN_JS)
    gr.Markdown(HELP.replace("up to 2×", f"up to {service.settings.max_playback_rate:g}×"), elem_id="arena-help")
    gr.Markdown(KEYS_HELP, elem_classes=["arena-keys"], elem_id="arena-keys")   # keyboards only (layout_css)

    buttons = list(vote_buttons.values())
    locked = [gr.update(interactive=False)] * len(buttons)

    def close_open_battle(st: dict, session: str | None, ip: str) -> None:
        """A new battle while this one is open and unvoted (Skip, or Next during a live battle): skip it."""
        if session and st.get("battle_id") and not st.get("voted"):
            try:
                service.admit_skip(ip)      # in memory, its own budget (arena/core/abuse.py)
                run_write(service.skip_battle, st["battle_id"], session)
            except (SkipRefused, Refused):
                pass      # gone or voted meanwhile, or skipping too fast: it stays open until it expires

    def new_battle(st: dict, request: gr.Request, profile: gr.OAuthProfile | None):
        session, ip, user = _identity(st, request, profile)
        close_open_battle(st, session, ip)
        session = session or service.new_session()
        try:
            ticket = service.admit_battle(session, ip)       # in memory: a refusal never reaches the writer
            view = run_write(service.serve_battle, session, ip, user=user, ticket=ticket)
        except (NoBattleAvailable, ValueError, Refused) as exc:   # the service says why (e.g. no two models yet)
            msg = str(exc)
            empty = [clip_html(AUDIO_LABELS[k], None) for k in ("user", "a", "b")]
            return ({"session": session}, gr.update(visible=False), *empty, _meter_html(None, None, ""), *locked,
                    gr.update(), gr.update(), gr.update(), message_markdown(msg), gr.update(visible=False),
                    gr.update(visible=True, value="Try again"), gr.update(visible=False))
        ctx = context_markdown(view.context_text)
        return (
            {"session": session, "battle_id": view.battle_id, "voted": False, "notice": view.notice,
             "pow": view.pow_required},
            gr.update(visible=bool(ctx), value=ctx),
            clip_html(AUDIO_LABELS["user"], view.user_audio), clip_html(AUDIO_LABELS["a"], view.audio_a),
            clip_html(AUDIO_LABELS["b"], view.audio_b),
            _meter_html(view.battle_id, view.listening),
            *locked,
            gr.update(value=None, interactive=True), gr.update(value=None, interactive=True),
            gr.update(value="", interactive=True),
            "", gr.update(visible=False, value=""), gr.update(visible=False), gr.update(visible=True),
        )

    def unlock(st: dict):
        open_ = bool(st.get("battle_id")) and not st.get("voted")
        # a "not yet" answer from before the page counted every clip heard is out of date now
        return [gr.update(interactive=open_)] * len(buttons) + ["" if st.get("not_yet") else gr.update()]

    def commit(st: dict, slot: str, said_v, sounded_v, reason_v, listen_v, pow_v, request, profile):
        """Send the vote (the overall choice `slot` with the aspects answered so far) to the service."""
        keep3 = [gr.update()] * 3                  # the players, unchanged unless the vote counts
        keep_rest = [gr.update(), gr.update(), gr.update(), gr.update()]  # meter, Send, aspects' note, proof box
        if not st.get("battle_id") or st.get("voted"):
            return (st, *locked, gr.update(), gr.update(), gr.update(), "Start a new battle first.",
                    gr.update(), gr.update(visible=True), gr.update(visible=False), *keep3, *keep_rest)
        session, ip, user = _identity(st, request, profile)
        # not counted: the waiting vote is dropped (the voter votes again once told why)
        dropped = [gr.update(), gr.update(visible=False), AXES_NOTE, gr.update()]
        except_keep = [gr.update()] * len(buttons)
        try:
            service.admit_vote(ip)
            result = run_write(service.submit_vote, st["battle_id"], session, ip, slot, said=said_v or None,
                               sounded=sounded_v or None, reason=(reason_v or "").strip() or None, user=user,
                               listen=listen_report(listen_v, st["battle_id"]), pow=pow_v or None)
        except NotYet as exc:
            return ({**st, "not_yet": True, "pending": None}, *except_keep, gr.update(), gr.update(), gr.update(),
                    f"⏳ {md(exc.message)}", gr.update(), gr.update(), gr.update(), *keep3, *dropped)
        except (VoteRefused, Refused) as exc:
            if exc.reason_code.startswith("pow_"):     # a fresh check (a new challenge), then vote again
                st = {**st, "pow": True, "pow_round": st.get("pow_round", 0) + 1}
                dropped[-1] = pow_ui.widget_html(True, service.settings.pow_every_votes, st["pow_round"])
            return ({**st, "pending": None}, *except_keep, gr.update(), gr.update(), gr.update(),
                    message_markdown(exc.message), gr.update(), gr.update(), gr.update(), *keep3, *dropped)
        done = {**st, "voted": True, "pending": None}
        bid = st["battle_id"]
        players = (clip_html(AUDIO_LABELS["user"], battle_clip_url(bid, "user")),
                   revealed_clip_html("A", result.a, battle_clip_url(bid, "A"), result.winner == result.a.model),
                   revealed_clip_html("B", result.b, battle_clip_url(bid, "B"), result.winner == result.b.model))
        return (done, *locked, gr.update(interactive=False), gr.update(interactive=False),
                gr.update(interactive=False), GOLD_THANKS.get(result.gold, "✅ Vote recorded. Thank you!"),
                gr.update(visible=True, value=reveal_markdown(result)),
                gr.update(visible=True, value="Next battle"), gr.update(visible=False), *players,
                _meter_html(None, None, ""), gr.update(visible=False), AXES_NOTE, gr.update())   # the meter goes

    def unchanged(st: dict):
        return (st, *[gr.update()] * (len(vote_outputs) - 1))

    def make_vote(slot: str):
        def vote(st: dict, said_v, sounded_v, reason_v, listen_v, pow_v, request: gr.Request,
                 profile: gr.OAuthProfile | None):
            if said_v and sounded_v or not st.get("battle_id") or st.get("voted"):
                return commit(st, slot, said_v, sounded_v, reason_v, listen_v, pow_v, request, profile)
            # an aspect is unanswered: the vote waits for it (or for "Send my vote"), names still hidden
            out = list(unchanged({**st, "pending": slot}))
            out[vote_outputs.index(send_btn)] = gr.update(visible=True)
            out[vote_outputs.index(axes_note)] = pending_note(slot)
            return tuple(out)
        return vote

    def send(st: dict, said_v, sounded_v, reason_v, listen_v, pow_v, request: gr.Request,
             profile: gr.OAuthProfile | None):
        if not st.get("pending") or st.get("voted"):
            return unchanged(st)
        return commit(st, st["pending"], said_v, sounded_v, reason_v, listen_v, pow_v, request, profile)

    def aspect_answered(st: dict, said_v, sounded_v, reason_v, listen_v, pow_v, request: gr.Request,
                        profile: gr.OAuthProfile | None):
        """Right after the overall vote: answering the second aspect sends the waiting vote."""
        if st.get("pending") and not st.get("voted") and said_v and sounded_v:
            return commit(st, st["pending"], said_v, sounded_v, reason_v, listen_v, pow_v, request, profile)
        return unchanged(st)

    def pending_shown(st: dict):
        """A new battle (or the vote sent): Send and the waiting note follow the state."""
        waiting = bool(st.get("pending")) and not st.get("voted")
        return gr.update(visible=waiting), pending_note(st["pending"]) if waiting else AXES_NOTE

    vote_outputs = [state, *buttons, said, sounded, reason, message, reveal, next_btn, skip_btn,
                    audio_user, audio_a, audio_b, meter, send_btn, axes_note, pow_box]
    battle_outputs = [state, context_md, audio_user, audio_a, audio_b, meter, *buttons, said, sounded, reason,
                      message, reveal, next_btn, skip_btn]
    # Battles and votes write to SQLite: they run on the process's one writer thread (run_write, shared with
    # the HTTP API) and queue in one Gradio slot, so writers never race for SQLite's lock (its busy handler
    # sleeps up to 100 ms per retry).
    def show_notice(st: dict):
        """The battle's crisis notice (operator-edited text from eval_backend.safety), or nothing."""
        text = (st or {}).get("notice")
        return gr.update(visible=bool(text), value=text or "")

    for btn in (next_btn, skip_btn):                 # Skip = close this battle unvoted, then the next one
        btn.click(new_battle, [state], battle_outputs, concurrency_limit=1, concurrency_id=WRITE_QUEUE,
                  api_visibility="private").then(show_notice, [state], [notice_md], api_visibility="private",
                                                 show_progress="hidden").then(
            pow_ui.show(service.settings.pow_every_votes), [state], [pow_box], api_visibility="private",
            show_progress="hidden")
    meter.submit(unlock, [state], [*buttons, message], concurrency_limit=None, api_visibility="private",
                 show_progress="hidden")
    play_all.click(None, None, None, js=PLAY_ALL_JS)
    vote_inputs = [state, said, sounded, reason, listen_box, pow_input]
    voting = dict(concurrency_limit=1, concurrency_id=WRITE_QUEUE, api_visibility="private", js=LISTEN_JS)
    for slot, btn in vote_buttons.items():
        btn.click(make_vote(slot), vote_inputs, vote_outputs, **voting).then(None, None, None, js=AFTER_VOTE_JS)
    send_btn.click(send, vote_inputs, vote_outputs, **voting).then(None, None, None, js=AFTER_VOTE_JS)
    for radio in (said, sounded):
        radio.input(aspect_answered, vote_inputs, vote_outputs, **voting).then(None, None, None, js=AFTER_VOTE_JS)
    meter.change(pending_shown, [state], [send_btn, axes_note], api_visibility="private", show_progress="hidden")
    # the live section (arena/ui/live_ui.py) fills these same components, so a live battle is voted on here
    return ArenaTabHandles(parts={"state": state, "buttons": buttons, "battle_outputs": battle_outputs,
                                  "reveal": reveal})
