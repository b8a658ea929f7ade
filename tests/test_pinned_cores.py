"""The timed part's promise (tests/conftest.py PINNED_CORES, scripts/test.sh): a timed test, and every process it
starts, runs on a core no other test of the part can use."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import PINNED_CORES

CHILD = "import os; print(sorted(os.sched_getaffinity(0)))"


def test_a_timed_test_and_what_it_starts_have_a_core_of_their_own(request):
    workerid = getattr(request.config, "workerinput", {}).get("workerid")
    if workerid is None:
        pytest.skip("one process: the timed tests run alone, one after another (nothing shares their cores)")
    # on xdist workers the timed tests run side by side: only a core each keeps them apart
    assert PINNED_CORES, "timed tests on several xdist workers without EMPATHY_ARENA_TEST_PIN=1"
    core = request.config.pinned_core
    assert os.sched_getaffinity(0) == {core}
    # gw0 and gw1 get different cores: the N-th of those the run may use
    assert core == sorted(os.sched_getaffinity(os.getppid()))[int(workerid.removeprefix("gw"))]
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str([core])


def test_a_worker_with_no_core_of_its_own_is_refused():
    code = ("import os, pytest\nfrom tests.conftest import pin_worker_to_a_core\n"
            "n = len(os.sched_getaffinity(0))\n"
            "try:\n    pin_worker_to_a_core(f'gw{n}')\nexcept pytest.UsageError as e:\n    print('refused', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("refused") and "has no core of its own" in out
