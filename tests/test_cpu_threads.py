"""The command lines set OpenMP's passive wait before a command loads Whisper or torch (eval_backend/cpu_threads.py),
as app.py and the baseline server do, and keep an operator's own choice."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.baselines import ROOT

PROBE = """
import os, sys
from {module} import main
try:
    main(["no-such-command"])
except SystemExit:
    pass
print(os.environ.get("OMP_WAIT_POLICY"))
"""


@pytest.mark.parametrize("module", ["eval_backend.__main__", "leaderboard.__main__", "eval_backend.baselines.__main__"])
@pytest.mark.parametrize("given, policy", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_a_command_line_waits_passively_unless_told_otherwise(module, given, policy):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | ({"OMP_WAIT_POLICY": given} if given else {})
    done = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == policy
