"""Empathy Arena — the Hugging Face Space entry.

Serves at once; the embedded default (demo benchmark, SQLite, local baselines)
is prepared in the background with its progress shown at the top of the page.
Settings: EMPATHY_ARENA_DATA_DIR (./data), EMPATHY_ARENA_BENCHMARK (demo),
EMPATHY_ARENA_BOOTSTRAP (1: build the demo and run the baselines if needed).
"""
from __future__ import annotations

import logging
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from eval_backend import config  # noqa: E402
from eval_backend.bootstrap import Bootstrap  # noqa: E402
from eval_backend.store import Store  # noqa: E402
from leaderboard.browse_tab import build_browse_tab  # noqa: E402

log = logging.getLogger("empathy_arena")


class SpaceContext:
    """What the tabs share: the store, the benchmark once loaded, the bootstrap status."""

    def __init__(self, data_dir=None):
        self.data_dir = config.data_dir(data_dir)
        self.store = Store(self.data_dir)
        self.bootstrap = Bootstrap(
            self.data_dir,
            benchmark_spec=os.environ.get("EMPATHY_ARENA_BENCHMARK", "demo"),
            run_baselines=os.environ.get("EMPATHY_ARENA_BOOTSTRAP", "1") != "0",
        )

    @property
    def benchmark(self):
        return self.bootstrap.benchmark


def build_app(ctx: SpaceContext) -> gr.Blocks:
    with gr.Blocks(title="Empathy Arena") as demo:
        gr.Markdown("# Empathy Arena\nDo speech models hear *how* something is said, and answer with empathy?")
        status = gr.Markdown(ctx.bootstrap.status.line())
        timer = gr.Timer(2.0)
        timer.tick(lambda: ctx.bootstrap.status.line(), None, status)
        with gr.Tab("Browse benchmark"):
            list_items, collection, item, model = build_browse_tab(ctx)
        demo.load(list_items, [collection], [item, model])
    return demo


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    ctx = SpaceContext()
    ctx.bootstrap.start()
    demo = build_app(ctx)
    demo.launch(allowed_paths=[str(ctx.data_dir)], footer_links=["gradio", "settings"])


if __name__ == "__main__":
    main()
