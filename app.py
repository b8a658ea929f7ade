"""Empathy Arena — the Hugging Face Space entry.

Serves at once; the embedded default (demo benchmark, SQLite, local baselines)
is prepared in the background with its progress shown at the top of the page.
Settings: EMPATHY_ARENA_DATA_DIR (./data), EMPATHY_ARENA_BENCHMARK (demo),
EMPATHY_ARENA_BOOTSTRAP (1: build the demo and run the baselines if needed),
EMPATHY_ARENA_WORKER (1: run an evaluation worker in-process), its judges (EMPATHY_ARENA_JUDGE_* and
EMPATHY_ARENA_AUDIO_JUDGE_*, see eval_backend/scoring/judge_env.py), Hub sync (README),
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (127.0.0.1:7860; Spaces sets 0.0.0.0),
EMPATHY_ARENA_TRUSTED_PROXIES (reverse proxies whose X-Forwarded-For is believed: eval_backend/client_address.py),
EMPATHY_ARENA_LIVE_* (live battles: arena/live.py).
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from arena.config import settings_from_env  # noqa: E402
from arena.http_api import mount_http_api  # noqa: E402
from arena.live import LiveService, LiveSettings, contestants_from_models  # noqa: E402
from arena.live_api import mount_live_api  # noqa: E402
from arena.live_ui import build_live_section  # noqa: E402
from arena.media import MediaTokens, mount_media  # noqa: E402
from arena.service import ArenaService  # noqa: E402
from arena.ui import build_arena_tab  # noqa: E402
from eval_backend import config  # noqa: E402
from eval_backend.body_limit import BodyLimit, app_caps  # noqa: E402
from eval_backend.bootstrap import Bootstrap  # noqa: E402
from eval_backend.signing import Signer  # noqa: E402
from eval_backend.inert import md  # noqa: E402
from eval_backend.store import Store  # noqa: E402
from leaderboard.about_tab import build_about_tab  # noqa: E402
from leaderboard.arena_board import build_arena_leaderboard_tab  # noqa: E402
from leaderboard.bench_board import build_bench_tab  # noqa: E402
from eval_backend.hub_sync import HubSync  # noqa: E402
from eval_backend.submissions import settings_from_env as submission_settings  # noqa: E402
from eval_backend.submissions.worker import start_worker_thread  # noqa: E402
from eval_backend.scoring.judge_env import space_judge_config  # noqa: E402
from leaderboard.browse_tab import build_browse_tab  # noqa: E402
from leaderboard.health_tab import build_health_tab  # noqa: E402
from leaderboard.submit_tab import build_submit_tab, identity_for  # noqa: E402

log = logging.getLogger("empathy_arena")


class SpaceContext:
    """What the tabs share: the store, the arena service, the benchmark once loaded, the bootstrap status."""

    def __init__(self, data_dir=None):
        self.data_dir = config.data_dir(data_dir)
        self.store = Store(self.data_dir)
        spec = os.environ.get("EMPATHY_ARENA_BENCHMARK", "demo")
        self.bootstrap = Bootstrap(self.data_dir, benchmark_spec=spec,
                                   run_baselines=os.environ.get("EMPATHY_ARENA_BOOTSTRAP", "1") != "0")
        # The arena serves the benchmark the bootstrap loads (nothing until then).
        self.arena = ArenaService(self.store, settings_from_env(self.data_dir, benchmark_specs=(spec,)),
                                  benchmarks=[])
        self.bootstrap.on_benchmark.append(lambda b: self.arena.set_benchmarks([b]))
        # The embedded demo's baselines listen on loopback, so the demo allowlists exactly their port
        # (not the rest of 127.0.0.1, where this app listens). EMPATHY_ARENA_DEMO_LOOPBACK=0 turns that off.
        demo = spec == "demo" and os.environ.get("EMPATHY_ARENA_DEMO_LOOPBACK", "1") != "0"
        self.submissions = submission_settings(demo=demo,
                                               baseline_port=self.bootstrap.baseline_port if demo else None)
        # the in-process worker's judges, from EMPATHY_ARENA_*JUDGE_* (eval_backend/scoring/judge_env.py)
        self.judge_error = None
        try:
            judge_config = space_judge_config(self.data_dir)
        except (ValueError, OSError) as exc:
            judge_config, self.judge_error = None, str(exc)
            log.error("judge settings ignored, scoring without a judge: %s", exc)
        if judge_config:
            self.submissions = self.submissions.with_(judge_config=judge_config)
        # Live battles (arena/live.py): the models file's audio models answer the voter's own recording; the
        # baselines at the bootstrap's port, which the bootstrap starts first, so live mode does not wait for it.
        try:
            contestants = contestants_from_models(
                baseline_url=f"http://127.0.0.1:{self.bootstrap.baseline_port}/v1")
        except (ValueError, OSError) as exc:
            contestants = []
            log.error("live mode off: the models file cannot be read: %s", exc)
        self.live = LiveService(self.arena, contestants, LiveSettings.from_env())
        self.hub = HubSync(self.store, append_votes=self.arena.append_votes)
        self.media = MediaTokens(Signer.for_data_dir(self.data_dir))   # audio URLs for Browse and model pages
        self.worker = None

    def status_line(self) -> str:
        return self.bootstrap.status.line() + "\n\n" + md(self.hub.status_line())   # Hub errors: inert text

    @property
    def benchmark(self):
        return self.bootstrap.benchmark


def build_blocks(ctx: SpaceContext) -> gr.Blocks:
    with gr.Blocks(title="Empathy Arena") as demo:
        gr.Markdown("# Empathy Arena\nDo speech models hear *how* something is said, and answer with empathy?")
        status = gr.Markdown(ctx.status_line())
        gr.Timer(2.0).tick(ctx.status_line, None, status)
        with gr.Tab("Arena", id="arena"):
            build_live_section(ctx.live, build_arena_tab(ctx.arena))
        with gr.Tab("Arena leaderboard", id="arena-board"):
            build_arena_leaderboard_tab(ctx.arena)
        with gr.Tab("Benchmark leaderboard", id="bench-board"):
            build_bench_tab(ctx)
        with gr.Tab("Submit", id="submit"):
            build_submit_tab(ctx)
        with gr.Tab("Browse benchmark", id="browse"):
            list_items, collection, item, model = build_browse_tab(ctx)
        with gr.Tab("Integrity health", id="health"):
            _, render_health, health_outputs = build_health_tab(ctx)
        with gr.Tab("About", id="about"):
            build_about_tab(ctx)
        demo.load(list_items, [collection], [item, model])
        demo.load(render_health, None, health_outputs)
    return demo


def build_app(ctx: SpaceContext) -> BodyLimit:
    """The JSON API (/api/arena/...) and the media routes beside the Gradio UI mounted at /.

    Gradio serves no file of the data dir: audio goes through arena/media.py's token routes, and the data dir
    is in Gradio's blocked_paths, so neither its file routes nor a component's output can reach the database,
    the salt, the signing key, submissions or results (reading the database file here would also drop
    SQLite's locks and could lose acknowledged votes)."""
    app = FastAPI(title="Empathy Arena")
    mount_http_api(app, ctx.arena)
    mount_live_api(app, ctx.live)
    mount_media(app, ctx.arena, ctx.media, lambda: ctx.benchmark)
    identity_for(ctx).mount(app)        # /operator sign-in and the guest cookie (leaderboard/identity.py)
    app = gr.mount_gradio_app(app, build_blocks(ctx), path="/", blocked_paths=[str(ctx.data_dir)],
                              footer_links=["gradio", "settings"])
    # request-body caps in front of everything, Gradio's routes included (eval_backend/body_limit.py)
    return BodyLimit(app, app_caps(ctx.submissions.max_upload_bytes))


def start_health_checks(ctx: SpaceContext, every_s: float = 300.0) -> None:
    """Alerts must reach the log even when no page is open."""
    from arena.health import HealthConfig, HealthMonitor

    monitor = HealthMonitor(ctx.store, HealthConfig.from_settings(ctx.arena.settings))

    def loop():
        while True:
            try:
                monitor.check()
            except Exception:  # a failed check must not stop the next one
                log.exception("integrity health check failed")
            time.sleep(every_s)

    threading.Thread(target=loop, name="health-checks", daemon=True).start()


def main() -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # SIGTERM ends the process like a normal exit, so atexit handlers run (the baseline server is stopped):
    # uvicorn re-raises the signal after its graceful shutdown, which under the default handler kills at once
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ctx = SpaceContext()
    ctx.hub.start()          # restores from the Hub before serving (no-op when not configured or offline)
    atexit.register(ctx.hub.stop)
    ctx.bootstrap.start()
    ctx.live.start_sweeper()     # deletes live recordings on schedule (retention)
    if os.environ.get("EMPATHY_ARENA_WORKER", "1") != "0":
        ctx.worker = start_worker_thread(store=ctx.store, settings=ctx.submissions)
    start_health_checks(ctx)
    host = os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    log.info("store: %s; serving on http://%s:%d", ctx.store.describe(), host, port)
    # proxy_headers=False: uvicorn would otherwise believe X-Forwarded-For from 127.0.0.1 (its default
    # forwarded_allow_ips); client addresses are resolved in one place, eval_backend/client_address.py.
    uvicorn.run(build_app(ctx), host=host, port=port, log_level="warning", proxy_headers=False)


if __name__ == "__main__":
    main()
