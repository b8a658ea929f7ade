"""`python -m leaderboard <command>`: the commands that need the arena beside the evaluation.

eval_backend does not import the arena, so its CLI (`python -m eval_backend`) cannot offer these; the dispatcher
is eval_backend's own (eval_backend/__main__.py `dispatch`), each module defines `add_arguments(parser)` and
`main(args) -> int`.
"""
from __future__ import annotations

import sys

from eval_backend.__main__ import dispatch

COMMANDS = {
    "worker": ("leaderboard.worker_cli",
               "evaluate queued submissions and hand the replies to the arena (--once, --poll S)"),
    "agreement": ("leaderboard.agreement_cli",
                  "which automatic metrics prefer the reply people voted for (--json)"),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch(COMMANDS, "python -m leaderboard", argv)


if __name__ == "__main__":
    sys.exit(main())
