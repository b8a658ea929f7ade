"""The arena's one listening rule, shared by the page and the server (pure: no clock, no database).

A vote counts only when the voter's reported listening covers each of the battle's clips (its first
`cover_first_s` seconds, or all of a shorter clip; `cover_first_s=inf`: every clip in full) *and* that report
is physically possible: each clip's audio was fetched from the server, and no clip was played for longer than
it lasts, or for longer than `max_rate` x the time since its audio was fetched (the page caps the playback rate
at `max_rate`, so an honest report always passes). Both checks are per clip, so playing clips at the same time
is as good as playing them one after the other.

    rule = ListenRule(cover_first_s=3.0, max_rate=2.0, tolerance_s=0.1)
    rule.payload({"user": 2.4, "A": 5.1, "B": 4.0})     # what the page gets with the battle (its countdown)
    report = parse_report({"played_s": {"user": 2.4, "A": 3.0, "B": 3.0}, "order": ["user", "B", "A"]},
                          clips=("user", "A", "B"))
    decide(rule, clips, fetched_at, report, now)         # Decision("ok" | "not_yet" | "impossible", ...)

- `ok`: count the vote.
- `not_yet`: honest but early (listening not yet covered): the voter is told what is left; this is no abuse
  and is not logged as a refused vote.
- `impossible`: a claim no honest page can make (`why`: `not_fetched`, `longer_than_clip`,
  `faster_than_possible`): an integrity refusal, logged.

The page (arena/ui/arena_tab.py) applies `covered`/`remaining` in JavaScript to the numbers of `payload`, with the
same tolerance, so the page unlocks the vote exactly when the server would accept it. A battle's clips are
whatever it serves (`user`, `A`, `B` for benchmark and live battles alike).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

OK, NOT_YET, IMPOSSIBLE = "ok", "not_yet", "impossible"
REPLY_CLIPS = ("A", "B")           # the slots whose listening order the position-bias figure uses
MAX_CLIPS = 8                      # a report names at most this many clips (a battle has three)
MAX_CLIP_NAME = 16
MAX_PLAYED_S = 24 * 3600.0         # a played time above this is not a number we accept at all


def clip_label(clip: str) -> str:
    return {"user": "the user's clip", "A": "reply A", "B": "reply B"}.get(clip, f"clip {clip}")


@dataclass(frozen=True)
class ListenRule:
    """The rule's settings (arena.config.ArenaSettings: min_listen_s, max_playback_rate, listen_tolerance_s)."""
    cover_first_s: float = 3.0     # per clip: its first this many seconds (math.inf: the whole clip)
    max_rate: float = 2.0          # fastest playback the page allows and the server believes
    tolerance_s: float = 0.1       # timer granularity and decoder rounding, in both directions

    def __post_init__(self):
        if not (self.cover_first_s >= 0) or not (self.max_rate >= 1) or not (0 <= self.tolerance_s < 5):
            raise ValueError("listening rule: cover_first_s >= 0, max_rate >= 1, 0 <= tolerance_s < 5")

    def need(self, seconds: float) -> float:
        """Seconds of a clip of this length that must be heard."""
        return max(0.0, min(self.cover_first_s, float(seconds)))

    def needs(self, clips: Mapping[str, float]) -> dict[str, float]:
        return {c: self.need(s) for c, s in clips.items()}

    def payload(self, clips: Mapping[str, float]) -> dict:
        """What the page needs to show the countdown and unlock the vote, sent with the battle. The numbers are
        not rounded: JSON carries a float exactly, so the page compares the very numbers the server does."""
        return {"clips": {c: {"seconds": float(s), "need_s": self.need(s)} for c, s in clips.items()},
                "cover_first_s": None if math.isinf(self.cover_first_s) else self.cover_first_s,
                "max_rate": self.max_rate, "tolerance_s": self.tolerance_s}


@dataclass(frozen=True)
class ListenReport:
    """What the voter's client says it heard: per clip, seconds actually played (of the part the rule asks
    for; the page measures it from the media element's played ranges), and the clips in the order they first
    started playing."""
    played_s: Mapping[str, float] = field(default_factory=dict)
    order: tuple[str, ...] = ()

    def first_of(self, clips=REPLY_CLIPS) -> str | None:
        """The first of `clips` that started playing (the reply heard first), or None."""
        return next((c for c in self.order if c in clips), None)


NO_REPORT = ListenReport()


