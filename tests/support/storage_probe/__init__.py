"""Which tests use the store: found out on the SQLite pass, so the PostgreSQL pass runs those (but a test that
checks something else, whose every store statement another test there issues).

A test uses the store when it, or a fixture it depends on (at any scope), opens a `store.sqlite3`, in the test
process or in any Python process it starts (an app, a worker, a CLI): every Store opens its database file when it
is made (eval_backend/store.py). Found out, not declared: nobody has to remember a marker.

- In the test process, an audit hook (`sys.addaudithook`) sees each `sqlite3.connect` and each `subprocess.Popen`.
- Python children load `sitecustomize.py` from this folder (put first on their PYTHONPATH); it reports a store
  opened in the child as a file named after the test or fixture that started it (EMPATHY_ARENA_STORE_PROBE_TAG,
  inherited down the process tree), so an app started by a module fixture counts for every test that uses it.
- A Python child that would not load the probe (its PYTHONPATH replaced, `-I`, `-S`, `-E`) counts as using the
  store: a doubt runs on both databases.

The store statements (EMPATHY_ARENA_STORE_SQL=1, scripts/test.sh's SQLite pass): every store connection, here and
in the children, notes the SQL it is given, and the shape of each statement the product issued (its values taken
out; what the tests' own code reads or seeds is left out: store_probe_sql.py) is kept under the test or fixture it
ran for. Some tests use the store only on the way to what they check (`store_incidental`): a browser test checks
the page (found by itself; not a timed one: its time may be the store's), and a test marked
`store_incidental("why")` checks what a pipeline made (audio, figures, the pairs it serves) or Gradio's own routes.
When every statement such a test issued (its own and its fixtures') was issued by a test that checks the store and
runs on PostgreSQL too — through its own code or a fixture no incidental test uses —, the PostgreSQL pass runs those
call sites without it, and leaves it out (about 60 % of that pass's time was browser tests: docs/benchmarks.md,
"Test suite"). `python -m tests.support.storage_probe DIR` tells which incidental tests stay and the statements
that keep them.

EMPATHY_ARENA_TEST_STORE_RECORD=DIR: the SQLite pass writes one record per process (xdist workers included) into
DIR; the PostgreSQL pass reads them and deselects the tests that ran on SQLite without using the store, and the
incidental tests above. A test the
record does not know (new, or skipped on SQLite) runs. Without the variable nothing is deselected (scripts/test.sh
sets it for its two passes; `EMPATHY_ARENA_TEST_DB=postgresql pytest` alone runs the whole suite on PostgreSQL).
tests/test_storage_probe.py checks that the probe sees each way a test can use the store;
tests/test_store_selection.py that the PostgreSQL pass selects every test the record says used it, on the real suite.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple

import pytest

from .store_probe_sql import STORE_FILE, TRACE_ENV, Shapes, is_sqlite_own

RECORD_ENV = "EMPATHY_ARENA_TEST_STORE_RECORD"
PROBE_DIR_ENV = "EMPATHY_ARENA_STORE_PROBE"          # where children report (read by sitecustomize.py)
TAG_ENV = "EMPATHY_ARENA_STORE_PROBE_TAG"            # the test or fixture a child was started for
SITE_DIR = str(Path(__file__).resolve().parent)      # holds sitecustomize.py
DESELECTED = pytest.StashKey[list[str]]()             # the PostgreSQL pass's deselected test ids (base_id)


def tag_file(tag: str) -> str:
    """The report file's name for a tag (test ids hold characters a file name cannot)."""
    return hashlib.sha256(tag.encode()).hexdigest()[:32]


def base_id(nodeid: str) -> str:
    """The test id without the "@group" suffix xdist's loadgroup adds (as xdist splits it)."""
    return nodeid[:nodeid.rfind("@")] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def _is_python(executable) -> bool:
    path = os.fsdecode(executable or "")
    return os.path.basename(path).startswith("python") or path == sys.executable


