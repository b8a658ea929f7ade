"""Every test that uses the store runs on both databases (issue 25).

scripts/test.sh runs the SQLite pass with a record (tests/support/storage_probe) and the PostgreSQL pass on the
tests that record says used the store. Here a small suite goes through both passes for real (pytest in a child
process, a real PostgreSQL cluster for the second pass): each way a test can use the store — a Store in the test,
a Python child that opens one (an app, a CLI), a module fixture whose app the test only talks to, a child that
could not be probed — lands the test on PostgreSQL, and only the tests that never touch a store are left out.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.support.processes import python_path
from tests.support.storage_probe import RECORD_ENV, read_record
from tests.support.storage_probe.__main__ import describe

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
        mp.setenv("PYTHONPATH", python_path(ROOT))
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


# The incidental tests' statements (issue 25): the SQLite pass notes each store statement's shape
# (EMPATHY_ARENA_STORE_SQL=1); a browser test (not a timed one) or a test marked `store_incidental` runs on
# PostgreSQL unless a test of the store that runs there issued every statement it issued.
STATEMENT_SUITE = textwrap.dedent('''
    import sqlite3
    import subprocess
    import sys

    import pytest

    IN_CHILD = "import sqlite3, sys; sqlite3.connect(sys.argv[1] + '/store.sqlite3').execute(sys.argv[2])"


    def run(tmp_path, sql):
        sqlite3.connect(tmp_path / "store.sqlite3").execute(sql)


    def run_in_child(tmp_path, sql, *flags):
        subprocess.run([sys.executable, *flags, "-c", IN_CHILD, str(tmp_path), sql], check=True)


    def test_api(tmp_path):
        run(tmp_path, "SELECT 'a' AS asked_by_both")


    @pytest.mark.browser
    def test_page_asking_what_the_api_asks(tmp_path):       # the same call site with another value, in a child
        run_in_child(tmp_path, "SELECT 'b' AS asked_by_both")


    @pytest.mark.browser
    def test_page_asking_its_own(tmp_path):
        run(tmp_path, "SELECT 1 AS asked_by_the_page_only")


    @pytest.fixture(scope="module")
    def app(tmp_path_factory):                # an app two kinds of test talk to: its statements cover nobody
        data = tmp_path_factory.mktemp("app")
        run_in_child(data, "SELECT 2 AS asked_by_the_app")
        return data


    def test_api_of_the_app(app):
        assert app


    @pytest.mark.browser
    def test_page_of_the_app(app):
        assert app


    @pytest.mark.browser
    def test_page_with_a_child_the_probe_cannot_see(tmp_path):
        run(tmp_path, "SELECT 'c' AS asked_by_both")
        subprocess.run([sys.executable, "-I", "-c", "print(1)"], check=True)


    @pytest.mark.sqlite_only
    def test_sqlite_file_format(tmp_path):    # skipped on PostgreSQL: covers nobody
        run(tmp_path, "SELECT 3 AS asked_on_sqlite_only")


    @pytest.mark.browser
    def test_page_asking_what_only_sqlite_asks(tmp_path):
        run(tmp_path, "SELECT 4 AS asked_on_sqlite_only")


    @pytest.mark.browser
    @pytest.mark.exclusive
    def test_timed_page_asking_what_the_api_asks(tmp_path):      # it times something: on both databases
        run(tmp_path, "SELECT 'd' AS asked_by_both")


    @pytest.mark.browser
    def test_page_without_a_store():
        assert True


    @pytest.mark.store_incidental("checks what the api made")
    @pytest.mark.exclusive
    def test_timed_output_of_what_the_api_asks(tmp_path):   # declared: its time is not the store's either
        run_in_child(tmp_path, "SELECT 'e' AS asked_by_both")


    @pytest.mark.store_incidental("checks what a pipeline made")
    def test_output_asking_its_own(tmp_path):
        run(tmp_path, "SELECT 5 AS asked_by_a_pipeline_only")
''')
STATEMENT_STORAGE = {"test_api", "test_page_asking_what_the_api_asks", "test_page_asking_its_own",
                     "test_api_of_the_app", "test_page_of_the_app", "test_page_with_a_child_the_probe_cannot_see",
                     "test_sqlite_file_format", "test_page_asking_what_only_sqlite_asks",
                     "test_timed_page_asking_what_the_api_asks", "test_timed_output_of_what_the_api_asks",
                     "test_output_asking_its_own"}


def test_an_incidental_test_runs_on_postgresql_unless_a_test_there_issues_each_of_its_statements(
        pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_suite=STATEMENT_SUITE)
    pytester.makeini("[pytest]\nmarkers =\n    browser\n    exclusive\n    sqlite_only\n    store_incidental\n")
    for traced in (True, False):
        record = tmp_path / f"record-{traced}"
        record.mkdir()
        with monkeypatch.context() as mp:
            if traced:
                mp.setenv("EMPATHY_ARENA_STORE_SQL", "1")
            else:
                mp.delenv("EMPATHY_ARENA_STORE_SQL", raising=False)
            _run(pytester, monkeypatch, "sqlite", record).assert_outcomes(passed=len(STATEMENT_STORAGE) + 1)
        ran, storage = read_record(str(record))
        assert {n.split("::")[-1] for n in storage} == STATEMENT_STORAGE
        postgresql = _run(pytester, monkeypatch, "postgresql", record, "--collect-only")
        collected = {line.split("::")[-1] for line in postgresql.outlines if "::" in line}
        # untraced (a record without statements): every test that used the store, as before
        covered = {"test_page_asking_what_the_api_asks", "test_timed_output_of_what_the_api_asks"}
        assert collected == STATEMENT_STORAGE - (covered if traced else set())
    shown = describe(str(tmp_path / "record-True"))
    assert "7 tests used it on the way to what they check" in shown and ": 2 do not run on PostgreSQL" in shown, shown
    assert "5 do (4 issued a statement no test of the store there issued, 1 started a child" in shown, shown
    assert "asked_by_the_page_only" in shown and "asked_by_the_app" in shown and "asked_on_sqlite_only" in shown
    assert "asked_by_a_pipeline_only" in shown


def test_a_statement_the_tests_write_is_not_a_call_site_of_the_product(tmp_path, monkeypatch):
    """What a test reads to check the app (or a test app seeds) is not what the PostgreSQL pass must cover; what the
    product's code issues is, whoever called it. Noted as the probe notes it (store_probe_sql.Shapes)."""
    import sqlite3

    from arena.tables.storage import vote_log_version
    from eval_backend.store import Store
    from tests.support.storage_probe.store_probe_sql import Shapes

    noted: dict[str, str] = {}
    shapes = Shapes(lambda tag, key, text: noted.setdefault(text, tag), lambda: "test:here")
    monkeypatch.setattr(sqlite3, "connect", shapes.connect(sqlite3.connect))
    monkeypatch.delenv("DATABASE_URL", raising=False)     # what is noted is SQLite's, on either pass
    store = Store(tmp_path)                                                   # the product's own DDL
    with store.transaction() as conn:
        conn.execute("CREATE TABLE probe_seeded (id INTEGER PRIMARY KEY)")     # the test's own statements
    store.query("SELECT id FROM arena_votes WHERE id > ?", (0,))
    assert vote_log_version(store) == (0, None)                               # the product's, called from here
    assert "SELECT COUNT(*), MAX(id) FROM arena_votes" in noted, noted
    assert any(text.startswith("CREATE TABLE IF NOT EXISTS") for text in noted), noted
    assert not [text for text in noted if "probe_seeded" in text or text.startswith("SELECT id FROM")], noted
    assert set(noted.values()) == {"test:here"}


