"""Integrity health over time: the share of vote submissions that counted, per time bucket, and an alert.

An anti-abuse rule that fails closed voids honest votes silently; the only symptom is that few submissions
count. So per bucket (an hour by default) we report battles served, votes counted, votes refused by reason,
and the counted share; and we alert (logging.warning, and `alert` in the report for the admin view) when,
over the last window with enough submissions, the counted share drops below the threshold — or when many
battles were served but almost nothing was submitted at all (the vote never reached the service).

    report = health_report(store, HealthConfig(...), now=time.time())   # rows + last window + alert
    fig = health_figure(report["rows"], cfg.alert_share)                # plotly, for the admin view
    HealthMonitor(store, cfg).check()                                    # logs on alert / recovery

`series` and `evaluate` are pure; `load_counts` is the only function that reads the store.

Beside the votes: the battles matchmaking leaves out (issue 22): request pairs whose two replies are identical or
nearly so (arena/distinct.py), counted by `ArenaService.left_out_pairs()` and worded by `pairs_line`.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from . import storage

log = logging.getLogger("arena.health")


@dataclass(frozen=True)
class HealthConfig:
    bucket_s: float = 3600.0          # time-series resolution
    history_s: float = 7 * 86400.0    # how far back the series goes
    window_s: float = 3600.0          # the alert looks at this last stretch of time
    alert_share: float = 0.5          # alert when fewer submissions than this share count ...
    min_attempts: int = 20            # ... over at least this many submissions (no alert on three refusals)
    min_submit_rate: float = 0.05     # alert when submissions / served battles falls below this ...
    min_served: int = 50              # ... over at least this many served battles

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


# ---------------------------------------------------------------- store access
def load_counts(store, since: float, until: float, bucket_s: float) -> Counts:
    """Aggregated in SQL (arena/storage.py), so a week of a busy arena is a few hundred rows."""
    return Counts(*storage.bucket_counts(store, since, until, bucket_s))


# ---------------------------------------------------------------- pure core
def _share(accepted: int, refused: int) -> float | None:
    total = accepted + refused
    return accepted / total if total else None      # nothing submitted: no share, not 0 or 1


def series(counts: Counts, since: float, until: float, bucket_s: float) -> list[dict]:
    """One row per bucket from `since` to `until`, empty buckets included (a gap is information)."""
    first, last = math.floor(since / bucket_s), math.ceil(until / bucket_s) - 1   # until is exclusive
    rows = []
    for b in range(first, last + 1):
        by_reason = {reason: n for (bb, reason), n in sorted(counts.refused.items()) if bb == b}
        acc, ref = counts.accepted.get(b, 0), sum(by_reason.values())
        start = b * bucket_s
        rows.append({"start": start,
                     "start_utc": datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%d %H:%M"),
                     "served": counts.served.get(b, 0), "accepted": acc, "refused": ref,
                     "refused_by_reason": by_reason, "attempts": acc + ref, "counted_share": _share(acc, ref)})
    return rows


def evaluate(window: dict, cfg: HealthConfig) -> str | None:
    """The alert message for the last window's totals, or None when healthy or too little data."""
    share = _share(window["accepted"], window["refused"])
    attempts = window["accepted"] + window["refused"]
    if share is not None and attempts >= cfg.min_attempts and share < cfg.alert_share:
        top = ", ".join(f"{r} {n}" for r, n in sorted(window["refused_by_reason"].items(), key=lambda x: -x[1])[:3])
        return (f"only {share:.0%} of {attempts} vote submissions counted in the last {cfg.window_s / 60:.0f} min "
                f"(threshold {cfg.alert_share:.0%}); refused: {top}")
    if window["served"] >= cfg.min_served and attempts < cfg.min_submit_rate * window["served"]:
        return (f"{window['served']} battles served but only {attempts} votes submitted in the last "
                f"{cfg.window_s / 60:.0f} min: votes may not be reaching the arena")
    return None


def window_totals(counts: Counts) -> dict:
    """Totals over everything in `counts` (load them for the window alone)."""
    by_reason: dict[str, int] = {}
    for (_, reason), n in counts.refused.items():
        by_reason[reason] = by_reason.get(reason, 0) + n
    acc, ref = sum(counts.accepted.values()), sum(by_reason.values())
    return {"served": sum(counts.served.values()), "accepted": acc, "refused": ref,
            "refused_by_reason": dict(sorted(by_reason.items())), "counted_share": _share(acc, ref)}


def health_report(store, cfg: HealthConfig = HealthConfig(), now: float | None = None) -> dict:
    """{rows (per bucket), window (totals of the last window_s, exact, not cut at bucket edges),
    alert (message or None), config, now}."""
    now = time.time() if now is None else now
    since = now - cfg.history_s
    rows = series(load_counts(store, since, now, cfg.bucket_s), since, now, cfg.bucket_s)
    window = window_totals(load_counts(store, now - cfg.window_s, now, cfg.window_s))
    return {"rows": rows, "window": window, "alert": evaluate(window, cfg), "config": dataclasses.asdict(cfg),
            "now": now}


def health_figure(rows: list[dict], alert_share: float | None = None):
    """Stacked bars (counted, refused by reason) per bucket and the counted share on a second axis, from the
    first bucket with any battle or vote on (not the whole history: an hour of data would be a hairline)."""
    import plotly.graph_objects as go

    active = [i for i, r in enumerate(rows) if r["served"] or r["attempts"]]
    rows = rows[active[0]:] if active else rows[-1:]    # the window follows the data: an hour fills the chart
    x = [r["start_utc"] for r in rows]
    top = max([max(r["served"], r["attempts"]) for r in rows] or [0])
    fig = go.Figure()
    fig.add_bar(x=x, y=[r["accepted"] for r in rows], name="counted", marker_color="#2ca02c")
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
    from .distinct import REASON_TEXT
    why = ", ".join(f"{REASON_TEXT[r]} {n}" for r, n in pairs["left_out"].items() if n) or "none"
    return (f"battle pairs: {pairs['servable']} of {pairs['request_pairs']} request pairs servable "
            f"({pairs['same_words_servable']} of them with the same words and a different delivery, served only "
            f"when a pair has nothing else); left out: {why}")


def live_models_line(rows: list[dict]) -> str:
    """One line per submitted model that battles live: calls, failures, pause (arena/live_submitted.py)."""
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
            self.status = (f"ok: {w['accepted']} counted, {w['refused']} refused in the last "
                           f"{self.cfg.window_s / 60:.0f} min (counted share {share})")
        return report