def store_incidental(item) -> bool:
    """What the test checks is not the store: a browser test's page (but a timed one's: its time may be the
    store's), or what a test marked `store_incidental("why")` says it checks."""
    if item.get_closest_marker("store_incidental") is not None:
        return True
    return item.get_closest_marker("browser") is not None and item.get_closest_marker("exclusive") is None


class StorageProbe:
    """The plugin (one per pytest process; xdist workers each have theirs)."""

    def __init__(self, config):
        self.config = config
        self.record_dir = os.environ.get(RECORD_ENV) or None
        self.db = os.environ.get("EMPATHY_ARENA_TEST_DB", "sqlite")
        self.context: list[str] = []          # the test or fixture being run (innermost last)
        self.used: set[str] = set()           # tags seen using the store here, or starting an unprobed child
        self.ran: list[str] = []              # test ids whose call phase ran in this process
        self.active = self.db == "sqlite"
        self.tracing = self.active and os.environ.get(TRACE_ENV) == "1"
        self.opaque: set[str] = set()         # tags that started a child the probe cannot see into
        self.sql: dict[str, dict[str, str]] = {}   # tag -> {key: shape} of the store statements run here under it
        if self.active:
            self.env_before = {k: os.environ.get(k) for k in (PROBE_DIR_ENV, "PYTHONPATH")}
            self.probe_dir = tempfile.mkdtemp(prefix="store_probe_")
            os.environ[PROBE_DIR_ENV] = self.probe_dir
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SITE_DIR, os.environ.get("PYTHONPATH")) if p)
            sys.addaudithook(self._audit)      # for the life of the process: audit hooks cannot be removed
        if self.tracing:
            self._connect = sqlite3.connect
            shapes = Shapes(lambda tag, k, text: self.sql.setdefault(tag, {}).setdefault(k, text),
                            self.current)
            sqlite3.connect = shapes.connect(self._connect)

    # ------------------------------------------------------------------------------ seeing
    def current(self) -> str | None:
        """The test or fixture a store use here counts for: the innermost one being run, but from another thread
        (a service's background worker, started by an earlier test) the test being run — never a fixture being
        set up at that moment: an autouse fixture's tag is every test's, and would make them all store users."""
        if not self.context:
            return None
        if threading.current_thread() is threading.main_thread():
            return self.context[-1]
        return next((tag for tag in self.context if tag.startswith("test:")), None)

    def _audit(self, event: str, args: tuple) -> None:
        if event == "sqlite3.connect":
            tag = self.current()
            if tag and os.path.basename(os.fsdecode(args[0])) == STORE_FILE:
                self.used.add(tag)
        elif event == "subprocess.Popen" and self.context:
            executable, argv, _cwd, env = args
            argv = [os.fsdecode(a) for a in argv] if isinstance(argv, (list, tuple)) else [os.fsdecode(argv)]
            if not _is_python(executable or argv[0]) and not any("python" in a for a in argv[1:]):
                return                             # (a shell running python counts as python)
            env = os.environ if env is None else env
            short = [a for a in argv[1:] if isinstance(a, str) and a[:1] == "-" and a[1:2] != "-"]
            isolated = any(set(a[1:]) & set("ISE") for a in short if a not in ("-m", "-c"))
            probed = SITE_DIR in str(env.get("PYTHONPATH", "")).split(os.pathsep) and env.get(PROBE_DIR_ENV)
            if isolated or not probed:
                self.used.add(self.context[-1])    # it could open a store we would not hear of
                self.opaque.add(self.context[-1])

    def _enter(self, tag: str) -> None:
        self.context.append(tag)
        os.environ[TAG_ENV] = tag

    def _leave(self) -> None:
        self.context.pop()
        if self.context:
            os.environ[TAG_ENV] = self.context[-1]
        else:
            os.environ.pop(TAG_ENV, None)

    @staticmethod
    def fixture_tag(fixturedef) -> str:
        return f"fixture:{fixturedef.baseid}::{fixturedef.argname}"

    def uses_store(self, item, reported: set[str]) -> bool:
        """The test, or a fixture it depends on, opened a store (here or in a child it started)."""
        return self.why(item, reported) is not None

    def why(self, item, reported: set[str]) -> str | None:
        """The first of the test's tags that opened a store, if any (the record keeps it: a fixture every test uses
        showing up here is how a wrong attribution shows)."""
        return next((t for t in self.tags(item) if t in self.used or tag_file(t) in reported), None)

    # ------------------------------------------------------------------------------ hooks
    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        if not self.active:
            return (yield)
        self._enter(self.fixture_tag(fixturedef))
        try:
            return (yield)
        finally:
            self._leave()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not self.active:
            return (yield)
        self._enter(f"test:{item.nodeid}")
        try:
            return (yield)
        finally:
            self._leave()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if self.active and report.when == "call" and not report.skipped:
            self.ran.append(item.nodeid)      # as the session knows it; base_id() in the record
        return report

    def pytest_collection_modifyitems(self, config, items):
        if self.db == "postgresql":
            select_for_postgresql(config, items)

    def pytest_report_header(self, config):
        if self.db == "postgresql" and self.record_dir:
            return f"PostgreSQL pass: the tests that used the store on the SQLite pass ({self.record_dir})"
        return None

    def pytest_sessionfinish(self, session):
        if not self.active or not self.record_dir or not self.ran:
            return
        reported = set(os.listdir(self.probe_dir))
        by_id = {item.nodeid: item for item in session.items}
        users = [by_id[n] for n in self.ran if n in by_id and self.uses_store(by_id[n], reported)]
        doc: dict = {"ran": sorted(map(base_id, self.ran)), "storage": sorted(base_id(i.nodeid) for i in users),
                     "because": {base_id(i.nodeid): self.why(i, reported) for i in users}}
        if self.tracing:
            doc |= self.statement_record(users)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        # one file per process: scripts/test.sh runs several parts into one record, each with its own gw0, gw1
        out = Path(self.record_dir) / f"sqlite-{worker}-{os.getpid()}.json"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=0))
        tmp.replace(out)

    def tags(self, item) -> list[str]:
        """The test's own tag and those of every fixture it depends on."""
        return [f"test:{item.nodeid}"] + [self.fixture_tag(d) for defs in item._fixtureinfo.name2fixturedefs.values()
                                          for d in defs]

    def shapes_under(self, tag: str) -> dict[str, str]:
        """{key: shape} of the store statements run under `tag`: here, and in the children it started."""
        found = dict(self.sql.get(tag, {}))
        try:
            with open(Path(self.probe_dir) / tag_file(tag), encoding="utf-8") as report:
                for line in report:
                    name, _, text = line.rstrip("\n").partition("\t")
                    if text:
                        found.setdefault(name, text)
        except OSError:
            pass
        return found

    def statement_record(self, users: list) -> dict:
        """The statement part of this process's record (a traced run): each incidental test's store statements,
        and those the other tests ran that the PostgreSQL pass is sure to run too (select_for_postgresql). An
        incidental test with a child the probe could not see into is listed apart (it runs on PostgreSQL). What a
        fixture ran counts for the incidental tests using it and never covers them: the PostgreSQL pass could keep
        its other users and drop the incidental tests that made the fixture's app run those statements."""
        incidental = [i for i in users if store_incidental(i)]
        incidental_tags = {t for i in incidental for t in self.tags(i)[1:]}
        shapes: dict[str, str] = {}
        statements: dict[str, list[str]] = {}
        unseen: list[str] = []
        for item in incidental:
            tags = self.tags(item)
            if any(t in self.opaque for t in tags):
                unseen.append(base_id(item.nodeid))
                continue
            mine = {k: v for t in tags for k, v in self.shapes_under(t).items() if not is_sqlite_own(v)}
            shapes |= mine
            statements[base_id(item.nodeid)] = sorted(mine)
        covering: set[str] = set()
        for item in users:
            if item in incidental or "sqlite_only" in item.keywords:
                continue
            for tag in self.tags(item):
                if tag not in incidental_tags:
                    found = self.shapes_under(tag)
                    covering |= found.keys()
                    shapes |= found
        return {"traced": True, "incidental_statements": statements, "incidental_unseen": sorted(unseen),
                "covering_statements": sorted(covering),
                "shapes": {k: shapes[k] for k in sorted(shapes)}}

    def pytest_unconfigure(self, config):
        """The reports folder goes (one a pytest process: they were left in /tmp), and the variables this plugin
        set are as they were (a pytest run inside this process, as tests/test_storage_probe.py's, leaves the outer
        one reporting where it did)."""
        if not self.active:
            return
        if self.tracing:
            sqlite3.connect = self._connect
        shutil.rmtree(self.probe_dir, ignore_errors=True)
        for name, value in self.env_before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def pytest_configure(config):
    config.pluginmanager.register(StorageProbe(config), "storage_probe")


