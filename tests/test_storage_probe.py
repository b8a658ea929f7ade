"""Every test that uses the store runs on both databases (issue 25).

scripts/test.sh runs the SQLite pass with a record (tests/support/storage_probe) and the PostgreSQL pass on the
tests that record says used the store. Here a small suite goes through both passes for real (pytest in a child
process, a real PostgreSQL cluster for the second pass): each way a test can use the store — a Store in the test,
a Python child that opens one (an app, a CLI), a module fixture whose app the test only talks to, a child that
could not be probed — lands the test on PostgreSQL, and only the tests that never touch a store are left out.
"""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from tests.support.storage_probe import RECORD_ENV, read_record

ROOT = Path(__file__).resolve().parent.parent

SUITE = textwrap.dedent('''
    import subprocess
    import sys

    import pytest

    from eval_backend.store import Store

    OPEN_IN_CHILD = "import sys; from eval_backend.store import Store; Store(sys.argv[1])"


    def test_pure():
        assert sum(range(4)) == 6


    def test_store_in_the_test(tmp_path):
        Store(tmp_path)


    def test_store_in_a_child(tmp_path):
        subprocess.run([sys.executable, "-c", OPEN_IN_CHILD, str(tmp_path)], check=True)


    def test_child_without_a_store():
        subprocess.run([sys.executable, "-c", "print(1)"], check=True)


    def test_child_that_cannot_be_probed():
        subprocess.run([sys.executable, "-I", "-c", "print(1)"], check=True)


    @pytest.fixture(scope="module")
    def app(tmp_path_factory):
        data = tmp_path_factory.mktemp("app")
        # started by the fixture, opens its store later: the test that talks to it uses the store
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5); " + OPEN_IN_CHILD, str(data)])
        yield child
        child.wait(30)


    @pytest.fixture
    def app_client(app):
        return app


    def test_first_user_of_the_app(app):
        assert app.pid


    def test_later_user_of_the_app_through_another_fixture(app_client):
        assert app_client.pid


    def test_pure_after_the_app():      # touches nothing: the record must not count the app fixture before it
        assert True
''')
STORAGE = {"test_store_in_the_test", "test_store_in_a_child", "test_child_that_cannot_be_probed",
           "test_first_user_of_the_app", "test_later_user_of_the_app_through_another_fixture"}
PURE = {"test_pure", "test_child_without_a_store", "test_pure_after_the_app"}


def _run(pytester, monkeypatch, db: str, record: Path, *args: str):
    with monkeypatch.context() as mp:
        mp.setenv("EMPATHY_ARENA_TEST_DB", db)
        mp.setenv(RECORD_ENV, str(record))
        mp.delenv("DATABASE_URL", raising=False)        # (set for this test on the PostgreSQL pass)
        mp.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
        return pytester.runpytest_subprocess("-p", "tests.support.storage_probe", "-p", "no:cacheprovider",
                                             "-q", *args, timeout=600)


def test_the_postgresql_pass_runs_every_test_that_used_the_store(pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_suite=SUITE)
    record = tmp_path / "record"
    record.mkdir()
    # in two parts into one record, as scripts/test.sh runs a pass (each part's process has the same worker name)
    part = {"pure": {t for t in STORAGE | PURE if "pure" in t}}
    part["not pure"] = (STORAGE | PURE) - part["pure"]
    for keyword, tests in part.items():
        _run(pytester, monkeypatch, "sqlite", record, "-k", keyword).assert_outcomes(passed=len(tests))
    ran, storage = read_record(str(record))
    assert {n.split("::")[-1] for n in ran} == STORAGE | PURE
    assert {n.split("::")[-1] for n in storage} == STORAGE, json.dumps(sorted(storage))

    postgresql = _run(pytester, monkeypatch, "postgresql", record, "--collect-only")
    collected = {line.split("::")[-1] for line in postgresql.outlines if "::" in line}
    assert collected == STORAGE, postgresql.outlines
    assert f"{len(PURE)} deselected" in postgresql.stdout.str()


def test_a_test_the_record_does_not_know_runs_on_postgresql(pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_suite=SUITE)
    record = tmp_path / "record"
    record.mkdir()
    (record / "sqlite-main.json").write_text(json.dumps({"ran": ["test_suite.py::test_pure"], "storage": []}))
    postgresql = _run(pytester, monkeypatch, "postgresql", record, "--collect-only")
    collected = {line.split("::")[-1] for line in postgresql.outlines if "::" in line}
    assert collected == (STORAGE | PURE) - {"test_pure"}
