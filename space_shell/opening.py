"""What a visitor is told while a fresh Space prepares its arena: the steps, "step k of n", and an estimate.

Pure bookkeeping, no Gradio: the bootstrap (space_shell/bootstrap.py) plans the steps that stand between a fresh
start and the first battle and reports each one's progress here; the arena's banner (arena/ui/opening_banner.py) and
the page header render `public_text`. Operator detail (errors, ports, Hub state) never goes through this module:
it stays in `BootstrapStatus.line()`, the log and the Integrity health tab.

The estimate comes from measured progress, not a constant: the current step's own rate (units done per second
since it began) gives its remaining time; the steps not yet begun are costed with `REFERENCE_S` (seconds per unit
on a quiet 2-core machine, measured for docs/benchmarks.md) times the *speed* measured so far on this machine
(actual seconds / reference seconds of the work already done). Until some work has been measured there is no
estimate ("estimating…"), never a made-up figure.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

# Seconds per unit of each step on a quiet 2-core machine (benchmarks/bench_cold_start.py, docs/benchmarks.md):
# the ratio between steps is what matters, the machine's measured speed scales all of them.
# Measured at load average ~3 on the 2-core machine of docs/benchmarks.md: demo 39 s for 426 clips (build, save
# and load), the 48 first-slice replies 57 s.
REFERENCE_S = {
    "demo": 0.09,          # one demo clip rendered (espeak-ng + effects), the dataset save and load spread over them
    "load": 3.0,           # loading a benchmark that is already on disk (one unit)
    "server": 8.0,         # the baseline server up (Whisper loaded), from its launch (one unit)
    "slice": 1.2,          # one first-slice reply (Whisper on a new clip for the first model, cached for the second)
    "screen": 0.4,         # one first-slice reply screened (Whisper on the reply's own audio + the text screen)
}

MIN_UNITS, MIN_MEASURE_S = 5, 5.0   # a step's own rate is believed after this much of it (else: the speed)

TITLES = {                 # the public words for each step
    "demo": "building the demo benchmark (synthetic voices)",
    "load": "loading the benchmark",
    "server": "starting the baseline models",
    "slice": "recording the first replies for the arena",
    "screen": "checking the first replies for safety",
}
UNITS = {"demo": "clips", "slice": "replies", "screen": "replies"}


@dataclass
class Step:
    key: str
    total: int = 0                      # units of work (0: one indivisible unit)
    done: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    since: float | None = None          # work that began before the step's turn (the server, launched first)

    @property
    def title(self) -> str:
        return TITLES.get(self.key, self.key)

    @property
    def units(self) -> int:
        return self.total or 1

    def reference_s(self) -> float:
        return REFERENCE_S.get(self.key, 1.0) * self.units


class Opening:
    """The planned steps of one start and their progress; thread-safe (the bootstrap writes, page loads read)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.steps: list[Step] = []
        self.failed = False
        self.planned = False             # the bootstrap has said what this start prepares
        self.opened = False              # every step done: the arena has its first battles
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ written by the bootstrap
    def plan(self, steps: list[tuple[str, int]]) -> None:
        """The steps of this start, in order: (key, units of work; 0 = one indivisible unit)."""
        with self._lock:
            self.steps = [Step(key, total) for key, total in steps]
            self.planned = True
            self.opened = not self.steps

    def launched(self, key: str) -> None:
        """Work of a later step began early (the baseline server is launched before the demo is built)."""
        with self._lock:
            step = self._get(key)
            if step is not None and step.since is None:
                step.since = self.clock()

    def begin(self, key: str, total: int | None = None) -> None:
        with self._lock:
            step = self._get(key)
            if step is None or step.finished_at is not None:
                return
            if total is not None:
                step.total = total
            step.started_at = step.started_at or self.clock()

    def progress(self, key: str, done: int, total: int | None = None) -> None:
        with self._lock:
            step = self._get(key)
            if step is not None:
                step.done = done
                if total is not None:
                    step.total = total

    def finish(self, key: str) -> None:
        with self._lock:
            step = self._get(key)
            if step is None or step.finished_at is not None:
                return
            now = self.clock()
            step.started_at = step.started_at or now
            step.finished_at = now
            step.done = step.total
            self.opened = all(s.finished_at is not None for s in self.steps)

    def fail(self) -> None:
        with self._lock:
            self.failed = True

    def _get(self, key: str) -> Step | None:
        return next((s for s in self.steps if s.key == key), None)

    # ------------------------------------------------------------------ read by the page
    def current(self) -> tuple[int, int, Step | None]:
        """(k, n, step): the first step not finished, counted from 1; (n, n, None) once all are done."""
        with self._lock:
            n = len(self.steps)
            for k, step in enumerate(self.steps, 1):
                if step.finished_at is None:
                    return k, n, step
            return n, n, None

    def speed(self) -> float | None:
        """Actual / reference seconds over the work measured so far (None before any)."""
        actual = reference = 0.0
        now = self.clock()
        for s in self.steps:
            if s.started_at is None:
                continue
            began = min(s.started_at, s.since or s.started_at)
            if s.finished_at is not None:
                actual += s.finished_at - began
                reference += s.reference_s()
            elif s.total and s.done:
                actual += now - began
                reference += s.reference_s() * s.done / s.total
        return actual / reference if reference > 0 and actual > 0 else None

    def remaining_s(self) -> float | None:
        """Seconds until every step is done, from the measured rates (None: nothing measured yet)."""
        with self._lock:
            speed = self.speed()
            now = self.clock()
            left = 0.0
            for s in self.steps:
                if s.finished_at is not None:
                    continue
                if (s.started_at is not None and s.total and s.done >= MIN_UNITS
                        and now - s.started_at >= MIN_MEASURE_S):               # its own measured rate
                    rate = s.done / max(now - s.started_at, 1e-6)
                    left += (s.total - s.done) / rate
                    continue
                if speed is None:
                    return None
                cost = s.reference_s() * speed * (1 - (s.done / s.total if s.total else 0))
                if s.total and s.done and s.started_at is not None:
                    left += max(cost, 0.0)
                    continue
                if s.since is not None or s.started_at is not None:    # already under way: part of it is spent
                    cost -= now - min(x for x in (s.since, s.started_at) if x is not None)
                left += max(cost, 0.0)
            return left


def rough_duration(seconds: float) -> str:
    """'~40 s', '~1 min', '~3 min': a rounded figure, since the estimate is one."""
    if seconds < 50:
        return f"~{max(10, round(seconds / 10) * 10):.0f} s"
    return f"~{max(1, round(seconds / 60)):.0f} min"


@dataclass(frozen=True)
class OpeningView:
    """Everything the banner shows, as plain values (rendered by arena/ui/opening_banner.py)."""
    k: int
    n: int
    title: str
    done: int
    total: int
    unit: str
    fraction: float                     # of the whole opening, 0..1 (the progress bar)
    eta: str | None                     # "~1 min", or None while nothing is measured


def view(opening: Opening) -> OpeningView | None:
    """The banner's content; None when there is nothing to prepare (every step done, or no plan)."""
    k, n, step = opening.current()
    if step is None:
        return None
    with opening._lock:
        total_ref = sum(s.reference_s() for s in opening.steps) or 1.0
        done_ref = sum(s.reference_s() * (1.0 if s.finished_at is not None else (s.done / s.total if s.total else 0))
                       for s in opening.steps)
    left = opening.remaining_s()
    return OpeningView(k, n, step.title, step.done, step.total, UNITS.get(step.key, ""),
                       min(1.0, done_ref / total_ref), rough_duration(left) if left is not None else None)
