"""The Submit tab: the form, per-field errors, the list of every request with its state, operator actions.

Thin: validation, the queue and the worker live in eval_backend.submissions; this module turns the form
into a `SubmissionForm`, shows `SubmitOutcome.errors` under their fields and lists `list_jobs()`.
Who submits, and who sees a job's endpoint and may retry or cancel it: `leaderboard/identity.py` (signed-in Hub
users on Spaces, a guest per browser session locally, the operator only by Hub sign-in or the operator token);
what each viewer sees of a job: `SubmissionService.jobs_for` / `job_for` / `events_for`.
The API key box is a password field, cleared after every submit, and its value is never shown or logged; when
the operator has not set up encrypted key storage (secrets.py) it is disabled, with the reason in its label.
Boxes with a length limit show a counter ("12 / 64"), updated in the browser; nothing is cut to the limit, the
check refuses a longer value at its field and says the limit. A failed test call is shown under the field it
concerns, in a sentence of ours (eval_backend/submissions/messages.py). Cancel is shown only while the picked
request is PENDING or RUNNING (the service still decides whether this viewer may cancel it).
"""
from __future__ import annotations

import logging
import os
import time

import gradio as gr
import pandas as pd

from eval_backend import uploads
from eval_backend.inert import md
from eval_backend.inert import md_inline as mi
from eval_backend.submissions import LICENCES, JobError, SubmissionForm, SubmissionService
from eval_backend.submissions import secrets as secretstore
from eval_backend.submissions.queue import Job
from eval_backend.submissions.service import HIDDEN
from eval_backend.submissions.validation import FIELD_LIMITS, LIVE_CALLS_MAX, NAME_MAX, NAME_MIN
from leaderboard.identity import Identity, on_spaces  # noqa: F401  (on_spaces: the tests' Spaces probe)
from space_shell.tab_contract import PageLoad, TabHandles

FIELDS = ("name", "organisation", "link", "licence", "open_weights", "kind", "base_url", "model_id",
          "audio_output", "voice", "api_key", "predictions", "live", "live_calls_per_day")
GENERAL = ("endpoint", "duplicate", "quota", "benchmark")     # errors that belong to no single field
JOB_COLUMNS = ["#", "model", "state", "submitter", "submitted", "updated", "reason or result"]
CANCELLABLE = ("PENDING", "RUNNING")
KEY_LABEL = ("API key (optional; stored encrypted, never shown; deleted when the job ends, or when the model leaves "
             "live battles)")
LIVE_LABEL = "Battle live: once evaluated, answer voters' own recordings (off by default)"
LIVE_INFO = ("Your endpoint is then called live, within the daily budget you set; a failed or slow call voids that "
             "battle, and 3 failed calls in a row pause the model from live battles. Needs 'Answers with audio'.")
KEY_OFF_LABEL = "API key: not accepted on this Space"
KEY_OFF_INFO = ("The operator has not set up encrypted storage for keys, so none can be accepted here. Endpoints "
                "that need no key can still be submitted.")
# a browser-side update of the Submit timer's `active` prop (Gradio applies an update dict a js hook returns)
TIMER_JS = "() => ({__type__: 'update', active: %s})"
REFRESH_S = 3.0       # the Submit tab's job list and identity refresh, while the tab is selected (below)
log = logging.getLogger(__name__)


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + " UTC" if t else ""


def job_result(job) -> str:
    if job.reason:
        return job.reason
    if job.state == "FINISHED":
        s, a = job.summary or {}, job.arena or {}
        arena = "in the arena" if a.get("servable") else f"not in the arena: {a.get('why') or 'unknown'}"
        return f"{s.get('ok', '?')} ok, {s.get('failed', '?')} failed of {s.get('requests', '?')}; {arena}"
    if job.state == "RUNNING":
        return f"running on {job.lease_owner} (claim {job.claims})" if job.lease_owner else "running"
    return ""


