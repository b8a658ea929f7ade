"""`python -m eval_backend submit`: the Submit form's validation and queueing from the command line.

    python -m eval_backend submit --name N --endpoint URL --model-id M [--audio-out] [--voice V]
        [--api-key-env VAR] [--predictions ZIP] [--organisation O] [--link URL] [--licence L] [--open-weights]
        [--dry-run] [--json] [--data-dir D] [--benchmark SPEC] [--allow ADDR]... [--submitter NAME]
        [--live --live-calls-per-day N]      (battle live once evaluated, within N calls a day: issue 22)

Exit status: 0 accepted (or would be, with --dry-run), 1 refused, 2 a usage error.
`--json` prints {"accepted": bool, "errors": {field: message}, "job_id": int|null, ...}.
The key is read from the environment variable named by --api-key-env, never from the command line
(which other users can see in the process list).
The command-line user is the operator (no quota) unless --submitter names someone else.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from .. import config
from ..store import Store
from .service import SubmissionService, SubmitOutcome
from .settings import Submitter, settings_from_env
from .validation import LICENCES, SubmissionForm

OPERATOR_ENV = "EMPATHY_ARENA_OPERATOR"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", required=True, help="display name (also the model's key on the leaderboard)")
    p.add_argument("--endpoint", help="OpenAI-compatible base URL, e.g. https://host/v1")
    p.add_argument("--model-id", help="the `model` value the endpoint expects")
    p.add_argument("--audio-out", action="store_true", help="ask for spoken replies (modalities text+audio)")
    p.add_argument("--voice", default="", help="voice name sent with audio requests")
    p.add_argument("--api-key-env", help="name of the environment variable holding the API key")
    p.add_argument("--predictions", help="a zip of a predictions JSONL + wav files instead of an endpoint")
    p.add_argument("--organisation", default="")
    p.add_argument("--link", default="", help="model card, paper or repository")
    p.add_argument("--licence", default="unknown", help=f"one of: {', '.join(LICENCES)}")
    p.add_argument("--open-weights", action="store_true")
    p.add_argument("--dry-run", action="store_true", help="validate (and preflight) only; queue nothing")
    p.add_argument("--json", action="store_true", help='print {"accepted": bool, "errors": {field: message}}')
    p.add_argument("--data-dir", help=f"data dir (default ${config.DATA_DIR_ENV} or ./data)")
    p.add_argument("--benchmark", help="benchmark spec the model is evaluated on (default: the operator's, demo)")
    p.add_argument("--tasks", help="comma-separated task subset (default: all)")
    p.add_argument("--limit", type=int, help="only the first N requests (small evaluations)")
    p.add_argument("--allow", action="append", default=[],
                   help="an internal address/network the endpoint may use (repeatable), e.g. 127.0.0.1:8765")
    p.add_argument("--no-preflight", action="store_true", help="skip the 2 test calls (operator use)")
    p.add_argument("--submitter", help="submit as this user (quota applies) instead of as the operator")
    p.add_argument("--live", action="store_true",
                   help="let the model battle live once evaluated (it answers voters' own recordings); needs "
                        "--audio-out and --live-calls-per-day")
    p.add_argument("--live-calls-per-day", type=int, default=0, help="at most this many live calls per 24 hours")


def build_form(args: argparse.Namespace) -> tuple[SubmissionForm, dict[str, str]]:
    errors: dict[str, str] = {}
    key = ""
    if args.api_key_env:
        key = os.environ.get(args.api_key_env, "")
        if not key:
            errors["api_key"] = f"The environment variable {args.api_key_env} is not set or empty."
    kind = "predictions" if args.predictions else "endpoint"
    form = SubmissionForm(name=args.name, organisation=args.organisation, link=args.link, licence=args.licence,
                          open_weights=args.open_weights, kind=kind, base_url=args.endpoint or "",
                          model_id=args.model_id or "", audio_output=args.audio_out, voice=args.voice,
                          api_key=key, predictions_path=args.predictions or "", live=args.live,
                          live_calls_per_day=args.live_calls_per_day)
    return form, errors


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    overrides = {}
    if args.benchmark:
        overrides["benchmark"] = args.benchmark
    if args.tasks:
        overrides["tasks"] = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    if args.limit is not None:
        overrides["limit"] = args.limit
    if args.no_preflight:
        overrides["preflight"] = False
    settings = settings_from_env(**overrides)
    settings = settings.with_(allow=settings.allow + tuple(args.allow))
    if args.submitter:
        who = Submitter(args.submitter, settings.is_operator(args.submitter))
    else:
        who = Submitter(os.environ.get(OPERATOR_ENV) or "operator", is_operator=True)
    form, errors = build_form(args)
    try:
        svc = SubmissionService(Store(config.data_dir(args.data_dir)), settings)
    except ValueError as exc:   # a bad --allow entry
        print(f"error: {exc}", file=sys.stderr)
        return 2
    outcome = SubmitOutcome(False, errors, dry_run=args.dry_run) if errors else svc.submit(form, who, args.dry_run)
    if args.json:
        print(json.dumps(outcome.to_dict()))
    elif outcome.accepted:
        what = "would be accepted (dry run, nothing queued)" if outcome.dry_run else f"queued as #{outcome.job_id}"
        print(f"{form.name}: {what}" + "".join(f"\n  note: {n}" for n in outcome.notes))
    else:
        print(f"{form.name}: refused")
        for field_name, message in outcome.errors.items():
            print(f"  {field_name}: {message}")
    return 0 if outcome.accepted else 1
