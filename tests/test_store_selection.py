"""Every test that uses the store runs on both databases — a test that uses it on the way to what it checks (a
browser test, one marked `store_incidental`), or every store statement it issues does (issue 25) —, checked on the
real suite.

scripts/test.sh runs every test on SQLite, which records the tests that used the store (tests/support/storage_probe;
tests/test_storage_probe.py shows the probe sees each way a test can use it), then on PostgreSQL the tests that
record names (and those it does not know). Here:
- the PostgreSQL selection over the whole suite as collected now (every file, every parametrised id), from a record
  naming half its tests as users of the store and leaving some out: each of those runs, only the others drop;
- on scripts/test.sh's PostgreSQL pass, this very pass against the record its SQLite pass wrote: no test the record
  says used the store is among the deselected but the incidental tests each store statement of which (noted on the
  SQLite pass) a test of the store issued too, and those tests are all selected (this test is
  kept on that pass for the check: `both_databases`; the first, which uses no store and reads no pass's record,
  runs on SQLite only).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.storage_probe import (DESELECTED, RECORD_ENV, base_id, covered_incidental_tests, read_record,
                                         read_statements)

pytestmark = [pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parent.parent


def _collect(db: str, record: Path | None) -> tuple[set[str], str]:
    """The test ids a pass on `db` would run (pytest --collect-only over tests/ in a child), and its output."""
    env = {k: v for k, v in os.environ.items() if k not in (RECORD_ENV, "DATABASE_URL")}
    env["EMPATHY_ARENA_TEST_DB"] = db
    if record is not None:
        env[RECORD_ENV] = str(record)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return {line.strip() for line in out.stdout.splitlines() if "::" in line and not line.startswith(" ")}, out.stdout


def test_the_postgresql_selection_keeps_every_test_the_record_says_used_the_store(tmp_path):
    everything, _ = _collect("sqlite", None)
    ordered = sorted(everything)
    unknown = set(ordered[::7])                           # not in the record (new, or skipped on SQLite): they run
    ran = [t for t in ordered if t not in unknown]
    storage = set(ran[1::2])                              # every other test: each kind of id on both sides
    mine = {t for t in everything if t.startswith("tests/test_store_selection.py::test_this_postgresql_pass")}
    assert len(everything) > 300 and mine, len(everything)  # the real suite, the `both_databases` test in it
    record = tmp_path / "record"
    record.mkdir()
    half = len(ran) // 2                                  # two workers' records, as on an xdist pass
    for worker, part in (("gw0", ran[:half]), ("gw1", ran[half:])):
        (record / f"sqlite-{worker}.json").write_text(
            json.dumps({"ran": part, "storage": sorted(storage & set(part))}))

    selected, output = _collect("postgresql", record)
    missed = storage - selected
    assert not missed, f"{len(missed)} tests that used the store would not run on PostgreSQL: {sorted(missed)[:20]}"
    assert unknown <= selected, sorted(unknown - selected)[:20]
    assert selected - storage - unknown <= mine           # only the tests that never touched a store drop
    dropped = len(set(ran) - storage - mine)
    assert re.search(rf"\b{len(selected)}/{len(everything)} tests collected \({dropped} deselected\)", output), \
        output[-500:]


@pytest.mark.both_databases
def test_this_postgresql_pass_runs_every_test_its_sqlite_pass_saw_use_the_store(request):
    """Only scripts/test.sh's PostgreSQL pass has a SQLite record to check; elsewhere the check is that none is
    used: a pass with no record deselects nothing."""
    record_dir = os.environ.get(RECORD_ENV)
    record = read_record(record_dir) if record_dir and os.environ.get("EMPATHY_ARENA_TEST_DB") == "postgresql" \
        else None
    deselected = set(request.config.stash.get(DESELECTED, []))
    if record is None:
        assert not deselected
        return
    ran, storage = record
    covered, _ = covered_incidental_tests(record_dir)
    statements = read_statements(record_dir)
    selected = {base_id(item.nodeid) for item in request.session.items}
    # of the tests that used the store, only incidental tests whose every statement a selected test issued drop
    assert not (storage - covered) & deselected, sorted((storage - covered) & deselected)[:20]
    assert not (storage & (selected | deselected)) - selected - covered
    assert deselected <= (ran - storage) | covered
    if covered:
        assert statements is not None
        issuers = storage - set(statements.incidental) - statements.unseen      # the tests of the store
        assert issuers & (selected | deselected) <= selected
        for test in covered & deselected:
            assert statements.incidental[test] and statements.incidental[test] <= statements.covering, test
    assert base_id(request.node.nodeid) in selected
