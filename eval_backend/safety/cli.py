"""`python -m eval_backend screen --text TEXT [--json]`: screen one text with the configured screen, for scripts
and tests. Exit status 0 either way (a flag is an answer, not an error); 2 for a bad setting."""
from __future__ import annotations

import json

from . import screen_text


def add_arguments(parser) -> None:
    parser.add_argument("--text", required=True, help="the text to screen")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")


def main(args) -> int:
    try:
        result = screen_text(args.text)
    except ValueError as exc:          # a bad EMPATHY_ARENA_* setting
        print(f"error: {exc}")
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), sort_keys=True))
        return 0
    verdict = "flagged" if result.flagged else "clean"
    if result.status != "screened":
        verdict += f" ({result.status})"
    print(f"{verdict}{' — crisis reading' if result.crisis else ''}")
    if result.reason:
        print(f"reason: {result.reason}")
    print("scores: " + ", ".join(f"{c} {s:.2f}" for c, s in result.categories.items()))
    print(f"screen: {result.screen}")
    return 0
