"""The Space with the issue-5 tabs (Submit, Benchmark leaderboard, About) beside the arena, for the browser test.

    EMPATHY_ARENA_DATA_DIR=DIR EMPATHY_ARENA_BOOTSTRAP=0 python -m tests.support.space_app --port 7871 [--worker]

Uses app.py's SpaceContext (store, arena, bootstrap that only loads the benchmark when
EMPATHY_ARENA_BOOTSTRAP=0) and app.py's build_app, without app.main's in-process worker and Hub sync. `--worker` also starts the
in-process worker (`start_worker_thread`); the browser test runs the worker as its own process instead,
so it can stop it between steps.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build(data_dir=None, worker: bool = False):
    from app import SpaceContext, build_app

    ctx = SpaceContext(data_dir)         # ctx.submissions: SubmissionSettings (demo: loopback allowlisted)
    ctx.bootstrap.start()
    ctx.bootstrap.ready.wait(120)
    handle = None
    if worker:
        from eval_backend.submissions.worker import start_worker_thread
        handle = start_worker_thread(settings=ctx.submissions, store=ctx.store, poll_s=1.0)
    app = build_app(ctx)              # the production app: every tab plus the JSON API
    return app, ctx, handle


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--worker", action="store_true")
    p.add_argument("--submit-refresh", type=float, default=None,
                   help="the Submit tab's refresh interval in seconds (tests/test_submit_timer.py: 1 s, so its "
                        "counts of ticks per tab take a third of the time)")
    args = p.parse_args()
    if args.submit_refresh is not None:
        from leaderboard import submit_tab
        submit_tab.REFRESH_S = args.submit_refresh
    import uvicorn

    from app import GRACEFUL_SHUTDOWN_S

    app, _, _ = build(args.data_dir, args.worker)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False,
                proxy_headers=False, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)   # as app.main: addresses from space_shell/client_address.py
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
