"""The one contract every UI tab follows (the registry of tabs is `app.py:TABS`).

A tab module is `<package>/<name>_tab.py` and exposes

    build_<name>_tab(ctx) -> TabHandles

called inside `with gr.Tab(...)`. `ctx` is the app's `AppContext` (app_context.py); a tab reads the services it
needs from it (`ctx.store`, `ctx.arena`, `ctx.submission_service`, `ctx.health`, `ctx.identity`, `ctx.media`,
`ctx.benchmark`) and never builds one itself, so each service exists once per app. What the tab wants run when a
page opens it returns as `PageLoad`s rather than registering them on a global root block, and the assembly
registers them with `handles.register_load(demo)` — so a tab built on its own (a test) fires no hidden events.
Likewise what a tab wants run when a visitor selects it (`selected`) or another tab (`left`, e.g. stopping a
gr.Timer that only this tab shows: a browser-side `js` hook costs the server nothing), registered by the assembly
with `handles.register_select(page, others)`.

No Gradio import here: the contract is plain data, shared by `arena/` and `leaderboard/` tabs alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class PageLoad:
    """One page hook: `demo.load(fn, inputs, outputs, **options)` (or `tab.select(...)` for a tab's select hooks)."""
    fn: Callable
    inputs: Any = None
    outputs: Any = None
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TabHandles:
    """What a built tab hands back to the assembly: its page-load hooks (none for a static tab), and its hooks for
    when a visitor selects this tab or another one."""
    loads: tuple[PageLoad, ...] = ()
    selected: tuple[PageLoad, ...] = ()
    left: tuple[PageLoad, ...] = ()

    def register_load(self, demo) -> None:
        """Register this tab's page-load hooks on the Blocks `demo` (call it inside `with demo:`)."""
        for hook in self.loads:
            demo.load(hook.fn, hook.inputs, hook.outputs, **hook.options)

    def register_select(self, page, others) -> None:
        """Register the select hooks: `selected` on this tab's own `gr.Tab` (`page`), `left` on each of `others`."""
        for hook in self.selected:
            page.select(hook.fn, hook.inputs, hook.outputs, **hook.options)
        for other in others:
            for hook in self.left:
                other.select(hook.fn, hook.inputs, hook.outputs, **hook.options)
