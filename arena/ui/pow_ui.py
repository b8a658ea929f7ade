"""The proof-of-work check on the arena page (arena/services/pow.py): the self-hosted ALTCHA widget, shown only while the
session owes a proof, solving its challenge in the background as soon as it appears (while the voter listens).

Self-contained, so the tab (arena/ui/arena_tab.py) adds one component and reads one value:
- `build_pow_box()`: a gr.HTML whose load script loads the widget from the app itself (`/api/arena/pow/altcha.js`,
  vendored from npm: arena/static/altcha/), empty until `show(state)` renders the widget for a battle that
  needs a proof (state["pow"] set by the tab from BattleView.pow_required);
- `PAYLOAD_JS`: the expression a vote's js reads the solved payload with (the widget's hidden `altcha` input),
  '' while it is still solving. A vote pressed while the widget is still solving is held on the page and sent
  once it is done; a widget that failed lets the vote through, and the server answers `pow_required`, said on
  the page and logged (so a check that stops working shows in the integrity health), never dropped.
A refusal for a missing, expired, replayed or invalid solution re-renders the widget: a fresh challenge. A live
battle (arena/ui/live_ui.py) does not say whether a proof is due, so its first vote may be answered that way.
"""
from __future__ import annotations

import html
import json

import gradio as gr

from arena.services.pow import CHALLENGE_PATH, WIDGET_PATH

BOX_ID = "arena-pow"
WHY = ("Anonymous voting: your browser solves a small puzzle (a second or two, in the background) before your "
       "first vote and every {every} votes after. Nothing leaves your device but the answer; signed-in voters skip it.")
CONFIG = {"hideFooter": True, "hideLogo": False}
# the payload: the widget's hidden form input, else what its "verified" event left on the widget element itself
# (a widget version may keep its input in its shadow root); a re-rendered widget starts empty either way
PAYLOAD_JS = (f"(() => {{ const w = document.querySelector('#{BOX_ID} altcha-widget'); if (!w) return ''; "
              f"const i = document.querySelector('#{BOX_ID} input[name=\"altcha\"]'); "
              "return (i && i.value) || w.dataset.payload || ''; })()")
# Loads the widget once it is needed (an ES module: Gradio's `head` drops a script's type), keeps what it verifies, and restarts
# it when the tab re-renders it for a new round (a refusal): Gradio patches the HTML in place, so the same element
# stays, with its old state and payload, unless told to start over.
LOAD_JS = r"""
const load = () => {           // only once a widget is on the page: a voter who owes no proof never loads it
  if (!element.querySelector("altcha-widget") || document.querySelector("script[data-altcha-widget]")) return;
  const s = document.createElement("script");
  s.type = "module"; s.src = "%s"; s.dataset.altchaWidget = "1";
  document.head.appendChild(s);
};
load();
const mine = (e) => e.target && e.target.tagName === "ALTCHA-WIDGET" && element.contains(e.target);
document.addEventListener("statechange", (e) => {
  if (!mine(e)) return;
  if (e.target.__round === undefined) e.target.__round = e.target.getAttribute("data-round");
  if (e.detail && e.detail.state === "error") e.target.__failed = true;    // this round's check did not work
}, true);
let pending = null;              // a vote pressed while the check was still solving: sent once it is done
document.addEventListener("verified", (e) => {
  if (!mine(e)) return;
  e.target.dataset.payload = (e.detail && e.detail.payload) || "";
  const btn = pending;
  pending = null;
  if (btn && !btn.disabled) btn.click();
}, true);
document.addEventListener("click", (e) => {
  const btn = e.target && e.target.closest ? e.target.closest("[id^='arena-vote-'], #arena-send") : null;
  const w = element.querySelector("altcha-widget");
  // a check that failed this round lets the vote through: the server refuses it, said on the page and logged, so
  // the integrity health sees a check that does not work (never a vote held on the page for ever)
  if (!btn || !w || w.dataset.payload || typeof w.getState !== "function" || w.__failed) return;
  const state = w.getState();      // still solving, or not started (the widget resets an error on a click)
  if (!["verifying", "unverified"].includes(state)) return;
  e.preventDefault();
  e.stopImmediatePropagation();
  pending = btn;
  if (state === "unverified") w.verify();
  const hint = document.querySelector(".arena-meter-hint");
  if (hint) { hint.textContent = "Your vote goes in as soon as the automatic check is done."; hint.dataset.kind = "pow"; }
}, true);
watch("value", () => {
  load();
  const w = element.querySelector("altcha-widget");
  if (!w || typeof w.verify !== "function" || w.__round === undefined) return;   // new: auto="onload" starts it
  const round = w.getAttribute("data-round");
  if (w.__round === round) return;
  w.__round = round;
  w.__failed = false;
  delete w.dataset.payload;
  w.reset();
  w.verify();
});
""" % WIDGET_PATH


def widget_html(required: bool, every: int, nonce: int = 0) -> str:
    """The widget (a new element each time: `nonce` makes re-renders differ, so a refusal gets a new challenge)."""
    if not required:
        return ""
    config = html.escape(json.dumps(CONFIG))
    return (f'<div class="arena-pow"><altcha-widget challenge="{CHALLENGE_PATH}" data-round="{int(nonce)}" '
            f'auto="onload" name="altcha" configuration="{config}"></altcha-widget>'
            f'<p class="arena-pow-why">{html.escape(WHY.format(every=every))}</p></div>')


def build_pow_box() -> gr.HTML:
    return gr.HTML("", elem_id=BOX_ID, js_on_load=LOAD_JS, container=False, padding=False)


def show(every: int):
    """The box's content for the tab's state: the widget while a proof is due, else nothing."""
    def render(st: dict):
        st = st or {}
        return gr.update(value=widget_html(bool(st.get("pow")), every, st.get("pow_round", 0)))
    return render
