"""`python -m eval_backend <command>`: each command lives in its own module.

A module listed here defines `add_arguments(parser)` and `main(args) -> int`. The commands that need the arena
or the board (the worker that hands off to the arena, the metric-human agreement on the arena's votes) are the
upper layer's own: `python -m leaderboard <command>` (leaderboard/__main__.py, which reuses `dispatch`).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .cpu_threads import passive_openmp

COMMANDS = {
    "run": ("eval_backend.runner", "query models on a benchmark and store their replies"),
    "benchmark": ("eval_backend.benchmark.cli", "inspect benchmarks (info SPEC --json)"),
    "demo": ("eval_backend.benchmark.demo", "build the offline demo benchmark from a seed"),
    "score": ("eval_backend.scoring.cli", "score a model's stored replies"),
    "rescore": ("eval_backend.scoring.rescore_cli", "recompute results from stored replies only"),
    "submit": ("eval_backend.submissions.cli", "validate and queue a model submission (--dry-run, --json)"),
    "screen-replies": ("eval_backend.moderation.cli",
                       "screen stored replies that have no screening decision yet (--benchmark SPEC [--model M])"),
    "screen": ("eval_backend.safety.cli", "screen a text for abuse, hate, self-harm, personal data (--json)"),
}


def dispatch(commands: dict[str, tuple[str, str]], prog: str, argv: list[str] | None = None) -> int:
    """Parse `argv` against `commands` ({name: (module, help)}) and run the chosen command's module."""
    passive_openmp()   # before a command loads Whisper or torch: its idle threads must not spin (cpu_threads.py)
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog=prog)
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    wanted = argv[0] if argv and argv[0] in commands else None
    for name, (module, help_text) in commands.items():
        p = sub.add_parser(name, help=help_text)
        if name == wanted:  # import only the command in use: start-up stays fast
            modules[name] = importlib.import_module(module)
            modules[name].add_arguments(p)
    args = parser.parse_args(argv)
    return int(modules[args.command].main(args) or 0)


def main(argv: list[str] | None = None) -> int:
    return dispatch(COMMANDS, "python -m eval_backend", argv)


if __name__ == "__main__":
    sys.exit(main())
