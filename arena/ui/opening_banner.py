"""The Arena tab's opening banner and the page header's status: plain words for a visitor while the Space prepares.

Until the arena can serve a battle, the banner says what is being prepared, "step k of n", shows a progress bar and
an estimate from the measured progress rate (space_shell/opening.py), and points to the benchmark meanwhile. Once a
battle can be served it hides and its timer stops. Operator diagnostics (errors, ports, Hub state, the bootstrap's
internal stages) are never shown here: they go to the log and to the operator's part of the Integrity health tab
(leaderboard/operator_status.py).

The banner is rendered when the page is built and again on every page load, so a visitor's first paint shows the
real status, then every 2 s while the arena is not open. Live mode ("Use my voice") does not wait for it.
"""
from __future__ import annotations

import html

import gradio as gr

from space_shell.opening import OpeningView, view
from space_shell.tab_contract import PageLoad

REFRESH_S = 2.0
MEANWHILE = "browse the benchmark (the “Browse benchmark” tab)"
MEANWHILE_LIVE = "browse the benchmark, or try “Use my voice” below"


class OpeningState:
    """Asks the arena "can you serve a battle?" until it says yes, then remembers it (the answer is asked on
    every tick of every open page until then; after, a paused model shows up in the battle's own message)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._open = False

    @property
    def bootstrap(self):
        return getattr(self.ctx, "bootstrap", None)

    def arena_open(self) -> bool:
        if not self._open:
            try:
                self._open = bool(self.ctx.arena.can_serve())
            except Exception:   # a broken benchmark must not break the page: the banner stays, the log has it
                import logging
                logging.getLogger(__name__).exception("opening banner: the arena could not be asked")
        return self._open

    def preparing(self) -> OpeningView | None:
        boot = self.bootstrap
        return view(boot.opening) if boot is not None and boot.opening.planned else None

    def meanwhile(self) -> str:
        """What a visitor can do now (live battles do not wait for the bootstrap)."""
        return MEANWHILE_LIVE if getattr(self.ctx, "live", None) is not None else MEANWHILE

    def failed(self) -> bool:
        boot = self.bootstrap
        return boot is not None and boot.opening.failed


def banner_html(state: OpeningState) -> str:
    """The banner's HTML ('' once the arena can serve a battle). Every text is ours, or numbers: nothing to escape
    from outside, but it goes through html.escape anyway."""
    if state.arena_open():
        return ""
    esc = html.escape
    meanwhile = state.meanwhile()
    if state.failed():
        return (f'<div class="arena-opening" role="status"><p><strong>The arena could not be prepared on this '
                f'start.</strong> The operator has the details. Meanwhile you can {esc(meanwhile)}.</p></div>')
    v = state.preparing()
    if v is None:
        return (f'<div class="arena-opening" role="status"><p><strong>No battles are available yet</strong>: the '
                f'arena needs two models with spoken replies to the same request. Meanwhile you can {esc(meanwhile)}.</p>'
                f'</div>')
    pct = round(100 * v.fraction)
    count = f" — {v.done} of {v.total} {v.unit}" if v.total and v.unit else ""
    eta = (f"The arena opens in {esc(v.eta)}; meanwhile {esc(meanwhile)}." if v.eta
           else f"Estimating how long this takes; meanwhile {esc(meanwhile)}.")
    return (f'<div class="arena-opening" role="status" aria-live="polite">'
            f'<p><strong>The arena is getting ready.</strong> Step {v.k} of {v.n}: {esc(v.title)}{esc(count)}.</p>'
            f'<progress class="arena-opening-bar" max="100" value="{pct}" aria-label="preparation progress">'
            f'{pct}%</progress>'
            f'<p class="arena-opening-eta">{eta}</p></div>')


def header_line(boot) -> str:
    """The page header's one line for the public about the bootstrap `boot` (Markdown; '' when there is nothing
    to say)."""
    if boot is None or not boot.opening.planned:
        return ""
    if boot.opening.failed:
        return "Part of the benchmark could not be prepared on this start; the operator has the details."
    v = view(boot.opening)
    if v is not None:
        eta = f" — opens in {v.eta}" if v.eta else ""
        return f"⏳ Preparing the arena: step {v.k} of {v.n}, {v.title}{eta}."
    if not boot.ready.is_set():
        return ("The arena is open. The baselines are still being run on the whole benchmark in the background; "
                "their benchmark leaderboard rows appear when they finish.")
    return ""


def build_opening_banner(ctx, state: OpeningState | None = None) -> PageLoad:
    """The banner (inside the current tab) with its refresh timer; returns its page-load hook."""
    state = state or OpeningState(ctx)
    first = banner_html(state)
    banner = gr.HTML(first, visible=bool(first), elem_id="arena-opening")
    timer = gr.Timer(REFRESH_S, active=bool(first))

    def refresh():
        text = banner_html(state)
        return gr.update(value=text, visible=bool(text)), gr.Timer(active=bool(text))

    # cheap and read-only: no queueing behind other visitors' events (Gradio's default is one at a time per event)
    options = {"show_progress": "hidden", "api_visibility": "private", "concurrency_limit": None}
    timer.tick(refresh, None, [banner, timer], **options)
    return PageLoad(refresh, None, [banner, timer], options)
