"""The arena's Gradio tab: a blind battle between two models' spoken replies.

Thin by design: every decision (which pair, whether a vote counts, the ratings)
belongs to `ArenaService`; this module only wires events to it.

- The session is issued and signed by the server (`service.new_session`) and kept
  in the tab's gr.State, which lives on the server: the browser cannot choose it
  (Gradio's `session_hash` is chosen by the browser). The user is the HF OAuth
  profile (None locally), the IP the client address (eval_backend/client_address.py;
  the service salts and hashes it). The in-memory limits (arena/abuse.py) are
  checked before a battle or vote goes to the writer thread. The browser never
  holds a model name before the vote.
- Audio: plain <audio> elements whose `src` is the battle's clip route
  (arena/media.py: battle id + clip, never a file path), so Gradio is never
  handed a file from the data dir.
- Listening: one rule for page and server (arena/listening.py). The battle
  carries the rule's numbers (per clip: seconds to hear; the tolerance; the
  fastest playback rate, which the page enforces on its players). The page
  measures each clip's seconds actually played from its <audio> element's
  `played` ranges (so clips played together or at 2x count honestly), shows a
  countdown, unlocks the vote buttons when every clip is covered, and sends
  those numbers and the order the clips were first played with the vote; the
  service applies the same rule to them ("not yet" is shown, not logged).
- Keyboard: 1/a = A better, 2/b = B better, 3/t = tie, 4/x = both bad,
  p = play all in order, n = skip the open battle (or the next one); a vote key
  pressed before the vote unlocks says why instead. The hints show only on
  devices with a keyboard (arena/layout_css.py).
- Layout (phone first; the CSS is arena/layout_css.py): the start / next button
  and Skip at the top, then the user's clip and the two replies (stacked on a
  phone), the meter and the vote row (fixed at the bottom of a phone's screen
  while a battle is open). Nothing empty is shown before a battle.
- Reveal on the panels: after the vote each player is relabelled with its
  model's name and rating, and all playback stops; the transcripts follow below.
- Skip: closes the open battle without a vote (service.skip_battle: no rating,
  no refusal, no abuse counter) and serves the next one; "Next"/"Start" also
  skips an open battle (the live section's, say) before serving another.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

import gradio as gr

from eval_backend import safejson

from .media import audio_html
from eval_backend.inert import md, md_inline
from eval_backend import client_address
from eval_backend.tab_contract import TabHandles

AUDIO_IDS = {"user": "arena-audio-user", "a": "arena-audio-a", "b": "arena-audio-b"}
AUDIO_LABELS = {"user": "The user says", "a": "Reply A", "b": "Reply B"}
VOTE_IDS = {"A": "arena-vote-a", "B": "arena-vote-b", "tie": "arena-vote-tie", "both_bad": "arena-vote-bad"}
# the keys' "(1)"... suffixes are CSS (arena/layout_css.py), shown only on devices with a keyboard
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
             "`n` skip / next battle")

# The listening meter: polls the battle's <audio> elements, measures each clip's seconds played (within the part
# the rule asks for) from its `played` ranges, shows the countdown, and unlocks the vote buttons (via a Python event,
# so the unlock also checks the battle is still open) once every clip is covered. `arenaRemaining` is
# listening.remaining, to the same numbers; `window.__arenaListenReport()` is what the vote sends.
# The countdown is the time the way the voter is listening will take: a clip playing advances at its rate; a clip
# queued by "Play all in order" starts when the ones before it have played *to their end*; a clip nobody plays
# counts its seconds left at 1x ("… s of listening left" then, not a clock). Each thing is said once: a vote key
# pressed early answers "not yet" without repeating the countdown. Screen readers hear the start and the unlock
# (a polite live region), not every tick. On a phone the vote bar is fixed at the bottom: the page's scroll padding
# follows its height, so nothing scrolled into view ends up under it.
METER_JS = r"""
const LABELS = {user: "the user", A: "reply A", B: "reply B"};
const S = window.__arenaListen = window.__arenaListen || {battle: null, order: [], unlockedFor: null, queue: [],
                                                          current: null, said: ""};