def jobs_frame(jobs) -> pd.DataFrame:
    """Every request, newest first, FAILED with its reason (pure)."""
    rows = [[j.id, j.model, j.state, j.submitter, _when(j.created_at), _when(j.updated_at), job_result(j)]
            for j in jobs]
    return pd.DataFrame(rows, columns=JOB_COLUMNS)


def job_markdown(job, events: list[dict]) -> str:
    """A request's details. Its name, endpoint, reasons, event details and log come from the submitter, the
    endpoint or the worker: all inert text (no link, image, HTML or code fence of theirs)."""
    lines = [f"### #{job.id} {mi(job.model)}: **{mi(job.state)}**"]
    if job.reason:
        lines.append(f"**Why:** {md(job.reason)}")
    target = job.base_url and f"endpoint {mi(job.base_url)} model {mi(job.model_id)}" or "predictions upload"
    if job.base_url == HIDDEN:
        target = "endpoint and model id shown to its submitter and the operator only"
    lines.append(f"{target}; audio output: {'yes' if job.audio_output else 'no'}; benchmark {mi(job.benchmark)}"
                 + ("; an API key was given (stored encrypted until the job ends)" if job.has_api_key else ""))
    if job.results_path:
        lines.append(f"Results: {mi(os.path.basename(job.results_path))}")
    if getattr(job, "live_opt_in", False):        # any object with a job's fields may be shown here
        lines.append(f"Live battles: opted in, at most {job.live_calls_per_day or 0:,} calls a day (once evaluated and "
                     "screened; an API key is kept encrypted while the model battles live)")
    lines.append("\n| when | event | by | detail |\n|---|---|---|---|")
    for e in events:     # md_inline escapes "|" too, so a detail cannot add cells
        lines.append(f"| {_when(e['at'])} | {mi(e['event'])} | {mi(e.get('actor') or '')} | "
                     f"{mi(e.get('detail') or '', limit=2000)} |")
    if job.log_excerpt:
        lines.append("\n<details><summary>log excerpt</summary>\n\n" + md(job.log_excerpt[-4000:]) + "\n\n</details>")
    return "\n".join(lines)


def form_from_inputs(name, organisation, link, licence, open_weights, kind, base_url, model_id, audio_output,
                     voice, api_key, predictions, live=False, live_calls_per_day=None) -> SubmissionForm:
    path = predictions if isinstance(predictions, str) else getattr(predictions, "name", "") or ""
    is_endpoint = kind == "endpoint"
    live = bool(live) and is_endpoint
    return SubmissionForm(name=name or "", organisation=organisation or "", link=link or "",
                          licence=licence or "unknown", open_weights=bool(open_weights), kind=kind or "",
                          base_url=(base_url or "") if is_endpoint else "", model_id=(model_id or "") if is_endpoint
                          else "", audio_output=bool(audio_output) if is_endpoint else False,
                          voice=(voice or "") if is_endpoint else "", api_key=(api_key or "") if is_endpoint else "",
                          predictions_path="" if is_endpoint else path, live=live,
                          live_calls_per_day=live_calls_per_day if live and live_calls_per_day is not None else 0)


def counter_text(value: str | None, limit: int) -> str:
    """ "12 / 64 characters", and "too long" past the limit (the browser computes the same with COUNTER_JS)."""
    n = len(value or "")
    return f"{n:,} / {limit} characters" + (" (too long)" if n > limit else "")


# the same as counter_text, in the browser: no server round trip per key stroke ([...v] counts code points)
COUNTER_JS = ("(v) => { const n = [...(v || '')].length; "
              "return n.toLocaleString('en-US') + ' / %d characters' + (n > %d ? ' (too long)' : ''); }")


def leave_live_visible(job: Job | None, person, operator: bool = False) -> bool:
    """"Take out of live battles" beside a finished request that battles live, for its submitter and the operator
    (SubmissionService.withdraw_live still decides)."""
    if person is None or job is None or not job.live_opt_in or job.state != "FINISHED":
        return False
    return operator or job.submitter == getattr(person, "name", None)


