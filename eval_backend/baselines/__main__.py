"""`python -m eval_backend.baselines serve --host 127.0.0.1 --port P`: the baseline server."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval_backend.baselines",
                                     description="Serve the cascade-blind / cascade-cue baselines "
                                                 "behind an OpenAI-compatible API.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)

    import uvicorn

    from .engine import Engine
    from .server import Service, create_app
    engine = Engine()
    engine.warm_up()  # load Whisper and pay first-call costs before listening, so /health means ready
    uvicorn.run(create_app(Service(engine)), host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
