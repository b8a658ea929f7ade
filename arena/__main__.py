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
    sweep [--json]                       run the integrity sweep once (arena/vote_flags.py; the app runs it every 5 min)
    flags [--json]                       the flagged votes per kind and subject, and the operator's decisions
    reverse-flag KIND SUBJECT --operator NAME [--note N] / restore-flag ...
                                         the operator reverses a flag (its votes count again) or restores it
    release --out DIR [--rounds N]       public data release: votes, ratings, vote-log hash, code version, parameters
    rebuild DIR [--json] [--axis A] [--style]   recompute the leaderboard from a release (exit 1 if it differs)

Every command takes --data-dir (else EMPATHY_ARENA_DATA_DIR, else ./data).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

from .storage import AXES


def _service(args):
    from eval_backend.store import Store

    from .service import ArenaService
    return ArenaService(Store(args.data_dir))


def cmd_ratings(args) -> int:
    try:
        rows = _service(args).replayed_table(args.rounds, args.axis, source=args.source, attribute=args.attribute,
                                             style=args.style)
    except ValueError as exc:                   # an unknown attribute
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print("no votes yet")
        return 0
    style = f" {'rank*':>5} {'style BT':>8} {'95% interval':>17}" if args.style else ""
    print(f"{'rank':>4} {'model':30} {'BT':>7} {'95% interval':>17}{style} {'votes':>7} {'mu':>7} {'sigma':>6} "
          f"{'cons.':>7}")

    def f(x):
        return "   n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:7.1f}"

    def interval(r, key):
        provisional = r["provisional"] if key == "bt" else r[f"{key}_provisional"]
        return "   too few votes " if provisional else f"[{f(r[key + '_low'])}, {f(r[key + '_high'])}]"
    for r in rows:
        rank = "-" if r["bt_rank"] is None else str(r["bt_rank"])
        srank = "-" if r.get("style_bt_rank") is None else str(r["style_bt_rank"])
        styled = f" {srank:>5} {f(r['style_bt']):>8} {interval(r, 'style_bt')}" if args.style else ""
        print(f"{rank:>4} {r['model'][:30]:30} {f(r['bt'])} {interval(r, 'bt')}{styled} {r['votes']:7d} "
              f"{r['mu']:7.2f} {r['sigma']:6.2f} {r['conservative']:7.2f}")
    if args.style:
        print("rank*, style BT: the style-controlled fit (all else equal: length, loudness, pace, words, waiting time)")
    return 0


def cmd_style_effects(args) -> int:
    from .covariates import effect_sentence
    try:
        effects = _service(args).style_effects(args.axis, args.rounds, args.source, args.attribute)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(effects, indent=1))
        return 0
    print(f"style fit over {effects['battles']} battles, {effects['rounds']} bootstrap rounds")
    for name, effect in effects["effects"].items():
        print(effect_sentence(name, effect))
    return 0


def cmd_import(args) -> int:
    from .votes_io import VoteImportError
    try:
        n = _service(args).import_votes(args.file)
    except VoteImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"imported {n} votes from {args.file}")
    return 0


def cmd_export(args) -> int:
    from .votes_io import count_votes
    text = _service(args).export_votes(args.format, args.out)
    print(f"wrote {count_votes(text, args.format)} votes to {args.out}")
    return 0


def cmd_pause(args) -> int:
    import time

    from .live_submitted import unpause_live     # before the store opens: its table is one of the migrations
    svc = _service(args)
    if args.command == "pause":
        svc.pause_model(args.model, args.reason)
        print(f"paused {args.model}")
    else:
        svc.unpause_model(args.model)
        live = unpause_live(svc.store, args.model, time.time())     # a submitted model's live pause too
        print(f"unpaused {args.model}" + (" (also in live battles)" if live else ""))
    return 0


