"""The page's layout CSS, in one place: phone-first arena, keyboard hints only where there is a keyboard.

Passed once to `gr.mount_gradio_app(..., css=LAYOUT_CSS)` (app.py; tests/support/arena_app.py does the same).
Why CSS and not `visible=` updates: the arena's states (no battle yet, a battle open, voted) are already in the
page (the meter's `data-battle`, whether a player has a `src`), and the live section fills the same components,
so a selector on that state needs no extra Gradio output to keep in step. Gradio prefixes every rule with
`.gradio-container… .contain`, so the state selectors anchor on the tab panel (`[role="tabpanel"]:has(...)`),
which is inside it.

- Before a battle there is nothing to listen to or vote on: the players and the vote row are hidden (no empty
  players, no disabled buttons), so "Start a battle" sits at the top of the tab.
- Phones (max-width 640px): the two replies are stacked; while a battle is open (and not yet voted: no
  revealed player) the vote row is fixed at the bottom of the screen (2×2, "Send my vote" under them while a
  vote waits for its aspects), so the vote buttons are on screen whatever the scroll position once the clips
  are heard; the page gets room at the bottom so the bar never covers the last content, and the arena's meter
  script sets the page's scroll padding to the bar's height, so a player scrolled into view is never under it.
  After the vote the row goes (the players carry the names; the page brings Next and the confirmation on screen).
- Contrast: primary buttons and the disabled vote buttons get colours with at least 4.5:1 (WCAG AA).
- Keyboard hints (the "Keys:" line and the "(1)"…"(n)" suffixes on buttons) show only on a device with a fine
  pointer that can hover, i.e. a mouse and, in practice, a keyboard; touch screens never see them.
- Tabs wrap onto a second line on narrow screens (app.py's `gr.Tabs(overflow_behavior="wrap")`); the rules
  here only tighten them so seven tabs take two lines at 390 px.
"""
from __future__ import annotations

KEY_SUFFIXES = {"arena-vote-a": "1", "arena-vote-b": "2", "arena-vote-tie": "3", "arena-vote-bad": "4",
                "arena-next": "n", "arena-skip": "n", "arena-play-all": "p", "arena-send": "Enter"}


def _key_rules() -> str:
    return "\n".join(f'  #{eid}::after {{ content: "({key})"; margin-left: .35em; opacity: .7; font-weight: normal; }}'
                     for eid, key in KEY_SUFFIXES.items())


LAYOUT_CSS = """
/* ---- arena: nothing to listen to or vote on before a battle */
#arena-players:not(:has(audio[src])) { display: none !important; }
[role="tabpanel"]:not(:has(.arena-meter[data-battle])) #arena-vote-row { display: none !important; }
[role="tabpanel"]:not(:has(.arena-meter[data-battle])) #arena-play-all { display: none !important; }
[role="tabpanel"]:not(:has(.arena-meter[data-battle])) #arena-axes { display: none !important; }
#arena-axes { gap: 0; }
#arena-axes-note p { margin: 0; }
.arena-meter-status:empty { display: none; }

/* ---- contrast (WCAG AA, 4.5:1 for normal text): Gradio's orange primary button with white text is 3.6:1 and
   its disabled buttons are drawn at half opacity (1.9:1); these colours pass, light and dark */
button.primary, .primary.lg, .primary.sm, .primary.md {
  background: #b93c0a !important; border-color: #b93c0a !important; color: #ffffff !important;
}
button.primary:hover:not(:disabled) { background: #9a3108 !important; border-color: #9a3108 !important; }
/* Gradio's light grey for secondary text (#bbbbc2 on white, 1.9:1): the footer, field hints, counters */
footer a, footer button, footer .built-with, footer .settings, .info-text, .subdued { color: #52525b !important; }
.arena-revealed .arena-rating { opacity: 1 !important; color: #52525b; }
#arena-vote-row button:disabled, #arena-vote-row button[disabled] {
  opacity: 1 !important; background: #e5e7eb !important; border-color: #9ca3af !important; color: #374151 !important;
  cursor: not-allowed;
}
/* ---- the benchmark board's tables: a header breaks between words, never inside one (the column widens and
   the table scrolls sideways instead of clipping its last column) */
#bench-table th, #bench-reported th, #bench-table th *, #bench-reported th * {
  word-break: normal !important; overflow-wrap: normal !important; hyphens: none !important;
}
#bench-table .table-wrap, #bench-reported .table-wrap { overflow-x: auto !important; }
#bench-intro p { margin-bottom: 0; }

.visually-hidden { position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
                   white-space: nowrap; }
#arena-top { align-items: stretch; }
#arena-players .media-clip-label { margin-bottom: 4px; }
.arena-revealed .arena-rating { font-size: var(--text-sm); opacity: .75; margin-left: .4em; white-space: nowrap; }
.arena-revealed .media-clip-label strong { font-size: var(--text-lg); }
#arena-players audio { width: 100%; }

/* ---- keyboard hints: only where there is a keyboard (a fine pointer that can hover) */
.arena-keys { display: none !important; }
@media (hover: hover) and (pointer: fine) {
  .arena-keys { display: block !important; }
%KEYS%
}

/* ---- phones */
@media (max-width: 640px) {
  #arena-replies { flex-direction: column; gap: var(--spacing-md); }
  #arena-replies > * { min-width: 100% !important; }
  [role="tabpanel"]:has(.arena-meter[data-battle]):not(:has(.arena-revealed)) #arena-vote-row {
    position: fixed; left: 0; right: 0; bottom: 0; z-index: 50; margin: 0;
    display: grid !important; grid-template-columns: 1fr 1fr; gap: 6px; padding: 8px 10px;
    background: var(--background-fill-primary); border-top: 1px solid var(--border-color-primary);
    box-shadow: 0 -2px 8px rgba(0, 0, 0, .08);
  }
  [role="tabpanel"]:has(.arena-meter[data-battle]):not(:has(.arena-revealed)) #arena-vote-row button { min-width: 0 !important; }
  #arena-send { grid-column: 1 / -1; }
  [role="tabpanel"]:has(.arena-meter[data-battle]):not(:has(.arena-revealed)) { padding-bottom: 130px !important; }
  [role="tabpanel"]:has(.arena-revealed) #arena-vote-row { display: none !important; }   /* voted: Next is on top */
  .tab-container[role="tablist"] button, .tab-container.visually-hidden button {
    padding: 0 8px !important; font-size: var(--text-sm) !important;
  }
}
""".replace("%KEYS%", _key_rules())