function arenaRemaining(need, played, tol) { return played >= need - tol ? 0 : need - played; }
window.__arenaRemaining = arenaRemaining;
function audioFor(clip) { return document.querySelector("#arena-audio-" + clip.toLowerCase() + " audio"); }
function covered(audio, need) {          // seconds of [0, need] actually played
  let s = 0;
  for (let i = 0; i < audio.played.length; i++) {
    const a = Math.min(audio.played.start(i), need), b = Math.min(audio.played.end(i), need);
    if (b > a) s += b - a;
  }
  return Math.round(s * 1000) / 1000;    // the number sent, so page and server compare the same value
}
function current() {
  const meter = document.querySelector(".arena-meter");
  if (!meter || !meter.dataset.battle) return null;
  if (S.battle !== meter.dataset.battle) {
    S.battle = meter.dataset.battle; S.order = []; S.queue = []; S.current = null; S.said = "";
  }
  const rule = JSON.parse(meter.dataset.listen || "{}");
  const clips = rule.clips || {};
  const played = {}, left = {};
  for (const c of Object.keys(clips)) {
    const audio = audioFor(c);
    played[c] = audio && audio.currentSrc ? covered(audio, clips[c].need_s) : 0;
    const r = arenaRemaining(clips[c].need_s, played[c], rule.tolerance_s || 0);
    if (r > 0) left[c] = r;
  }
  return {meter, rule, clips, played, left, battle: meter.dataset.battle};
}
function clipOf(audio) {
  const st = current();
  if (!st) return null;
  return Object.keys(st.clips).find((c) => audioFor(c) === audio) || null;
}
const rateOf = (a) => (a && a.playbackRate) || 1;
const playing = (a) => !!a && !a.paused && !a.ended;
function waitTime(st) {                  // {clock: seconds until the vote unlocks by itself, manual: still to play}
  let clock = 0, manual = 0;
  const queued = new Set(S.queue);
  let start = 0;                         // when the next queued clip starts: the current one has played to its end
  const cur = S.current && audioFor(S.current);
  if (playing(cur) && isFinite(cur.duration)) start = Math.max(0, cur.duration - cur.currentTime) / rateOf(cur);
  for (const c of S.queue) {
    const a = audioFor(c);
    if (st.left[c] !== undefined) clock = Math.max(clock, start + st.left[c] / rateOf(a));
    start += (a && isFinite(a.duration) ? a.duration : 0) / rateOf(a);
  }
  for (const c of Object.keys(st.left)) {
    const a = audioFor(c);
    if (playing(a)) clock = Math.max(clock, st.left[c] / rateOf(a));
    else if (!queued.has(c)) manual += st.left[c];
  }
  return {clock, manual};
}
function countdown(st) {
  const keys = Object.keys(st.left);
  if (!keys.length) return "";
  const w = waitTime(st);
  const detail = "still to hear " + keys.map((c) => (LABELS[c] || c) + " " + st.played[c].toFixed(1) + " / " +
    st.clips[c].need_s.toFixed(1) + " s").join(" · ");
  if (w.clock > 0) return "Vote in about " + Math.ceil(w.clock + w.manual) + " s: " + detail;
  return Math.ceil(w.manual) + " s of listening left before you can vote: " + detail;
}
window.__arenaListenReport = () => {
  const st = current();
  return st ? JSON.stringify({battle_id: st.battle, played_s: st.played, order: S.order.slice()}) : "";
};
function announce(st, text) {            // the screen reader's line: once per battle state, never per tick
  const live = st.meter.querySelector(".arena-meter-live");
  if (live && S.said !== text) { S.said = text; live.textContent = text; }
}
function padForBar() {                   // a fixed vote bar (phones) takes this much of the screen's bottom
  const bar = document.getElementById("arena-vote-row");
  const fixed = bar && bar.getClientRects().length && getComputedStyle(bar).position === "fixed";
  const pad = fixed ? Math.ceil(bar.getBoundingClientRect().height) + 8 + "px" : "";
  if (document.documentElement.style.scrollPaddingBottom !== pad) document.documentElement.style.scrollPaddingBottom = pad;
}
function tick() {
  padForBar();
  const st = current();
  if (!st) return;
  const done = !Object.keys(st.left).length;
  const status = st.meter.querySelector(".arena-meter-status");
  if (status) status.textContent = done ? "All clips heard: you can vote." : countdown(st);
  st.meter.dataset.heard = done ? "1" : "0";
  if (done) announce(st, "All clips heard: you can vote.");
  else if (!S.said) announce(st, "Listen to the start of each clip; the vote unlocks after about " +
    Math.ceil(Object.values(st.left).reduce((t, x) => t + x, 0)) + " seconds of listening.");
  const hint = st.meter.querySelector(".arena-meter-hint");
  if (hint && hint.dataset.kind === "not-yet" && done) { hint.textContent = ""; hint.dataset.kind = ""; }
  if (done && S.unlockedFor !== st.battle) {
    S.unlockedFor = st.battle;
    trigger("submit");
  }
}
setInterval(tick, 250);
if (!window.__arenaKeys) {
  window.__arenaKeys = true;
  // the order clips first started playing (the vote stores the reply heard first), and the rate cap
  document.addEventListener("playing", (e) => {
    const c = e.target && e.target.tagName === "AUDIO" ? clipOf(e.target) : null;
    if (c && !S.order.includes(c)) S.order.push(c);
  }, true);
  document.addEventListener("ratechange", (e) => {
    const a = e.target, st = current();
    if (st && a && a.tagName === "AUDIO" && clipOf(a) && st.rule.max_rate && a.playbackRate > st.rule.max_rate)
      a.playbackRate = st.rule.max_rate;
  }, true);
  // a clip the voter pauses or plays by hand leaves "play all in order"
  document.addEventListener("pause", (e) => {
    const c = e.target && e.target.tagName === "AUDIO" ? clipOf(e.target) : null;
    if (c && c === S.current && !e.target.ended) { S.queue = []; S.current = null; }
  }, true);
  const KEYS = {"1": "arena-vote-a", "a": "arena-vote-a", "2": "arena-vote-b", "b": "arena-vote-b",
                "3": "arena-vote-tie", "t": "arena-vote-tie", "4": "arena-vote-bad", "x": "arena-vote-bad",
                "n": ["arena-skip", "arena-next"], "p": "arena-play-all", "enter": "arena-send"};
  const shown = (el) => el && el.getClientRects().length > 0;    // offsetParent is null for a fixed vote bar
  const explain = (text, kind) => {
    const meter = document.querySelector(".arena-meter");
    const hint = meter && meter.querySelector(".arena-meter-hint");
    if (hint) { hint.textContent = text; hint.dataset.kind = kind; }
  };
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    const key = (e.key || "").toLowerCase();
    if (key === "enter" && t && t.tagName === "BUTTON") return;      // Enter on a focused button presses it
    const ids = [].concat(KEYS[key] || []);
    const btns = ids.map((i) => document.getElementById(i)).filter(Boolean);
    const btn = btns.find((b) => !b.disabled && shown(b)) || btns[0];
    const id = btn ? btn.id : ids[0];
    if (btn && !btn.disabled && shown(btn)) { e.preventDefault(); btn.click(); return; }
    if (!id || !id.startsWith("arena-vote-") || !btn) return;
    const st = current();              // a vote key while voting is locked: say why (the countdown says how long)
    const reveal = document.getElementById("arena-reveal");
    if (shown(reveal)) explain("You have voted on this battle: press n for the next one.", "voted");
    else if (!st) explain("Start a battle first (press n).", "no-battle");
    else if (Object.keys(st.left).length) explain("Not yet: listen to each clip first.", "not-yet");
    else explain("The vote is unlocking…", "unlocking");
  });
}
"""

# Plays the user's utterance, then A, then B, each to its end (the page reports the order clips actually started
# in; the meter reads the queue for its countdown).
PLAY_ALL_JS = r"""
() => {
  const S = window.__arenaListen || (window.__arenaListen = {order: [], queue: [], current: null});
  const clips = ["user", "A", "B"].filter((c) => {
    const a = document.querySelector("#arena-audio-" + c.toLowerCase() + " audio");
    return a && a.currentSrc;
  });
  const audio = (c) => document.querySelector("#arena-audio-" + c.toLowerCase() + " audio");
  clips.forEach((c) => audio(c).pause());
  S.queue = clips.slice();
  const next = () => {
    if (!S.queue.length) { S.current = null; return; }
    const c = S.queue.shift(), a = audio(c);
    S.current = c;
    a.currentTime = 0;
    a.onended = () => { a.onended = null; if (S.current === c) next(); };
    a.play().catch(() => {});
  };
  next();
}
"""


def clip_html(label: str, url: str | None) -> str:
    """A clip's player; preloaded, so the meter knows each clip's length at once."""
    return audio_html(label, url, preload="auto")


def revealed_clip_html(slot: str, side, url: str, won: bool) -> str:
    """A reply's player after the vote: the model's name (inert: escaped) and its vote count after this vote.
    No rating number: the board's headline is Bradley–Terry with an interval (TrueSkill, which the vote
    updates, is behind its "All columns"), so the reveal points there instead of showing a number the board
    hides. A new <audio> element, so nothing keeps playing from before the vote."""
    rating = f"{side.votes} vote{'' if side.votes == 1 else 's'} · rank on the Arena leaderboard"
    return (f'<div class="media-clip arena-revealed"><div class="media-clip-label"><strong>{slot}: '
            f'{html.escape(side.model)}</strong>{" 🏆" if won else ""} <span class="arena-rating">{rating}</span></div>'
            f'<audio controls preload="auto" src="{html.escape(url)}" '
            f'aria-label="Reply {slot}: {html.escape(side.model)}"></audio></div>')


# After a vote click: once the reveal is shown, stop every player (the revealed players are new elements; this
# also covers a browser that kept the old ones) and bring the confirmation and "Next battle" on screen (a phone's
# voter is usually scrolled down to the players); while the vote waits for its aspects, bring them on screen.
AFTER_VOTE_JS = r"""
() => {
  const shown = (el) => el && el.getClientRects().length > 0;
  const pad = parseFloat(document.documentElement.style.scrollPaddingBottom) || 0;
  const inView = (el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight - pad; };
  const reveal = document.getElementById("arena-reveal");
  if (shown(reveal)) {
    document.querySelectorAll("audio").forEach((a) => a.pause());
    const top = document.getElementById("arena-top"), msg = document.getElementById("arena-message");
    if (top && (!inView(top) || (msg && !inView(msg)))) top.scrollIntoView({block: "start"});
    return;
  }
  const axes = document.getElementById("arena-axes");
  if (shown(document.getElementById("arena-send")) && axes && !inView(axes)) axes.scrollIntoView({block: "nearest"});
}
"""


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


# The vote sends the page's listen report through this hidden box (filled by the click's js, LISTEN_JS).
LISTEN_JS = "(...args) => [...args.slice(0, -1), window.__arenaListenReport ? window.__arenaListenReport() : '']"
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
    section (arena/live_ui.py)."""
    service = ctx.arena
    from .abuse import Refused
    from .media import battle_clip_url
    from .writer import run_write
    from .service import NoBattleAvailable, NotYet, SkipRefused, VoteRefused

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

    with gr.Column(elem_id="arena-players"):       # hidden until a battle has clips (arena/layout_css.py)
        audio_user = player("user")
        with gr.Row(elem_id="arena-replies"):        # side by side; stacked on a phone
            audio_a, audio_b = player("a"), player("b")
    meter = gr.HTML(_meter_html(None, None, ""), js_on_load=METER_JS, elem_id="arena-meter")
    play_all = gr.Button("▶ Play all in order", elem_id="arena-play-all", size="sm")
    # the two aspects, in view with the vote (hidden before a battle, arena/layout_css.py); answered before the
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
    gr.Markdown(HELP.replace("up to 2×", f"up to {service.settings.max_playback_rate:g}×"), elem_id="arena-help")
    gr.Markdown(KEYS_HELP, elem_classes=["arena-keys"], elem_id="arena-keys")   # keyboards only (layout_css)

    buttons = list(vote_buttons.values())
    locked = [gr.update(interactive=False)] * len(buttons)

    def close_open_battle(st: dict, session: str | None, ip: str) -> None:
        """A new battle while this one is open and unvoted (Skip, or Next during a live battle): skip it."""
        if session and st.get("battle_id") and not st.get("voted"):
            try:
                service.admit_skip(ip)      # in memory, its own budget (arena/abuse.py)
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
            {"session": session, "battle_id": view.battle_id, "voted": False, "notice": view.notice},
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

    def commit(st: dict, slot: str, said_v, sounded_v, reason_v, listen_v, request, profile):
        """Send the vote (the overall choice `slot` with the aspects answered so far) to the service."""
        keep3 = [gr.update()] * 3                  # the players, unchanged unless the vote counts
        keep_rest = [gr.update(), gr.update(), gr.update()]       # the meter, Send, the aspects' note
        if not st.get("battle_id") or st.get("voted"):
            return (st, *locked, gr.update(), gr.update(), gr.update(), "Start a new battle first.",
                    gr.update(), gr.update(visible=True), gr.update(visible=False), *keep3, *keep_rest)
        session, ip, user = _identity(st, request, profile)
        # not counted: the waiting vote is dropped (the voter votes again once told why)
        dropped = [gr.update(), gr.update(visible=False), AXES_NOTE]
        except_keep = [gr.update()] * len(buttons)
        try:
            service.admit_vote(ip)
            result = run_write(service.submit_vote, st["battle_id"], session, ip, slot, said=said_v or None,
                               sounded=sounded_v or None, reason=(reason_v or "").strip() or None, user=user,
                               listen=listen_report(listen_v, st["battle_id"]))
        except NotYet as exc:
            return ({**st, "not_yet": True, "pending": None}, *except_keep, gr.update(), gr.update(), gr.update(),
                    f"⏳ {md(exc.message)}", gr.update(), gr.update(), gr.update(), *keep3, *dropped)
        except (VoteRefused, Refused) as exc:
            return ({**st, "pending": None}, *except_keep, gr.update(), gr.update(), gr.update(),
                    message_markdown(exc.message), gr.update(), gr.update(), gr.update(), *keep3, *dropped)
        done = {**st, "voted": True, "pending": None}
        bid = st["battle_id"]
        players = (clip_html(AUDIO_LABELS["user"], battle_clip_url(bid, "user")),
                   revealed_clip_html("A", result.a, battle_clip_url(bid, "A"), result.winner == result.a.model),
                   revealed_clip_html("B", result.b, battle_clip_url(bid, "B"), result.winner == result.b.model))
        return (done, *locked, gr.update(interactive=False), gr.update(interactive=False),
                gr.update(interactive=False), "✅ Vote recorded. Thank you!",
                gr.update(visible=True, value=reveal_markdown(result)),
                gr.update(visible=True, value="Next battle"), gr.update(visible=False), *players,
                _meter_html(None, None, ""), gr.update(visible=False), AXES_NOTE)   # the meter goes

    def unchanged(st: dict):
        return (st, *[gr.update()] * (len(vote_outputs) - 1))

    def make_vote(slot: str):
        def vote(st: dict, said_v, sounded_v, reason_v, listen_v, request: gr.Request,
                 profile: gr.OAuthProfile | None):
            if said_v and sounded_v or not st.get("battle_id") or st.get("voted"):
                return commit(st, slot, said_v, sounded_v, reason_v, listen_v, request, profile)
            # an aspect is unanswered: the vote waits for it (or for "Send my vote"), names still hidden
            out = list(unchanged({**st, "pending": slot}))
            out[vote_outputs.index(send_btn)] = gr.update(visible=True)
            out[vote_outputs.index(axes_note)] = pending_note(slot)
            return tuple(out)
        return vote

    def send(st: dict, said_v, sounded_v, reason_v, listen_v, request: gr.Request, profile: gr.OAuthProfile | None):
        if not st.get("pending") or st.get("voted"):
            return unchanged(st)
        return commit(st, st["pending"], said_v, sounded_v, reason_v, listen_v, request, profile)

    def aspect_answered(st: dict, said_v, sounded_v, reason_v, listen_v, request: gr.Request,
                        profile: gr.OAuthProfile | None):
        """Right after the overall vote: answering the second aspect sends the waiting vote."""
        if st.get("pending") and not st.get("voted") and said_v and sounded_v:
            return commit(st, st["pending"], said_v, sounded_v, reason_v, listen_v, request, profile)
        return unchanged(st)

    def pending_shown(st: dict):
        """A new battle (or the vote sent): Send and the waiting note follow the state."""
        waiting = bool(st.get("pending")) and not st.get("voted")
        return gr.update(visible=waiting), pending_note(st["pending"]) if waiting else AXES_NOTE

    vote_outputs = [state, *buttons, said, sounded, reason, message, reveal, next_btn, skip_btn,
                    audio_user, audio_a, audio_b, meter, send_btn, axes_note]
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
                                                 show_progress="hidden")
    meter.submit(unlock, [state], [*buttons, message], concurrency_limit=None, api_visibility="private",
                 show_progress="hidden")
    play_all.click(None, None, None, js=PLAY_ALL_JS)
    vote_inputs = [state, said, sounded, reason, listen_box]
    voting = dict(concurrency_limit=1, concurrency_id=WRITE_QUEUE, api_visibility="private", js=LISTEN_JS)
    for slot, btn in vote_buttons.items():
        btn.click(make_vote(slot), vote_inputs, vote_outputs, **voting).then(None, None, None, js=AFTER_VOTE_JS)
    send_btn.click(send, vote_inputs, vote_outputs, **voting).then(None, None, None, js=AFTER_VOTE_JS)
    for radio in (said, sounded):
        radio.input(aspect_answered, vote_inputs, vote_outputs, **voting).then(None, None, None, js=AFTER_VOTE_JS)
    meter.change(pending_shown, [state], [send_btn, axes_note], api_visibility="private", show_progress="hidden")
    # the live section (arena/live_ui.py) fills these same components, so a live battle is voted on here
    return ArenaTabHandles(parts={"state": state, "buttons": buttons, "battle_outputs": battle_outputs,
                                  "reveal": reveal})
