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
  revealed player) the vote row is fixed at the bottom of the screen (2×2), so the vote buttons are on screen
  whatever the scroll position once the clips are heard; the page gets room at the bottom so the bar never
  covers the last content. After the vote the row goes (the players carry the names; Next is at the top).
- Keyboard hints (the "Keys:" line and the "(1)"…"(n)" suffixes on buttons) show only on a device with a fine
  pointer that can hover, i.e. a mouse and, in practice, a keyboard; touch screens never see them.
- Tabs wrap onto a second line on narrow screens (app.py's `gr.Tabs(overflow_behavior="wrap")`); the rules
  here only tighten them so seven tabs take two lines at 390 px.
"""
from __future__ import annotations

KEY_SUFFIXES = {"arena-vote-a": "1", "arena-vote-b": "2", "arena-vote-tie": "3", "arena-vote-bad": "4",
                "arena-next": "n", "arena-skip": "n", "arena-play-all": "p"}


def _key_rules() -> str:
    return "\n".join(f'  #{eid}::after {{ content: "({key})"; margin-left: .35em; opacity: .7; font-weight: normal; }}'
                     for eid, key in KEY_SUFFIXES.items())


LAYOUT_CSS = """
/* ---- arena: nothing to listen to or vote on before a battle */
#arena-players:not(:has(audio[src])) { display: none !important; }
[role="tabpanel"]:not(:has(.arena-meter[data-battle])) #arena-vote-row { display: none !important; }
[role="tabpanel"]:not(:has(.arena-meter[data-battle])) #arena-play-all { display: none !important; }
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
  [role="tabpanel"]:has(.arena-meter[data-battle]):not(:has(.arena-revealed)) { padding-bottom: 130px !important; }
  [role="tabpanel"]:has(.arena-revealed) #arena-vote-row { display: none !important; }   /* voted: Next is on top */
  .tab-container[role="tablist"] button, .tab-container.visually-hidden button {
    padding: 0 8px !important; font-size: var(--text-sm) !important;
  }
}
""".replace("%KEYS%", _key_rules())
