"""`python -m eval_backend.baselines serve --host 127.0.0.1 --port P`: the baseline server."""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time


def watch_parent(pid: int, every_s: float = 1.0) -> threading.Thread:
    """Exit once `pid` is no longer our parent: the app died (even by SIGKILL, where it could not stop us)
    and we were re-parented. A thread, not PR_SET_PDEATHSIG, which fires when the *thread* that started
    us ends (the app's bootstrap thread ends long before the app)."""
    def run() -> None:
        while os.getppid() == pid:
            time.sleep(every_s)
        os._exit(0)
    thread = threading.Thread(target=run, name="parent-watch", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval_backend.baselines",
                                     description="Serve the cascade-blind / cascade-cue baselines "
                                                 "behind an OpenAI-compatible API.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--log-level", default="warning")
    serve.add_argument("--parent-pid", type=int,
                       help="exit when this process (the app that started us) is gone, however it ended")
    args = parser.parse_args(argv)
    if args.parent_pid:
        watch_parent(args.parent_pid)

    from ..cpu_threads import passive_openmp
    passive_openmp()   # before Whisper loads (eval_backend/cpu_threads.py)
    import uvicorn

    from .engine import Engine
    from .server import Service, create_app
    engine = Engine()
    engine.warm_up()  # load Whisper and pay first-call costs before listening, so /health means ready
    uvicorn.run(create_app(Service(engine)), host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
