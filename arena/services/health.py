"""Integrity health over time: the share of vote submissions that counted, per time bucket, and an alert.

An anti-abuse rule that fails closed voids honest votes silently; the only symptom is that few submissions
count. So per bucket (an hour by default) we report battles served, votes accepted, and of those the ones
counted in full, down-weighted or excluded by the integrity flags (arena/services/vote_flags.py: gold checks,
agreement, sweeps) with the reasons, votes refused by reason (the proof-of-work refusals among them), gold
checks passed and failed, and the counted share (votes counted in full / submissions). We alert
(logging.warning, and `alert` in the report for the admin view) when, over the last window with enough
submissions, the counted share is below the threshold, or has dropped well below its level over the rest of
the history (a check that breaks discards honest votes from that hour on: TTS-Arena's captcha outage failed
closed for three months), or when more than `max_excluded_share` of the accepted votes are excluded (LMArena:
10% bad votes can move a model five ranks: an attack, or a rule gone wrong) — or when many battles were
served but almost nothing was submitted at all (the vote never reached the service).

    report = health_report(store, HealthConfig(...), now=time.time())   # rows + last window + alert
    fig = health_figure(report["rows"], cfg.alert_share)                # plotly, for the admin view
    HealthMonitor(store, cfg).check()                                    # logs on alert / recovery

`series` and `evaluate` are pure; `load_counts` is the only function that reads the store.

Beside the votes: the battles matchmaking leaves out (issue 22): request pairs whose two replies are identical or
nearly so (arena/core/distinct.py), counted by `ArenaService.left_out_pairs()` and worded by `pairs_line`.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from arena.core.distinct import REASON_TEXT
from arena.core.sweeps import Rules
from arena.services import gold, vote_flags
from arena.tables import storage

log = logging.getLogger("arena.services.health")


@dataclass(frozen=True)
class HealthConfig:
    bucket_s: float = 3600.0          # time-series resolution
    history_s: float = 7 * 86400.0    # how far back the series goes
    window_s: float = 3600.0          # the alert looks at this last stretch of time
    alert_share: float = 0.5          # alert when fewer submissions than this share count ...
    min_attempts: int = 20            # ... over at least this many submissions (no alert on three refusals)
    min_submit_rate: float = 0.05     # alert when submissions / served battles falls below this ...
    min_served: int = 50              # ... over at least this many served battles
    max_share_drop: float = 0.2       # alert when the window's counted share is this far below the history's
    max_excluded_share: float = Rules().max_excluded_share   # alert when more accepted votes are excluded

    @classmethod
    def from_settings(cls, settings, **overrides) -> "HealthConfig":
        """The threshold from ArenaSettings.counted_share_alert (the CLI's `health` uses it too)."""
        return cls(**{"alert_share": settings.counted_share_alert, **overrides})

    def __post_init__(self) -> None:
        if not (self.bucket_s > 0 and self.window_s > 0 and self.history_s >= self.bucket_s):
            raise ValueError("bucket_s and window_s must be > 0 and history_s >= bucket_s")
        if not (0 <= self.alert_share <= 1 and 0 <= self.min_submit_rate <= 1):
            raise ValueError("alert_share and min_submit_rate are shares in [0, 1]")


@dataclass(frozen=True)
class Counts:
    """Raw counts keyed by bucket index (floor(time / bucket_s))."""
    served: dict[int, int]
    accepted: dict[int, int]
    refused: dict[tuple[int, str], int]
    weighted: dict[int, dict] = dataclasses.field(default_factory=dict)   # {"down_weighted", "excluded", "why"}
    gold: dict[int, dict[str, int]] = dataclasses.field(default_factory=dict)   # {"pass", "fail", "neutral"}


# ---------------------------------------------------------------- store access
def load_counts(store, since: float, until: float, bucket_s: float) -> Counts:
    """Aggregated in SQL (arena/tables/storage.py), so a week of a busy arena is a few hundred rows; the flags in force
    (arena/services/vote_flags.py) and the gold checks (arena/services/gold.py) beside them."""
    return Counts(*storage.bucket_counts(store, since, until, bucket_s),
                  vote_flags.weight_counts(store, since, until, bucket_s), gold.gold_counts(store, since, until, bucket_s))


# ---------------------------------------------------------------- pure core
def _share(counted: int, refused: int, accepted: int | None = None) -> float | None:
    """Votes counted in full / submissions (accepted + refused; `accepted` defaults to `counted`)."""
    total = (counted if accepted is None else accepted) + refused
    return counted / total if total else None      # nothing submitted: no share, not 0 or 1


def _weighted(cell: dict, accepted: int) -> dict:
    """A bucket's accepted votes split: counted in full, down-weighted, excluded (and why)."""
    down, excl = cell.get("down_weighted", 0), cell.get("excluded", 0)
    return {"counted": max(0, accepted - down - excl), "down_weighted": down, "excluded": excl,
            "excluded_by_reason": dict(sorted(cell.get("why", {}).items()))}


def series(counts: Counts, since: float, until: float, bucket_s: float) -> list[dict]:
    """One row per bucket from `since` to `until`, empty buckets included (a gap is information)."""
    first, last = math.floor(since / bucket_s), math.ceil(until / bucket_s) - 1   # until is exclusive
    rows = []
    for b in range(first, last + 1):
        by_reason = {reason: n for (bb, reason), n in sorted(counts.refused.items()) if bb == b}
        acc, ref = counts.accepted.get(b, 0), sum(by_reason.values())
        split = _weighted(counts.weighted.get(b, {}), acc)
        start = b * bucket_s
        rows.append({"start": start,
                     "start_utc": datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%d %H:%M"),
                     "served": counts.served.get(b, 0), "accepted": acc, "refused": ref,
                     "refused_by_reason": by_reason, "attempts": acc + ref, **split,
                     "gold": dict(sorted(counts.gold.get(b, {}).items())),
                     "counted_share": _share(split["counted"], ref, acc)})
    return rows


def _top(by_reason: dict) -> str:
    return ", ".join(f"{r} {n}" for r, n in sorted(by_reason.items(), key=lambda x: -x[1])[:3]) or "none"


def evaluate(window: dict, cfg: HealthConfig, votes: dict | None = None, baseline: dict | None = None) -> str | None:
    """The alert message for the last window's totals, or None when healthy or too little data. `votes`: the
    window's accepted votes split by the flags (counted, down_weighted, excluded, excluded_by_reason);
    `baseline`: the same totals over the rest of the history (for a drop)."""
    share = window["counted_share"]
    attempts = window["accepted"] + window["refused"]
    votes = votes or {"excluded": 0, "excluded_by_reason": {}}
    if share is not None and attempts >= cfg.min_attempts and share < cfg.alert_share:
        return (f"only {share:.0%} of {attempts} vote submissions counted in the last {cfg.window_s / 60:.0f} min "
                f"(threshold {cfg.alert_share:.0%}); refused: {_top(window['refused_by_reason'])}"
                + (f"; excluded: {_top(votes['excluded_by_reason'])}" if votes["excluded"] else ""))
    if window["accepted"] >= cfg.min_attempts and votes["excluded"] > cfg.max_excluded_share * window["accepted"]:
        return (f"{votes['excluded']} of {window['accepted']} accepted votes in the last {cfg.window_s / 60:.0f} min "
                f"are excluded (over {cfg.max_excluded_share:.0%}): {_top(votes['excluded_by_reason'])}: an attack, "
                "or a rule gone wrong: review the flags (operator)")
    base = baseline["counted_share"] if baseline else None
    if (share is not None and base is not None and attempts >= cfg.min_attempts
            and baseline["accepted"] + baseline["refused"] >= cfg.min_attempts and share < base - cfg.max_share_drop):
        return (f"the counted share fell to {share:.0%} of {attempts} submissions in the last "
                f"{cfg.window_s / 60:.0f} min, from {base:.0%} before; refused: {_top(window['refused_by_reason'])}"
                + (f"; excluded: {_top(votes['excluded_by_reason'])}" if votes["excluded"] else ""))
    if window["served"] >= cfg.min_served and attempts < cfg.min_submit_rate * window["served"]:
        return (f"{window['served']} battles served but only {attempts} votes submitted in the last "
                f"{cfg.window_s / 60:.0f} min: votes may not be reaching the arena")
    return None


def window_totals(counts: Counts) -> dict:
    """Totals over everything in `counts` (load them for the window alone). `counted_share`: votes counted in full
    (not down-weighted or excluded) / submissions; `vote_totals` gives the split."""
    by_reason: dict[str, int] = {}
    for (_, reason), n in counts.refused.items():
        by_reason[reason] = by_reason.get(reason, 0) + n
    acc, ref = sum(counts.accepted.values()), sum(by_reason.values())
    counted = vote_totals(counts)["counted"]
    return {"served": sum(counts.served.values()), "accepted": acc, "refused": ref,
            "refused_by_reason": dict(sorted(by_reason.items())), "counted_share": _share(counted, ref, acc)}


def vote_totals(counts: Counts) -> dict:
    """The accepted votes in `counts` split by the flags in force, and the gold checks."""
    cell: dict = {"down_weighted": 0, "excluded": 0, "why": {}}
    for w in counts.weighted.values():
        cell["down_weighted"] += w.get("down_weighted", 0)
        cell["excluded"] += w.get("excluded", 0)
        for k, n in w.get("why", {}).items():
            cell["why"][k] = cell["why"].get(k, 0) + n
    checks: dict[str, int] = {}
    for g in counts.gold.values():
        for k, n in g.items():
            checks[k] = checks.get(k, 0) + n
    return {**_weighted(cell, sum(counts.accepted.values())), "gold": dict(sorted(checks.items()))}


def health_report(store, cfg: HealthConfig = HealthConfig(), now: float | None = None) -> dict:
    """{rows (per bucket), window (totals of the last window_s, exact, not cut at bucket edges), votes (the
    window's accepted votes: counted, down-weighted, excluded and why; gold checks), alert (message or None),
    config, now}."""
    now = time.time() if now is None else now
    since = now - cfg.history_s
    rows = series(load_counts(store, since, now, cfg.bucket_s), since, now, cfg.bucket_s)
    counts = load_counts(store, now - cfg.window_s, now, cfg.window_s)
    window, votes = window_totals(counts), vote_totals(counts)
    before = now - cfg.window_s
    baseline = window_totals(load_counts(store, since, before, max(before - since, 1.0))) if before > since else None
    return {"rows": rows, "window": window, "votes": votes, "alert": evaluate(window, cfg, votes, baseline),
            "config": dataclasses.asdict(cfg), "now": now}


def health_figure(rows: list[dict], alert_share: float | None = None):
    """Stacked bars (counted, refused by reason) per bucket and the counted share on a second axis, from the
    first bucket with any battle or vote on (not the whole history: an hour of data would be a hairline)."""
    import plotly.graph_objects as go

    active = [i for i, r in enumerate(rows) if r["served"] or r["attempts"]]
    rows = rows[active[0]:] if active else rows[-1:]    # the window follows the data: an hour fills the chart
    x = [r["start_utc"] for r in rows]
    top = max([max(r["served"], r["attempts"]) for r in rows] or [0])
    fig = go.Figure()
    fig.add_bar(x=x, y=[r.get("counted", r["accepted"]) for r in rows], name="counted", marker_color="#2ca02c")
    for key, name, colour in (("down_weighted", "down-weighted", "#bcbd22"), ("excluded", "excluded", "#7f7f7f")):
        if any(r.get(key) for r in rows):       # only when there are any: a legend of zeros says nothing
            fig.add_bar(x=x, y=[r.get(key, 0) for r in rows], name=name, marker_color=colour)
    for reason in sorted({k for r in rows for k in r["refused_by_reason"]}):
        fig.add_bar(x=x, y=[r["refused_by_reason"].get(reason, 0) for r in rows], name=f"refused: {reason}")
    fig.add_scatter(x=x, y=[r["counted_share"] for r in rows], name="counted share", yaxis="y2",
                    mode="lines+markers", line={"color": "black"}, connectgaps=False)
    if alert_share is not None:
        fig.add_hline(y=alert_share, yref="y2", line_dash="dash", line_color="red",
                      annotation_text=f"alert below {alert_share:.0%}")
    fig.update_layout(barmode="stack", title="Vote submissions: counted vs refused",
                      yaxis={"title": "submissions", "tickformat": "d", "rangemode": "tozero",
                             **({"tick0": 0, "dtick": 1} if top <= 10 else {})},     # whole votes only
                      xaxis={"type": "category"},
                      yaxis2={"title": "counted share", "overlaying": "y", "side": "right", "range": [0, 1.05],
                              "tickformat": ".0%"},
                      legend={"orientation": "h"}, margin={"t": 50, "l": 50, "r": 50, "b": 40})
    return fig


def pairs_line(pairs: dict) -> str:
    """One line on the battles left out of matchmaking, and why (ArenaService.left_out_pairs())."""
    why = ", ".join(f"{REASON_TEXT[r]} {n}" for r, n in pairs["left_out"].items() if n) or "none"
    return (f"battle pairs: {pairs['servable']} of {pairs['request_pairs']} request pairs servable "
            f"({pairs['same_words_servable']} of them with the same words and a different delivery, served only "
            f"when a pair has nothing else); left out: {why}")


def live_models_line(rows: list[dict]) -> str:
    """One line per submitted model that battles live: calls, failures, pause (arena/services/live_submitted.py)."""
    return "\n".join(f"- live {r['model']}: {r['calls_24h']} of {r['calls_per_day']} calls in 24 h, {r['failed_24h']} "
                     f"failed ({r['failed_in_a_row']} in a row)" + (f"; {r['paused']}" if r["paused"] else "")
                     for r in rows)


class HealthMonitor:
    """Logs a warning when the alert starts (and again every `repeat_s` while it lasts) and an info line when
    it clears. Call `check()` from a timer or the admin view; `status` is the last report's one-line state."""

    def __init__(self, store, cfg: HealthConfig = HealthConfig(), repeat_s: float = 3600.0,
                 clock=time.time):
        self.store, self.cfg, self.repeat_s, self.clock = store, cfg, repeat_s, clock
        self._alerting_since: float | None = None
        self._last_logged = -math.inf
        self.status = "integrity health not checked yet"
        self._lock = threading.Lock()    # the app's one monitor is checked by its loop and by open pages

    def check(self) -> dict:
        with self._lock:
            return self._check()

    def _check(self) -> dict:
        now = self.clock()
        report = health_report(self.store, self.cfg, now)
        msg = report["alert"]
        if msg:
            if self._alerting_since is None or now - self._last_logged >= self.repeat_s:
                log.warning("arena integrity alert: %s", msg)
                self._last_logged = now
            self._alerting_since = self._alerting_since or now
            self.status = f"ALERT: {msg}"
        else:
            if self._alerting_since is not None:
                log.info("arena integrity alert cleared after %.0f min", (now - self._alerting_since) / 60)
            self._alerting_since = None
            w = report["window"]
            share = "n/a" if w["counted_share"] is None else f"{w['counted_share']:.0%}"
            v = report["votes"]
            held = f", {v['down_weighted']} down-weighted, {v['excluded']} excluded" if v["down_weighted"] or \
                v["excluded"] else ""
            self.status = (f"ok: {v['counted']} counted{held}, {w['refused']} refused in the last "
                           f"{self.cfg.window_s / 60:.0f} min (counted share {share})")
        return report