def cancel_visible(job: Job | None, person, operator: bool = False) -> bool:
    """Cancel only where this viewer can cancel: the operator beside any PENDING or RUNNING request, a submitter
    beside their own PENDING one (the rule of SubmissionQueue.cancel, which still decides)."""
    if person is None or job is None or job.state not in CANCELLABLE:
        return False
    return operator or (job.submitter == getattr(person, "name", None) and job.state == "PENDING")


def outcome_message(errors: dict[str, str], notes: list[str]) -> str:
    """The line under the buttons when nothing was queued: which fields are marked, and every message that
    belongs to no field, in plain words."""
    marked = [f for f in FIELDS if f in errors]
    general = [f"- {md(errors[k])}" for k in GENERAL if k in errors]
    general += [f"- {md(m)}" for k, m in errors.items() if k not in FIELDS and k not in GENERAL]
    head = "⚠️ Not queued."
    if marked:
        head += (" Fix the field marked above." if len(marked) == 1
                 else f" Fix the {len(marked)} fields marked above.")
    return head + ("\n" + "\n".join(general) if general else "") + "".join(f"\n- note: {md(n)}" for n in notes if n)


def error_updates(errors: dict[str, str]) -> list:
    return [gr.update(value=f"⚠️ {md(errors[f])}", visible=True) if f in errors
            else gr.update(value="", visible=False) for f in FIELDS]