def cmd_health(args) -> int:
    if args.hours:
        return _health_series(args)
    svc = _service(args)
    h = {**svc.integrity_health(), "battle_pairs": _battle_pairs(svc), "live_models": _live_models(svc)}
    if args.json:
        print(json.dumps(h, indent=1))
    else:
        from .health import live_models_line, pairs_line
        share = "n/a" if h["counted_share"] is None else f"{h['counted_share']:.1%}"
        held = (f" ({h['down_weighted']} down-weighted, {h['excluded']} excluded: "
                f"{h['excluded_by_reason'] or 'none'})" if h["down_weighted"] or h["excluded"] else "")
        checks = h["gold"]
        print(f"last 24 h: {h['accepted']} votes accepted, {h['counted']} counted in full{held}, refused "
              f"{h['refused'] or 'none'}, counted share {share}; gold checks: {checks.get('pass', 0)} passed, "
              f"{checks.get('fail', 0)} failed" + ("  ALERT: most submissions are not counted" if h["alert"] else ""))
        print(pairs_line(h["battle_pairs"]))
        if h["live_models"]:
            print(live_models_line(h["live_models"]))
    return 0


def _live_models(svc) -> list[dict]:
    """Submitted models that battle live: their calls, failures and pause (arena/live_submitted.py)."""
    from eval_backend.submissions import settings_from_env

    from .live_submitted import SubmittedContestants
    return SubmittedContestants(svc.store, settings_from_env()).health()


def _battle_pairs(svc) -> dict:
    """The pairs left out of matchmaking (arena/distinct.py), once the clips that decide them are measured (the
    first run measures them: a few minutes for a whole benchmark; later runs read the cache)."""
    pairs = svc.left_out_pairs()
    if pairs["left_out"]["not_measured"]:
        print(f"measuring the delivery of replies with the same words ({pairs['left_out']['not_measured']} "
              "request pairs wait for it)...", file=sys.stderr)
        svc.heard.wait_idle()
        pairs = svc.left_out_pairs()
    return pairs


def _health_series(args) -> int:
    from .health import HealthConfig, health_report
    svc = _service(args)
    cfg = HealthConfig.from_settings(svc.settings, history_s=args.hours * 3600.0)
    rep = health_report(svc.store, cfg)
    if args.json:
        print(json.dumps(rep, indent=1))
        return 0
    print(f"{'hour (UTC)':16} {'served':>7} {'counted':>8} {'down-w.':>8} {'excluded':>8} {'refused':>8} {'share':>6}"
          "  refused / excluded by reason")
    for r in rep["rows"]:
        share = "   n/a" if r["counted_share"] is None else f"{r['counted_share']:6.0%}"
        why = ", ".join([f"{k} {v}" for k, v in r["refused_by_reason"].items()]
                        + [f"excluded {k} {v}" for k, v in r["excluded_by_reason"].items()])
        print(f"{r['start_utc']:16} {r['served']:7d} {r['counted']:8d} {r['down_weighted']:8d} {r['excluded']:8d} "
              f"{r['refused']:8d} {share}  {why}")
    print(f"ALERT: {rep['alert']}" if rep["alert"] else "no alert")
    return 0


def cmd_sweep(args) -> int:
    report = _service(args).integrity_upkeep().as_dict()
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"swept {report['votes']} votes in {report['seconds']} s: flags {report['flags']}; "
              f"{report['excluded']} excluded, {report['down_weighted']} down-weighted")
    return 0


def cmd_flags(args) -> int:
    from .vote_flags import groups
    rows = groups(_service(args).store)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print("no flagged votes")
    for r in rows:
        decided = f" (by {r['decided_by']}: {r['note'] or 'no note'})" if r["decided_by"] else ""
        print(f"{r['kind']:10} {r['subject']:40} {r['votes']:6d} votes, weight {r['weight']:g}, {r['state']}{decided}: "
              f"{r['detail']}")
    return 0


def cmd_decide(args) -> int:
    from .vote_flags import decide
    try:
        decide(_service(args).store, args.kind, args.subject, args.command.split("-")[0], args.operator, args.note)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.command.split('-')[0]}d {args.kind} flags of {args.subject} (logged as {args.operator})")
    return 0


def cmd_release(args) -> int:
    from .release import ReleaseError, write_release
    try:
        m = write_release(_service(args), args.out, args.rounds)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"release {m['release']}: {m['vote_log']['votes']} votes, vote-log sha256 {m['vote_log']['sha256']}, "
          f"code {m['code_version']['git_commit']}, written to {args.out}")
    return 0


