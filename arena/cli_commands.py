"""The arena CLI's commands (`python -m arena`; the parser is arena/__main__.py, which loads this module only once
a command line parses, so `--help` stays fast)."""
from __future__ import annotations

import json
import math
import sys
import time

# live_submitted before any store opens: its table is one of the migrations (pause/unpause)
from arena.core.covariates import effect_sentence
from arena.core.votes_io import VoteImportError, count_votes
from arena.services.health import HealthConfig, health_report, live_models_line, pairs_line
from arena.services.live_submitted import SubmittedContestants, unpause_live
from arena.services.release import ReleaseError, rebuild, table_json, write_release
from arena.services.service import ArenaService
from arena.services.vote_flags import decide, groups
from eval_backend.store import Store
from eval_backend.submissions import settings_from_env


def _service(args):

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
    try:
        n = _service(args).import_votes(args.file)
    except VoteImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"imported {n} votes from {args.file}")
    return 0


def cmd_export(args) -> int:
    text = _service(args).export_votes(args.format, args.out)
    print(f"wrote {count_votes(text, args.format)} votes to {args.out}")
    return 0


def cmd_pause(args) -> int:
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
    """Submitted models that battle live: their calls, failures and pause (arena/services/live_submitted.py)."""

    return SubmittedContestants(svc.store, settings_from_env()).health()


def _battle_pairs(svc) -> dict:
    """The pairs left out of matchmaking (arena/core/distinct.py), once the clips that decide them are measured (the
    first run measures them: a few minutes for a whole benchmark; later runs read the cache)."""
    pairs = svc.left_out_pairs()
    if pairs["left_out"]["not_measured"]:
        print(f"measuring the delivery of replies with the same words ({pairs['left_out']['not_measured']} "
              "request pairs wait for it)...", file=sys.stderr)
        svc.heard.wait_idle()
        pairs = svc.left_out_pairs()
    return pairs


def _health_series(args) -> int:
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
    try:
        decide(_service(args).store, args.kind, args.subject, args.command.split("-")[0], args.operator, args.note)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.command.split('-')[0]}d {args.kind} flags of {args.subject} (logged as {args.operator})")
    return 0


def cmd_release(args) -> int:
    try:
        m = write_release(_service(args), args.out, args.rounds)
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"release {m['release']}: {m['vote_log']['votes']} votes, vote-log sha256 {m['vote_log']['sha256']}, "
          f"code {m['code_version']['git_commit']}, written to {args.out}")
    return 0


def cmd_rebuild(args) -> int:
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


