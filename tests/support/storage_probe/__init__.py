"""Which tests use the store: found out on the SQLite pass, so the PostgreSQL pass runs exactly those.

A test uses the store when it, or a fixture it depends on (at any scope), opens a `store.sqlite3`, in the test
process or in any Python process it starts (an app, a worker, a CLI): every Store opens its database file when it
is made (eval_backend/store.py). Found out, not declared: nobody has to remember a marker.

- In the test process, an audit hook (`sys.addaudithook`) sees each `sqlite3.connect` and each `subprocess.Popen`.
- Python children load `sitecustomize.py` from this folder (put first on their PYTHONPATH); it reports a store
  opened in the child as a file named after the test or fixture that started it (EMPATHY_ARENA_STORE_PROBE_TAG,
  inherited down the process tree), so an app started by a module fixture counts for every test that uses it.
- A Python child that would not load the probe (its PYTHONPATH replaced, `-I`, `-S`, `-E`) counts as using the
  store: a doubt runs on both databases.

EMPATHY_ARENA_TEST_STORE_RECORD=DIR: the SQLite pass writes one record per process (xdist workers included) into
DIR; the PostgreSQL pass reads them and deselects the tests that ran on SQLite without using the store. A test the
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
import sys
import tempfile
from pathlib import Path

import pytest

RECORD_ENV = "EMPATHY_ARENA_TEST_STORE_RECORD"
PROBE_DIR_ENV = "EMPATHY_ARENA_STORE_PROBE"          # where children report (read by sitecustomize.py)
TAG_ENV = "EMPATHY_ARENA_STORE_PROBE_TAG"            # the test or fixture a child was started for
SITE_DIR = str(Path(__file__).resolve().parent)      # holds sitecustomize.py
STORE_FILE = "store.sqlite3"
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
        if self.active:
            self.env_before = {k: os.environ.get(k) for k in (PROBE_DIR_ENV, "PYTHONPATH")}
            self.probe_dir = tempfile.mkdtemp(prefix="store_probe_")
            os.environ[PROBE_DIR_ENV] = self.probe_dir
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SITE_DIR, os.environ.get("PYTHONPATH")) if p)
            sys.addaudithook(self._audit)      # for the life of the process: audit hooks cannot be removed

    # ------------------------------------------------------------------------------ seeing
    def _audit(self, event: str, args: tuple) -> None:
        if event == "sqlite3.connect":
            if self.context and os.path.basename(os.fsdecode(args[0])) == STORE_FILE:
                self.used.add(self.context[-1])
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
        tags = [f"test:{item.nodeid}"]
        for defs in item._fixtureinfo.name2fixturedefs.values():
            tags += [self.fixture_tag(d) for d in defs]
        return any(t in self.used or tag_file(t) in reported for t in tags)

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
        storage = sorted(base_id(n) for n in self.ran if n in by_id and self.uses_store(by_id[n], reported))
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        # one file per process: scripts/test.sh runs several parts into one record, each with its own gw0, gw1
        out = Path(self.record_dir) / f"sqlite-{worker}-{os.getpid()}.json"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"ran": sorted(map(base_id, self.ran)), "storage": storage}, indent=0))
        tmp.replace(out)

    def pytest_unconfigure(self, config):
        """The reports folder goes (one a pytest process: they were left in /tmp), and the variables this plugin
        set are as they were (a pytest run inside this process, as tests/test_storage_probe.py's, leaves the outer
        one reporting where it did)."""
        if not self.active:
            return
        shutil.rmtree(self.probe_dir, ignore_errors=True)
        for key, value in self.env_before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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


def select_for_postgresql(config, items) -> None:
    """PostgreSQL pass with a record: keep the tests that used the store on SQLite, those it does not know, and those
    marked `both_databases` (tests/test_store_selection.py, which checks this pass's selection against the record).
    The deselected ids stay in `config.stash[DESELECTED]` for that check."""
    record_dir = os.environ.get(RECORD_ENV)
    if not record_dir:
        return
    record = read_record(record_dir)
    if record is None:
        raise pytest.UsageError(f"{RECORD_ENV}={record_dir} holds no SQLite record: run the SQLite pass first, "
                                "or unset it to run every test on PostgreSQL")
    ran, storage = record
    keep, drop = [], []
    for item in items:
        test = base_id(item.nodeid)
        pure = test in ran and test not in storage and item.get_closest_marker("both_databases") is None
        (drop if pure else keep).append(item)
    config.stash[DESELECTED] = [base_id(item.nodeid) for item in drop]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