def cmd_rebuild(args) -> int:
    from .release import ReleaseError, rebuild, table_json
    try:
        rows, report = rebuild(args.dir, args.axis, style=args.style)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(table_json(rows))
    else:
        for r in rows:
            print(f"{r['model'][:30]:30} {r['mu']:7.2f} {r['sigma']:6.2f} {r['conservative']:7.2f} {r['votes']:7d}")
        print(f"release {report['release']}, axis {report['axis']}, {report['votes']} votes: "
              + ("identical to the released table" if report["identical"] else "DIFFERS from the released table"))
    if not report["identical"]:
        print(f"rebuilt tables differ from {', '.join(f'{args.dir}/{n}' for n in report['differs'])}",
              file=sys.stderr)
    return 0 if report["identical"] else 1


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
    r.set_defaults(func=cmd_ratings)
    se = sub.add_parser("style-effects", parents=[common], help="each style covariate's effect, with its interval")
    se.add_argument("--json", action="store_true")
    se.add_argument("--rounds", type=int, default=None, help="bootstrap rounds (default: settings)")
    se.add_argument("--axis", default="overall", choices=AXES)
    se.add_argument("--source", default="all", choices=("all", "benchmark", "live"))
    se.add_argument("--attribute", default=None, metavar="NAME")
    se.set_defaults(func=cmd_style_effects)
    i = sub.add_parser("import-votes", parents=[common], help="append votes from a CSV or JSONL file")
    i.add_argument("file")
    i.set_defaults(func=cmd_import)
    e = sub.add_parser("export", parents=[common], help="write the public vote log")
    e.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    e.add_argument("--out", required=True)
    e.set_defaults(func=cmd_export)
    for name in ("pause", "unpause"):
        q = sub.add_parser(name, parents=[common], help=f"{name} a model (paused models are never served)")
        q.add_argument("model")
        if name == "pause":
            q.add_argument("--reason", default=None)
        q.set_defaults(func=cmd_pause)
    h = sub.add_parser("health", parents=[common], help="integrity health: share of submissions counted")
    h.add_argument("--json", action="store_true")
    h.add_argument("--hours", type=int, default=0, help="per-hour series over the last N hours (arena.health)")
    h.set_defaults(func=cmd_health)
    sw = sub.add_parser("sweep", parents=[common], help="run the integrity sweep once (flags, arena/sweeps.py)")
    sw.add_argument("--json", action="store_true")
    sw.set_defaults(func=cmd_sweep)
    fl = sub.add_parser("flags", parents=[common], help="flagged votes per kind and subject, and decisions")
    fl.add_argument("--json", action="store_true")
    fl.set_defaults(func=cmd_flags)
    for name, what in (("reverse-flag", "its votes count again"), ("restore-flag", "undo a reversal")):
        d = sub.add_parser(name, parents=[common], help=f"the operator's decision on a flag: {what}")
        d.add_argument("kind")
        d.add_argument("subject", help="as `flags` prints it, e.g. session:3f2a91c0d4e5 or address:9c1e...")
        d.add_argument("--operator", required=True, help="your name, logged with the decision")
        d.add_argument("--note", default=None)
        d.set_defaults(func=cmd_decide)
    rl = sub.add_parser("release", parents=[common], help="write a public data release (versioned snapshot)")
    rl.add_argument("--out", required=True, help="new or empty directory")
    rl.add_argument("--rounds", type=int, default=None, help="bootstrap rounds (default: settings)")
    rl.set_defaults(func=cmd_release)
    rb = sub.add_parser("rebuild", help="recompute the leaderboard from a release directory")
    rb.add_argument("dir")
    rb.add_argument("--json", action="store_true", help="print what `ratings --json` printed")
    rb.add_argument("--axis", default="overall", choices=AXES)
    rb.add_argument("--style", action="store_true", help="print the style-controlled table (`ratings --style`)")
    rb.set_defaults(func=cmd_rebuild)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
