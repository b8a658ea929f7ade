"""`python -m arena <command>`: the arena's command line.

    ratings [--json] [--rounds N] [--source all|benchmark|live] [--attribute NAME] [--style]
                                         Bradley-Terry (95% interval, interval rank; provisional below the vote
                                         floor) + replayed TrueSkill per model, in the board's order; --attribute:
                                         over the battles whose user utterance has that vocal state; --style: the
                                         style-controlled fit beside it (style_bt, style_bt_low, ...)
    style-effects [--json] [...]         each style covariate's effect with its interval (same options)
    import-votes FILE                    append votes from CSV / JSONL (all or nothing)
    export --format jsonl|csv --out F    the public vote log (no session ids, IP hashes, user names)
    pause MODEL [--reason R] / unpause MODEL   (unpause also lifts a submitted model's live pause: live_submitted.py)
    health [--json] [--hours N]          accepted vs refused votes over the last day (--hours: per-hour series), of
                                         the accepted ones counted / down-weighted / excluded and why, gold checks,
                                         and the battle pairs left out of matchmaking, by reason
    sweep [--json]                       run the integrity sweep once (arena/services/vote_flags.py; the app runs it every 5 min)
    flags [--json]                       the flagged votes per kind and subject, and the operator's decisions
    reverse-flag KIND SUBJECT --operator NAME [--note N] / restore-flag ...
                                         the operator reverses a flag (its votes count again) or restores it
    release --out DIR [--rounds N]       public data release: votes, ratings, vote-log hash, code version, parameters
    rebuild DIR [--json] [--axis A] [--style]   recompute the leaderboard from a release (exit 1 if it differs)

Every command takes --data-dir (else EMPATHY_ARENA_DATA_DIR, else ./data). This module is the parser; the commands
are in arena/cli_commands.py, loaded once a command line parses.
"""
from __future__ import annotations

import argparse
import sys

from arena.tables.storage import AXES


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m arena", description="Empathy Arena votes and ratings")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=None, help="data dir (default: $EMPATHY_ARENA_DATA_DIR or ./data)")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("ratings", parents=[common], help="replayed ratings with Bradley-Terry intervals")
    r.add_argument("--json", action="store_true")
    r.add_argument("--rounds", type=int, default=None, help="bootstrap rounds (default: settings)")
    r.add_argument("--axis", default="overall", choices=AXES, help="overall, said, sounded or a vocal dimension")
    r.add_argument("--source", default="all", choices=("all", "benchmark", "live"),
                   help="votes on every battle, on benchmark battles only, or on live battles only")
    r.add_argument("--attribute", default=None, metavar="NAME",
                   help="only battles whose user utterance has this vocal state (a label of the benchmark's "
                        "vocabulary, e.g. sad, whisper, breathless; or neutral)")
    r.add_argument("--style", action="store_true",
                   help="add the style-controlled Bradley-Terry fit (length, loudness, pace, words, waiting time)")
    r.set_defaults(run="cmd_ratings")
    se = sub.add_parser("style-effects", parents=[common], help="each style covariate's effect, with its interval")
    se.add_argument("--json", action="store_true")
    se.add_argument("--rounds", type=int, default=None, help="bootstrap rounds (default: settings)")
    se.add_argument("--axis", default="overall", choices=AXES)
    se.add_argument("--source", default="all", choices=("all", "benchmark", "live"))
    se.add_argument("--attribute", default=None, metavar="NAME")
    se.set_defaults(run="cmd_style_effects")
    i = sub.add_parser("import-votes", parents=[common], help="append votes from a CSV or JSONL file")
    i.add_argument("file")
    i.set_defaults(run="cmd_import")
    e = sub.add_parser("export", parents=[common], help="write the public vote log")
    e.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    e.add_argument("--out", required=True)
    e.set_defaults(run="cmd_export")
    for name in ("pause", "unpause"):
        q = sub.add_parser(name, parents=[common], help=f"{name} a model (paused models are never served)")
        q.add_argument("model")
        if name == "pause":
            q.add_argument("--reason", default=None)
        q.set_defaults(run="cmd_pause")
    h = sub.add_parser("health", parents=[common], help="integrity health: share of submissions counted")
    h.add_argument("--json", action="store_true")
    h.add_argument("--hours", type=int, default=0, help="per-hour series over the last N hours (arena.services.health)")
    h.set_defaults(run="cmd_health")
    sw = sub.add_parser("sweep", parents=[common], help="run the integrity sweep once (flags, arena/core/sweeps.py)")
    sw.add_argument("--json", action="store_true")
    sw.set_defaults(run="cmd_sweep")
    fl = sub.add_parser("flags", parents=[common], help="flagged votes per kind and subject, and decisions")
    fl.add_argument("--json", action="store_true")
    fl.set_defaults(run="cmd_flags")
    for name, what in (("reverse-flag", "its votes count again"), ("restore-flag", "undo a reversal")):
        d = sub.add_parser(name, parents=[common], help=f"the operator's decision on a flag: {what}")
        d.add_argument("kind")
        d.add_argument("subject", help="as `flags` prints it, e.g. session:3f2a91c0d4e5 or address:9c1e...")
        d.add_argument("--operator", required=True, help="your name, logged with the decision")
        d.add_argument("--note", default=None)
        d.set_defaults(run="cmd_decide")
    rl = sub.add_parser("release", parents=[common], help="write a public data release (versioned snapshot)")
    rl.add_argument("--out", required=True, help="new or empty directory")
    rl.add_argument("--rounds", type=int, default=None, help="bootstrap rounds (default: settings)")
    rl.set_defaults(run="cmd_release")
    rb = sub.add_parser("rebuild", help="recompute the leaderboard from a release directory")
    rb.add_argument("dir")
    rb.add_argument("--json", action="store_true", help="print what `ratings --json` printed")
    rb.add_argument("--axis", default="overall", choices=AXES)
    rb.add_argument("--style", action="store_true", help="print the style-controlled table (`ratings --style`)")
    rb.set_defaults(run="cmd_rebuild")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from . import cli_commands  # why: start-up time (--help and a bad argument answer before scipy/numpy load)
    return int(getattr(cli_commands, args.run)(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
