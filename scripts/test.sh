#!/usr/bin/env bash
# Sets up everything the tests need (Debian + Python packages) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
set +e
. scripts/python_env.sh
"$PY" -m pytest "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests: that is a failure here"; exit 1; fi
exit "$rc"
