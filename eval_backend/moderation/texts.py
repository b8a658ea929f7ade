"""Screening of people's text: voters' reasons and submitted model names / organisations.

Reasons: a vote is recorded at once (screening is not on the vote path); the reason is screened afterwards on a
background thread (`screen_later`), and `public_reasons` keeps every reason that is not screened clean (flagged,
not screened, or not screened yet) out of what is published — the vote export and the release. The vote itself
still counts. A reason's subject is the hash of its text, so a decision survives a restore that renumbers votes
and an operator's release applies to every vote that gave the same words.

Names: a submission's model name and organisation are screened before the job is queued; a flagged (or not
screenable) name is refused at the form and waits in the operator's queue, so a flagged name is never shown.
An operator's release lets the same name and organisation through on the next submission.
"""
from __future__ import annotations

import hashlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from . import ledger

log = logging.getLogger(__name__)
REASON = "reason"
NAME = "submission_name"
_later = ThreadPoolExecutor(max_workers=1, thread_name_prefix="screen-later")


def text_subject(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def screen_and_record(store, kind: str, text: str, screen: Callable | None = None):
    """Screen `text` unless its decision is recorded; returns the ledger State."""
    subject = text_subject(text)
    rec = ledger.latest(store, kind, subject)
    if rec is None or rec.result.status != "screened":     # a "not screened" decision is retried
        from ..safety import screen_text  # why: the safety screens (~0.5 s) off the app's start-up
        result = (screen or screen_text)(text)
        ledger.record(store, kind, subject, text, result)
        rec = ledger.latest(store, kind, subject)
    return ledger.state_of(rec)


def screen_later(store, kind: str, text: str | None) -> None:
    """Screen off the caller's path (a vote's reason): one background thread, errors logged."""
    if not text:
        return

    def run():
        try:
            screen_and_record(store, kind, text)
        except Exception:
            log.exception("screening a %s failed (it stays unpublished until screened)", kind)
    _later.submit(run)


def public_reasons(store, reasons: Iterable[str], screen_pending: bool = True) -> set[str]:
    """The reasons that may be published: screened clean or released. `screen_pending`: screen the ones not
    screened yet first (the export and release commands do; a page's stamp only reads)."""
    out = set()
    for text in {r for r in reasons if r}:
        if screen_pending:
            state = screen_and_record(store, REASON, text)
        else:
            state = ledger.state(store, REASON, text_subject(text))
        if state.cleared:
            out.add(text)
    return out


def name_text(name: str, organisation: str | None) -> str:
    return name.strip() + (f"\norganisation: {organisation.strip()}" if organisation and organisation.strip() else "")


def check_name(store, name: str, organisation: str | None, screen: Callable | None = None) -> str | None:
    """None when the name and organisation may be shown; else the message for the form (the decision waits in
    the operator's queue)."""
    state = screen_and_record(store, NAME, name_text(name, organisation), screen)
    if state.cleared:
        return None
    rec = ledger.latest(store, NAME, text_subject(name_text(name, organisation)))
    if rec is not None and rec.result.status != "screened":
        return "The name could not be screened right now; please try again in a few minutes."
    return ("This model name or organisation was held by the safety screen for the operator's review; choose "
            "another name, or ask the operator to release it.")


def screening_summary(store, texts: Iterable[str], kind: str = REASON) -> dict:
    """How the distinct `texts` were screened, for a release's manifest: {"screens": {screen name+version: n},
    "published": n, "withheld": n} (withheld: flagged, not screened, or not screened yet)."""
    screens: dict[str, int] = {}
    published = withheld = 0
    for text in {t for t in texts if t}:
        rec = ledger.latest(store, kind, text_subject(text))
        if rec is not None:
            screens[rec.result.screen] = screens.get(rec.result.screen, 0) + 1
        if ledger.state_of(rec).cleared:
            published += 1
        else:
            withheld += 1
    return {"screens": dict(sorted(screens.items())), "published": published, "withheld": withheld}