def parse_report(obj, clips=None) -> ListenReport:
    """A ListenReport from the JSON a client sent (None: nothing reported). Raises ValueError with a message
    for the sender. `clips`: the battle's clip names, when known (then unknown names are refused)."""
    if obj is None:
        return NO_REPORT
    if isinstance(obj, ListenReport):
        report = obj
    else:
        if not isinstance(obj, Mapping):
            raise ValueError('"listen" must be an object: {"played_s": {clip: seconds}, "order": [clip, ...]}')
        extra = set(obj) - {"played_s", "order", "battle_id"}
        if extra:
            raise ValueError(f'"listen" has unknown field(s): {", ".join(sorted(map(str, extra)))[:200]}')
        played = obj.get("played_s") or {}
        order = obj.get("order") or []
        if not isinstance(played, Mapping) or len(played) > MAX_CLIPS:
            raise ValueError(f'"listen.played_s" must be an object of at most {MAX_CLIPS} clips: seconds')
        if not isinstance(order, (list, tuple)) or len(order) > MAX_CLIPS:
            raise ValueError(f'"listen.order" must be a list of at most {MAX_CLIPS} clip names')
        out = {}
        for clip, secs in played.items():
            if not isinstance(clip, str) or not 0 < len(clip) <= MAX_CLIP_NAME:
                raise ValueError('"listen.played_s" keys must be clip names')
            if isinstance(secs, bool) or not isinstance(secs, (int, float)) or not 0 <= secs <= MAX_PLAYED_S:
                raise ValueError(f'"listen.played_s.{clip[:MAX_CLIP_NAME]}" must be a number of seconds '
                                 f'from 0 to {MAX_PLAYED_S:.0f}')
            out[clip] = float(secs)
        if not all(isinstance(c, str) and 0 < len(c) <= MAX_CLIP_NAME for c in order) or len(set(order)) != len(order):
            raise ValueError('"listen.order" must list distinct clip names')
        report = ListenReport(out, tuple(order))
    if clips is not None:
        unknown = (set(report.played_s) | set(report.order)) - set(clips)
        if unknown:
            raise ValueError(f"this battle has no clip {', '.join(sorted(unknown))[:100]} "
                             f"(its clips: {', '.join(clips)})")
    return report


@dataclass(frozen=True)
class Decision:
    verdict: str                                   # ok | not_yet | impossible
    message: str
    why: str | None = None                         # impossible: not_fetched | longer_than_clip | faster_than_possible
    remaining_s: dict = field(default_factory=dict)   # not_yet: per clip, seconds still to hear

    @property
    def total_remaining_s(self) -> float:
        return sum(self.remaining_s.values())


FLOAT_SLACK_S = 0.001      # decide(): below what the page reports (milliseconds), above clock rounding


def remaining(rule: ListenRule, need: float, played: float) -> float:
    """Seconds of a clip still to hear; 0 once `played` is within the tolerance of `need`."""
    return 0.0 if played >= need - rule.tolerance_s else need - played


def decide(rule: ListenRule, clips: Mapping[str, float], fetched_at: Mapping[str, float | None],
           report: ListenReport, now: float) -> Decision:
    """The verdict on a vote cast at `now` (server time) on a battle whose clips last `clips` seconds and whose
    audio was first fetched at `fetched_at` (server time; None or missing: never)."""
    # The impossibility checks allow a millisecond more: the page reports to the millisecond, and the difference of
    # two server clock readings (~1.8e9 s) carries float rounding, so an honest report exactly at the physical
    # limit (e.g. a 1 ms clip heard at the top rate the instant it was fetched) computed a hair above it.
    tol, slack = rule.tolerance_s, rule.tolerance_s + FLOAT_SLACK_S
    for clip, seconds in clips.items():
        played = report.played_s.get(clip, 0.0)
        needed = rule.need(seconds) > tol
        fetched = fetched_at.get(clip)
        if fetched is None:
            if needed or played > 0:
                return Decision(IMPOSSIBLE, f"{clip_label(clip)} was never fetched from the server, so it cannot "
                                            "have been heard: load the battle's audio and listen first",
                                "not_fetched")
            continue
        if played > seconds + slack:
            return Decision(IMPOSSIBLE, f"{played:.1f} s of {clip_label(clip)} reported, but it lasts "
                                        f"{seconds:.1f} s", "longer_than_clip")
        elapsed = max(0.0, now - fetched)
        if played > rule.max_rate * elapsed + slack:
            return Decision(IMPOSSIBLE, f"{played:.1f} s of {clip_label(clip)} reported, but its audio was "
                                        f"fetched {elapsed:.1f} s ago (at most {rule.max_rate:g}x speed)",
                            "faster_than_possible")
    left = {c: r for c, s in clips.items() if (r := remaining(rule, rule.need(s), report.played_s.get(c, 0.0))) > 0}
    if left:
        parts = ", ".join(f"{clip_label(c)} ({r:.1f} s left)" for c, r in left.items())
        total = sum(left.values())
        return Decision(NOT_YET, f"Not yet: please listen first. {parts}; you can vote in about "
                                 f"{math.ceil(total)} s of listening.", None, left)
    return Decision(OK, "ok")
