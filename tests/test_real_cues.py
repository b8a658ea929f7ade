"""Acceptance (issue 22): the cue detector hears real voices and abstains when unsure.

Measured on the `validation` rows of eval_backend/baselines/real_voices.csv: real recordings from Debian packages
(packages-test.txt), labelled and split before calibration (real_voices.md), never used to read a threshold.
Targets: a cue claimed on at most 10% of neutral recordings, and at least 80% of claims right.
The older detector (thresholds read from our synthetic demo voices) is measured on the same rows to show what
the targets catch.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from eval_backend.audio.features import extract
from eval_backend.audio.asr import Transcriber
from eval_backend.baselines.cues import detect
from eval_backend.baselines.real_voices import ROOTS, hear_recording, missing, recordings, tally
from tests.support.baselines import ROOT
from tests.support.demo_pipeline import measure_cache_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def rows():
    got = recordings("validation")
    assert not missing(got), f"install {missing(got)} (packages-test.txt)"
    return got


@pytest.fixture(scope="module")
def validation(rows):
    with pytest.MonkeyPatch.context() as env:      # the run's transcript folder (scripts/test.sh; whisper_seed.py)
        for name, value in measure_cache_env().items():
            env.setenv(name, value)
        asr = Transcriber()
    return tally([(r, hear_recording(r, asr)[0]) for r in rows])


def test_the_split_keeps_calibration_and_validation_apart():
    cal, val = recordings("calibration"), recordings("validation")
    assert not {r.group for r in cal} & {r.group for r in val}
    assert not {r.id for r in cal} & {r.id for r in val}
    assert sum(r.label == "neutral" for r in val) >= 40
    assert {r.package for r in val} >= {"pocketsphinx-testdata", "hedgewars-data", "fillets-ng-data-cs"}


def test_few_claims_on_neutral_real_voices(validation):
    assert validation.neutral >= 40
    assert validation.neutral_claim_rate <= 0.10, (validation.neutral_claimed, validation.neutral, validation.wrong)


def test_most_claims_are_right(validation):
    assert validation.claims >= 20, validation.per_label      # it does claim where the acoustics support it
    assert validation.precision >= 0.80, (validation.right, validation.claims, validation.wrong)


def test_the_old_synthetic_detector_fails_the_neutral_target(rows):
    """What the targets catch: the thresholds read from espeak-ng voices claim a cue on most neutral voices."""
    neutral = [r for r in rows if r.label == "neutral"]
    claimed = sum(bool(detect(extract(*r.load())).labels) for r in neutral)
    assert claimed / len(neutral) > 0.10, (claimed, len(neutral))


def test_detect_command_prints_claims_with_confidences():
    path = ROOTS["alsa-utils"] / "Front_Center.wav"
    done = subprocess.run([sys.executable, "-m", "eval_backend.baselines", "detect", str(path), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["transcript"].lower().startswith("front")
    assert out["claims"] == [] and out["cue"] is None               # a calm reading voice: nothing to claim
    assert set(out["confidence"]) >= {"raised", "laughter", "whisper", "fast", "slow"}
    assert all(0.0 <= v <= 1.0 for v in out["confidence"].values())
    assert "loud / soft" in out["abstains_on"]
    bad = subprocess.run([sys.executable, "-m", "eval_backend.baselines", "detect", str(ROOT / "README.md")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "cannot read" in bad.stderr
