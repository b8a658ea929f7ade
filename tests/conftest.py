"""Shared fixtures. Nothing here downloads anything.

The suite runs once per database: EMPATHY_ARENA_TEST_DB=sqlite (default: each data dir is its own SQLite file)
or =postgresql (a throwaway PostgreSQL cluster on loopback for the session, and a fresh database per test put in
DATABASE_URL, so every Store and every subprocess a test starts uses it). scripts/test.sh runs both.
"""
import itertools
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
# The app plays only replies screened clean (EMPATHY_ARENA_SCREEN_REPLIES, default 1). Tests of other parts serve
# fixture replies nobody screened, so the suite's default is 0; the safety tests (tests/test_safety_*.py) set 1.
os.environ.setdefault("EMPATHY_ARENA_SCREEN_REPLIES", "0")
# Gold battles (EMPATHY_ARENA_GOLD_SHARE, 0.05) and proof of work for anonymous voters (EMPATHY_ARENA_POW, on) are
# the app's defaults too; tests of other parts count every battle and vote without solving, so the suite's default
# is off; the integrity tests (tests/test_gold.py, tests/test_pow*.py, tests/test_sweeps.py) turn them on.
os.environ.setdefault("EMPATHY_ARENA_GOLD_SHARE", "0")
os.environ.setdefault("EMPATHY_ARENA_POW", "0")
# As app.py and the command lines do (eval_backend/cpu_threads.py): torch's and Whisper's idle OpenMP threads wait
# passively, in the test processes and everything they start. Spinning, a pytest worker's MiniLM took 0.42 CPU-s and
# 1.5 s a sentence beside the other worker, against 0.09 CPU-s and 0.2 s (docs/benchmarks.md, "Test suite").
from eval_backend.cpu_threads import passive_openmp  # noqa: E402

passive_openmp()

import pytest  # noqa: E402

from space_shell.gradio_import import skip_stub_regeneration  # noqa: E402

skip_stub_regeneration()     # as app.py does: the test modules import gradio (space_shell/gradio_import.py)

# storage_probe: the SQLite pass finds out which tests use the store; the PostgreSQL pass runs those (its docstring);
# background_workers: the battle-audio workers a module's services started stop when the module ends
pytest_plugins = ["tests.support.storage_probe", "tests.support.background_workers", "pytester"]

TEST_DB = os.environ.get("EMPATHY_ARENA_TEST_DB", "sqlite")
if TEST_DB not in ("sqlite", "postgresql"):
    raise RuntimeError(f"EMPATHY_ARENA_TEST_DB must be sqlite or postgresql, not {TEST_DB!r}")
os.environ.pop("DATABASE_URL", None)      # an operator's database is never touched by the tests


def pytest_report_header(config):
    return f"database: {TEST_DB}"


# Session fixtures that cost minutes: the tests using one run on one xdist worker (scripts/test.sh runs two), so
# it is built once per pass. Add a fixture here when it is shared across modules and expensive.
SHARED_SESSION_FIXTURES = ("demo_run",)
# Modules that cannot share a core with anything: they time something against a budget (a cold start, a deadline,
# a cut-off with little slack). scripts/test.sh runs them last (the `exclusive` mark) on two xdist workers, each
# pinned to a core of its own with everything it starts (PINNED_CORES), or else in one process, alone. Add a module
# here when its test asserts on a duration.
TIMED_MODULES = ("test_cold_start", "test_app_start", "test_arena_load", "test_bounded_endpoints",
                 "test_client_faults", "test_live", "test_live_submitted", "test_loaders", "test_queue_worker",
                 "test_runner", "test_safety_remote", "test_space_judge", "test_gradio_inputs", "test_gradio_limits",
                 "test_pinned_cores", "test_safety_directed_bounds")
# Of those, the ones that time the Space's own start on the whole machine (its bootstrap's threads and processes and
# a chromium, against targets set for 2 cores): they run alone, unpinned, after the pinned part (the `machine` mark).
WHOLE_MACHINE_MODULES = ("test_cold_start", "test_app_start")
# The browser tests (found by themselves: the `chromium` fixture, `launch_chromium`, the `browser` mark) run with
# the shared tests, a module at a time on each worker: they mostly wait on real-time playback, timers and a started
# app, and a CPU-bound module on the other worker fills those waits (in a part of their own the two cores were ~80 %
# busy; docs/benchmarks.md, "Test suite"). `-m browser` still selects them.
EXCLUSIVE_GROUP = "exclusive"
# EMPATHY_ARENA_TEST_PIN=1 (scripts/test.sh's timed part): each xdist worker and every process it starts (apps,
# chromium, its PostgreSQL cluster: the affinity is inherited) run on one core of their own, so no other test's CPU
# can reach a timed test's core, and each timed module is its own xdist group. Measured (docs/benchmarks.md, "Test
# suite"): the timed tests pass on one core in about the time they take on two.
PINNED_CORES = os.environ.get("EMPATHY_ARENA_TEST_PIN") == "1"


