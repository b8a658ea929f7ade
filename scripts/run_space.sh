#!/usr/bin/env bash
# Sets up and runs the Space on the embedded default: demo benchmark, SQLite, local baselines, no keys, no network.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1
. scripts/python_env.sh
exec "$PY" app.py
