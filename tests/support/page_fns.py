"""The production page's handlers by name, for tests that call them as Gradio would (no browser, no server)."""
from __future__ import annotations

from types import SimpleNamespace


def page_handlers(ctx):
    """app.build_blocks(ctx) and its event handlers by function name (the first of each name)."""
    import app
    demo = app.build_blocks(ctx)
    fns: dict = {}
    for f in demo.fns.values():
        if f.fn:
            fns.setdefault(f.fn.__name__, f.fn)
    return SimpleNamespace(ctx=ctx, demo=demo, fns=fns)


def request(cookies: dict):
    """A gr.Request stand-in carrying cookies, from loopback."""
    return SimpleNamespace(cookies=cookies, headers={}, client=SimpleNamespace(host="127.0.0.1"))