def build_submit_tab(ctx) -> TabHandles:
    """ctx.submission_service and ctx.identity: the app's one service and identity (app_context.py)."""
    svc: SubmissionService = ctx.submission_service
    settings = svc.settings
    ident: Identity = ctx.identity
    spaces = ident.cfg.spaces
    gr.Markdown("## Submit a model\nAn OpenAI-compatible chat-completions endpoint is queried with every benchmark "
                "request, or you upload your predictions. The queue below shows every request and, when one "
                "fails, why. See the About tab for what is stored.")
    if spaces:
        gr.LoginButton()
        gr.Markdown("Sign in with Hugging Face to submit (quota: "
                    f"{settings.quota_per_window} per {settings.quota_window_s / 86400:g} days).")
    whoami = gr.Markdown(elem_id="submit-identity")
    if ident.token_sign_in:
        gr.Markdown("Operator: [sign in with the operator token](/operator).", elem_id="submit-operator-link")
    errs: dict[str, gr.Markdown] = {}

    def err(field: str) -> None:
        errs[field] = gr.Markdown(visible=False, elem_id=f"submit-err-{field}", elem_classes=["submit-error"])

    def counter(box: gr.Textbox, field: str, elem_id: str) -> None:
        limit = FIELD_LIMITS[field]
        shown = gr.Markdown(counter_text("", limit), elem_id=elem_id, elem_classes=["submit-counter"])
        box.change(None, [box], [shown], js=COUNTER_JS % (limit, limit), api_visibility="private",
                  show_progress="hidden")

    with gr.Row():
        with gr.Column():
            name = gr.Textbox(label="Display name", elem_id="submit-name", max_lines=1,
                              info=f"{NAME_MIN} to {NAME_MAX} characters: letters, digits, spaces and . _ + ( ) -")
            counter(name, "name", "submit-name-count")
            err("name")
            organisation = gr.Textbox(label="Organisation (optional)", elem_id="submit-org", max_lines=1)
            counter(organisation, "organisation", "submit-org-count")
            err("organisation")
            link = gr.Textbox(label="Link: model card, paper or repository (optional)", elem_id="submit-link")
            err("link")
        with gr.Column():
            licence = gr.Dropdown(list(LICENCES), value="unknown", label="Licence", elem_id="submit-licence")
            err("licence")
            open_weights = gr.Checkbox(label="Open weights", elem_id="submit-open")
            err("open_weights")
            kind = gr.Radio([("OpenAI-compatible endpoint", "endpoint"), ("Predictions upload (zip)", "predictions")],
                            value="endpoint", label="What do you submit?", elem_id="submit-kind")
            err("kind")
    keys_ok = secretstore.available()       # read at start: the operator sets it before the Space starts
    # columns, not a gr.Group: a group paints its grey background under columns of unequal height (filler blocks)
    with gr.Column(visible=True, elem_id="submit-endpoint") as endpoint_box:
        with gr.Row():                        # each box with its own error right under it
            with gr.Column():
                base_url = gr.Textbox(label="Endpoint base URL (…/v1)", placeholder="https://api.example.com/v1",
                                      elem_id="submit-base-url", max_lines=1)
                err("base_url")
            with gr.Column():
                model_id = gr.Textbox(label="Model id (sent as the model field of each request)",
                                      elem_id="submit-model-id", max_lines=1)
                counter(model_id, "model_id", "submit-model-id-count")
                err("model_id")
        with gr.Row():
            with gr.Column():
                audio_output = gr.Checkbox(label="Answers with audio (modalities text + audio)",
                                           elem_id="submit-audio")
                err("audio_output")
            with gr.Column():
                voice = gr.Textbox(label="Voice (optional)", elem_id="submit-voice", max_lines=1)
                counter(voice, "voice", "submit-voice-count")
                err("voice")
            with gr.Column():
                # no key box at all when keys cannot be accepted (a disabled box reads as broken): the reason instead
                api_key = gr.Textbox(label=KEY_LABEL, type="password", elem_id="submit-api-key", visible=keys_ok)
                if not keys_ok:
                    gr.Markdown(f"**{KEY_OFF_LABEL}.** {KEY_OFF_INFO}", elem_id="submit-key-note")
                err("api_key")
        with gr.Row():                        # live battles (issue 22, arena/services/live_submitted.py): opt-in, a budget
            with gr.Column():
                live = gr.Checkbox(label=LIVE_LABEL, value=False, info=LIVE_INFO, elem_id="submit-live")
                err("live")
            with gr.Column():
                live_calls = gr.Number(label="Live calls per day (your budget)", value=100, minimum=1,
                                       maximum=LIVE_CALLS_MAX, precision=0, elem_id="submit-live-calls")
                err("live_calls_per_day")
    with gr.Column(visible=False, elem_id="submit-predictions-box") as predictions_box:
        predictions = gr.File(label="Predictions zip (JSONL + wav files)", file_types=[".zip"], type="filepath",
                              elem_id="submit-predictions")
        err("predictions")
    with gr.Row():
        check = gr.Button("Check only (dry run)", elem_id="submit-check")
        submit = gr.Button("Submit", variant="primary", elem_id="submit-go")
    outcome = gr.Markdown(elem_id="submit-outcome")

    gr.Markdown("### Requests")
    with gr.Row():
        refresh = gr.Button("Refresh", scale=0, elem_id="jobs-refresh")
        job_pick = gr.Dropdown(label="Request", choices=[], interactive=True, elem_id="jobs-pick")
        retry_key = gr.Textbox(label="API key for a retry (when the job had one)", type="password",
                               elem_id="jobs-retry-key", visible=False)
        retry = gr.Button("Retry", elem_id="jobs-retry", visible=False)          # the operator's
        cancel = gr.Button("Cancel this request", variant="secondary", size="sm", scale=0, elem_id="jobs-cancel",
                           visible=False)     # beside a PENDING or RUNNING request only (cancel_visible)
        leave_live = gr.Button("Take out of live battles", variant="secondary", size="sm", scale=0,
                               elem_id="jobs-leave-live", visible=False)     # leave_live_visible
    action_md = gr.Markdown(elem_id="jobs-action")
    table = gr.Dataframe(jobs_frame([]), interactive=False, elem_id="jobs-table", wrap=True)
    detail = gr.Markdown(elem_id="jobs-detail")

    field_inputs = [name, organisation, link, licence, open_weights, kind, base_url, model_id, audio_output, voice,
                    api_key, predictions, live, live_calls]
    err_outputs = [errs[f] for f in FIELDS]

    def do_submit(dry_run: bool, request, profile, *values):
        person = ident.who(request, profile)
        clear_key = gr.update(value="")
        if person is None:
            first = "Sign in with Hugging Face first." if spaces else "Reload the page first (it gives you a guest id)."
            return [*error_updates({}), f"⚠️ {first}" if spaces or ident.cfg.guests
                    else "⚠️ Anonymous submissions are off here.", clear_key]
        fields = dict(zip(FIELDS, values))
        upload = fields["predictions"] if fields["kind"] == "predictions" else None
        if upload:     # only a zip this browser uploaded (eval_backend/uploads.py): the path is the sender's choice
            try:
                upload = str(uploads.own_upload(getattr(upload, "name", upload), request))
            except uploads.UploadRefused as exc:
                errors = {"predictions": exc.message}
                return [*error_updates(errors), outcome_message(errors, []), clear_key]
        form = form_from_inputs(**{**fields, "predictions": upload})
        try:
            out = svc.submit(form, person, dry_run=dry_run)
        except Exception:   # the form never crashes the page; nothing was queued; the details go to the log
            log.exception("submit tab: the submission could not be processed")
            return [*error_updates({}), "⚠️ The submission could not be processed because of a problem on this "
                    "Space's side; nothing was queued. Try again later.", clear_key]
        notes = "".join(f"\n- note: {md(n)}" for n in out.notes if n)
        if out.accepted and out.job_id is not None:
            if upload:
                uploads.consume(upload)       # the queue keeps its own copy of the zip
            msg = f"✅ Queued as request #{out.job_id} (PENDING). It is listed below.{notes}"
        elif out.accepted:
            msg = f"✅ The submission passes every check (dry run: nothing was queued).{notes}"
        else:
            msg = outcome_message(out.errors, out.notes)
        return [*error_updates(out.errors), msg, clear_key]

    def listing_for(person, picked=None):
        """The list as `person` sees it, who they are, and the actions they have."""
        jobs = svc.jobs_for(person)
        ids = [(f"#{j.id} {j.model} ({j.state})", j.id) for j in jobs]
        keep = picked if picked in [j.id for j in jobs] else (jobs[0].id if jobs else None)
        operator = person is not None and person.is_operator
        picked_job = next((j for j in jobs if j.id == keep), None)
        # the value only when it must change: a timer tick that started before the viewer picked another request
        # must not put the old pick back (its answer arrives after the pick)
        pick = gr.update(choices=ids) if keep == picked else gr.update(choices=ids, value=keep)
        return (jobs_frame(jobs), pick, ident.describe(person),
                gr.update(visible=operator), gr.update(visible=operator and keys_ok),     # no key box without keys
                gr.update(visible=cancel_visible(picked_job, person, operator)),
                gr.update(visible=leave_live_visible(picked_job, person, operator)))

    def listing(picked, request: gr.Request, profile: gr.OAuthProfile | None):
        return listing_for(ident.who(request, profile), picked)

    def show(job_id, request: gr.Request, profile: gr.OAuthProfile | None):
        """The picked request's details, and Cancel beside it when it can still be cancelled."""
        if job_id is None:
            return "", gr.update(visible=False), gr.update(visible=False)
        person = ident.who(request, profile)
        operator = person is not None and person.is_operator
        try:
            job = svc.job_for(int(job_id), person)
            return (job_markdown(job, svc.events_for(int(job_id), person)),
                    gr.update(visible=cancel_visible(job, person, operator)),
                    gr.update(visible=leave_live_visible(job, person, operator)))
        except JobError as exc:
            return f"⚠️ {md(exc)}", gr.update(visible=False), gr.update(visible=False)

    def act(action, request, profile, job_id, key):
        person = ident.who(request, profile)
        if person is None:
            return "⚠️ Sign in first.", gr.update(value=""), *listing_for(person, job_id)
        if job_id is None:
            return "⚠️ Choose a request first.", gr.update(value=""), *listing_for(person, job_id)
        try:
            if action == "retry":
                job = svc.retry(int(job_id), person, key or None)
            elif action == "leave_live":
                job = svc.withdraw_live(int(job_id), person)
            else:
                job = svc.cancel(int(job_id), person)
            msg = (f"✅ #{job.id} no longer battles live; its stored API key was deleted." if action == "leave_live"
                   else f"✅ #{job.id} is now {mi(job.state)}.")
        except JobError as exc:
            msg = f"⚠️ {md(exc)}"
        return msg, gr.update(value=""), *listing_for(person, job_id)

    # Explicit positional parameters: Gradio injects the request and the OAuth profile only into positional
    # ones (the profile is None when nobody is signed in, and always off Spaces, where no session exists).
    def submit_fn(n, o, li, lic, ow, k, u, m, a, v, key, p, lv, lc, request: gr.Request,
                  profile: gr.OAuthProfile | None):
        return do_submit(False, request, profile, n, o, li, lic, ow, k, u, m, a, v, key, p, lv, lc)

    def check_fn(n, o, li, lic, ow, k, u, m, a, v, key, p, lv, lc, request: gr.Request,
                 profile: gr.OAuthProfile | None):
        return do_submit(True, request, profile, n, o, li, lic, ow, k, u, m, a, v, key, p, lv, lc)

    def retry_fn(job_id, key, request: gr.Request, profile: gr.OAuthProfile | None):
        return act("retry", request, profile, job_id, key)

    def cancel_fn(job_id, key, request: gr.Request, profile: gr.OAuthProfile | None):
        return act("cancel", request, profile, job_id, key)

    def leave_live_fn(job_id, key, request: gr.Request, profile: gr.OAuthProfile | None):
        return act("leave_live", request, profile, job_id, key)

    kind.change(lambda k: (gr.update(visible=k == "endpoint"), gr.update(visible=k == "predictions")),
                [kind], [endpoint_box, predictions_box])
    # Check and Submit call the endpoint (the preflight): they share a pool of `check_concurrency` slots, so
    # one slow endpoint does not make everyone else wait, and each click has its own deadline (service.py)
    pool = dict(concurrency_limit=settings.check_concurrency, concurrency_id="submit-preflight")
    listed = [table, job_pick, whoami, retry, retry_key, cancel, leave_live]
    submit.click(submit_fn, field_inputs, [*err_outputs, outcome, api_key], **pool).then(listing, [job_pick], listed)
    check.click(check_fn, field_inputs, [*err_outputs, outcome, api_key], **pool)
    retry.click(retry_fn, [job_pick, retry_key], [action_md, retry_key, *listed])
    cancel.click(cancel_fn, [job_pick, retry_key], [action_md, retry_key, *listed])
    leave_live.click(leave_live_fn, [job_pick, retry_key], [action_md, retry_key, *listed])
    refresh.click(listing, [job_pick], listed)
    job_pick.change(show, [job_pick], [detail, cancel, leave_live])
    # The list, the picked request and who you are (a sign-in that expired) are kept fresh every REFRESH_S, but only
    # while this tab is selected: each tick is a queue/join plus an open event stream on the server, and a page
    # left on another tab shows none of it. Selecting the tab lists at once and starts the timer; selecting any
    # other tab stops it. Both switches are browser-side (js-only hooks: no request), so they follow the clicks in
    # order: a server answer arriving after the visitor moved on could otherwise start the timer again.
    timer = gr.Timer(REFRESH_S, active=False)
    timer.tick(listing, [job_pick], listed).then(show, [job_pick], [detail, cancel, leave_live])
    return TabHandles(loads=(PageLoad(listing, [job_pick], listed),),     # who you are, as soon as the page opens
                      selected=(PageLoad(None, None, [timer], dict(js=TIMER_JS % "true")),
                                PageLoad(listing, [job_pick], listed)),
                      left=(PageLoad(None, None, [timer], dict(js=TIMER_JS % "false")),))