def pin_worker_to_a_core(workerid: str) -> int:
    """Pin this process (an xdist worker, `gw<N>`) to the N-th core it may use; returns that core. Refuses to share:
    with fewer cores than the worker's number, a timed test would share a core, so that is an error."""
    cores = sorted(os.sched_getaffinity(0))
    n = int(workerid.removeprefix("gw"))
    if n >= len(cores):
        raise pytest.UsageError(f"EMPATHY_ARENA_TEST_PIN: worker {workerid} has no core of its own ({cores})")
    os.sched_setaffinity(0, {cores[n]})
    return cores[n]


def pytest_configure(config):
    workerid = getattr(config, "workerinput", {}).get("workerid")
    if PINNED_CORES and workerid:
        config.pinned_core = pin_worker_to_a_core(workerid)


@pytest.hookimpl(tryfirst=True)      # before xdist reads the xdist_group marks group_for_workers adds
def pytest_collection_modifyitems(config, items):
    # A module lists its module-scoped fixtures that write to the store in MODULE_DATABASE_FIXTURES;
    # tests using them get the module's database on PostgreSQL runs.
    for item in items:
        shared = getattr(item.module, "MODULE_DATABASE_FIXTURES", ())
        if set(shared) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.module_database)
    group_for_workers(items)
    if TEST_DB == "postgresql":
        skip = pytest.mark.skip(reason="checks SQLite's own file format (the PostgreSQL run covers the rest)")
        for item in items:
            if "sqlite_only" in item.keywords:
                item.add_marker(skip)


def xdist_group_name(item) -> str:
    """The group xdist's loadgroup reads from an item's xdist_group marks, named as xdist names it ('' if none)."""
    return "_".join(sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                            for m in item.iter_markers("xdist_group")}))


def pytest_runtest_setup(item):
    # xdist's loadgroup sends a test to its group's worker only if its node id ends with "@<group>", which xdist
    # adds from the marks above. If a pytest release runs xdist's hook first (9.2.0 did), the marks come too late,
    # module fixtures split across workers and ordered tests fail far from the cause: say the cause instead.
    if not (hasattr(item.config, "workerinput") and item.config.getvalue("loadgroup")):
        return
    group = xdist_group_name(item)
    if group and not item.nodeid.endswith("@" + group):
        pytest.fail(f"xdist did not apply this test's xdist_group mark ({group}): is pytest the version "
                    "requirements-test.txt pins?", pytrace=False)


def _module_name(item) -> str:
    return item.nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")


def is_exclusive(item) -> bool:
    """In a module that times something (TIMED_MODULES): runs alone."""
    return _module_name(item) in TIMED_MODULES


def is_browser(item) -> bool:
    """Drives chromium (and is not timed: a timed module's browser test still runs alone)."""
    return not is_exclusive(item) and (
        "chromium" in getattr(item, "fixturenames", ()) or item.get_closest_marker("browser") is not None
        or hasattr(getattr(item, "module", None), "launch_chromium"))


def worker_groups(items) -> dict[str, str]:
    """Each test module's xdist group. A module's tests share one (its module fixtures are built once); the modules
    using a shared session fixture share one (built once per pass); every module holding an exclusive test shares
    EXCLUSIVE_GROUP (they run one after another), unless PINNED_CORES. Groups joined by any of these are one
    group."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    def join(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:          # the shared names win, so the group keeps a name that says why it is one
            keep, drop = (ra, rb) if ra == EXCLUSIVE_GROUP or ra in SHARED_SESSION_FIXTURES else (rb, ra)
            parent[drop] = keep

    for item in items:
        module = _module_name(item)
        find(module)
        for fixture in SHARED_SESSION_FIXTURES:
            if fixture in getattr(item, "fixturenames", ()):
                join(fixture, module)
        if is_exclusive(item) and not PINNED_CORES:      # pinned: each worker has its own core
            join(EXCLUSIVE_GROUP, module)
    return {module: find(module) for module in {_module_name(item) for item in items}}


def group_for_workers(items) -> None:
    """xdist (`-n 2 --dist loadgroup`): each test gets its group's xdist_group mark (worker_groups), the
    `exclusive` mark that puts it in its part of scripts/test.sh, and `browser` on a browser test; the groups
    expected to take longest (by their tests' declared time limits and `slow` marks) are handed out first, so the
    longest work does not start last."""
    group_of = worker_groups(items)
    groups: dict[str, list] = {}
    for item in items:
        name = group_of[_module_name(item)]
        item.add_marker(pytest.mark.xdist_group(name))
        if is_exclusive(item):          # scripts/test.sh runs these last (-m exclusive)
            item.add_marker(pytest.mark.exclusive)
            if _module_name(item) in WHOLE_MACHINE_MODULES:     # and these alone, unpinned (-m machine)
                item.add_marker(pytest.mark.machine)
        elif is_browser(item) and item.get_closest_marker("browser") is None:     # -m browser selects them
            item.add_marker(pytest.mark.browser)
        groups.setdefault(name, []).append(item)
    def expected_cost(group: str) -> tuple:         # the time limits the tests declare, then their `slow` marks
        marks = [(i.get_closest_marker("timeout"), i.get_closest_marker("slow")) for i in groups[group]]
        return (group not in (*SHARED_SESSION_FIXTURES, EXCLUSIVE_GROUP),
                -sum(float(t.args[0]) for t, _ in marks if t and t.args), -sum(slow is not None for _, slow in marks))
    items[:] = [item for g in sorted(groups, key=expected_cost) for item in groups[g]]


class PgDatabases:
    """Fresh databases on the session's cluster (CREATE DATABASE copies template1: ~0.1 s)."""

    def __init__(self, admin_url: str):
        import psycopg
        self.admin_url = admin_url
        self.conn = psycopg.connect(admin_url, autocommit=True)
        self.ids = itertools.count(1)

    def url(self, name: str) -> str:
        return self.admin_url.rsplit("/", 1)[0] + "/" + name

    def create(self, prefix: str = "t") -> str:
        name = f"{prefix}{next(self.ids)}"
        self.conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def clone(self, url: str) -> str:
        """A new database with a copy of `url`'s contents (a copied data dir's database). Connections to the
        source are closed first (CREATE DATABASE ... TEMPLATE needs that); a Store reconnects by itself."""
        source = url.rsplit("/", 1)[1]
        self.conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                          "AND pid <> pg_backend_pid()", (source,))
        name = f"c{next(self.ids)}"
        self.conn.execute(f"CREATE DATABASE {name} TEMPLATE {source}")
        return self.url(name)

    def drop(self, url: str) -> None:
        self.conn.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")