def read_record(record_dir: str) -> tuple[set[str], set[str]] | None:
    """(test ids that ran on the SQLite pass, those of them that used the store), or None without a record."""
    files = sorted(Path(record_dir).glob("sqlite-*.json"))
    if not files:
        return None
    ran: set[str] = set()
    storage: set[str] = set()
    for f in files:
        doc = json.loads(f.read_text())
        ran |= set(doc["ran"])
        storage |= set(doc["storage"])
    return ran, storage


class Statements(NamedTuple):
    incidental: dict[str, set[str]]  # incidental test (store_incidental) -> the keys of the store statements it issued
    unseen: set[str]                 # incidental tests that started a child the probe could not see into
    covering: set[str]               # the keys the other store tests issued (select_for_postgresql)
    shapes: dict[str, str]           # key -> shape


def read_statements(record_dir: str) -> Statements | None:
    """From a traced SQLite record (scripts/test.sh's SQLite pass); None if no process of the record traced."""
    incidental: dict[str, set[str]] = {}
    unseen: set[str] = set()
    covering: set[str] = set()
    shapes: dict[str, str] = {}
    traced = False
    for f in sorted(Path(record_dir).glob("sqlite-*.json")):
        doc = json.loads(f.read_text())
        if not doc.get("traced"):
            continue
        traced = True
        for test, keys in doc["incidental_statements"].items():
            incidental.setdefault(test, set()).update(keys)
        unseen |= set(doc.get("incidental_unseen", ()))
        covering |= set(doc["covering_statements"])
        shapes |= doc["shapes"]
    return Statements(incidental, unseen, covering, shapes) if traced else None


