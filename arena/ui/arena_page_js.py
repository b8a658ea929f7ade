"""The arena tab's browser-side scripts (arena/ui/arena_tab.py wires them): the listening meter and its countdown,
"play all in order", what the vote click sends, and what follows the vote. Kept apart so the tab's Python stays
short; the numbers they compare are arena/core/listening.py's (one rule for page and server)."""
from __future__ import annotations

from arena.ui.pow_ui import PAYLOAD_JS

# The listening meter: polls the battle's <audio> elements, measures each clip's seconds played (within the part
# the rule asks for) from its `played` ranges, shows the countdown, and unlocks the vote buttons (via a Python event,
# so the unlock also checks the battle is still open) once every clip is covered; while the buttons stay locked
# after that, the event is sent again (a refused request must not lock a voter out of the battle). `arenaRemaining`
# is listening.remaining, to the same numbers; `window.__arenaListenReport()` is what the vote sends.
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
const RESEND_MS = 2000, MAX_RESENDS = 30;   // the unlock asked again every 2 s, for a minute at most
function stillLocked() { const b = document.getElementById("arena-vote-a"); return !!b && b.disabled; }
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
    S.unlockedFor = st.battle; S.unlockSent = Date.now(); S.resends = 0;
    trigger("submit");
  } else if (done && stillLocked() && S.resends < MAX_RESENDS && Date.now() - S.unlockSent > RESEND_MS) {
    // the unlock is one event: a refused request (the guard's 429, the join budget being per address and shared
    // behind a NAT) left the vote locked for good. While it stays locked, ask again (the answer is the same)
    S.unlockSent = Date.now(); S.resends += 1;
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
    // (a pause at 0 s is "play all" itself restarting the clip, not the voter; so is a pause event that arrives
    // once the clip plays again: "play all" paused a clip that was playing and restarted it, and on a loaded
    // machine the event is dispatched after the restart, when the clip is no longer paused)
    if (c && c === S.current && e.target.paused && !e.target.ended && e.target.currentTime > 0) {
      S.queue = []; S.current = null;
    }
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


# The vote sends the page's listen report and the proof-of-work payload (arena/ui/pow_ui.py) through two hidden
# boxes, the vote's last two inputs (filled by the click's js, LISTEN_JS).
LISTEN_JS = ("(...args) => [...args.slice(0, -2), window.__arenaListenReport ? window.__arenaListenReport() : '', "
             f"{PAYLOAD_JS}]")
