#!/usr/bin/env bash
# Installs what the Space needs on a fresh Debian machine: Debian packages, then Python packages.
# Usage: bash scripts/setup.sh [--test]   (--test adds the test-only packages: chromium, postgresql, pytest...)
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
lists=(packages.txt); reqs=requirements.txt
if [ "${1:-}" = "--test" ]; then lists+=(packages-test.txt); reqs=requirements-test.txt; fi
need=$(cat "${lists[@]}" | grep -vE '^\s*(#|$)' | while read -r p; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$need" ]; then
  $SUDO apt-get update -q
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $need
fi
. scripts/python_env.sh
"$PY" -m pip install -q -r "$reqs"
"$PY" -m pip install -q --no-deps -r requirements-nodeps.txt   # wheels whose declared torchaudio would move torch
if [ "${1:-}" = "--test" ]; then
  # axe-core (npm, MPL-2.0) for the page's accessibility tests, pinned by tests/axe/package-lock.json. Debian's
  # npm is a package of its own; a nodejs build that bundles npm (NodeSource's) provides it already
  command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q npm
  npm ci --prefix tests/axe --no-audit --no-fund --loglevel=error
fi
