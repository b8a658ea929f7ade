"""Where the test suite's time goes: wall and CPU seconds per test file, set-up apart, for docs/benchmarks.md.

As a pytest plugin (any checkout; with or without xdist: each worker writes its own file):

    SUITE_PROFILE_DIR=/tmp/prof python -m pytest -p benchmarks.suite_profile [-n 2 --dist loadgroup] ...

then the table (files by CPU, the totals, the slowest set-ups):

    python benchmarks/suite_profile.py /tmp/prof [--top 30]

CPU is user + system of the pytest process and of its children once reaped (servers, apps, CLIs, chromium),
measured around each test's whole run protocol (set-up, call, tear-down), so a module fixture counts for the test
that set it up and a session fixture for its first user. On a machine shared with other jobs CPU seconds compare
far better than wall seconds; the load average is recorded at the start and the end.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

DIR_ENV = "SUITE_PROFILE_DIR"


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class _Recorder:
    def __init__(self, out: Path):
        self.out = out
        self.rows: list[dict] = []
        self.phase: dict[str, float] = {}
        self.start = (time.time(), _cpu(), os.getloadavg())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.phase = {}
        t0, c0 = time.perf_counter(), _cpu()
        try:
            return (yield)
        finally:
            self.rows.append({"test": item.nodeid, "file": item.nodeid.split("::")[0],
                              "wall": time.perf_counter() - t0, "cpu": _cpu() - c0, **self.phase})

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        t0, c0 = time.perf_counter(), _cpu()
        try:
            return (yield)
        finally:
            self.phase.update(setup_wall=time.perf_counter() - t0, setup_cpu=_cpu() - c0)

    def pytest_sessionfinish(self, session):
        if not self.rows:
            return                                   # the xdist controller: its workers write
        t0, c0, load0 = self.start
        doc = {"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "db": os.environ.get(
            "EMPATHY_ARENA_TEST_DB", "sqlite"), "wall": time.time() - t0, "cpu": _cpu() - c0,
            "load_start": load0, "load_end": os.getloadavg(), "tests": self.rows}
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"{doc['db']}-{doc['worker']}.json"
        path.with_suffix(".tmp").write_text(json.dumps(doc))
        path.with_suffix(".tmp").replace(path)


def pytest_configure(config):
    out = os.environ.get(DIR_ENV)
    if out:
        config.pluginmanager.register(_Recorder(Path(out)), "suite_profile_recorder")


# ------------------------------------------------------------------------------------------------ the table
def table(folder: Path, top: int) -> str:
    docs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    lines = []
    for db in sorted({d["db"] for d in docs}):
        mine = [d for d in docs if d["db"] == db]
        rows = [r for d in mine for r in d["tests"]]
        per_file: dict[str, dict] = defaultdict(lambda: defaultdict(float))
        for r in rows:
            f = per_file[r["file"]]
            f["tests"] += 1
            for k in ("wall", "cpu", "setup_wall", "setup_cpu"):
                f[k] += r.get(k, 0.0)
        loads = ", ".join(f"{d['worker']}: {d['load_start'][0]:.1f} → {d['load_end'][0]:.1f}" for d in mine)
        lines += [f"### {db}: {len(rows)} tests, {len(mine)} process(es); pytest's own CPU (collection included) "
                  f"{sum(d['cpu'] for d in mine) / 60:.1f} min, wall {max(d['wall'] for d in mine) / 60:.1f} min; "
                  f"load average {loads}", "",
                  "| file | tests | wall s | of which set-up | CPU s | of which set-up |", "|---|---:|---:|---:|---:|---:|"]
        for name, f in sorted(per_file.items(), key=lambda kv: -kv[1]["cpu"])[:top]:
            lines.append(f"| {name} | {int(f['tests'])} | {f['wall']:.0f} | {f['setup_wall']:.0f} | {f['cpu']:.0f} "
                         f"| {f['setup_cpu']:.0f} |")
        rest = sorted(per_file.items(), key=lambda kv: -kv[1]["cpu"])[top:]
        if rest:
            lines.append(f"| {len(rest)} other files | {int(sum(f['tests'] for _, f in rest))} | "
                         f"{sum(f['wall'] for _, f in rest):.0f} | {sum(f['setup_wall'] for _, f in rest):.0f} | "
                         f"{sum(f['cpu'] for _, f in rest):.0f} | {sum(f['setup_cpu'] for _, f in rest):.0f} |")
        lines.append(f"| **all** | {len(rows)} | {sum(r['wall'] for r in rows):.0f} | "
                     f"{sum(r.get('setup_wall', 0) for r in rows):.0f} | {sum(r['cpu'] for r in rows):.0f} | "
                     f"{sum(r.get('setup_cpu', 0) for r in rows):.0f} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--top", type=int, default=30)
    args = p.parse_args()
    print(table(args.folder, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