@pytest.fixture(scope="session")
def databases():
    """None on SQLite runs; on PostgreSQL runs the cluster's database factory."""
    if TEST_DB != "postgresql":
        yield None
        return
    from tests.support.pg_server import postgres_server
    with postgres_server(max_connections=400) as admin_url:
        yield PgDatabases(admin_url)


@pytest.fixture(scope="module", autouse=True)
def module_database_url(databases):
    """PostgreSQL runs: one database for the module's shared (module-scoped) fixtures, set before they run."""
    if databases is None:
        yield None
        return
    url = databases.create("m")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DATABASE_URL", url)
        yield url
    databases.drop(url)


@pytest.fixture(autouse=True)
def database_url(request, monkeypatch, databases, module_database_url):
    """The test's database URL (None on SQLite runs), also in DATABASE_URL for Stores and subprocesses:
    the demo run's database; the module's for tests marked `module_database` (they use a module-scoped
    fixture that writes to the store, like a running app); else a fresh one."""
    if databases is None:
        yield None
        return
    own = False
    if "demo_run" in request.fixturenames:
        url = request.getfixturevalue("demo_run").database_url
    elif request.node.get_closest_marker("module_database"):
        url = module_database_url
    else:
        url, own = databases.create(), True
    monkeypatch.setenv("DATABASE_URL", url)
    yield url
    if own:
        databases.drop(url)


@pytest.fixture(autouse=True)
def baseline_port(monkeypatch):
    """A bootstrap started by a test (in process or in an app it starts) serves its baselines on a free port: the
    default, 8765 when free, races with the other xdist worker and with other jobs on the machine. A test that sets
    EMPATHY_ARENA_BASELINE_PORT itself keeps its own."""
    if not os.environ.get("EMPATHY_ARENA_BASELINE_PORT"):
        from tests.support.processes import free_port
        monkeypatch.setenv("EMPATHY_ARENA_BASELINE_PORT", str(free_port()))


def _databases_for_one_test(databases, make):
    """A callable giving `make(...)`'s new database URL (None on SQLite runs); dropped after the test."""
    made = []

    def give(*args):
        if databases is None:
            return None
        made.append(make(*args))
        return made[-1]
    yield give
    for url in made:
        databases.drop(url)


@pytest.fixture
def fresh_database_url(databases):
    """For tests that simulate a wiped machine: a callable giving an empty database's URL (None on SQLite,
    where the new, empty data dir is the empty database)."""
    yield from _databases_for_one_test(databases, lambda: databases.create("w"))


@pytest.fixture
def copy_database(databases):
    """For tests that copy a seeded data dir: a callable giving a copy of a database (None on SQLite, where
    copying the data dir, tests/support/arena_fixtures.py's copy_data_dir, copies the database)."""
    yield from _databases_for_one_test(databases, lambda url: databases.clone(url))


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory, databases):
    """The demo benchmark run through both baselines once per session (see tests/support/demo_pipeline.py)."""
    from tests.support.demo_pipeline import run_demo_pipeline
    url = databases.create("demo") if databases is not None else None
    return run_demo_pipeline(tmp_path_factory.mktemp("demo_run"), database_url=url)


@pytest.fixture(scope="module")
def chromium_args():
    """Flags added to tests/support/browser.py's CHROMIUM_ARGS for the module's browser; a module overrides this
    fixture to add its own (a fake microphone, say)."""
    return ()


@pytest.fixture(scope="module")
def chromium(chromium_args):
    """Debian's chromium under Playwright, one per test module (why not per session: tests/support/browser.py).
    Open pages with `tests.support.browser.new_page(chromium, ...)`."""
    from tests.support.browser import launch_chromium
    with launch_chromium(chromium_args) as browser:
        yield browser
