"""The vendored ALTCHA widget (arena/static/altcha/) is the npm package's file, byte for byte, with its licences.

The app serves the committed file (no npm at run time). Here: the file matches the sha256 that
scripts/fetch_altcha_widget.sh recorded in SOURCE.json, the licences beside it are the MIT texts, and, where npm
is installed, the package pinned in scripts/altcha_widget/package-lock.json (installed with `npm ci`, which
checks its sha512) holds exactly these bytes. The browser test (tests/test_pow_browser.py) runs the file itself.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from arena.services.pow import WIDGET_DIR, WIDGET_FILE

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "scripts" / "altcha_widget"


def source() -> dict:
    return json.loads((WIDGET_DIR / "SOURCE.json").read_text())


def test_the_vendored_file_is_the_recorded_one_with_its_licences():
    rec = source()
    lock = json.loads((PINS / "package-lock.json").read_text())["packages"]["node_modules/altcha"]
    assert hashlib.sha256(WIDGET_FILE.read_bytes()).hexdigest() == rec["sha256"]
    assert (rec["package"], rec["version"], rec["license"]) == ("altcha", lock["version"], "MIT")
    assert rec["npm_integrity"] == lock["integrity"]
    for name in ("LICENSE.txt", "LICENSE-svelte.md"):
        text = (WIDGET_DIR / name).read_text()
        assert "Permission is hereby granted, free of charge" in text and "Copyright (c)" in text
    assert "customElements.define(\"altcha-widget\"" in WIDGET_FILE.read_text()


def installed_package(tmp_path: Path) -> Path:
    """The pinned package as npm installs it: scripts/altcha_widget/node_modules when the fetch script ran here,
    else a fresh `npm ci` of the same lock file into a temporary folder."""
    here = PINS / "node_modules" / "altcha"
    if here.is_dir():
        return here
    work = tmp_path / "npm"
    work.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PINS / name, work / name)
    run = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=work,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"npm ci failed (the npm registry or its cache is needed): {run.stderr[-2000:]}"
    return work / "node_modules" / "altcha"


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: the package cannot be compared")
def test_the_vendored_file_is_the_npm_packages_file(tmp_path):
    pkg = installed_package(tmp_path)
    assert json.loads((pkg / "package.json").read_text())["version"] == source()["version"]
    assert (pkg / source()["file"]).read_bytes() == WIDGET_FILE.read_bytes()
    assert (pkg / "LICENSE.txt").read_bytes() == (WIDGET_DIR / "LICENSE.txt").read_bytes()
