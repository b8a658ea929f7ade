"""Empathy Arena — the Hugging Face Space entry.

Serves at once; the embedded default (demo benchmark, SQLite, local baselines)
is prepared in the background with its progress shown at the top of the page.
Settings: EMPATHY_ARENA_DATA_DIR (./data), EMPATHY_ARENA_BENCHMARK (demo),
EMPATHY_ARENA_BOOTSTRAP (1: build the demo and run the baselines if needed),
EMPATHY_ARENA_FIRST_SLICE (12: spoken requests every baseline answers first, so the arena opens early),
EMPATHY_ARENA_WORKER (1: run an evaluation worker in-process), its judges (EMPATHY_ARENA_JUDGE_* and
EMPATHY_ARENA_AUDIO_JUDGE_*, see eval_backend/scoring/judge_env.py), Hub sync (README),
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (127.0.0.1:7860; Spaces sets 0.0.0.0),
EMPATHY_ARENA_TRUSTED_PROXIES (reverse proxies whose X-Forwarded-For is believed: space_shell/client_address.py),
EMPATHY_ARENA_LIVE_* (live battles: arena/services/live.py), EMPATHY_ARENA_GOLD_SHARE and EMPATHY_ARENA_POW* (gold battles and
proof of work for anonymous voters: arena/README.md, "Votes that count").

The services are assembled once in app_context.py (AppContext); the page's tabs are the TABS list below, each a
`build_<name>_tab(ctx) -> TabHandles` (space_shell/tab_contract.py).
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import signal
from dataclasses import dataclass
from typing import Callable

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Gradio's queue recomputes a pandas summary of its last 10,000 events after every event (for its /monitoring
# page, which this app does not mount): 40% of the app's CPU under a crawl of Gradio events (py-spy, issue 25), and
# a cost every visitor's timer tick paid. Keep a few events and recompute the summary almost never.
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "100")
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000000")
from eval_backend.cpu_threads import passive_openmp  # noqa: E402
from space_shell.gradio_import import skip_stub_regeneration  # noqa: E402

passive_openmp()   # before Whisper / torch load: their idle OpenMP workers must not spin on the 2 shared cores
skip_stub_regeneration()   # before gradio: ~1.2 s of its import rewrites editor stubs (space_shell/gradio_import.py)

import gradio as gr  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from app_context import AppContext  # noqa: E402
from arena.web.http_api import mount_http_api  # noqa: E402
from arena.ui.layout_css import LAYOUT_CSS  # noqa: E402
from arena.web.live_api import mount_live_api  # noqa: E402
from arena.ui.live_ui import build_arena_live_tab  # noqa: E402
from arena.web.media import mount_media  # noqa: E402
from space_shell.body_limit import BodyLimit  # noqa: E402
from space_shell.gradio_guard import mount_gradio  # noqa: E402
from space_shell.tab_contract import TabHandles  # noqa: E402
from leaderboard import browse  # noqa: E402
from leaderboard.about_tab import build_about_tab  # noqa: E402
from leaderboard.arena_leaderboard_tab import build_arena_leaderboard_tab  # noqa: E402
from leaderboard.bench_tab import build_bench_tab  # noqa: E402
from leaderboard.browse_tab import build_browse_tab  # noqa: E402
from leaderboard.health_tab import build_health_tab  # noqa: E402
from leaderboard.moderation_tab import build_moderation_tab  # noqa: E402
from leaderboard.public_api import hide_unnamed, register_public_api  # noqa: E402
from leaderboard.submit_tab import build_submit_tab  # noqa: E402

log = logging.getLogger("empathy_arena")
# SIGTERM (a Space restart) ends the server within this many seconds: uvicorn would otherwise wait for every open
# connection, and a browser's event stream stays open as long as its tab does
GRACEFUL_SHUTDOWN_S = 3

SpaceContext = AppContext.from_env      # the name tests and scripts of earlier versions use


@dataclass(frozen=True)
class Tab:
    label: str
    id: str                                            # the page's ?tab= / elem id; stable, links use it
    build: Callable[[AppContext], TabHandles]          # space_shell/tab_contract.py
    operator_only: bool = False                        # built hidden; the tab's load hook shows it to the operator


# Every tab of the page, in order. Adding a tab = a module `<package>/<name>_tab.py` with
# `build_<name>_tab(ctx) -> TabHandles` (space_shell/tab_contract.py) and one entry here.
TABS: tuple[Tab, ...] = (
    Tab("Arena", "arena", build_arena_live_tab),          # the arena tab and its "Use my voice" section
    Tab("Arena leaderboard", "arena-board", build_arena_leaderboard_tab),
    Tab("Benchmark leaderboard", "bench-board", build_bench_tab),
    Tab("Submit", "submit", build_submit_tab),
    Tab("Browse benchmark", "browse", build_browse_tab),
    Tab("Integrity health", "health", build_health_tab),
    Tab("About", "about", build_about_tab),
    Tab("Moderation", "moderation", build_moderation_tab, operator_only=True),   # issue 14: held items
)


def build_blocks(ctx: AppContext, tabs: tuple[Tab, ...] = TABS) -> gr.Blocks:
    with gr.Blocks(title="Empathy Arena") as demo:
        gr.Markdown("# Empathy Arena\nDo speech models hear *how* something is said, and answer with empathy?")
        # the public status line (arena/ui/opening_banner.py): rendered at build and on each page load, then every 2 s
        # until the bootstrap is done; the operator's detail is on the Integrity health tab
        status = gr.Markdown(ctx.status_line(), elem_id="page-status")
        timer = gr.Timer(2.0, active=not ctx.bootstrap.ready.is_set())

        def header():
            return ctx.status_line(), gr.Timer(active=not ctx.bootstrap.ready.is_set())
        timer.tick(header, None, [status, timer], show_progress="hidden", concurrency_limit=None)
        demo.load(header, None, [status, timer], show_progress="hidden", concurrency_limit=None)
        built, pages = [], []
        with gr.Tabs(overflow_behavior="wrap", elem_id="tabs"):    # every tab shown, wrapping on a phone
            for tab in tabs:
                # an operator-only tab starts hidden; its own page-load hook shows it to the operator alone
                with gr.Tab(tab.label, id=tab.id, visible=not tab.operator_only) as page:
                    built.append(tab.build(ctx))
                page.select(None, None, None, js=TAB_URL_JS % json.dumps(tab.id))
                pages.append(page)
        for handles, page in zip(built, pages):   # each tab's own page-load and select hooks, in tab order
            handles.register_load(demo)
            handles.register_select(page, [p for p in pages if p is not page])
        # ?tab=<id> selects that tab in the page itself (a server-side load that outputs to the tab bar puts it
        # back on its first tab under a visitor who has already chosen another)
        demo.load(None, None, None, js=TAB_OPEN_JS)
        demo.load(None, None, None, js=A11Y_JS)
        register_public_api(ctx)          # the named API (README, "The API"); everything else private
    hide_unnamed(demo)
    return demo


# A shared link opens the tab it was made on: choosing a tab writes ?tab=<id> into the address bar (the other
# parameters, e.g. the benchmark filters, stay), and a page opened with ?tab=<id> selects that tab on load.
# Gradio fires the first tab's `select` while the page mounts, which used to rewrite every link to ?tab=arena
# before the load script could read it: so whichever script runs first keeps the asked-for id
# (window.__tabWanted), and no other tab's select writes the address until the asked-for tab has been opened
# (or could not be: an unknown or hidden id is given up after 10 s).
TAB_WANTED_JS = """
  if (window.__tabWanted === undefined) {
    const asked = new URLSearchParams(window.location.search).get('tab') || '';
    window.__tabWanted = /^[a-z0-9-]{1,32}$/.test(asked) ? asked : '';
  }"""

TAB_URL_JS = """() => {""" + TAB_WANTED_JS + """
  const id = %s;
  if (window.__tabWanted && window.__tabWanted !== id) return;     // the page is still opening the linked tab
  window.__tabWanted = '';
  const p = new URLSearchParams(window.location.search);
  p.set('tab', id);
  window.history.replaceState(null, '', window.location.pathname + '?' + p.toString() + window.location.hash);
}"""


TAB_OPEN_JS = """() => {""" + TAB_WANTED_JS + """
  const id = window.__tabWanted;
  if (!id) return [];
  let tries = 0;
  const pick = () => {          // the tab bar may still be mounting; Gradio may select its first tab meanwhile
    if (window.__tabWanted !== id) return;                // opened (its select ran), or the visitor chose a tab
    const button = document.querySelector(`[role='tab'][data-tab-id='${id}']`);
    if (button && button.getAttribute('aria-selected') === 'true') { window.__tabWanted = ''; return; }
    if (button && button.getClientRects().length) button.click();
    if (tries++ < 100) setTimeout(pick, 100); else window.__tabWanted = '';
  };
  pick();
  return [];
}"""


# Accessibility fixes to Gradio's own markup, for the whole page (axe-core, tests/test_page_people.py): a table's
# search box is named only by its title, an empty plot or JSON box carries an aria-label on a div with no role, and
# a box that scrolls has nothing the keyboard can reach.
A11Y_JS = """() => {
  if (window.__a11yFixes) return [];
  window.__a11yFixes = true;
  const fix = () => {
    for (const i of document.querySelectorAll('input:not([aria-label]):not([id])')) {
      const name = i.getAttribute('title') || i.getAttribute('placeholder');
      if (name && !i.labels?.length) i.setAttribute('aria-label', name);
    }
    for (const d of document.querySelectorAll('div[aria-label]:not([role])')) d.setAttribute('role', 'img');
    // a box that scrolls (a long job detail on a phone) must be reachable from the keyboard
    for (const e of document.querySelectorAll('[role=tabpanel] [id]:not([tabindex])')) {
      const cs = getComputedStyle(e);
      const scrolls = (/(auto|scroll)/.test(cs.overflowX) && e.scrollWidth > e.clientWidth) ||
                      (/(auto|scroll)/.test(cs.overflowY) && e.scrollHeight > e.clientHeight);
      if (scrolls && !e.querySelector('a[href], button, input, select, textarea, [tabindex]')) e.setAttribute('tabindex', '0');
    }
  };
  window.addEventListener('resize', () => fix());
  let queued = false;
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; fix(); }); } })
    .observe(document.body, {childList: true, subtree: true});
  fix();
  return [];
}"""


def build_app(ctx: AppContext) -> BodyLimit:
    """The JSON API (/api/arena/...) and the media routes beside the Gradio UI mounted at /.

    Gradio serves no file of the data dir: audio goes through arena/web/media.py's token routes, the data dir is in
    Gradio's blocked_paths, and an event's input may name only a file this browser uploaded
    (space_shell/gradio_guard.py, eval_backend/uploads.py), so neither its file routes nor a component's input
    or output can reach the database, the salt, the signing key, submissions or results (reading the database
    file here would also drop SQLite's locks and could lose acknowledged votes)."""
    app = FastAPI(title="Empathy Arena")
    mount_http_api(app, ctx.arena)
    if ctx.live is not None:
        mount_live_api(app, ctx.live)
    mount_media(app, ctx.arena, ctx.media, lambda: ctx.benchmark, browse.clip_file)
    ctx.identity.mount(app)             # /operator sign-in and the guest cookie (leaderboard/identity.py)
    # Gradio mounted with its input check on and its routes bounded (uploads, sessions, file references), the
    # request-body caps in front of everything (space_shell/gradio_guard.py, space_shell/body_limit.py)
    return mount_gradio(app, build_blocks(ctx), data_dir=ctx.data_dir, zip_bytes=ctx.submissions.max_upload_bytes,
                        footer_links=["gradio", "settings"], css=LAYOUT_CSS)   # arena/ui/layout_css.py


def _terminate(*_) -> None:
    """SIGTERM: run the exit handlers (they stop the baseline server and the Hub sync, flush the log), then end.
    Not `sys.exit`: a SystemExit raised while the main thread happens to run a garbage-collector callback (a
    weakref's) is printed as "Exception ignored" and swallowed, and the app would keep running — seen when the
    signal arrived during start-up on a loaded machine. Nor the interpreter's own shutdown, which would wait for
    worker pools' threads."""
    import atexit
    atexit._run_exitfuncs()        # CPython's: the registered handlers, once, newest first
    os._exit(0)


def main() -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # SIGTERM ends the process like a normal exit, so atexit handlers run (the baseline server is stopped):
    # uvicorn re-raises the signal after its graceful shutdown, which under the default handler kills at once
    signal.signal(signal.SIGTERM, _terminate)
    ctx = AppContext.from_env()
    ctx.start()              # Hub restore, bootstrap, live sweeper, worker, health checks (app_context.py)
    atexit.register(ctx.hub.stop)
    host = os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    log.info("store: %s; serving on http://%s:%d", ctx.store.describe(), host, port)
    # proxy_headers=False: uvicorn would otherwise believe X-Forwarded-For from 127.0.0.1 (its default
    # forwarded_allow_ips); client addresses are resolved in one place, space_shell/client_address.py.
    uvicorn.run(build_app(ctx), host=host, port=port, log_level="warning", proxy_headers=False,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)


if __name__ == "__main__":
    main()
