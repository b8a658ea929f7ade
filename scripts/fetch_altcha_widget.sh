#!/usr/bin/env bash
# Re-fetches the ALTCHA widget the arena serves (arena/static/altcha/altcha.min.js, arena/services/pow.py) from the npm
# registry: the exact version and tarball integrity pinned in scripts/altcha_widget/package-lock.json (`npm ci`
# checks the sha512), then copies the built widget and its licence beside it and records what was copied in
# SOURCE.json. To move to a new version: change package.json's pin, run `npm install --ignore-scripts` in
# scripts/altcha_widget/ (it rewrites the lock), then this script; tests/test_altcha_widget.py checks the result.
# Needs npm (Node.js) on this machine only: the app serves the committed file, with no npm at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --prefix scripts/altcha_widget --ignore-scripts --no-audit --no-fund
src=scripts/altcha_widget/node_modules/altcha
dest=arena/static/altcha
mkdir -p "$dest"
cp "$src/dist/main/altcha.min.js" "$dest/altcha.min.js"
cp "$src/LICENSE.txt" "$dest/LICENSE.txt"
python3 - "$src" "$dest" <<'PY'
import hashlib, json, sys
from pathlib import Path
src, dest = Path(sys.argv[1]), Path(sys.argv[2])
pkg = json.loads((src / "package.json").read_text())
lock = json.loads(Path("scripts/altcha_widget/package-lock.json").read_text())["packages"]["node_modules/altcha"]
record = {"package": pkg["name"], "version": pkg["version"], "license": pkg["license"],
          "npm_integrity": lock["integrity"], "file": "dist/main/altcha.min.js",
          "sha256": hashlib.sha256((dest / "altcha.min.js").read_bytes()).hexdigest(),
          "fetched_by": "scripts/fetch_altcha_widget.sh"}
(dest / "SOURCE.json").write_text(json.dumps(record, indent=1) + "\n")
print(f"vendored {record['package']} {record['version']} ({record['sha256'][:12]}) into {dest}")
PY
