"""A minimal arena server for the browser, load and latency tests (app.py does the same in production).

    EMPATHY_ARENA_DATA_DIR=DIR python -m tests.support.arena_app --port 7870

FastAPI app = the arena JSON API (/api/arena/...) + Gradio (arena tab and arena
leaderboard tab) mounted at "/". Settings overrides (e.g. no minimum listening
time, no rate limits for the load test) come as JSON in EMPATHY_ARENA_SETTINGS:
    EMPATHY_ARENA_SETTINGS='{"min_listen_s": 0, "ip_votes_per_minute": 1000000}'
EMPATHY_ARENA_TEST_LIVE_URL=http://127.0.0.1:P/v1 adds live mode (the models file's audio models at that URL).
"""
from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SETTINGS_ENV = "EMPATHY_ARENA_SETTINGS"
LIVE_ENV = "EMPATHY_ARENA_TEST_LIVE_URL"   # the live contestants' base URL (the baselines' server)


def build(data_dir=None):
    import types

    from space_shell.gradio_import import skip_stub_regeneration
    skip_stub_regeneration()          # as app.py does, before gradio
    import gradio as gr
    from fastapi import FastAPI

    from arena.config import settings_from_env
    from arena.web.http_api import mount_http_api
    from arena.web.media import mount_media
    from arena.services.service import ArenaService
    from arena.ui.live_ui import build_arena_live_tab
    from eval_backend.store import Store
    from leaderboard.arena_leaderboard_tab import build_arena_leaderboard_tab

    store = Store(data_dir)
    overrides = json.loads(os.environ.get(SETTINGS_ENV) or "{}")
    service = ArenaService(store, settings_from_env(store.root, **overrides))
    live = None
    if os.environ.get(LIVE_ENV):          # live mode against these contestants (the baselines' base URL)
        from arena.services.live import LiveService, LiveSettings, contestants_from_models
        live = LiveService(service, contestants_from_models(baseline_url=os.environ[LIVE_ENV]),
                           LiveSettings.from_env())
        live.start_sweeper()          # retention, as app.py's context starts it
    # what these two tabs read of app.py's AppContext (live: the "Use my voice" section, when set)
    ctx = types.SimpleNamespace(store=store, arena=service, live=live)
    with gr.Blocks(title="Empathy Arena (test)") as demo:
        with gr.Tab("Arena", id="arena"):
            arena_tab = build_arena_live_tab(ctx)
        with gr.Tab("Arena leaderboard", id="arena-board"):
            board_tab = build_arena_leaderboard_tab(ctx)
        arena_tab.register_load(demo)
        board_tab.register_load(demo)
    app = FastAPI()
    mount_http_api(app, service)
    mount_media(app, service)          # the clips' route: Gradio itself serves no file of the data dir
    if live is not None:
        from arena.web.live_api import mount_live_api
        mount_live_api(app, live)
    from arena.ui.layout_css import LAYOUT_CSS
    from space_shell.gradio_guard import mount_gradio
    from eval_backend.submissions.settings import SubmissionSettings
    return mount_gradio(app, demo, data_dir=store.root, zip_bytes=SubmissionSettings().max_upload_bytes,
                        footer_links=[], css=LAYOUT_CSS), service


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--data-dir", default=None)
    args = p.parse_args()
    import uvicorn

    from app import GRACEFUL_SHUTDOWN_S

    app, _ = build(args.data_dir)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False,
                proxy_headers=False, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)   # as app.main: addresses from space_shell/client_address.py
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
