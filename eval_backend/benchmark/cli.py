"""`python -m eval_backend benchmark info SPEC [--json] [--data-dir D]`.

Exit codes: 0 ok, 2 the spec cannot be loaded (one-line message on stderr).
"""
from __future__ import annotations

import argparse
import json
import sys

from .loaders import LOADERS, BenchmarkSpecError, load_benchmark


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    info = sub.add_parser("info", help="summarise a benchmark: counts, attributes, hash, flagged items")
    info.add_argument("spec", help=" | ".join(["demo", "FOLDER"] + [loader.usage for loader in LOADERS.values()]))
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.add_argument("--data-dir", default=None, help="data dir (default: $EMPATHY_ARENA_DATA_DIR or ./data)")
    info.add_argument("--flags", action="store_true", help="also list every flagged item and its reason")


def render_table(info: dict, flagged: list[tuple[str, str]] | None = None) -> str:
    rows = [
        ("name", info["name"]), ("version", info["version"]), ("hash", info["hash"]),
        ("scripts", info["scripts"]), ("variants", info["variants"]),
        ("attributes", f"{len(info['attributes'])}: " + ", ".join(info["attributes"])),
        ("mcq understanding", info["mcq"]["understanding"]), ("mcq reasoning", info["mcq"]["reasoning"]),
        ("context groups", info["groups"]["context"]), ("tone groups", info["groups"]["tone"]),
        ("selection items", info["selection"]), ("flagged", info["flagged"]),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    for item_id, reason in flagged or []:
        lines.append(f"  ! {item_id}: {reason}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.action != "info":
        print(f"error: unknown action {args.action!r}", file=sys.stderr)
        return 2
    try:
        b = load_benchmark(args.spec, data_dir=args.data_dir)
    except BenchmarkSpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    info = b.info()
    info["flagged"] = len(b.flagged())
    if args.json:
        if args.flags:
            info["flagged_items"] = [{"id": i, "reason": r} for i, r in b.flagged()]
        print(json.dumps(info, ensure_ascii=False))
    else:
        print(render_table(info, b.flagged() if args.flags else None))
    return 0