def test_a_store_opened_by_another_thread_counts_for_the_test_being_run_not_a_fixture_being_set_up(
        pytester, monkeypatch, tmp_path):
    """A service's background worker left by an earlier test may open a store while a later test's fixture is being
    set up; a fixture's tag is every user's, so counting it there made every later test a store user (605 of 950
    in one run, against 330)."""
    pytester.makepyfile(test_suite=textwrap.dedent('''
        import sqlite3
        import threading

        import pytest

        go, done = threading.Event(), threading.Event()


        def test_leaves_a_worker(tmp_path):
            def work():
                go.wait(30)
                sqlite3.connect(str(tmp_path / "store.sqlite3")).close()
                done.set()
            threading.Thread(target=work, daemon=True).start()


        @pytest.fixture
        def shared():                 # set up while the worker opens its store
            go.set()
            assert done.wait(30)


        def test_set_up_while_the_worker_opens_a_store(shared):
            assert done.is_set()


        def test_later_with_the_same_fixture(shared):
            assert done.is_set()
    '''))
    record = tmp_path / "record"
    record.mkdir()
    _run(pytester, monkeypatch, "sqlite", record).assert_outcomes(passed=3)
    _, storage = read_record(str(record))
    assert {n.split("::")[-1] for n in storage} == {"test_set_up_while_the_worker_opens_a_store"}, storage