def covered_incidental_tests(record_dir: str) -> tuple[set[str], dict[str, set[str]]]:
    """(the incidental tests every store statement of which another store test ran too — the PostgreSQL pass runs
    those tests, so it runs each of these statements' call sites —, {every other traced incidental test: the
    statements only incidental tests ran})."""
    found = read_statements(record_dir)
    if found is None:
        return set(), {}
    # (none seen at all, though it used the store: it runs)
    covered = {test for test, keys in found.incidental.items()
               if keys and keys <= found.covering and test not in found.unseen}
    return covered, {test: keys - found.covering for test, keys in found.incidental.items() if test not in covered}


def select_for_postgresql(config, items) -> None:
    """PostgreSQL pass with a record: keep the tests that used the store on SQLite, those it does not know, and those
    marked `both_databases` (tests/test_store_selection.py, which checks this pass's selection against the record),
    except an incidental test (`store_incidental`) each of whose store statements a kept test that checks the store
    ran on the SQLite pass (noted there: store_probe_sql.py): what it checks is not the store, and every query it
    made runs on PostgreSQL in a test of its own. The deselected ids stay in `config.stash[DESELECTED]` for that
    check."""
    record_dir = os.environ.get(RECORD_ENV)
    if not record_dir:
        return
    record = read_record(record_dir)
    if record is None:
        raise pytest.UsageError(f"{RECORD_ENV}={record_dir} holds no SQLite record: run the SQLite pass first, "
                                "or unset it to run every test on PostgreSQL")
    ran, storage = record
    covered, _ = covered_incidental_tests(record_dir)
    keep, drop = [], []
    for item in items:
        test = base_id(item.nodeid)
        pure = test in ran and (test not in storage or test in covered) \
            and item.get_closest_marker("both_databases") is None
        (drop if pure else keep).append(item)
    config.stash[DESELECTED] = [base_id(item.nodeid) for item in drop]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
